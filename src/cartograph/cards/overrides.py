"""Operator overrides: hand-written text that replaces generated text before signing.

The file is TOML; every field is optional::

    [servers."files"]
    summary = "Local file system: read, write and list files under the project folder."
    guidance = "Paths are relative to the project root."
    tags = ["files", "disk"]

    [servers."files".tools.read_file]
    description = "Read one text file and return its contents."
    arguments = "path: file to read, relative to the project root"
    example = { path = "README.md" }
    when_to_use = "Use to read one project file as text."
    synonyms = ["open", "show"]
    examples = ["show me the README", "what does setup.py contain"]

Overridden text is signed like the rest; a change to a server's overrides
changes its ``overrides_digest`` and so bumps its card version. An override
``example`` must validate against the tool's input schema.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cartograph import error_codes as codes
from cartograph.cards.canonical import canonical_digest
from cartograph.cards.generators.base import (
    CardGenerator,
    GeneratorInfo,
    Progress,
    ServerText,
    ToolText,
)
from cartograph.cards.generators.schema import is_valid
from cartograph.cards.model import MAX_EXAMPLES
from cartograph.catalog.model import ServerDef
from cartograph.errors import ConfigError, GeneratorError
from cartograph.validation import first_problem

MAX_OVERRIDES_BYTES: Final = 4 * 1024 * 1024


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOverride(_Strict):
    description: str | None = None
    arguments: str | None = None
    example: dict[str, Any] | None = None
    when_to_use: str | None = None
    synonyms: tuple[str, ...] | None = None
    examples: tuple[str, ...] | None = Field(default=None, max_length=MAX_EXAMPLES)


class ServerOverride(_Strict):
    summary: str | None = None
    guidance: str | None = None
    tags: tuple[str, ...] | None = None
    tools: dict[str, ToolOverride] = {}


class Overrides(_Strict):
    servers: dict[str, ServerOverride] = {}

    def digest(self, server: str) -> str | None:
        """Digest of one server's overrides (``None`` when it has none)."""
        entry = self.servers.get(server)
        return None if entry is None else canonical_digest(entry.model_dump(mode="json"))


def load_overrides(path: Path | None) -> Overrides:
    if path is None or not path.exists():
        return Overrides()
    if path.stat().st_size > MAX_OVERRIDES_BYTES:
        raise ConfigError(f"{path}: overrides file is too large", code=codes.OVERRIDES_TOO_LARGE)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        return Overrides.model_validate(raw)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}", code=codes.OVERRIDES_INVALID) from exc
    except ValidationError as exc:
        problem = first_problem(exc)
        raise ConfigError(
            f"{path}: bad override at {problem.key}: {problem.message}",
            code=codes.OVERRIDES_INVALID,
        ) from exc


def apply_overrides(server: ServerDef, text: ServerText, overrides: Overrides) -> ServerText:
    """``text`` with the operator's hand-written fields swapped in."""
    entry = overrides.servers.get(server.name)
    if entry is None:
        return text
    unknown = sorted(set(entry.tools) - {t.name for t in server.tools})
    if unknown:
        raise GeneratorError(
            f"overrides for {server.name!r} name tools it does not serve: {unknown}",
            code=codes.OVERRIDE_UNKNOWN_TOOL,
        )
    capability = text.capability.model_copy(
        update={
            k: v
            for k, v in (
                ("summary", entry.summary),
                ("guidance", entry.guidance),
                ("tags", entry.tags),
            )
            if v is not None
        }
    )
    tools = dict(text.tools)
    for name, override in entry.tools.items():
        tools[name] = _override_tool(server, name, tools[name], override)
    return ServerText(capability=capability, tools=tools)


def _override_tool(
    server: ServerDef, name: str, text: ToolText, override: ToolOverride
) -> ToolText:
    tool = server.tool(name)
    assert tool is not None
    if override.example is not None and not is_valid(override.example, tool.input_schema):
        raise GeneratorError(
            f"override example for {server.name}/{name} does not match its input schema",
            code=codes.OVERRIDE_BAD_EXAMPLE,
        )
    fields = override.model_dump(exclude_none=True, exclude={"example"})
    example = override.example if override.example is not None else text.example
    return replace(text, **fields, example=example)


@dataclass(frozen=True)
class OverridingGenerator:
    """Any generator, with the operator's overrides applied to its output."""

    base: CardGenerator
    overrides: Overrides

    @property
    def info(self) -> GeneratorInfo:
        return self.base.info

    def describe(self, server: ServerDef) -> ServerText:
        return apply_overrides(server, self.base.describe(server), self.overrides)

    def describe_all(
        self, servers: Sequence[ServerDef], *, progress: Progress | None = None
    ) -> dict[str, ServerText]:
        texts = self.base.describe_all(servers, progress=progress)
        by_name: Mapping[str, ServerDef] = {s.name: s for s in servers}
        return {
            name: apply_overrides(by_name[name], text, self.overrides)
            for name, text in texts.items()
        }
