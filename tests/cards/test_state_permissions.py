"""The state directory is 0700 and its files 0600 whatever the umask (P-FS-1).

Issue 13: under ``umask 000`` the state directory came out 0777, so any local
user could add, replace or delete cards, caches and the accepted-versions
record. Each test runs the real commands with the umask cleared.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.catalog import save_catalog
from cartograph.catalog.model import Catalog
from cartograph.cli.main import build_app
from cartograph.gateway.audit import AuditLog, AuditRecord, utc_now
from cartograph.index.cache import EmbeddingCache
from cartograph.index.embedders import FakeEmbedder

pytestmark = pytest.mark.promise("P-FS-1")


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def _modes(root: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.stat().st_mode)
    return found


def test_keys_cards_trust_and_cache_are_private_under_umask_000(
    tmp_path: Path, catalog: Catalog, open_umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    state = tmp_path / "state"
    snapshot = tmp_path / "catalog.json"
    save_catalog(catalog, snapshot)
    runner = CliRunner()
    for args in (
        ("keys", "init", "--state-dir", str(state)),
        ("bootstrap", "--state-dir", str(state), "--catalog", str(snapshot)),
    ):
        assert runner.invoke(build_app(), list(args)).exit_code == 0
    EmbeddingCache(state).embed_cached(FakeEmbedder(8), ["read a file", "send mail"])
    modes = _modes(state)
    assert any(name.endswith(".key") for name in modes)
    assert any(name.startswith("cards/") for name in modes)
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (state / name).is_dir() else 0o600)
    }
    assert wrong == {}


def test_an_audit_log_in_a_new_folder_is_private_under_umask_000(
    tmp_path: Path, open_umask: None
) -> None:
    log = AuditLog(tmp_path / "logs" / "audit.jsonl")
    log.write(AuditRecord(utc_now(), "c", None, "call", None, None, 0.0, "ok", arguments=None))
    log.close()
    assert _modes(tmp_path / "logs") == {".": 0o700, "audit.jsonl": 0o600}
