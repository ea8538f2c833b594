"""Start-up with the cyclic garbage collector paused, then what start-up built frozen.

Importing the MCP SDK and pydantic builds a few hundred thousand objects
(model classes, their schemas and validators), and every 700 of them start
a collection that walks what was built so far: a tenth of ``serve``'s CPU
before its first answer (docs/gateway.md, "What the first second is made
of"). Nothing built while starting is garbage worth finding, so:

1. :func:`paused`: the collector is off while the process starts;
2. :func:`resume`, once the runtime is up: :func:`gc.freeze` moves every
   start-up object to the permanent generation, so the collections that the
   first requests start do not walk them, and the collector is back on;
3. :func:`settle`, once the upstreams have connected: the frozen objects go
   back to the oldest generation. A frozen object is never collected, so an
   index that start-up built and a drift rebuild replaced would otherwise
   stay in memory for good if it sat in a reference cycle.

A pause never outlives its block: :func:`paused` resumes on the way out
whether or not :func:`resume` ran, and a collector its caller had turned off
stays off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_paused: list[bool] = []
"""One entry per open pause: whether the collector was on when it began."""
_frozen: list[bool] = []
"""Non-empty while objects frozen by :func:`resume` wait for :func:`settle`."""


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
    _frozen[:] = [True]
    if was_enabled:
        gc.enable()


def settle() -> None:
    """Hand what :func:`resume` froze back to the collector (nothing if it froze nothing)."""
    if _frozen:
        _frozen.clear()
        gc.unfreeze()


__all__ = ["paused", "resume", "settle"]
