"""Build the SDK transport for one configured upstream: stdio, streamable HTTP or SSE.

One function per transport; the session never needs to know which it got.
"""

from __future__ import annotations

import os
import shlex
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Final, TextIO

import httpx2
from mcp.client._transport import Transport
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cartograph.config.model import ServerConfig
from cartograph.telemetry import inject
from cartograph.upstream import _stdio_lines

_stdio_lines.install()  # before any stdio session: large replies read in linear time

HTTP_READ_TIMEOUT: Final = 300.0
"""Long enough for a server-sent event stream to idle between messages."""

SHEBANG_PROBE_BYTES: Final = 256


async def build_transport(
    cfg: ServerConfig,
    stack: AsyncExitStack,
    *,
    stderr: TextIO | None,
    auth: httpx2.Auth | None = None,
) -> Transport:
    """A not-yet-entered transport for ``cfg``; resources it needs go on ``stack``.

    An ``auth = "oauth"`` server gets the SDK's OAuth provider over its token
    file (``upstream/oauth.py``) unless ``auth`` is given.
    """
    if cfg.transport == "stdio":
        return _stdio(cfg, stderr)
    if auth is None and cfg.auth == "oauth":
        from cartograph.upstream.oauth import oauth_auth

        auth = oauth_auth(cfg)
    if cfg.transport == "sse":
        return _sse(cfg, auth)
    return await _streamable_http(cfg, stack, auth)


def _stdio(cfg: ServerConfig, stderr: TextIO | None) -> Transport:
    command, args = stdio_command(cfg)
    params = StdioServerParameters(
        command=command, args=args, env=dict(cfg.env) or None, cwd=cfg.cwd
    )
    if stderr is None:
        return stdio_client(params)
    return stdio_client(params, errlog=stderr)


async def _streamable_http(
    cfg: ServerConfig, stack: AsyncExitStack, auth: httpx2.Auth | None
) -> Transport:
    assert cfg.url is not None  # the loader guarantees a URL for HTTP transports
    timeout = httpx2.Timeout(cfg.connect_timeout, read=HTTP_READ_TIMEOUT)
    http_client = traced(
        create_mcp_http_client(headers=dict(cfg.headers) or None, timeout=timeout, auth=auth)
    )
    await stack.enter_async_context(http_client)
    return streamable_http_client(cfg.url, http_client=http_client)


def _sse(cfg: ServerConfig, auth: httpx2.Auth | None) -> Transport:
    assert cfg.url is not None
    return sse_client(
        cfg.url,
        headers=dict(cfg.headers) or None,
        timeout=cfg.connect_timeout,
        sse_read_timeout=HTTP_READ_TIMEOUT,
        httpx_client_factory=_traced_factory,
        auth=auth,
    )


def traced(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """``client``, stamping each request with the W3C ``traceparent`` of the current span.

    The SDK's session client lives as long as the upstream session, so per-call
    headers cannot be passed to it; a request hook can. The SDK runs each
    message's POST in the context of the task that sent the message, so the
    current span there is the one of the call being made (its own client span,
    a child of Cartograph's upstream-call span). No span, no header.
    """
    client.event_hooks = {
        **client.event_hooks,
        "request": [*client.event_hooks.get("request", []), _stamp_traceparent],
    }
    return client


async def _stamp_traceparent(request: httpx2.Request) -> None:
    inject(request.headers)


def _traced_factory(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    return traced(create_mcp_http_client(headers=headers, timeout=timeout, auth=auth))


def stdio_command(cfg: ServerConfig) -> tuple[str, list[str]]:
    """The argv to spawn, working around script files without the run bit.

    npm's ``.bin`` shims and some packages' entry scripts are installed
    without execute permission; spawning them fails with EACCES. When the
    command is such a file and starts with a shebang, run its interpreter
    with the script as the first argument instead (``node <script>``).
    """
    assert cfg.command is not None
    command, args = cfg.command, list(cfg.args)
    path = _command_path(command, cfg.cwd)
    if path is None or os.access(path, os.X_OK):
        return command, args
    interpreter = _shebang(path)
    if interpreter is None:
        return command, args
    return interpreter[0], [*interpreter[1:], str(path), *args]


def _command_path(command: str, cwd: Path | None) -> Path | None:
    if os.sep not in command:
        return None
    path = Path(command)
    if not path.is_absolute() and cwd is not None:
        path = cwd / path
    return path if path.is_file() else None


def _shebang(path: Path) -> list[str] | None:
    try:
        with path.open("rb") as handle:
            head = handle.read(SHEBANG_PROBE_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    parts = shlex.split(line)
    if parts and Path(parts[0]).name == "env":
        parts = [p for p in parts[1:] if not p.startswith("-")]
    return parts or None


def describe_endpoint(cfg: ServerConfig) -> str:
    """A human-readable endpoint with no secrets: the URL without userinfo or query."""
    if cfg.url is not None:
        parsed = httpx2.URL(cfg.url)
        return str(parsed.copy_with(userinfo=b"", query=None, fragment=None))
    assert cfg.command is not None
    return shlex.join([cfg.command, *cfg.args])
