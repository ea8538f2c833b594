"""Turn whatever the SDK, anyio or the OS raised into one typed upstream error.

Task groups wrap failures in ``ExceptionGroup``s; operators should never see
one. We pick the most telling leaf, map it to a stable code, and name the
server, the phase and (for stdio) the tail of the server's stderr.
"""

from __future__ import annotations

import asyncio
from typing import Final

import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from cartograph import error_codes as codes
from cartograph.config.model import ServerConfig
from cartograph.errors import (
    UpstreamError,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from cartograph.upstream.oauth import auth_server_error

# Leaves that only say "something else failed first" rank below real causes.
_NOISE: Final = (asyncio.CancelledError, GeneratorExit)


def leaves(exc: BaseException) -> list[BaseException]:
    """All non-group exceptions inside ``exc``, depth first."""
    if isinstance(exc, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in exc.exceptions:
            found.extend(leaves(inner))
        return found
    return [exc]


def root_cause(exc: BaseException) -> BaseException:
    """The most telling leaf: an existing Cartograph error, else the first non-noise leaf."""
    found = leaves(exc)
    for leaf in found:
        if isinstance(leaf, UpstreamError):
            return leaf
    for leaf in found:
        if not isinstance(leaf, _NOISE):
            return leaf
    return found[0] if found else exc


def translate_error(
    exc: BaseException, *, cfg: ServerConfig, phase: str, stderr_tail: str = ""
) -> UpstreamError:
    """Map ``exc`` to an :class:`UpstreamError` naming server, phase and stderr tail."""
    cause = root_cause(exc)
    if isinstance(cause, UpstreamError):
        return cause
    unreachable = _auth_server_unreachable(cause, cfg)
    if unreachable is not None:
        return unreachable
    error_type, code, what = _classify(cause, cfg, phase)
    message = f"upstream {cfg.name!r} ({cfg.transport}): {what} during {phase}"
    if stderr_tail:
        message += f"\n--- stderr tail ---\n{stderr_tail}"
    return error_type(message, code=code, server=cfg.name, phase=phase)


def _auth_server_unreachable(cause: BaseException, cfg: ServerConfig) -> UpstreamError | None:
    """``oauth_unreachable`` for a transport error on a request the OAuth flow made.

    The MCP endpoint answered (else its own request would have failed first) and
    asked for a token; the request that could not be sent went elsewhere: to the
    authorization server, which the error names.
    """
    if cfg.auth != "oauth" or not isinstance(cause, httpx2.TransportError) or cfg.url is None:
        return None
    try:
        url = cause.request.url
    except RuntimeError:  # raised without a request: nothing says where it went
        return None
    if url.copy_with(query=None, fragment=None) == httpx2.URL(cfg.url):
        return None
    return auth_server_error(cfg.name, codes.OAUTH_UNREACHABLE, url, f"no connection ({cause})")


def _classify(
    cause: BaseException, cfg: ServerConfig, phase: str
) -> tuple[type[UpstreamError], str, str]:
    if isinstance(cause, TimeoutError):
        limit = cfg.connect_timeout if phase == "connect" else cfg.call_timeout
        return UpstreamTimeout, codes.UPSTREAM_TIMEOUT, f"no answer within {limit:g}s"
    if isinstance(cause, MCPError):
        return _classify_rpc(cause, cfg, phase)
    if isinstance(cause, FileNotFoundError) and cfg.transport == "stdio":
        return (
            UpstreamUnavailable,
            codes.UPSTREAM_COMMAND_NOT_FOUND,
            f"command {cfg.command!r} not found (check the path or run scripts/setup)",
        )
    if isinstance(cause, PermissionError) and cfg.transport == "stdio":
        return UpstreamUnavailable, codes.UPSTREAM_SPAWN_FAILED, f"cannot execute {cfg.command!r}"
    if isinstance(cause, httpx2.HTTPStatusError):
        status = cause.response.status_code
        return UpstreamUnavailable, codes.UPSTREAM_HTTP_STATUS, f"HTTP {status} from the endpoint"
    if isinstance(cause, httpx2.TransportError | ConnectionError):
        return (
            UpstreamUnavailable,
            codes.UPSTREAM_UNREACHABLE,
            f"cannot reach the endpoint ({cause})",
        )
    if isinstance(cause, ValidationError | ValueError):
        return UpstreamProtocolError, codes.UPSTREAM_PROTOCOL, "malformed message from the server"
    if isinstance(cause, OSError):
        return (
            UpstreamUnavailable,
            codes.UPSTREAM_UNAVAILABLE,
            f"OS error: {cause.strerror or cause}",
        )
    return UpstreamUnavailable, codes.UPSTREAM_UNAVAILABLE, f"{type(cause).__name__}: {cause}"


def _classify_rpc(
    cause: MCPError, cfg: ServerConfig, phase: str
) -> tuple[type[UpstreamError], str, str]:
    code = cause.error.code
    if code == types.CONNECTION_CLOSED:
        if phase == "connect" and cfg.transport == "stdio":
            return UpstreamUnavailable, codes.UPSTREAM_EXITED, "server process exited"
        return UpstreamUnavailable, codes.UPSTREAM_CLOSED, "connection closed"
    if code == types.REQUEST_TIMEOUT:
        return UpstreamTimeout, codes.UPSTREAM_TIMEOUT, "request timed out"
    return (
        UpstreamProtocolError,
        codes.UPSTREAM_RPC_ERROR,
        f"JSON-RPC error {code}: {cause.error.message}",
    )
