"""One heavy request must not stall the others (P-REL-10).

Attack: a client sends ``discover`` with a multi-megabyte task, or a heavy but
allowed one, while other clients call ``status`` and ``call``. The embedder
below blocks inside ``embed`` for a marked task until the test lets it go, so
the tests can observe, by the order of events rather than by timing, whether
other requests are served while ranking is in progress.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from cartograph.config.model import Config, IndexConfig
from cartograph.errors import CartographError
from cartograph.index.embedders.base import Vectors
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.http._audit import HttpAudit
from cartograph.server.routed import RoutedHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.helpers.support import config_for, scriptable
from tests.http.support import Ledger, RecordingSurface
from tests.server.support import call, code, text

HEAVY = "heavyweight"
"""A word in a task that makes :class:`GatedEmbedder` block until released."""
GATE_LIMIT = 30.0
"""The embedder's own bound: on a blocked event loop nothing else could release it."""


class GatedEmbedder(FakeEmbedder):
    """The fake embedder, but a text naming :data:`HEAVY` waits for ``release``.

    ``entered`` counts the heavy texts currently inside ``embed``; both are
    threading primitives because ``embed`` runs in a worker thread (or, before
    the fix, on the event loop itself).
    """

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)
        self.seen: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.append(max((len(t) for t in texts), default=0))
        if any(HEAVY in t for t in texts):
            self.entered.release()
            self.release.wait(GATE_LIMIT)
        return super().embed(texts)

    async def wait_entered(self, limit: float = 10.0) -> bool:
        """True once a heavy text is inside ``embed`` (waits in a thread, bounded)."""
        return await anyio.to_thread.run_sync(self.entered.acquire, True, limit)


@asynccontextmanager
async def serving(
    tmp_path: Path, embedder: GatedEmbedder, **index: Any
) -> AsyncIterator[ProxyHandlers]:
    base = config_for(tmp_path, scriptable("calc"))
    config = Config(
        state_dir=base.state_dir,
        servers=base.servers,
        index=IndexConfig(embedder="fake", **index),
        gateway=base.gateway,
    )
    runtime = await CatalogRuntime.start(
        config, config.servers, unsafe_throwaway_key=True, embedder=embedder
    )
    try:
        yield ProxyHandlers(runtime, catalog="default")
    finally:
        embedder.release.set()
        await runtime.aclose()


async def discover(h: ProxyHandlers, task: str, client: str = "heavy") -> Any:
    return await h.call_tool("discover", {"task": task, "k": 3}, principal=None, client=client)


@pytest.mark.anyio
@pytest.mark.promise("P-REL-10")
async def test_a_four_megabyte_task_is_refused_as_task_too_long_before_any_embedding(
    tmp_path: Path,
) -> None:
    embedder = GatedEmbedder()
    async with serving(tmp_path, embedder, max_task_chars=4000) as h:
        embedded_before = len(embedder.seen)
        huge = "add two integers " * 250_000  # ~4.2 MB
        refused = await discover(h, huge)
        assert code(refused) == "task_too_long"
        error = refused.structured_content["error"]
        assert (error["limit"], error["length"]) == (4000, len(huge))
        assert "index.max_task_chars" in error["message"]
        assert len(embedder.seen) == embedded_before  # nothing was embedded for it
        at_limit = await discover(h, ("add two integers " * 300)[:4000])
        assert not at_limit.is_error


@pytest.mark.anyio
@pytest.mark.promise("P-REL-10")
async def test_status_and_calls_of_other_clients_complete_while_a_heavy_discover_runs(
    tmp_path: Path,
) -> None:
    embedder = GatedEmbedder()
    events: list[str] = []
    async with serving(tmp_path, embedder) as h:

        async def heavy() -> None:
            found = await discover(h, f"{HEAVY}: add two integers")
            events.append("discover done" if not found.is_error else "discover failed")

        with anyio.fail_after(GATE_LIMIT + 30):
            async with anyio.create_task_group() as group:
                group.start_soon(heavy)
                assert await embedder.wait_entered()
                status = await h.call_tool("status", {}, principal=None, client="other")
                added = await call(h, "calc", "add", client="other", a=2, b=3)
                events.append("others done")
                embedder.release.set()
        assert not status.is_error
        assert text(added) == "5"
        # Before the fix the discover ranked on the event loop: nothing else ran
        # until it finished, so "others done" came second.
        assert events == ["others done", "discover done"]


@pytest.mark.anyio
@pytest.mark.promise("P-REL-10")
async def test_concurrent_discovers_beyond_cpu_workers_wait_for_a_free_slot(
    tmp_path: Path,
) -> None:
    embedder = GatedEmbedder()
    async with serving(tmp_path, embedder, cpu_workers=1) as h:
        done: list[str] = []

        async def heavy(name: str) -> None:
            found = await discover(h, f"{HEAVY} {name}: add two integers", client=name)
            assert not found.is_error
            done.append(name)

        with anyio.fail_after(GATE_LIMIT + 30):
            async with anyio.create_task_group() as group:
                group.start_soon(heavy, "first")
                assert await embedder.wait_entered()
                group.start_soon(heavy, "second")
                # The one CPU slot is taken: the second waits outside the embedder
                # while the loop keeps serving.
                status = await h.call_tool("status", {}, principal=None, client="other")
                assert not status.is_error
                assert not await embedder.wait_entered(limit=0.5)
                embedder.release.set()
        assert sorted(done) == ["first", "second"]


class GatedAudit:
    """A database-like audit sink (``blocking``): the write of a ``gated`` record waits.

    It stands in for a PostgreSQL round trip that is slow (a busy or distant
    database); the records are kept in memory so the test can see them.
    """

    blocking = True
    degraded = False

    def __init__(self, gated: str) -> None:
        self.gated = gated
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)
        self.records: list[str] = []

    def admit(self) -> None:
        return None

    def write(self, record: Any) -> None:
        if record.proxy_tool == self.gated:
            self.entered.release()
            self.release.wait(GATE_LIMIT)
        self.records.append(f"{record.proxy_tool} {record.outcome}")

    def close(self) -> None:
        return None


@pytest.mark.anyio
@pytest.mark.promise("P-REL-10")
async def test_a_slow_audit_write_of_a_resource_read_does_not_stall_other_clients(
    tmp_path: Path,
) -> None:
    """Content requests (resources, prompts, completion) wrote their record on the event loop.

    Tool calls already ran a blocking sink's write in a worker thread; a
    ``resources/read`` did not, so one slow database insert stopped every other
    request of the process until it returned.
    """
    sink = GatedAudit("resources/read")
    events: list[str] = []
    async with serving(tmp_path, GatedEmbedder()) as served:
        h = ProxyHandlers(served.runtime, catalog="default", audit=sink)

        async def read() -> None:
            with pytest.raises(CartographError):  # no such resource: refused, still audited
                await h.read_resource("cartograph://default/calc/none", principal=None)
            events.append("read audited")

        with anyio.fail_after(GATE_LIMIT + 30):
            async with anyio.create_task_group() as group:
                group.start_soon(read)
                entered = await anyio.to_thread.run_sync(sink.entered.acquire, True, 10.0)
                status = await h.call_tool("status", {}, principal=None, client="other")
                events.append("status done")
                sink.release.set()
    assert entered and not status.is_error
    assert events == ["status done", "read audited"]
    assert sink.records[-1].startswith("resources/read ")


@pytest.mark.anyio
@pytest.mark.promise("P-REL-10")
async def test_a_slow_audit_write_of_a_routed_refusal_does_not_stall_other_clients() -> None:
    """The routed mount audits a call it refuses (an unknown catalog) itself, off the loop too."""
    sink = GatedAudit("discover")
    routed = RoutedHandlers({"solo": RecordingSurface("solo", Ledger())}, audit=sink)
    events: list[str] = []

    async def refused() -> None:
        result = await routed.call_tool("discover", {"catalog": "nosuch"}, principal=None)
        events.append(f"refusal audited: {code(result)}")

    with anyio.fail_after(GATE_LIMIT + 30):
        async with anyio.create_task_group() as group:
            group.start_soon(refused)
            entered = await anyio.to_thread.run_sync(sink.entered.acquire, True, 10.0)
            status = await routed.call_tool("status", {}, principal=None)
            events.append("status done")
            sink.release.set()
    assert entered and not status.is_error
    assert events == ["status done", "refusal audited: unknown_catalog"]


@pytest.mark.anyio
@pytest.mark.promise("P-REL-10")
async def test_a_slow_audit_write_of_an_http_refusal_leaves_the_event_loop_free() -> None:
    """401s, bad Hosts and requests refused while draining cost a client no credential.

    Each is audited; with a database sink a flood of them wrote one insert
    each on the event loop, so unauthenticated requests could stall everyone.
    """
    sink = GatedAudit("POST")
    audit = HttpAudit(sink)
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/mcp/default"}
    events: list[str] = []

    async def refused() -> None:
        await audit.refused(scope, 401, "auth_required")
        events.append("refusal audited")

    with anyio.fail_after(GATE_LIMIT + 30):
        async with anyio.create_task_group() as group:
            group.start_soon(refused)
            entered = await anyio.to_thread.run_sync(sink.entered.acquire, True, 10.0)
            events.append("loop free")
            sink.release.set()
    assert entered
    assert events == ["loop free", "refusal audited"]
    assert sink.records == ["POST auth_required"]
