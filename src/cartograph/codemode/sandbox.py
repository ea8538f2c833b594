"""A pool of Monty worker processes, and one program run in it under the run's limits.

Monty interprets the program in a separate ``monty`` process per session (a pool
of them, replaced when one dies), with no filesystem, network, environment or
subprocess unless mounted; here nothing is mounted. The limits are enforced
twice: inside the worker (:func:`sandbox_limits`: execution time, heap bytes,
recursion depth, host round trips, sleeping) and on the host, where the whole
run, waiting for a worker and inner calls included, sits in one deadline of
``wall_time``; past it the session is abandoned and Monty kills its worker.

The pool starts on the first run, not with the proxy: a catalog that lists
``run`` but never gets one spawns no process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from cartograph import error_codes as codes
from cartograph.codemode.failures import classify
from cartograph.config.model import CodeModeConfig
from cartograph.errors import CodeError

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty, OSPolicy, ResourceLimits

SCRIPT_NAME: Final = "program.py"
"""The name tracebacks give the program (its ``__file__`` is ``/program.py``)."""
SUSPENSIONS_PER_CALL: Final = 3
"""Host round trips one awaited inner call costs at most (the call, its future, a lookup)."""
SUSPENSION_HEADROOM: Final = 64
"""Round trips beyond the inner calls: global name lookups, ``asyncio`` futures, sleeps."""
KILL_GRACE: Final = 1.0
"""Seconds past an in-worker time limit before the pool kills a worker that did not stop."""
CLOSE_SETTLE: Final = 0.05
"""Seconds to let Monty finish closing its pool (measured: 0.01 s was enough, 50 of 50 runs)."""


def sandbox_limits(settings: CodeModeConfig) -> ResourceLimits:
    """What the worker itself enforces for one run (Monty's ``ResourceLimits``)."""
    return {
        "max_feed_duration_secs": settings.wall_time,
        "max_turn_duration_secs": settings.wall_time,
        "max_memory": settings.max_memory,
        "max_recursion_depth": settings.max_recursion_depth,
        "max_suspensions": settings.max_calls * SUSPENSIONS_PER_CALL + SUSPENSION_HEADROOM,
        "max_total_sleep_secs": settings.wall_time,
    }


def os_policy(settings: CodeModeConfig) -> OSPolicy:
    """The clock is the worker's (UTC); a sleep is real but bounded by the run's time."""
    return {"sleep": "system", "sleep_system_max": settings.wall_time, "timezone": "utc"}


@dataclass
class Printed:
    """The program's ``print`` output, kept up to a byte budget; the rest is counted."""

    budget: int
    parts: list[str] = field(default_factory=list)
    kept: int = 0
    dropped: int = 0

    def __call__(self, _stream: Literal["stdout", "stderr"], text: str) -> None:
        size = len(text.encode("utf-8"))
        room = self.budget - self.kept
        if size <= room:
            self.parts.append(text)
            self.kept += size
            return
        if room > 0:
            head = text.encode("utf-8")[:room].decode("utf-8", "ignore")
            self.parts.append(head)
            self.kept += len(head.encode("utf-8"))
        self.dropped += size - max(room, 0)

    @property
    def text(self) -> str:
        tail = f"\n[… {self.dropped} more bytes of output not kept]" if self.dropped else ""
        return "".join(self.parts) + tail


@dataclass(frozen=True)
class Execution:
    """A program that ran to its end: its last expression's value and what it printed."""

    value: Any
    printed: Printed


class Sandbox:
    """The worker pool of one catalog's code mode (see the module docstring)."""

    def __init__(self, *, workers: int) -> None:
        self.workers = workers
        self._pool: AsyncMonty | None = None
        self._lock = anyio.Lock()
        self._closed = False

    async def execute(
        self,
        code: str,
        settings: CodeModeConfig,
        *,
        globals_: Mapping[str, Any],
        functions: Mapping[str, Any],
        relayed: Mapping[str, str],
        printed: Printed,
    ) -> Execution:
        """Run ``code`` to its end; raises :class:`CodeError` with the failure's code.

        ``globals_`` are bound before the program starts; ``functions`` answer
        names the program leaves undefined; ``relayed`` names the refusals the
        bridge raised into it (their codes win over ``code_error``).
        """
        from cartograph.codemode._monty import monty

        pool = await self._ready()
        started = False
        try:
            with anyio.fail_after(settings.wall_time):
                async with pool.checkout(
                    script_name=SCRIPT_NAME,
                    limits=sandbox_limits(settings),
                    os_policy=os_policy(settings),
                ) as session:
                    started = True
                    value = await session.feed_run(
                        code,
                        inputs=dict(globals_),
                        external_lookup=dict(functions),
                        print_callback=printed,
                    )
        except TimeoutError:
            raise _deadline(settings, started) from None
        except monty.MontyError as exc:
            raise classify(exc, relayed) from None
        return Execution(value, printed)

    async def _ready(self) -> AsyncMonty:
        from cartograph.codemode._monty import monty

        async with self._lock:
            if self._closed:
                raise CodeError("the proxy is shutting down", code=codes.SHUTTING_DOWN)
            if self._pool is None:
                pool = monty.AsyncMonty(
                    min_processes=0,
                    max_processes=self.workers,
                    feed_duration_limit_grace=KILL_GRACE,
                    turn_duration_limit_grace=KILL_GRACE,
                )
                await pool.__aenter__()
                self._pool = pool
            return self._pool

    async def aclose(self) -> None:
        """Stop every worker; a later :meth:`execute` is refused with ``shutting_down``."""
        async with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)
            # Monty 1.4 finishes closing on threads of its own; an interpreter that exits
            # meanwhile aborts (SIGABRT: `cartograph run` would end 134, not 0), and no
            # event says when they are done.
            await anyio.sleep(CLOSE_SETTLE)


def _deadline(settings: CodeModeConfig, started: bool) -> CodeError:
    if not started:
        return CodeError(
            f"every sandbox worker ({settings.workers}) stayed busy for the run's "
            f"{settings.wall_time:g} s; retry, or ask the operator for more [code_mode] workers",
            code=codes.CODE_BUSY,
        )
    return CodeError(
        f"the run took longer than [code_mode] wall_time ({settings.wall_time:g} s); "
        "do less per run, or ask the operator for a longer wall_time",
        code=codes.CODE_TIMEOUT,
    )
