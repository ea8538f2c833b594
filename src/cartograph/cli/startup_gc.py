"""Start-up with the cyclic garbage collector paused, then what start-up built frozen.

Importing the MCP SDK and pydantic builds a few hundred thousand objects
(model classes, their schemas and validators), and every 700 of them start
a collection that walks what was built so far: about a sixth of ``serve``'s
CPU before its first answer (``benchmarks/first_answer.py --imports`` and
docs/gateway.md, start-up). Nothing built while starting is garbage worth
finding, so the collector is off until the process serves; then
:func:`gc.freeze` moves every start-up object to the permanent generation,
which later collections never walk, and the collector is back on.

A pause never outlives its command: :func:`paused` restores the collector
on the way out whether or not :func:`resume` ran, and a collector that was
already off (a caller's choice) stays off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_paused: list[bool] = []
"""One entry per open pause: whether the collector was on when it began."""


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block (or until :func:`resume`), then as it was."""
    _paused.append(gc.isenabled())
    gc.disable()
    try:
        yield
    finally:
        resume()


def resume() -> None:
    """Freeze what start-up built and turn the collector back on (once per pause)."""
    if not _paused:
        return
    was_enabled = _paused.pop()
    gc.freeze()
    if was_enabled:
        gc.enable()


__all__ = ["paused", "resume"]
