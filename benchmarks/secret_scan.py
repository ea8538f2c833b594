"""What the secret scan costs per call: arguments in, a 10 KB result out (target: under 1 ms).

The two pipeline steps' own work, timed in-process on the shapes a call carries:

* ``arguments``: a small meta-call's arguments (a query, a path, a few options);
* ``result/<text>``: a ``CallToolResult`` of one 10 KB text block, scanned and
  redacted as the ``redact_secrets`` step does, for three kinds of text read
  from this repository so that they are real: prose (docs/gateway.md), Python
  source (where ``token``, ``key``, ``client`` and ``password`` abound and the
  prefilter lets most rules run) and JSON (a tool's structured listing);
* ``result/with-secrets``: the prose with an AWS key, a GitHub token, a private
  key block and an operator credential in it, so that redaction has work to do.

The scan holds five operator credentials throughout (exact-value search).
Reported per case: median and 95th percentile in microseconds of this thread's
CPU time (``time.thread_time``: a busy shared machine does not count the time the
scan waited for a core), after a warm-up; the one-time import and compile of
detect-secrets is reported on its own.

    .venv/bin/python benchmarks/secret_scan.py [--repeat 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cartograph.gateway.detectors import detectors  # noqa: E402
from cartograph.gateway.secret_scan import SecretScan  # noqa: E402

SIZE = 10 * 1024
CREDENTIALS = [f"operator-credential-{i}-Zq8xW2vT5kR9" for i in range(5)]
FAKE_SECRETS = (
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "x1Y2z3" * 6,
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    CREDENTIALS[2],
)


def _ten_kb(text: str) -> str:
    while len(text) < SIZE:
        text += text
    return text[:SIZE]


def texts() -> dict[str, str]:
    prose = _ten_kb((ROOT / "docs" / "gateway.md").read_text(encoding="utf-8"))
    source = _ten_kb((ROOT / "src" / "cartograph" / "gateway" / "pool.py").read_text("utf-8"))
    listing = [
        {
            "id": i,
            "title": f"issue {i}: the pool drops a session",
            "state": "open",
            "labels": ["bug"],
        }
        for i in range(400)
    ]
    mixed = prose[: SIZE - 400] + " ".join(FAKE_SECRETS)
    return {
        "prose": prose,
        "source": source,
        "json": _ten_kb(json.dumps(listing)),
        "with-secrets": mixed,
    }


def timed(run: Callable[[], Any], repeat: int) -> dict[str, float]:
    for _ in range(min(100, repeat)):
        run()
    samples = []
    for _ in range(repeat):
        start = time.thread_time()
        run()
        samples.append((time.thread_time() - start) * 1e6)
    samples.sort()
    return {
        "median_us": round(statistics.median(samples), 1),
        "p95_us": round(samples[int(len(samples) * 0.95)], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    start = time.perf_counter()
    rules = detectors()
    load_ms = (time.perf_counter() - start) * 1000
    scan = SecretScan(CREDENTIALS, rules)
    arguments = {"query": "open issues about the pool", "path": "/srv/repo", "limit": 20}
    report: dict[str, Any] = {
        "rules": len(rules.rules),
        "plugins": len(rules.kinds),
        "load_ms": round(load_ms, 1),
        "cases": {"arguments": timed(lambda: scan.kinds(arguments), args.repeat)},
    }
    for name, text in texts().items():
        result = CallToolResult(content=[TextContent(text=text)])
        run = lambda r=result: scan.call_result(r, redact=True)  # noqa: E731
        report["cases"][f"result/{name}"] = timed(run, args.repeat)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{report['rules']} rules from {report['plugins']} detect-secrets plugins, "
        f"loaded in {report['load_ms']} ms (once per process)"
    )
    for name, stats in report["cases"].items():
        print(f"  {name:22} median {stats['median_us']:8.1f} us   p95 {stats['p95_us']:8.1f} us")


if __name__ == "__main__":
    main()
