"""The wheel a user installs: built from this checkout, installed into a fresh venv, run elsewhere.

Dependencies are not downloaded here: the fresh venv sees the dev environment's
third-party packages through a ``.pth`` file, while Cartograph itself comes
only from the wheel (``--no-deps``). What this proves is what the wheel
carries — the shipped model and its hash pins, the demo recipe, the entry
point — and that nothing reaches back into the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)]
    subprocess.run(build, cwd=REPO, check=True, capture_output=True, text=True, timeout=600)
    (built,) = out.glob("cartograph-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    python = root / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]
    # A clean environment: with the checkout on PYTHONPATH, pip would call Cartograph installed.
    subprocess.run(pip, check=True, capture_output=True, text=True, timeout=300, env=_clean_env())
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The dev environment's third-party packages, but never its (editable) Cartograph.
    Path(site, "zz-dev-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return root


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "CARTOGRAPH_CONFIG"}}
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "cartograph"), *args],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _names(wheel: Path) -> Iterator[str]:
    with zipfile.ZipFile(wheel) as archive:
        yield from archive.namelist()


def test_the_wheel_carries_the_model_its_pins_and_the_demo_recipe(wheel: Path) -> None:
    names = set(_names(wheel))
    minilm = "cartograph/index/embedders/minilm/"
    for shipped in ("model.onnx", "tokenizer.json", "SHA256SUMS", "LICENSE-MIT-MiniLM.txt"):
        assert minilm + shipped in names
    recipe = "cartograph/demo/recipe/"
    for shipped in ("cartograph.toml", "package-lock.json", "python/time.txt", "bin/loopback.cjs"):
        assert recipe + shipped in names
    assert not [n for n in names if n.startswith("tests/") or "node_modules" in n]


def test_the_installed_cli_runs_from_the_wheel_not_the_checkout(venv: Path, tmp_path: Path) -> None:
    probe = (
        "import cartograph, cartograph.demo.federation as f; "
        "print(cartograph.__file__); print(f.recipe_dir())"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    package, recipe = done.stdout.splitlines()
    assert Path(package).is_relative_to(venv)
    assert Path(recipe).is_relative_to(venv)
    assert _run(venv, tmp_path, "version").returncode == 0


def test_the_installed_embedder_verifies_its_pins_and_embeds_offline(venv: Path) -> None:
    probe = (
        "from cartograph.index.embedders import get_embedder; "
        "v = get_embedder().embed(['what time is it in Tokyo']); print(v.shape)"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        cwd=venv,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 384)"


def test_the_demo_outside_a_checkout_says_to_run_setup_first(venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "demo-home"
    done = _run(venv, tmp_path, "demo", "--dir", str(home))
    assert done.returncode != 0
    assert "demo_not_installed" in done.stderr or "demo --setup" in done.stderr
    assert "Traceback" not in done.stderr
