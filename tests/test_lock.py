"""Every machine installs the same versions: the locks agree with what they lock.

``uv.lock`` fixes Cartograph's development, test, demo and CI environment
(``scripts/setup`` runs ``uv sync --locked``); ``demo/python/NAME.txt`` fixes
each demo Python server's, compiled from ``scripts/locks/demo/NAME.in``. A lock
that disagrees with its input is a machine that installs something nobody
tested, so these fail until ``bash scripts/lock`` is run and committed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
PIN: Final = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def uv_binary() -> str:
    """The uv that scripts/setup installs (hash-pinned), or one on PATH."""
    local = ROOT / ".tools" / "uv" / "bin" / "uv"
    if local.is_file():
        return str(local)
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv is not installed: run `bash scripts/setup` (it installs .tools/uv)")
    return found


def lock_check(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    return subprocess.run(
        [uv_binary(), "lock", "--check", "--offline", "--project", str(project)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )


def test_uv_lock_agrees_with_pyproject() -> None:
    done = lock_check(ROOT)
    assert done.returncode == 0, f"uv.lock is stale; run `bash scripts/lock`:\n{done.stderr}"


def test_a_changed_requirement_makes_the_lock_check_fail(tmp_path: Path) -> None:
    """The check above can fail: one bumped lower bound is caught."""
    for name in ("pyproject.toml", "uv.lock", "setup.py", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    assert '"rich>=13",' in text
    pyproject.write_text(text.replace('"rich>=13",', '"rich>=13.1",'), encoding="utf-8")
    done = lock_check(tmp_path)
    assert done.returncode != 0
    assert "needs to be updated" in done.stderr


def pins(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = PIN.match(line)
        if match:
            found[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return found


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in (ROOT / "scripts" / "locks" / "demo").glob("*.in"))
)
def test_demo_server_lock_pins_its_input_with_hashes(name: str) -> None:
    wanted = pins(ROOT / "scripts" / "locks" / "demo" / f"{name}.in")
    locked_path = ROOT / "demo" / "python" / f"{name}.txt"
    locked = pins(locked_path)
    assert wanted, f"{name}.in pins nothing"
    mismatched = {k: (v, locked.get(k)) for k, v in wanted.items() if locked.get(k) != v}
    assert not mismatched, f"demo/python/{name}.txt disagrees with its input: {mismatched}"
    blocks = re.split(r"\n(?=[A-Za-z0-9])", locked_path.read_text(encoding="utf-8"))
    unhashed = [b.split()[0] for b in blocks if PIN.match(b) and "--hash=sha256:" not in b]
    assert not unhashed, f"requirements without a hash: {unhashed}"


def test_every_demo_server_has_a_lock_input() -> None:
    locks = {p.stem for p in (ROOT / "demo" / "python").glob("*.txt")}
    inputs = {p.stem for p in (ROOT / "scripts" / "locks" / "demo").glob("*.in")}
    assert locks == inputs
