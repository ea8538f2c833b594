"""`serve` starts with the cyclic collector paused, serves with it on (startup_gc.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from cartograph import startup_gc


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    startup_gc.settle()
    if was_enabled:
        gc.enable()
    gc.unfreeze()


def test_the_collector_is_off_while_starting_and_back_on_once_resumed() -> None:
    with startup_gc.paused():
        assert not gc.isenabled()
        startup_gc.resume()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # the first requests' collections skip start-up
    assert gc.isenabled()


def test_what_start_up_froze_is_collectable_again_once_settled() -> None:
    with startup_gc.paused():
        startup_gc.resume()
    assert gc.get_freeze_count() > 0

    startup_gc.settle()

    assert gc.get_freeze_count() == 0


def test_settling_unfreezes_nothing_start_up_did_not_freeze(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counted as calls, not as the freeze count: any thread of the test process
    # may freeze or free objects meanwhile, which moves the count either way.
    unfreeze = gc.unfreeze
    calls: list[None] = []
    monkeypatch.setattr(startup_gc, "_frozen", [])
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append(None))
    gc.freeze()  # someone else's freeze, e.g. before a fork
    try:
        startup_gc.settle()
    finally:
        unfreeze()

    assert calls == []


def test_a_pause_ends_with_its_block_even_when_start_up_fails() -> None:
    with pytest.raises(RuntimeError), startup_gc.paused():
        raise RuntimeError("the runtime did not start")
    assert gc.isenabled()


def test_resuming_twice_or_without_a_pause_changes_nothing() -> None:
    startup_gc.resume()
    assert gc.isenabled()
    with startup_gc.paused():
        startup_gc.resume()
        gc.disable()  # someone else's choice after the pause ended
        startup_gc.resume()
        assert not gc.isenabled()


def test_a_collector_its_caller_turned_off_stays_off() -> None:
    gc.disable()
    with startup_gc.paused():
        startup_gc.resume()
    assert not gc.isenabled()
