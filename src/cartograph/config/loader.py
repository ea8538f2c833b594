"""Load ``cartograph.toml`` into a typed :class:`~cartograph.config.model.Config`.

Servers come from three places, in this order: native ``[servers.NAME]``
tables, an inline ``[mcpServers.NAME]`` table in the standard client shape,
and ``mcp_json = [paths]`` files written by MCP clients. Every problem fails
the load with a :class:`~cartograph.errors.ConfigError` whose message names the
file, the server and the key, and whose ``code`` is stable (see
``docs/config.md``). Relative paths resolve against the folder of the file
that holds them; a stdio server's working directory defaults to that folder.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from cartograph import error_codes as codes
from cartograph.config._files import read_bounded
from cartograph.config.dotenv import read_env_file
from cartograph.config.expand import Folders, expand
from cartograph.config.mcp_json import (
    ENV_FILE,
    is_cartograph_entry,
    read_mcp_json,
    server_mapping,
    to_native,
)
from cartograph.config.model import Config, ServerConfig, infer_transport
from cartograph.errors import ConfigError
from cartograph.names import NamedThing, check_names
from cartograph.suggest import did_you_mean
from cartograph.validation import first_problem

logger = logging.getLogger(__name__)

MAX_CONFIG_BYTES: Final = 1024 * 1024
"""A config is a few KiB; anything past this is a mistake or an attack (P-REL-5)."""

_SERVER_KEYS: Final = frozenset(ServerConfig.model_fields) - {"name"}
_DEFAULT_KEYS: Final = frozenset({"connect_timeout", "call_timeout", "protocol", "stateless"})

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class _Entry:
    """One server definition before validation, with where it came from."""

    name: str
    body: dict[str, Any]
    file: Path
    origin: str  # "servers", "mcpServers" or "mcp_json"

    @property
    def where(self) -> str:
        return f"{self.file}: server {self.name!r}"

    @property
    def source(self) -> str:
        return f"server {self.name!r} ([{self.origin}] in {self.file})"


def load_config(path: Path, *, environ: Mapping[str, str] | None = None) -> Config:
    """Read, validate and resolve a config file (used at start-up and on reload)."""
    source = Path(os.path.abspath(path))
    raw = _read_toml(source)
    return build_config(raw, source=source, environ=os.environ if environ is None else environ)


def _read_toml(path: Path) -> dict[str, Any]:
    data = read_bounded(path, MAX_CONFIG_BYTES, hint="pass --config or set CARTOGRAPH_CONFIG")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text ({exc.reason})", code=codes.CONFIG_TOML, file=str(path)
        ) from None
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(
            f"{path}: TOML syntax error: {exc}", code=codes.CONFIG_TOML, file=str(path)
        ) from None


def build_config(raw: dict[str, Any], *, source: Path, environ: Mapping[str, str]) -> Config:
    """Validate an already-parsed document as if it were the file ``source``."""
    body = dict(raw)
    defaults = _defaults(body.pop("defaults", {}), source)
    entries = [
        *_native_entries(body.pop("servers", {}), source),
        *_inline_entries(body.pop("mcpServers", {}), source),
        *_imported_entries(body.pop("mcp_json", []), source, environ),
    ]
    _check_server_names(entries)
    servers = tuple(_servers(entries, defaults, environ))
    config = _validate(Config, {**body, "servers": servers, "source": source}, where=str(source))
    config = _with_oauth_stores(config)
    return _resolve_paths(config, source.parent, where=str(source))


# -- collecting server entries -------------------------------------------------------


def _table(value: Any, *, where: str, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}: key {key!r}: must be a table", code=codes.CONFIG_INVALID, key=key
        )
    return value


def _defaults(value: Any, source: Path) -> dict[str, Any]:
    table = _table(value, where=str(source), key="defaults")
    for key in table:
        if key not in _DEFAULT_KEYS:
            raise ConfigError(
                f"{source}: [defaults]: key {key!r}: unknown key; "
                f"{did_you_mean(key, _DEFAULT_KEYS, what='allowed')}",
                code=codes.CONFIG_UNKNOWN_KEY,
                key=key,
            )
    return table


def _native_entries(value: Any, source: Path) -> list[_Entry]:
    table = _table(value, where=str(source), key="servers")
    entries = []
    for name, body in table.items():
        where = f"{source}: server {name!r}"
        entries.append(_Entry(name, dict(_table(body, where=where, key=name)), source, "servers"))
    return entries


def _inline_entries(value: Any, source: Path) -> list[_Entry]:
    table = server_mapping({"mcpServers": value}, where=f"{source}: [mcpServers]")
    return [
        _Entry(name, to_native(body, where=f"{source}: server {name!r}"), source, "mcpServers")
        for name, body in _without_cartograph(table, source).items()
    ]


def _without_cartograph(table: dict[str, Any], file: Path) -> dict[str, Any]:
    """The entries that are not Cartograph itself; each skipped one is logged with a note."""
    kept = {}
    for name, body in table.items():
        if is_cartograph_entry(name, body):
            logger.warning(
                "%s: skipped server %r: it is Cartograph's own entry (importing it would start "
                "Cartograph as its own upstream)",
                file,
                name,
            )
            continue
        kept[name] = body
    return kept


def _imported_entries(value: Any, source: Path, environ: Mapping[str, str]) -> list[_Entry]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{source}: key 'mcp_json': must be a path or a list of paths",
            code=codes.CONFIG_INVALID,
            key="mcp_json",
        )
    entries = []
    for item in value:
        path = _path(expand(item, environ, where=f"{source}: key 'mcp_json'"), source.parent)
        servers = _without_cartograph(read_mcp_json(path, imported_by=source), path)
        for name, body in servers.items():
            where = f"{path}: server {name!r}"
            entries.append(_Entry(name, to_native(body, where=where), path, "mcp_json"))
    return entries


def _check_server_names(entries: list[_Entry]) -> None:
    """Across servers, naming both definitions' files; each name itself is the model's check."""
    seen: dict[str, _Entry] = {}
    for entry in entries:
        if entry.name in seen:
            raise ConfigError(
                f"{entry.source} duplicates {seen[entry.name].source}; server names must be unique",
                code=codes.CONFIG_DUPLICATE_SERVER,
                server=entry.name,
            )
        seen[entry.name] = entry
    check_names((NamedThing(e.name, e.source) for e in entries), reserved=())


# -- one server ----------------------------------------------------------------------


_PER_SERVER_REFUSALS: Final = frozenset(
    {codes.CONFIG_ENV_VAR, codes.CONFIG_INPUT_VARIABLE, codes.CONFIG_ENV_FILE}
)
"""What refuses one server of an imported client file, not the file: a variable that cannot
be filled, or an envFile that cannot be read, concerns that server alone (the client itself
would start the others)."""


def _servers(
    entries: list[_Entry], defaults: dict[str, Any], environ: Mapping[str, str]
) -> Iterator[ServerConfig]:
    for entry in entries:
        try:
            yield _server(entry, defaults, environ)
        except ConfigError as exc:
            if entry.origin != "mcp_json" or exc.code not in _PER_SERVER_REFUSALS:
                raise
            logger.warning("%s: not imported (%s): %s", entry.source, exc.code, exc.message)


def _server(entry: _Entry, defaults: dict[str, Any], environ: Mapping[str, str]) -> ServerConfig:
    body = {**defaults, **entry.body}
    env_file = body.pop(ENV_FILE, None) if entry.origin != "servers" else None
    for key in body:
        if key not in _SERVER_KEYS:
            raise ConfigError(
                f"{entry.where}: key {key!r}: unknown key; "
                f"{did_you_mean(key, _SERVER_KEYS, what='allowed')}",
                code=codes.CONFIG_UNKNOWN_KEY,
                server=entry.name,
                key=key,
            )
    body = _expand_server(body, entry, environ)
    if isinstance(env_file, str):
        body["env"] = _with_env_file(body.get("env"), env_file, entry, environ)
    # The model infers the same; the path resolution below needs to know it first.
    body.setdefault("transport", infer_transport(body.get("command"), body.get("url")))
    body = _server_paths(body, entry.file.parent, entry)
    data = {**body, "name": entry.name}
    return _validate(ServerConfig, data, where=entry.where, file=str(entry.file))


def _with_env_file(env: Any, env_file: str, entry: _Entry, environ: Mapping[str, str]) -> Any:
    """``env`` over the variables of a client entry's ``envFile`` (``env`` wins, as in VS Code)."""
    where = f"{entry.where}: key 'envFile'"
    folders = Folders.for_file(entry.file)
    path = _path(expand(env_file, environ, where=where, folders=folders), entry.file.parent)
    from_file = read_env_file(path, where=entry.where)
    if env is None:
        return from_file
    return {**from_file, **env} if isinstance(env, dict) else env  # not a table: the model says so


def _expand_server(
    body: dict[str, Any], entry: _Entry, environ: Mapping[str, str]
) -> dict[str, Any]:
    out = dict(body)
    folders = Folders.for_file(entry.file)

    def one(value: Any, key: str) -> Any:
        if not isinstance(value, str):
            return value
        return expand(value, environ, where=f"{entry.where}: key {key!r}", folders=folders)

    for key in ("command", "url", "cwd"):
        if key in out:
            out[key] = one(out[key], key)
    if isinstance(out.get("args"), list):
        out["args"] = [one(a, "args") for a in out["args"]]
    for key in ("env", "headers"):
        if isinstance(out.get(key), dict):
            out[key] = {k: one(v, f"{key}.{k}") for k, v in out[key].items()}
    return out


def _with_oauth_stores(config: Config) -> Config:
    """Each OAuth server's token file, in the state directory unless the config names one."""
    servers = tuple(
        s.model_copy(
            update={
                "oauth": s.oauth.model_copy(update={"store": oauth_store(config.state_dir, s.name)})
            }
        )
        if s.auth == "oauth" and s.oauth.store is None
        else s
        for s in config.servers
    )
    return config.model_copy(update={"servers": servers})


def oauth_store(state_dir: Path, server: str) -> Path:
    """``<state_dir>/oauth/<server>.json``: one file per server (names hold no ``/``)."""
    return state_dir / "oauth" / f"{server}.json"


def _server_paths(body: dict[str, Any], base: Path, entry: _Entry) -> dict[str, Any]:
    """Resolve a path-like command and the cwd against the defining file's folder."""
    out = dict(body)
    where = f"{entry.where}: key 'cwd'"
    if out.get("transport") == "stdio":
        cwd = out.get("cwd")
        out["cwd"] = _path(cwd, base, where=where) if isinstance(cwd, str) else base
        command = out.get("command")
        if isinstance(command, str) and "/" in command:
            out["command"] = str(_path(command, base, where=f"{entry.where}: key 'command'"))
    elif isinstance(out.get("cwd"), str):
        out["cwd"] = _path(out["cwd"], base, where=where)
    return out


def _path(value: str, base: Path, *, where: str = "") -> Path:
    if "\x00" in value:
        raise ConfigError(f"{where}: a path cannot contain NUL", code=codes.CONFIG_INVALID)
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else Path(os.path.normpath(base / path))


# -- validation and paths ----------------------------------------------------------------


def _validate(model: type[M], data: dict[str, Any], *, where: str, file: str | None = None) -> M:
    """``model`` from ``data``; every failure a :class:`ConfigError` naming the file.

    ``where`` prefixes pydantic's own errors (it names the file and, for a server, the
    server); the models' validators raise ConfigErrors that name their server themselves,
    so those get only ``file`` (default ``where``).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, where, model) from None
    except ConfigError as exc:
        raise ConfigError(f"{file or where}: {exc.message}", code=exc.code, **exc.details) from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise ConfigError(f"{where}: {exc}", code=codes.CONFIG_INVALID) from None


_KIND_CODES: Final = {
    "extra_forbidden": (codes.CONFIG_UNKNOWN_KEY, "unknown key"),
    "missing": (codes.CONFIG_MISSING_KEY, "required key is missing"),
}


def _config_error(exc: ValidationError, where: str, model: type[BaseModel]) -> ConfigError:
    """The first problem, naming the key path; never echoing the value (it may be a secret)."""
    problem = first_problem(exc)
    code, message = _KIND_CODES.get(problem.kind, (codes.CONFIG_INVALID, problem.message))
    if problem.kind == "extra_forbidden" and problem.loc:
        known = _sibling_keys(model, problem.loc[:-1])
        if known:
            message += f"; {did_you_mean(str(problem.loc[-1]), known, what='allowed')}"
    return ConfigError(f"{where}: key {problem.key!r}: {message}", code=code, key=problem.key)


def _sibling_keys(model: type[BaseModel], parents: tuple[int | str, ...]) -> list[str]:
    """The keys allowed beside an unknown one: walk ``parents`` through the model's fields."""
    current: type[BaseModel] | None = model
    for part in parents:
        if isinstance(part, int):
            continue  # an index into a tuple of sections: the section model stays the same
        field = current.model_fields.get(part) if current is not None else None
        current = _section_type(field.annotation) if field is not None else None
    return sorted(current.model_fields) if current is not None else []


def _section_type(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (directly, or as ``tuple[Model, ...]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _section_type(arg)
        if found is not None:
            return found
    return None


def _resolve_paths(model: M, base: Path, *, where: str) -> M:
    """Resolve every relative ``Path`` field of ``model`` (recursively) against ``base``."""
    updates: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, Path) and name != "source":
            updates[name] = _path(str(value), base, where=f"{where}: key {name!r}")
        elif isinstance(value, BaseModel):
            updates[name] = _resolve_paths(value, base, where=where)
        elif isinstance(value, tuple) and value and isinstance(value[0], BaseModel):
            updates[name] = tuple(_resolve_paths(v, base, where=where) for v in value)
    return model.model_copy(update=updates) if updates else model


__all__ = ["MAX_CONFIG_BYTES", "build_config", "load_config"]
