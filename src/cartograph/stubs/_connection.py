"""The async side of the stub runtime: one SDK client session to `cartograph serve`.

Kept apart from :mod:`cartograph.stubs.runtime` so that the module generated
code imports stays small: type-checking a generated package does not pull the
whole SDK through mypy, and importing a stub module does not import the SDK
until the first call.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx2
import mcp_types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from cartograph import error_codes as codes
from cartograph.errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable
from cartograph.stubs.targets import HttpTarget, StdioTarget, Target

_HTTP_TIMEOUT: Final = 30.0
_HTTP_READ_TIMEOUT: Final = 300.0  # the SDK's own default: a response stream may stay open


@dataclass(frozen=True)
class RawResult:
    """A `call` result as plain JSON data (no SDK types leave this module)."""

    content: tuple[dict[str, Any], ...]
    structured: Any
    is_error: bool


class Connection:
    """A live session to `cartograph serve`, calling its `call` tool."""

    def __init__(self, client: Client, call_tool: str, timeout: float) -> None:
        self._client = client
        self._call_tool = call_tool
        self._timeout = timeout

    async def call(self, server: str, tool: str, arguments: Mapping[str, object]) -> RawResult:
        payload = {"server": server, "tool": tool, "arguments": dict(arguments)}
        try:
            result = await self._client.call_tool(
                self._call_tool, payload, read_timeout_seconds=self._timeout
            )
        except TimeoutError as exc:
            raise UpstreamTimeout(
                f"`cartograph serve` did not answer {server}/{tool} within {self._timeout}s; "
                "raise CARTOGRAPH_STUBS_TIMEOUT or check the upstream with `cartograph status`",
                server=server,
                tool=tool,
            ) from exc
        except MCPError as exc:
            raise UpstreamProtocolError(
                f"`cartograph serve` rejected the call to {server}/{tool}: {exc}",
                server=server,
                tool=tool,
            ) from exc
        return _raw(result)


def _raw(result: mcp_types.CallToolResult) -> RawResult:
    content = tuple(
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    )
    return RawResult(content, result.structured_content, result.is_error)


@asynccontextmanager
async def open_connection(
    target: Target,
    *,
    call_tool: str,
    timeout: float,  # noqa: ASYNC109 (per-call deadline, stored)
) -> AsyncIterator[Connection]:
    """Connect to `cartograph serve`; failures to reach it raise ``UpstreamUnavailable``."""
    async with AsyncExitStack() as stack:
        try:
            client = await stack.enter_async_context(await _client(target, stack))
        except (OSError, MCPError) as exc:
            raise UpstreamUnavailable(
                f"cannot reach `cartograph serve` at {target.describe()}: {exc}; start it or set "
                "CARTOGRAPH_STUBS_URL / CARTOGRAPH_STUBS_COMMAND",
                code=codes.SERVE_UNAVAILABLE,
            ) from exc
        yield Connection(client, call_tool, timeout)


async def _client(target: Target, stack: AsyncExitStack) -> Client:
    if isinstance(target, HttpTarget):
        headers = {"Authorization": f"Bearer {target.token}"} if target.token else None
        timeout = httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT)
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=timeout))
        return Client(streamable_http_client(target.url, http_client=http))
    # errlog passed explicitly: the SDK's default is the sys.stderr of the moment
    # mcp.client.stdio was first imported, which may be a stream without a file
    # descriptor (a CLI runner's capture) that the child process cannot inherit.
    return Client(stdio_client(_stdio_parameters(target), errlog=sys.stderr))


def _stdio_parameters(target: StdioTarget) -> StdioServerParameters:
    """Launch parameters; the proxy gets this process's environment (its config, its keys)."""
    command, *args = target.command
    env = dict(os.environ) if target.inherit_env else {}
    env.update(target.env)
    return StdioServerParameters(
        command=command, args=list(args), env=env, cwd=str(target.cwd) if target.cwd else None
    )
