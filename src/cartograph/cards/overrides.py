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

A tool's table also takes the transform fields of ``config/transforms.py``
(``name``, ``title``, ``args``, and ``vouch_name``: the operator vouches for a
name another server's tool also has, signed into the card as ``vouched_name``),
as does a server's ``[servers.NAME.tools.TOOL]`` table in ``cartograph.toml``;
:func:`config_overrides` merges the two (the config file's fields win). The
tool's other fields then describe it as served: an override ``example`` must
validate against the served input schema.

Overridden text is signed like the rest; a change to a server's overrides
changes its ``overrides_digest`` and so bumps its card version.
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
from cartograph.config.model import Config
from cartograph.config.transforms import ToolTransform
from cartograph.errors import ConfigError, GeneratorError
from cartograph.validation import first_problem

MAX_OVERRIDES_BYTES: Final = 4 * 1024 * 1024


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOverride(ToolTransform):
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

    def tools_of(self, server: str) -> dict[str, ToolOverride]:
        """One server's tool overrides (transforms among them), by upstream tool name."""
        entry = self.servers.get(server)
        return dict(entry.tools) if entry is not None else {}

    def digest(self, server: str) -> str | None:
        """Digest of one server's overrides (``None`` when it has none).

        Transform fields left unset are not part of it, so an overrides file
        written before transforms existed keeps its digest (and its cards).
        """
        entry = self.servers.get(server)
        if entry is None:
            return None
        value = entry.model_dump(mode="json")
        for tool in value["tools"].values():
            for key, unset in _TRANSFORM_UNSET.items():
                if tool.get(key) == unset:
                    del tool[key]
        return canonical_digest(value)


_TRANSFORM_UNSET: Final[dict[str, Any]] = {
    "name": None,
    "title": None,
    "args": {},
    "vouch_name": None,
}


def config_overrides(config: Config) -> Overrides:
    """``[cards] overrides`` with each server's ``[servers.NAME.tools.TOOL]`` tables merged in."""
    overrides = load_overrides(config.cards.overrides)
    servers = dict(overrides.servers)
    for server in config.servers:
        if not server.tools:
            continue
        entry = servers.get(server.name, ServerOverride())
        tools = dict(entry.tools)
        for name, transform in server.tools.items():
            base = tools[name].model_dump(exclude_unset=True) if name in tools else {}
            tools[name] = ToolOverride.model_validate(
                {**base, **transform.model_dump(exclude_unset=True)}
            )
        servers[server.name] = entry.model_copy(update={"tools": tools})
    return Overrides(servers=servers)


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
    """``text`` with the operator's hand-written fields swapped in.

    ``server`` is the server as served (``cards/transforms.py``): an override
    keyed by a tool's upstream name applies to the tool it is served as.
    """
    entry = overrides.servers.get(server.name)
    if entry is None:
        return text
    listed = {t.name for t in server.tools}
    served = {name: _served_name(name, o, listed) for name, o in entry.tools.items()}
    unknown = sorted(name for name, as_served in served.items() if as_served not in listed)
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
        tools[served[name]] = _override_tool(server, served[name], tools[served[name]], override)
    return ServerText(capability=capability, tools=tools)


def _served_name(name: str, override: ToolOverride, listed: set[str]) -> str:
    """The name the overridden tool is listed under in ``server`` (served, else upstream)."""
    return override.name if override.name is not None and override.name in listed else name


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
    fields = override.model_dump(exclude_none=True, include=_TEXT_FIELDS)
    example = override.example if override.example is not None else text.example
    schema = _with_argument_descriptions(text.input_schema, override)
    vouched = override.vouch_name if override.vouch_name is not None else text.vouched_name
    return replace(text, **fields, example=example, input_schema=schema, vouched_name=vouched)


_TEXT_FIELDS: Final[set[str]] = {"description", "arguments", "when_to_use", "synonyms", "examples"}


def _with_argument_descriptions(schema: dict[str, Any], override: ToolOverride) -> dict[str, Any]:
    """The operator's argument descriptions, verbatim (the generator sanitises publisher prose)."""
    props = schema.get("properties")
    described = {
        arg.name or name: arg.description
        for name, arg in override.args.items()
        if arg.description is not None
    }
    if not described or not isinstance(props, dict):
        return schema
    props = {
        k: {**v, "description": described[k]} if k in described and isinstance(v, dict) else v
        for k, v in props.items()
    }
    return {**schema, "properties": props}


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
