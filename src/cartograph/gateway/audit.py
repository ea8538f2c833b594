"""The audit log: one JSON line per call or refusal, holding the argument *shape*, never values.

P-LOG-2: a record names time, catalog, principal, server, tool, duration,
outcome and the keys/types of the arguments. P-LOG-1: anything that could
carry a secret (error text from an upstream, its stderr) passes through a
:class:`Redactor` built from the config's secret values before it is written.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

import anyio

from cartograph.config.model import Config
from cartograph.echo import echoed, echoed_or_none
from cartograph.fsutil import make_private_dirs
from cartograph.upstream.oauth import stored_tokens

MAX_SHAPE_DEPTH: Final = 4
MAX_SHAPE_KEYS: Final = 50
MIN_SECRET_LENGTH: Final = 4
REDACTED: Final = "[redacted]"
# Without an audit file the newest records stay in memory: a ring, so memory
# does not grow with the number of calls served (P-REL-4).
MEMORY_RECORDS: Final = 1024


def argument_shape(value: Any, depth: int = 0) -> Any:
    """Keys and JSON types of ``value``; no string, number or boolean ever survives."""
    if isinstance(value, Mapping):
        if depth >= MAX_SHAPE_DEPTH:
            return "object"
        keys = sorted(value, key=str)[:MAX_SHAPE_KEYS]
        return {echoed(str(k)): argument_shape(value[k], depth + 1) for k in keys}
    if isinstance(value, list | tuple):
        if depth >= MAX_SHAPE_DEPTH or not value:
            return "array"
        return [argument_shape(value[0], depth + 1)]
    return _json_type(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _stamp(path: Path) -> tuple[int, int] | None:
    """What tells a changed file: its modification time and size; None when absent."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


class Redactor:
    """Replaces known secret values with a marker (which ones: ``config/secrets.py``).

    ``token_stores`` are upstream OAuth token files: their access and refresh tokens are
    secrets too, and change while serving (a refresh rotates them), so each store is
    read again whenever it changed on disk (a ``stat`` per use).
    """

    def __init__(self, secrets: Iterable[str] = (), token_stores: Iterable[Path] = ()) -> None:
        self._fixed = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        self._stores = tuple(token_stores)
        self._seen: tuple[tuple[int, int] | None, ...] = ()
        self._secrets = sorted(self._fixed, key=len, reverse=True)
        self._refresh()

    def _refresh(self) -> None:
        """Re-read the token stores when one of them changed since the last look."""
        if not self._stores:
            return
        seen = tuple(_stamp(path) for path in self._stores)
        if seen == self._seen:
            return
        live = {t for path in self._stores for t in stored_tokens(path)}
        unique = self._fixed | {t for t in live if len(t) >= MIN_SECRET_LENGTH}
        self._secrets, self._seen = sorted(unique, key=len, reverse=True), seen

    @classmethod
    def from_config(cls, config: Config) -> Redactor:
        values: list[str] = []
        stores = [s.oauth.store for s in config.servers if s.auth == "oauth" and s.oauth.store]
        for server in config.servers:
            values.extend(server.secret_values())
        for token in config.http.tokens:
            secret = os.environ.get(token.token_env)
            if secret:
                values.append(secret)
        llm_key = os.environ.get(config.cards.llm.api_key_env)
        if llm_key:
            values.append(llm_key)
        return cls(values, [path for path in stores if path is not None])

    @property
    def values(self) -> tuple[str, ...]:
        """The secret values themselves, longest first (the secret scan looks for each)."""
        self._refresh()
        return tuple(self._secrets)

    @property
    def empty(self) -> bool:
        """True when there is nothing to redact, so callers can skip the walk."""
        self._refresh()
        return not self._secrets

    def __call__(self, text: str) -> str:
        self._refresh()
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


@dataclass(frozen=True)
class AuditRecord:
    """One proxy tool call, or one refusal (P-AUDIT-1).

    ``server``/``tool`` name the upstream target of a `call`. A refusal made
    before any catalog's handlers ran (the HTTP layer, the routed mount) names
    the mount as ``catalog`` unless the real catalog is known; ``http_status``
    and ``path`` are set only for refusals the HTTP layer answered itself.
    """

    time: str
    catalog: str
    principal: str | None
    proxy_tool: str
    server: str | None
    tool: str | None
    duration_ms: float
    outcome: str
    arguments: Any
    repairs: tuple[str, ...] = ()
    http_status: int | None = None
    path: str | None = None
    trace: str | None = None
    """The W3C ``traceparent`` the client sent in the request's ``_meta``, when it sent one."""
    secrets: Mapping[str, tuple[str, ...]] | None = None
    """The classes of secret the scan saw, by direction (``arguments``, ``result``).

    Never a value: ``{"arguments": ("AWS Access Key",)}``."""

    def __post_init__(self) -> None:
        """Names a caller chose are kept to :data:`~cartograph.echo.MAX_ECHO` characters.

        A record is one line: a 200 KB resource URI or tool name is recorded by its
        start, its length and its SHA-256 (:func:`~cartograph.echo.echoed`), for every sink.
        """
        for name in _CALLER_NAMED:
            value = getattr(self, name)
            bounded = echoed_or_none(value)
            if bounded is not value:
                object.__setattr__(self, name, bounded)


class AuditSink(Protocol):
    """Where audit records go: a JSONL file (:class:`AuditLog`) or a database.

    ``write`` returns only once the record is durable (or raises
    :class:`~cartograph.errors.AuditUnavailable`); a ``blocking`` sink does
    network I/O there, so async callers run it in a worker thread. ``degraded``
    is True while the sink cannot reach its store; ``admit`` then raises when
    one more record could not be kept, so a call is refused before it runs.
    """

    blocking: bool

    @property
    def degraded(self) -> bool: ...

    def admit(self) -> None: ...

    def write(self, record: AuditRecord) -> None: ...

    def close(self) -> None: ...


async def write_record(sink: AuditSink, record: AuditRecord) -> None:
    """Write ``record`` from async code: a ``blocking`` sink's round trip goes to a worker thread.

    On the event loop, one slow database insert would stall every request the
    process serves (P-REL-10); a file sink's write stays inline.
    """
    if sink.blocking:
        await anyio.to_thread.run_sync(sink.write, record)
    else:
        sink.write(record)


def record_data(record: AuditRecord, redactor: Redactor) -> dict[str, Any]:
    """The record as one JSON object: optional fields only when set, secrets redacted."""
    data = {name: getattr(record, name) for name in _FIELDS}
    for name in _OPTIONAL:  # a call's line stays as it was
        if data[name] is None:
            del data[name]
    if not redactor.empty:
        data = redactor.data(data)
    return data


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class AuditLog:
    """Appends :class:`AuditRecord` lines to a file (or keeps the newest in memory).

    The file is opened once with ``O_APPEND`` and each record goes out as one
    ``write`` of one line: cheap on the call path (no open/close per call),
    never buffered in the process (a crash loses nothing already returned),
    and lines from several writers never interleave mid-line. A crash can cut
    the last line, never an earlier one.
    """

    def __init__(self, path: Path | None = None, redactor: Redactor | None = None) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        self.records: deque[AuditRecord] = deque(maxlen=MEMORY_RECORDS)
        self._lock = threading.Lock()
        self._fd: int | None = None
        self.keep_in_memory = path is None

    blocking = False
    """A local ``write`` is one system call: cheap enough for the event loop."""

    @property
    def degraded(self) -> bool:
        return False

    def admit(self) -> None:
        """A file (or memory) is always there to write to."""

    def write(self, record: AuditRecord) -> None:
        if self.keep_in_memory:
            with self._lock:
                self.records.append(record)
            return
        data = record_data(record, self.redactor)
        line = json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            os.write(self._open(), line.encode("utf-8"))

    def _open(self) -> int:
        if self._fd is None:
            assert self.path is not None
            make_private_dirs(self.path.parent)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return self._fd

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


_FIELDS: Final = tuple(f.name for f in fields(AuditRecord))
_OPTIONAL: Final = ("http_status", "path", "trace", "secrets")
_CALLER_NAMED: Final = ("catalog", "principal", "proxy_tool", "server", "tool", "outcome", "path")


def kept_records(sink: AuditSink | None) -> list[AuditRecord]:
    """What an in-memory :class:`AuditLog` holds, oldest first (nothing for any other sink)."""
    return list(sink.records) if isinstance(sink, AuditLog) else []
