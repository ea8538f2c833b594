"""The persisted serving corpus: a restart loads the index, it does not rebuild it.

Building the corpus means deriving every tool's entry text from its card,
tokenising every field, fitting seven BM25 indexes and gathering every
card's vector block: at 100k tools that was most of a minute, on every
start. So the whole :class:`~cartograph.index.corpus.Corpus` is saved once,
columnar, beside the per-card vector blocks::

    <state_dir>/index/<model folder>/serving-<key>/
        meta.json           format, key, model, size, servers, sha256 of every file below
        tools.json          tool names, in index order
        tool_server.npy     each tool's server position (int64)
        vectors.npy         every tool vector, one float16 matrix (memory-mapped)
        centroids.npy       normalised server centroids (float32)
        lexical/<field>/    bm25s's saved index per field (memory-mapped); jaccard/ postings
        columns/            every tool's token ids per field, per server (index/columns.py)

    key = sha256(format, model id, dim, the code that turns cards into a corpus,
                 bm25s version, every (server, verified card digest), excluded tools)

An unchanged card set under unchanged code has the same key, so a restart
reads the snapshot instead of parsing, re-embedding or re-tokenising any card;
any changed card, model, exclusion or ranking code gives a new key and a
new build, which is then saved (the newest :data:`KEEP_SNAPSHOTS` are kept).
That build starts from the newest snapshot of the same model and code
(:meth:`SnapshotStore.base`; ``meta.json`` records each server's card digest
and the tools left out): an unchanged card's rows, vectors and token ids are
copied from it, and only changed or new cards are parsed, tokenised and
(when their vectors are not stored) embedded (:mod:`cartograph.index.incremental`).

**Integrity.** Loading hashes every file and compares it with ``meta.json``;
a file that was changed, truncated or removed raises
:class:`PersistedIndexError` (``persisted_index_damaged``) and the caller
rebuilds from the verified cards. So does a file over its size bound
(:data:`MAX_META_BYTES`, :data:`MAX_SNAPSHOT_FILE_BYTES`), a device or FIFO in
a file's place, or a path whose symlinks lead out of ``<state_dir>/index``
(P-REL-13): nothing is read past the bound, and the log names the cause's code.
The snapshot is not signed (``serve`` has no signing key): someone who can
rewrite both a file and ``meta.json`` can change *ranking*, but never what is
served — ``discover`` takes every answered
tool's text from its verified card, re-checked at answer time (P-SIG-3), and
drifted or denied tools are masked at query time whatever the snapshot holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

import numpy as np

from cartograph import error_codes as codes
from cartograph.errors import PersistedIndexError, StateFileError
from cartograph.fsutil import PRIVATE_FILE_MODE, make_private_dirs, open_bounded, read_bounded
from cartograph.index.columns import ToolColumns
from cartograph.index.corpus import LARGE_CORPUS_TOOLS, Corpus, LexicalFields
from cartograph.index.embedders.base import Embedder
from cartograph.index.entries import ToolKey
from cartograph.index.lexical import FieldIndex, JaccardIndex
from cartograph.index.vector_store import STORED_DTYPE, VectorStore

SNAPSHOT_FORMAT: Final = 2
SNAPSHOT_PREFIX: Final = "serving-"
META_FILE: Final = "meta.json"
KEEP_SNAPSHOTS: Final = 3
MAX_META_BYTES: Final = 64 * 1024 * 1024
"""``meta.json`` names every server's digest: ~100 bytes a server, so room for 500k servers."""
MAX_SNAPSHOT_FILE_BYTES: Final = 4 * 1024 * 1024 * 1024
"""Any one snapshot file: the float16 vectors of 100k tools are 77 MB, of 5M tools 3.8 GB."""
_HASH_CHUNK: Final = 1 << 20
"""Snapshots kept per model: the current one and a few for other exclusions or catalogs."""
TOOL_FIELDS: Final = ("full", "name", "description", "purpose", "arguments", "examples")
# The modules whose code decides what a corpus holds: a change to any of them
# must never load a snapshot built by the old code.
_CODE_FILES: Final = (
    "index/entries.py",
    "index/name_copies.py",
    "index/text.py",
    "index/lexical.py",
    "index/corpus.py",
    "index/columns.py",
    "index/incremental.py",
    "index/tool_index.py",
    "index/vector_store.py",
    "index/snapshot.py",
    "index/stopwords.txt",
    "names.py",
    "cards/generators/template.py",
)
_log = logging.getLogger(__name__)


def _code_digest() -> str:
    here = Path(__file__).resolve().parent.parent  # the cartograph package
    digest = hashlib.sha256()
    for name in _CODE_FILES:
        with contextlib.suppress(OSError):
            digest.update(name.encode() + b"\x00" + (here / name).read_bytes() + b"\x00")
    return digest.hexdigest()


def _bm25s_version() -> str:
    # The installed distribution's version, without importing bm25s (scipy behind it).
    from importlib.metadata import version

    return version("bm25s")


def snapshot_key(
    model_id: str, dim: int, digests: Iterable[tuple[str, str]], exclude: Iterable[ToolKey]
) -> str:
    """The key of the corpus over cards with these verified ``digests``, minus ``exclude``."""
    document = {
        "format": SNAPSHOT_FORMAT,
        "model": model_id,
        "dim": dim,
        "code": _code_digest(),
        "bm25s": _bm25s_version(),
        "cards": sorted(digests),
        "exclude": sorted(exclude),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


@dataclass(frozen=True)
class BaseSnapshot:
    """A saved corpus a new build may copy unchanged cards' rows from."""

    folder: Path
    cards: Mapping[str, str]
    """Server -> the verified card digest its rows were built from."""
    exclude: frozenset[ToolKey]
    columns: ToolColumns
    vectors: Any
    """The stored float16 matrix, memory-mapped, in the columns' row order."""

    def vectors_file(self) -> BinaryIO:
        return (self.folder / "vectors.npy").open("rb")

    def read_rows(self, handle: BinaryIO, start: int, stop: int) -> Any:
        """Rows ``start``–``stop`` of the matrix, read from the file, not through the mapping.

        Pages touched through the mapping stay in this process's resident
        memory until it is unmapped (77 MB at 100k tools); a read does not.
        """
        row_bytes = self.vectors.shape[1] * self.vectors.dtype.itemsize
        handle.seek(int(self.vectors.offset) + start * row_bytes)
        data = handle.read((stop - start) * row_bytes)
        return np.frombuffer(data, dtype=self.vectors.dtype).reshape(stop - start, -1)


class SnapshotStore:
    """Serving corpora under ``<state_dir>/index/<model folder>/`` (see module docstring)."""

    def __init__(self, state_dir: Path) -> None:
        self._vectors = VectorStore(state_dir)
        self._inside = self._vectors.root

    def folder_for(self, model_id: str, key: str) -> Path:
        return self._vectors.folder_for(model_id) / f"{SNAPSHOT_PREFIX}{key}"

    def load(self, embedder: Embedder, key: str) -> Corpus | None:
        """The corpus saved under ``key``, None when there is none.

        Raises :class:`PersistedIndexError` when it exists but any file differs
        from what ``meta.json`` records (the caller rebuilds).
        """
        folder = self.folder_for(embedder.model_id, key)
        meta_path = folder / META_FILE
        if not meta_path.exists():
            return None
        meta = _checked_meta(folder, key, embedder, self._inside)
        try:
            return _read_corpus(folder, meta, embedder)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _damaged(folder, f"unreadable ({exc})") from exc

    def base(self, embedder: Embedder) -> BaseSnapshot | None:
        """The newest intact snapshot built by this code for this model, or None.

        A snapshot whose files differ from its record is skipped (it is never
        copied from); the caller builds from the cards instead.
        """
        folder = self._vectors.folder_for(embedder.model_id)
        found = [p for p in folder.glob(f"{SNAPSHOT_PREFIX}*") if (p / META_FILE).is_file()]
        found.sort(key=lambda p: (p / META_FILE).stat().st_mtime, reverse=True)
        for candidate in found:
            try:
                return _base(candidate, embedder, self._inside)
            except (PersistedIndexError, OSError, ValueError, KeyError, TypeError) as exc:
                _log.info("snapshot %s not reused: %s", candidate.name, exc)
        return None

    def save(
        self,
        corpus: Corpus,
        key: str,
        columns: ToolColumns,
        cards: Mapping[str, str],
        exclude: Iterable[ToolKey],
    ) -> Path:
        """Write ``corpus`` under ``key``: into a private temporary folder, then one rename.

        ``columns`` are the corpus's token ids, ``cards`` the verified digest of
        every card it was built from and ``exclude`` what it left out, so a
        later build can copy from it (:meth:`base`). A crash before the rename
        leaves only a hidden temporary folder: the older snapshots stay whole.
        """
        final = self.folder_for(corpus.embedder.model_id, key)
        make_private_dirs(final.parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            record = {"cards": dict(cards), "exclude": sorted(exclude)}
            _write_corpus(tmp, corpus, key, columns, record)
            for path in tmp.rglob("*"):
                if path.is_file():
                    os.chmod(path, PRIVATE_FILE_MODE)
            os.replace(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not (final / META_FILE).exists():
                raise  # another process did not win the race: a real failure
        self._prune(final)
        return final

    def discard(self, model_id: str, key: str) -> None:
        """Remove a damaged snapshot so the rebuilt one can take its place."""
        folder = self.folder_for(model_id, key)
        if folder.is_symlink():  # only the link: never what it points at
            folder.unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)

    def _prune(self, keep: Path) -> None:
        """Keep the newest :data:`KEEP_SNAPSHOTS` (a reader's mapped files survive unlink)."""
        others = [p for p in keep.parent.glob(f"{SNAPSHOT_PREFIX}*") if p != keep and p.is_dir()]
        others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        for old in others[KEEP_SNAPSHOTS - 1 :]:
            shutil.rmtree(old, ignore_errors=True)


def _damaged(folder: Path, why: str) -> PersistedIndexError:
    return PersistedIndexError(
        f"the persisted index in {folder} is {why}; it is rebuilt from the verified cards "
        "(delete the folder if this repeats)",
        code=codes.PERSISTED_INDEX_DAMAGED,
    )


def _read_meta(folder: Path, inside: Path) -> dict[str, Any]:
    """``meta.json``, read with a bound; a state-file refusal is a damaged snapshot."""
    try:
        meta = json.loads(read_bounded(folder / META_FILE, MAX_META_BYTES, inside=inside))
    except StateFileError as exc:
        raise _damaged(folder, f"not read ({exc.code}: {exc.message})") from exc
    if not isinstance(meta, dict):
        raise ValueError("meta.json is not an object")
    return meta


def _checked_meta(folder: Path, key: str, embedder: Embedder, inside: Path) -> dict[str, Any]:
    try:
        meta = _read_meta(folder, inside)
        files: dict[str, str] = dict(meta["files"])
        ok = (
            meta["format"] == SNAPSHOT_FORMAT
            and meta["key"] == key
            and meta["model"] == embedder.model_id
            and meta["dim"] == embedder.dim
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _damaged(folder, "missing its record or has a damaged one") from exc
    if not ok:
        raise _damaged(folder, "recorded for another key, model or format")
    for name, expected in files.items():
        try:  # a recorded name cannot point out of the snapshot
            actual = _file_sha256(folder / name, inside=folder)
        except StateFileError as exc:
            raise _damaged(folder, f"not read ({name}: {exc.code})") from exc
        if actual != expected:
            raise _damaged(folder, f"not what it recorded ({name} changed or is missing)")
    return dict(meta)


def _file_sha256(path: Path, *, inside: Path | None = None) -> str | None:
    """The file's SHA-256 (None: unreadable); more than the bound is never read."""
    digest = hashlib.sha256()
    left = MAX_SNAPSHOT_FILE_BYTES
    try:
        with open_bounded(path, MAX_SNAPSHOT_FILE_BYTES, inside=inside or path.parent) as handle:
            while left > 0 and (chunk := handle.read(min(_HASH_CHUNK, left))):
                digest.update(chunk)
                left -= len(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _base(folder: Path, embedder: Embedder, inside: Path) -> BaseSnapshot:
    meta = _read_meta(folder, inside)
    if meta.get("code") != _code_digest() or meta.get("bm25s") != _bm25s_version():
        raise ValueError("built by other code")
    meta = _checked_meta(folder, str(meta["key"]), embedder, inside)
    columns = ToolColumns.load(folder / "columns")
    vectors = np.load(folder / "vectors.npy", mmap_mode="r", allow_pickle=False)
    if vectors.shape != (columns.size, embedder.dim):
        raise ValueError("vectors disagree with the columns")
    return BaseSnapshot(
        folder=folder,
        cards={str(s): str(d) for s, d in meta["cards"].items()},
        exclude=frozenset((str(s), str(t)) for s, t in meta["exclude"]),
        columns=columns,
        vectors=vectors,
    )


def _write_corpus(
    folder: Path, corpus: Corpus, key: str, columns: ToolColumns, record: dict[str, Any]
) -> None:
    vectors = np.asarray(corpus.tool_vectors, dtype=STORED_DTYPE)  # no copy when float16
    np.save(folder / "vectors.npy", vectors, allow_pickle=False)
    np.save(folder / "centroids.npy", corpus.centroids, allow_pickle=False)
    np.save(folder / "tool_server.npy", corpus.tool_server.astype(np.int64), allow_pickle=False)
    (folder / "tools.json").write_text(json.dumps(list(corpus.tool_names)), encoding="utf-8")
    lexical = folder / "lexical"
    for field in (*TOOL_FIELDS, "server"):
        index: FieldIndex = getattr(corpus.lexical, field)
        index.save(lexical / field)
    corpus.lexical.jaccard.save(lexical / "jaccard")
    columns.save(folder / "columns")
    files = {
        path.relative_to(folder).as_posix(): str(_file_sha256(path))
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    meta = {
        "format": SNAPSHOT_FORMAT,
        "key": key,
        "model": corpus.embedder.model_id,
        "dim": corpus.embedder.dim,
        "size": corpus.size,
        "servers": list(corpus.servers),
        "code": _code_digest(),
        "bm25s": _bm25s_version(),
        **record,
        "files": files,
    }
    (folder / META_FILE).write_text(json.dumps(meta), encoding="utf-8")


def _read_corpus(folder: Path, meta: dict[str, Any], embedder: Embedder) -> Corpus:
    size = int(meta["size"])
    servers = tuple(str(s) for s in meta["servers"])
    names = tuple(json.loads((folder / "tools.json").read_text(encoding="utf-8")))
    vectors = np.load(folder / "vectors.npy", mmap_mode="r", allow_pickle=False)
    tool_server = np.load(folder / "tool_server.npy", allow_pickle=False)
    if len(names) != size or vectors.shape != (size, embedder.dim) or len(tool_server) != size:
        raise ValueError("arrays disagree with the recorded size")
    lexical = folder / "lexical"
    fields = {f: FieldIndex.load(lexical / f, size) for f in TOOL_FIELDS}
    return Corpus(
        servers=servers,
        tool_server=tool_server.astype(np.int64, copy=False),
        tool_names=names,
        # Memory-mapped float16 at scale, as a fresh build serves it (serving_matrix);
        # a plain ndarray view of the mapping: np.memmap's Python-level __getitem__
        # and result wrapping cost more than gathering a query's rows.
        tool_vectors=np.asarray(vectors)
        if size >= LARGE_CORPUS_TOOLS
        else np.asarray(vectors, np.float32),
        centroids=np.load(folder / "centroids.npy", allow_pickle=False),
        lexical=LexicalFields(
            **fields,
            server=FieldIndex.load(lexical / "server", len(servers)),
            jaccard=JaccardIndex.load(lexical / "jaccard"),
        ),
        embedder=embedder,
    )


__all__ = [
    "KEEP_SNAPSHOTS",
    "MAX_META_BYTES",
    "MAX_SNAPSHOT_FILE_BYTES",
    "BaseSnapshot",
    "SnapshotStore",
    "snapshot_key",
]
