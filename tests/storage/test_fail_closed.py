"""The proxy with its audit trail in PostgreSQL: a database outage with no spool fails closed.

A real runtime (stdio upstream, in-memory attestation), the real handlers, a
real PostgreSQL server that the test stops. ``count`` increments a counter in
the upstream process, so the test can tell whether a refused call reached it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.config.model import StorageConfig
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from cartograph.storage import audit as audit_module
from tests.helpers.postgres import Postgres
from tests.helpers.support import config_for, scriptable
from tests.server.support import code, text

pytestmark = pytest.mark.anyio

COUNT = {"server": "calc", "tool": "count", "arguments": {}}


async def test_with_no_spool_an_outage_refuses_calls_before_the_upstream_and_recovers(
    postgres: Postgres,
    storage: StorageConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(audit_module, "RETRY_INTERVAL", 0.0)
    monkeypatch.setattr(audit_module, "MAX_WAIT", 0.2)
    config = config_for(tmp_path / "state", scriptable("calc"), mode="pooled")
    config = config.model_copy(update={"storage": storage.model_copy(update={"spool_records": 0})})
    runtime = await CatalogRuntime.start(
        config, config.servers, unsafe_throwaway_key=True, share_sessions=True
    )
    try:
        handlers = ProxyHandlers(runtime, catalog="default")
        first = await handlers.call_tool("call", COUNT, principal=None)
        assert text(first) == "1"
        postgres.stop()
        try:
            ran_unaudited = await handlers.call_tool("call", COUNT, principal=None)
            refused = await handlers.call_tool("call", COUNT, principal=None)
        finally:
            postgres.start()
        back = await handlers.call_tool("call", COUNT, principal=None)
    finally:
        await runtime.aclose()
    # The upstream ran the second call, but its answer is withheld: no record, no result.
    assert code(ran_unaudited) == "audit_unavailable"
    # The third never reached the upstream: refused before any upstream I/O.
    assert code(refused) == "audit_unavailable"
    assert text(back) == "3"
