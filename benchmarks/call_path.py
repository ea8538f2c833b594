"""Which modules a ``call``'s arguments pass through before the gateway, counted by tracing.

One ``call`` goes from the official SDK client (in memory) through the proxy's MCP server
to a scriptable upstream. A profile hook watches every Cartograph function entered until
:meth:`Gateway.call` is; a module counts when one of its functions is handed the
arguments (the dict the agent sent, or the meta-call holding it) as a local. The figure
is what docs/architecture.md reports; this makes it a measurement, not a reading.

    .venv/bin/python benchmarks/call_path.py [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.support import scriptable  # noqa: E402
from tests.server.support import running  # noqa: E402

from cartograph.server.proxy import build_proxy_server  # noqa: E402

SOURCE = ROOT / "src" / "cartograph"


class Watch:
    """Modules whose functions received the arguments, in first-seen order, until the gateway."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.modules: list[str] = []
        self.visits: list[str] = []
        self.done = False

    def hook(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or self.done:
            return
        path = Path(frame.f_code.co_filename)
        if not path.is_relative_to(SOURCE):
            return
        module = path.relative_to(SOURCE).with_suffix("").as_posix()
        if module == "gateway/gateway" and frame.f_code.co_name == "call":
            self.done = True
            return
        if any(self._holds(value) for value in frame.f_locals.values()):
            if not self.visits or self.visits[-1] != module:
                self.visits.append(module)
            if module not in self.modules:
                self.modules.append(module)

    def _holds(self, value: Any, depth: int = 0) -> bool:
        if isinstance(value, dict):
            if self.marker in value.values():
                return True
            return depth < 2 and any(self._holds(v, depth + 1) for v in value.values())
        if depth < 2 and hasattr(value, "__dict__") and not isinstance(value, type):
            return any(self._holds(v, depth + 1) for v in vars(value).values())
        return False


async def measure() -> Watch:
    watch = Watch("cartograph-call-path-7f3a")
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            running(Path(tmp), scriptable("calc")) as handlers,
            Client(build_proxy_server(handlers), mode="legacy") as client,
        ):
            arguments = {"server": "calc", "tool": "echo", "arguments": {"text": watch.marker}}
            sys.setprofile(watch.hook)
            try:
                result = await client.call_tool("call", arguments)
            finally:
                sys.setprofile(None)
            assert watch.done, "the call never reached Gateway.call"
            assert not result.is_error, result
    return watch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    watch = anyio.run(measure)
    if parser.parse_args().json:
        print(json.dumps({"modules": watch.modules, "visits": watch.visits}))
        return
    packages = [m.split("/")[0] for m in watch.visits]
    crossings = sum(1 for a, b in itertools.pairwise(packages) if a != b)
    print(f"modules before the gateway: {len(watch.modules)}")
    for module in watch.modules:
        print(f"  {module}")
    print(f"visits: {len(watch.visits)} ({' -> '.join(watch.visits)})")
    print(f"package crossings: {crossings}")


if __name__ == "__main__":
    main()
