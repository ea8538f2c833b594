"""Run every demo step around the loopback HTTP upstream, timing each."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any, Final

from cartograph.demo import render
from cartograph.demo.loopback import everything_available, everything_over_http
from cartograph.demo.steps import DEMO_STEPS, DemoContext, FederationView, load_demo_config
from cartograph.fsutil import atomic_write_text

HTTP_PORT_FILE: Final = "demo-http.port"


async def run_demo(
    config_path: Path,
    *,
    json_out: bool,
    http: bool = True,
    state_dir: Path | None = None,
    view: FederationView | None = None,
) -> dict[str, Any]:
    """Start the loopback HTTP upstream, then run :data:`DEMO_STEPS` in order.

    ``config_path`` must be absolute (its folder holds the demo's
    node_modules). ``state_dir`` replaces the config's (tests use a temporary
    one). ``view`` is how the federation is connected and shown (the CLI's
    progress bar and table; quiet when omitted). The result holds every
    step's output, ``timings`` and ``checks``;
    ``ok`` is False when any check failed.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    state = load_demo_config(config_path, state_dir).state_dir
    async with _maybe_http(config_path.parent, state, enabled=http):
        # Loaded again inside: the HTTP upstream's URL names the port it listens on.
        config = load_demo_config(config_path, state_dir)
        ctx = DemoContext(config_path, config, json_out, view or FederationView())
        async with ctx.exits:
            for name, step in DEMO_STEPS:
                step_started = time.perf_counter()
                await step(ctx)
                timings[name] = round(time.perf_counter() - step_started, 3)
    timings["total"] = round(time.perf_counter() - started, 3)
    results = {
        **ctx.results,
        "timings": timings,
        "checks": ctx.checks,
        "ok": all(c["ok"] for c in ctx.checks),
    }
    if not json_out:
        render.summary(results)
    return results


def _maybe_http(
    demo_dir: Path, state_dir: Path, *, enabled: bool
) -> AbstractAsyncContextManager[int | None]:
    if enabled and everything_available(demo_dir):
        return _http_upstream(demo_dir, state_dir / HTTP_PORT_FILE)
    if enabled:
        render.stderr.print("[yellow]demo HTTP upstream not installed; run scripts/setup[/]")
    return nullcontext(None)


@asynccontextmanager
async def _http_upstream(demo_dir: Path, port_file: Path) -> AsyncIterator[int]:
    """The loopback upstream on the port it had last time, so its card stays unchanged."""
    async with everything_over_http(demo_dir, port=_remembered_port(port_file)) as port:
        if _remembered_port(port_file) != port:
            atomic_write_text(port_file, f"{port}\n")
        yield port


def _remembered_port(port_file: Path) -> int | None:
    try:
        return int(port_file.read_text().strip())
    except (OSError, ValueError):
        return None
