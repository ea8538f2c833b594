"""Where the demo federation is, and whether it is installed: shared by the demo tests."""

from __future__ import annotations

import sys
from pathlib import Path

from cartograph.demo.loopback import everything_available

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo"
CONFIG = DEMO / "cartograph.toml"
CLI = (sys.executable, "-m", "cartograph.cli.main")
INSTALLED = everything_available(DEMO) and (DEMO / ".runtime" / "time").is_dir()
SKIP_REASON = "the demo federation is not installed: run scripts/setup"
