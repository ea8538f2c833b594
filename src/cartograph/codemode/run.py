"""One run: a program, its inputs and the caller's federation in; a :class:`RunReport` out.

A run is named by a W3C ``traceparent`` (:class:`RunId`): every audit record of
the run (the ``run`` call's own and one per inner call) carries the same one, so
``grep <run id>`` on the audit log finds exactly the run. What comes back is
what the program printed, its last expression's value as JSON, one line per
inner call, and on failure the coded error with the program's line and column:
intermediate results stay in the sandbox unless printed.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
from mcp.types import CallToolResult, TextContent

from cartograph import error_codes as codes
from cartograph.codemode.bridge import Bridge, CallLine, Federation
from cartograph.codemode.sandbox import Printed, Sandbox
from cartograph.codemode.values import encoded_value
from cartograph.config.model import CodeModeConfig
from cartograph.errors import CodeError


@dataclass(frozen=True)
class RunId:
    """A run's W3C ``traceparent``; its id is the trace-id and parent-id in the middle.

    Every audit record of the run carries this very ``traceparent``: the
    client's own when its ``run`` request sent one (the run joins its trace),
    else one minted for the run.
    """

    traceparent: str

    @classmethod
    def new(cls) -> RunId:
        return cls(f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01")

    @classmethod
    def of(cls, traceparent: str | None) -> RunId:
        """The run named by a request's ``traceparent``; a fresh one if it has none valid."""
        if traceparent is not None and _TRACEPARENT.fullmatch(traceparent):
            return cls(traceparent)
        return cls.new()

    @property
    def id(self) -> str:
        """``<trace-id>-<parent-id>``: what the reply names and ``grep`` finds in the audit log."""
        return self.traceparent[3:52]


_TRACEPARENT: Final = re.compile(
    r"[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}"
)


@dataclass(frozen=True)
class RunReport:
    """What a run sends back (see the module docstring)."""

    run: RunId
    value: Any
    printed: str
    calls: tuple[CallLine, ...]
    ms: float
    error: CodeError | None = None

    @property
    def outcome(self) -> str:
        return self.error.code if self.error is not None else "ok"

    def structured(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run": self.run.id,
            "value": self.value,
            "printed": self.printed,
            "calls": [c.render() for c in self.calls],
            "ms": round(self.ms, 1),
        }
        if self.error is not None:
            data["error"] = json.loads(json.dumps(self.error.to_dict(), default=str))
        return data

    def text(self) -> str:
        """The reply an agent reads: compact, the value as one JSON line.

        The run's id (hex, dear in tokens) is left to ``structuredContent`` and the audit log.
        """
        head = f"run {self.outcome} in {self.ms:.0f} ms"
        lines = [head if self.error is None else f"{head}: {self.error.message}"]
        if self.printed:
            lines += ["printed:", self.printed.rstrip("\n")]
        if self.error is None:
            lines.append("value: " + json.dumps(self.value, ensure_ascii=False))
        if self.calls:
            lines.append(f"calls ({len(self.calls)}):")
            lines += [f"  {line}" for line in grouped(self.calls)]
        return "\n".join(lines)

    def result(self) -> CallToolResult:
        """The ``run`` tool's reply; an error result (with its code) when the run failed."""
        return CallToolResult(
            content=[TextContent(text=self.text())],
            structured_content=self.structured(),
            is_error=self.error is not None,
        )


def grouped(calls: tuple[CallLine, ...]) -> list[str]:
    """The call log as the agent reads it: a run of like calls is one line (``×10``)."""
    lines: list[str] = []
    index = 0
    while index < len(calls):
        first = calls[index]
        end = index
        while (
            end + 1 < len(calls)
            and calls[end + 1].target == first.target
            and (calls[end + 1].outcome == first.outcome)
        ):
            end += 1
        if end == index:
            lines.append(first.render())
        else:
            spent = sum(c.ms for c in calls[index : end + 1])
            lines.append(f"{first.target} {first.outcome} ×{end - index + 1} {spent:.0f} ms")
        index = end + 1
    return lines


def check_request(code: Any, inputs: Any, settings: CodeModeConfig) -> dict[str, Any]:
    """Refuse a malformed request before any sandbox work; returns the inputs."""
    if not isinstance(code, str) or not code.strip():
        raise CodeError(
            'run needs "code": a non-empty Python program (a string)', code=codes.CODE_BAD_INPUTS
        )
    if len(code) > settings.max_code_chars:
        raise CodeError(
            f"the program is {len(code)} characters, over [code_mode] max_code_chars "
            f"({settings.max_code_chars})",
            code=codes.CODE_TOO_LONG,
            length=len(code),
            limit=settings.max_code_chars,
        )
    if inputs is None:
        return {}
    if not isinstance(inputs, Mapping) or not all(isinstance(k, str) for k in inputs):
        raise CodeError(
            '"inputs" is a JSON object; the program reads it as inputs["name"]',
            code=codes.CODE_BAD_INPUTS,
        )
    return dict(inputs)


async def run_program(
    sandbox: Sandbox,
    federation: Federation,
    settings: CodeModeConfig,
    code: str,
    inputs: Mapping[str, Any],
    *,
    run: RunId,
) -> RunReport:
    """Run ``code`` against ``federation`` under ``settings``; failures are in the report."""
    started = time.perf_counter()
    printed = Printed(settings.max_output_bytes)
    value: Any = None
    error: CodeError | None = None
    async with anyio.create_task_group() as group:
        bridge = Bridge(federation, settings, group)
        try:
            execution = await sandbox.execute(
                code,
                settings,
                globals_=bridge.globals(inputs),
                functions=bridge.functions(),
                relayed=bridge.relayed,
                printed=printed,
            )
            value, _ = encoded_value(execution.value, settings.max_output_bytes)
        except CodeError as exc:
            error = exc
        finally:
            group.cancel_scope.cancel()  # a call the program never awaited ends with the run
    if bridge.limit_hit and (error is None or error.code != codes.CODE_CALL_LIMIT):
        error = CodeError(
            f"the run reached [code_mode] max_calls ({settings.max_calls}); its later calls "
            "were refused",
            code=codes.CODE_CALL_LIMIT,
        )
    elapsed = (time.perf_counter() - started) * 1000.0
    return RunReport(run, value, printed.text, tuple(bridge.calls), elapsed, error)
