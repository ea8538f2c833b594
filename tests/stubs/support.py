"""The strict type check the stub tests run over generated code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def mypy_strict(cwd: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    """One ``mypy --strict`` run over generated code, with the project's config."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(cwd / ".mypy_cache"),
            "--no-error-summary",
            "--show-error-codes",
            "--hide-error-context",
            *targets,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
