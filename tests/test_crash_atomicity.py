"""P-REL-9: a writer killed mid-write leaves the previous version of the file intact.

For every file Cartograph persists, a child process writes the next version
with the real code and is killed with SIGKILL at the instant it would rename
its fully written temporary file over the target — no ``except``/``finally``
runs, as in a power cut or an OOM kill. The test then checks that:

* the child really died there (a writer that wrote the target in place, and so
  never renamed anything, exits normally and fails the test);
* the file on disk is byte-identical to the previous version and still loads;
* the leftover temporary file does not stop the next write, which succeeds.

The SQLite usage log does not go through ``cartograph.fsutil``; SQLite's
write-ahead log keeps it whole. Its test kills the writer at ``COMMIT`` instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from cartograph.cards.bootstrap import attest_catalog
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import (
    SigningKey,
    load_private_key,
    load_public_key,
    write_private_key,
    write_public_key,
)
from cartograph.cards.manifest import MANIFEST_FILE, read_manifest, write_manifest
from cartograph.cards.store import ACCEPTED_FILE, CardStore
from cartograph.cards.trust import TrustSet, load_trust, save_trust
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.catalog.snapshot import load_catalog, save_catalog
from cartograph.cli.client_files import ServerSpec, install_entry
from cartograph.cli.connect import Connection, ProjectRecord
from cartograph.index.cache import EmbeddingCache
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.vector_store import VectorStore
from cartograph.learning.sqlite import SqliteUsageStore, usage_log_path
from cartograph.learning.store import SurfacedTool, TaskRecord

REPO = Path(__file__).resolve().parents[1]
KILLED = -signal.SIGKILL
NEVER_RENAMED = 3

# Runs in the child: die at the rename over any path matching the kind's target
# glob, then run the real writer for generation 2.
CHILD = f"""
import os, signal, sys
from pathlib import Path
from tests.test_crash_atomicity import FILES
kind, root = sys.argv[1], Path(sys.argv[2])
pattern = FILES[kind].target
real_replace = os.replace
def dying_replace(src, dst, *args, **kwargs):
    if Path(dst).resolve().match(str((root / pattern).resolve())):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_replace(src, dst, *args, **kwargs)
os.replace = dying_replace
FILES[kind].write(root, 2)
sys.exit({NEVER_RENAMED})
"""


def _key(generation: int) -> SigningKey:
    """A fixed key per generation, so parent and child sign alike."""
    return SigningKey(Ed25519PrivateKey.from_private_bytes(bytes([generation]) * 32))


SIGNER = _key(7)


def _catalog(generation: int) -> Catalog:
    tool = ToolDef(
        name="read_file",
        description=f"Read a file from disk (generation {generation}).",
        inputSchema={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    return Catalog(servers=(ServerDef(name="files", description="Files.", tools=(tool,)),))


def _attest(root: Path, generation: int) -> None:
    store = CardStore(root)
    attest_catalog(_catalog(generation), store=store, key=SIGNER, generator=TemplateGenerator())


def _cards(root: Path) -> Any:
    verified = CardStore(root).load_verified(TrustSet.of(SIGNER.public))
    return {server: card.version for server, card in verified.items()}


def _manifest_write(root: Path, generation: int) -> None:
    _attest(root, generation)
    write_manifest(CardStore(root), SIGNER)


def _manifest_load(root: Path) -> Any:
    manifest = read_manifest(CardStore(root), TrustSet.of(SIGNER.public))
    assert manifest is not None
    return manifest.version


def _texts(generation: int) -> list[str]:
    return ["read a file", "list branches"] if generation == 1 else [f"send email {generation}"]


def _cache_write(root: Path, generation: int) -> None:
    EmbeddingCache(root).embed_cached(FakeEmbedder(8), _texts(generation))


def _cache_load(root: Path) -> Any:
    cache = EmbeddingCache(root)
    vectors = cache.embed_cached(FakeEmbedder(8), _texts(1))
    assert (cache.last.hits, cache.last.misses) == (2, 0)  # nothing lost, nothing re-embedded
    return vectors.tolist()


def _vectors_write(root: Path, generation: int) -> None:
    VectorStore(root).save("fake", "block", np.full((2, 4), generation, dtype=np.float32))


def _vectors_load(root: Path) -> Any:
    block = VectorStore(root).load("fake", "block", rows=2, dim=4)
    assert block is not None
    return np.asarray(block).tolist()


def _client_write(root: Path, generation: int) -> None:
    spec = ServerSpec(command="cartograph", args=("serve", f"--generation={generation}"))
    install_entry("cursor", "cartograph", spec, path=root / ".cursor" / "mcp.json")


def _record_write(root: Path, generation: int) -> None:
    connection = Connection(
        url=f"http://127.0.0.1:{8000 + generation}/mcp",
        client="cursor",
        client_config=".cursor/mcp.json",
        entry="cartograph",
        server_mount_mode="per-catalog",
        server_routed_path=None,
        catalogs=["default"],
        entries={"cartograph": f"http://127.0.0.1:{8000 + generation}/mcp/default"},
    )
    ProjectRecord([connection]).save(root / "cartograph-client.json")


@dataclass(frozen=True)
class Persisted:
    """One persisted file: its path (a glob under the root), writer and loader."""

    target: str
    write: Callable[[Path, int], None]
    load: Callable[[Path], Any]


FILES: dict[str, Persisted] = {
    "card": Persisted("cards/files.card.json", _attest, _cards),
    "accepted-versions record": Persisted(
        f"cards/{ACCEPTED_FILE}", _attest, lambda root: CardStore(root).accepted()
    ),
    "card manifest": Persisted(f"cards/{MANIFEST_FILE}", _manifest_write, _manifest_load),
    "private key": Persisted(
        "keys/signing.pem",
        lambda root, g: write_private_key(_key(g), root / "keys" / "signing.pem"),
        lambda root: load_private_key(root / "keys" / "signing.pem").key_id,
    ),
    "public key": Persisted(
        "keys/signing.pub",
        lambda root, g: write_public_key(_key(g).public, root / "keys" / "signing.pub"),
        lambda root: load_public_key(root / "keys" / "signing.pub").key_id,
    ),
    "trust set": Persisted(
        "trust.toml",
        lambda root, g: save_trust(TrustSet.of(_key(g).public), root / "trust.toml"),
        lambda root: sorted(k.key_id for k in load_trust(root / "trust.toml").keys),
    ),
    "embedding cache segment": Persisted("embeddings/*/seg-*.bin", _cache_write, _cache_load),
    "vector store block": Persisted("index/*/block.npy", _vectors_write, _vectors_load),
    "client config": Persisted(
        ".cursor/mcp.json",
        _client_write,
        lambda root: json.loads((root / ".cursor" / "mcp.json").read_text("utf-8")),
    ),
    "client project record": Persisted(
        "cartograph-client.json",
        _record_write,
        lambda root: ProjectRecord.load(root / "cartograph-client.json").connections[0].url,
    ),
    "catalog snapshot": Persisted(
        "catalog.json",
        lambda root, g: save_catalog(_catalog(g), root / "catalog.json"),
        lambda root: load_catalog(root / "catalog.json").servers[0].tools[0].description,
    ),
}


def _snapshot(root: Path, target: str) -> dict[str, bytes]:
    """The files matching ``target`` under ``root`` (leftover temporaries do not match)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.glob(target))}


def _kill_mid_write(kind: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])},
    )


@pytest.mark.promise("P-REL-9")
@pytest.mark.parametrize("kind", sorted(FILES))
def test_a_writer_killed_mid_write_leaves_the_previous_file_intact(
    kind: str, tmp_path: Path
) -> None:
    persisted = FILES[kind]
    persisted.write(tmp_path, 1)
    before, loaded = _snapshot(tmp_path, persisted.target), persisted.load(tmp_path)
    assert before, f"generation 1 wrote nothing matching {persisted.target}"

    child = _kill_mid_write(kind, tmp_path)

    assert child.returncode == KILLED, (
        f"the writer never renamed onto {persisted.target}: " + (child.stderr[-2000:])
    )
    assert _snapshot(tmp_path, persisted.target) == before
    assert persisted.load(tmp_path) == loaded
    persisted.write(tmp_path, 3)  # the leftover temporary file is no obstacle
    assert _snapshot(tmp_path, persisted.target) != before


# Runs in the child: the usage log's connection dies at the COMMIT of a task insert.
SQLITE_CHILD = f"""
import os, signal, sys
from pathlib import Path
from cartograph.learning import sqlite as log
from tests.test_crash_atomicity import _log_task
opened = log._connect
def dying_open(path, *, writable):
    db = opened(path, writable=writable)
    inserted = []
    def trace(statement):
        if statement.lstrip().upper().startswith("INSERT INTO TASKS"):
            inserted.append(statement)
        if inserted and statement.strip().upper() == "COMMIT":
            os.kill(os.getpid(), signal.SIGKILL)
    db.set_trace_callback(trace)
    return db
log._connect = dying_open
_log_task(Path(sys.argv[1]), "task of the killed writer")
sys.exit({NEVER_RENAMED})
"""


def _log_task(state: Path, task: str) -> None:
    store = SqliteUsageStore(usage_log_path(state))
    try:
        surfaced = (SurfacedTool("files", "read_file", "d" * 64),)
        vector = np.ones(4, dtype=np.float32)
        store.add_task(TaskRecord("default", "s", task, "m", vector, surfaced, created=1.0))
    finally:
        store.close()


def _logged_tasks(state: Path) -> list[str]:
    store = SqliteUsageStore(usage_log_path(state))
    try:
        return [str(row["task"]) for row in store.export()]
    finally:
        store.close()


@pytest.mark.promise("P-REL-9")
def test_a_usage_log_writer_killed_at_commit_leaves_the_logged_tasks_intact(
    tmp_path: Path,
) -> None:
    _log_task(tmp_path, "first task")

    child = subprocess.run(
        [sys.executable, "-c", SQLITE_CHILD, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])},
    )

    assert child.returncode == KILLED, child.stderr[-2000:]
    assert _logged_tasks(tmp_path) == ["first task"]
    _log_task(tmp_path, "after the crash")
    assert _logged_tasks(tmp_path) == ["first task", "after the crash"]
