"""The lexical side of a corpus as token-id columns: what an index build can reuse.

Every BM25 field and the Jaccard postings are functions of a few token lists
per tool (name, description, arguments, examples) and one per server (its
summary and tags plus its tools' names). Kept as compressed rows of ids into
one vocabulary (``ids`` and ``offsets``, CSR), they are a few bytes per token
instead of a Python list of strings per field per tool, they can be saved
beside the serving snapshot, and a later build can copy an unchanged card's
rows from them instead of parsing and tokenising the card again
(:mod:`cartograph.index.incremental`).

Tokens are bags for every scorer (BM25 counts, Jaccard sets), so the order of
ids within a row carries no meaning; joined fields (``full`` is name,
description and arguments) are the union of the parts' occurrences, which is
what tokenising the joined text gives (``tests/index/test_lexical_build.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph.index.entries import IndexEntry
from cartograph.index.text import tokenize

IntArray = npt.NDArray[np.int64]
IdArray = npt.NDArray[np.int32]
TOOL_FIELDS: Final = ("name", "description", "arguments", "examples")
VOCABULARY_FILE: Final = "vocabulary.json"
NAMES_FILE: Final = "names.json"


@dataclass(frozen=True)
class Rows:
    """Rows of token ids, CSR: row i is ``ids[offsets[i]:offsets[i + 1]]`` (int32 ids)."""

    ids: IdArray
    offsets: IntArray

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    def span(self, start: int, stop: int) -> Rows:
        """Rows ``start`` to ``stop``, offsets rebased to 0 (the ids are copied)."""
        first, last = int(self.offsets[start]), int(self.offsets[stop])
        ids: IdArray = np.array(self.ids[first:last], dtype=np.int32)
        offsets: IntArray = np.array(self.offsets[start : stop + 1], dtype=np.int64) - first
        return Rows(ids, offsets)

    def pairs(self) -> tuple[IntArray, IntArray]:
        """(row, token id) of every occurrence."""
        lengths = np.diff(self.offsets)
        rows: IntArray = np.repeat(np.arange(self.count, dtype=np.int64), lengths)
        return rows, np.asarray(self.ids, dtype=np.int64)

    def keys(self, size: int) -> IntArray:
        """Every occurrence as one key, ``token id * size + row`` (``size`` ≥ the row count)."""
        keys: IntArray = np.asarray(self.ids, dtype=np.int64) * max(size, 1)
        keys += np.repeat(np.arange(self.count, dtype=np.int64), np.diff(self.offsets))
        return keys

    @staticmethod
    def concat(parts: Sequence[Rows]) -> Rows:
        """The rows of ``parts`` one after another."""
        if not parts:
            return Rows(np.zeros(0, np.int32), np.zeros(1, np.int64))
        ids = np.concatenate([p.ids for p in parts]).astype(np.int32, copy=False)
        shifts = np.cumsum([0] + [len(p.ids) for p in parts[:-1]])
        offsets = [np.zeros(1, np.int64)]
        offsets += [p.offsets[1:] + shift for p, shift in zip(parts, shifts, strict=True)]
        return Rows(ids, np.concatenate(offsets).astype(np.int64, copy=False))

    @staticmethod
    def of(rows: Sequence[Sequence[int]]) -> Rows:
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter((i for r in rows for i in r), dtype=np.int32, count=int(lengths.sum()))
        return Rows(flat, np.concatenate(([0], np.cumsum(lengths))).astype(np.int64))


@dataclass(frozen=True)
class ToolColumns:
    """A corpus's tools (sorted by server, as indexed) and their token rows."""

    servers: tuple[str, ...]
    tool_server: IntArray
    tool_names: tuple[str, ...]
    vocabulary: tuple[str, ...]
    fields: dict[str, Rows]
    """Per tool, one entry per :data:`TOOL_FIELDS`."""
    server_docs: Rows
    """Per server: its summary and tags, then its indexed tools' names."""

    @property
    def size(self) -> int:
        return len(self.tool_names)

    def server_spans(self) -> dict[str, tuple[int, int]]:
        """Each server's (start, stop) rows: a server's tools are contiguous."""
        bounds = np.searchsorted(self.tool_server, np.arange(len(self.servers) + 1))
        return {s: (int(bounds[i]), int(bounds[i + 1])) for i, s in enumerate(self.servers)}

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, rows in (*self.fields.items(), ("server", self.server_docs)):
            np.save(folder / f"{name}.ids.npy", rows.ids.astype(np.int32), allow_pickle=False)
            np.save(folder / f"{name}.offsets.npy", rows.offsets, allow_pickle=False)
        (folder / VOCABULARY_FILE).write_text(json.dumps(list(self.vocabulary)), encoding="utf-8")
        names = {"servers": list(self.servers), "tools": list(self.tool_names)}
        (folder / NAMES_FILE).write_text(json.dumps(names), encoding="utf-8")
        np.save(folder / "tool_server.npy", self.tool_server.astype(np.int64), allow_pickle=False)

    @classmethod
    def load(cls, folder: Path) -> ToolColumns:
        """What :meth:`save` wrote; the id arrays memory-mapped."""

        def rows(name: str) -> Rows:
            ids = np.load(folder / f"{name}.ids.npy", mmap_mode="r", allow_pickle=False)
            offsets = np.load(folder / f"{name}.offsets.npy", allow_pickle=False)
            return Rows(ids, offsets.astype(np.int64, copy=False))

        names = json.loads((folder / NAMES_FILE).read_text(encoding="utf-8"))
        vocabulary = json.loads((folder / VOCABULARY_FILE).read_text(encoding="utf-8"))
        tool_server = np.load(folder / "tool_server.npy", allow_pickle=False)
        out = cls(
            servers=tuple(str(s) for s in names["servers"]),
            tool_server=tool_server.astype(np.int64, copy=False),
            tool_names=tuple(str(t) for t in names["tools"]),
            vocabulary=tuple(str(v) for v in vocabulary),
            fields={f: rows(f) for f in TOOL_FIELDS},
            server_docs=rows("server"),
        )
        if any(r.count != out.size for r in out.fields.values()) or (
            out.server_docs.count != len(out.servers) or len(out.tool_server) != out.size
        ):
            raise ValueError("token columns disagree with the tool count")
        return out


class ColumnsBuilder:
    """Assembles :class:`ToolColumns` server by server, in sorted server order.

    A server's rows come either from its index entries (tokenised here) or
    from another :class:`ToolColumns` (copied; that one's vocabulary is the
    start of this one's, so its ids stay valid).
    """

    def __init__(self, vocabulary: Sequence[str] = ()) -> None:
        self._words: list[str] = list(vocabulary)
        self._ids: dict[str, int] = {w: i for i, w in enumerate(self._words)}
        self._servers: list[str] = []
        self._names: list[str] = []
        self._counts: list[int] = []
        self._fields: dict[str, list[Rows]] = {f: [] for f in TOOL_FIELDS}
        self._server_docs: list[Rows] = []

    def _encode(self, tokens: Sequence[str]) -> list[int]:
        ids = self._ids
        out = []
        for token in tokens:
            found = ids.get(token)
            if found is None:
                found = ids[token] = len(self._words)
                self._words.append(token)
            out.append(found)
        return out

    def _server(self, server: str, tools: Sequence[str]) -> bool:
        if self._servers and server <= self._servers[-1]:
            raise ValueError(f"servers must be added once each, sorted ({server!r})")
        if not tools:
            return False  # a server whose every tool is left out is not in the corpus
        self._servers.append(server)
        self._names.extend(tools)
        self._counts.append(len(tools))
        return True

    def add_entries(self, server: str, entries: Sequence[IndexEntry]) -> None:
        """One server's entries (sorted by tool, as ``entries_from_cards`` yields them)."""
        if not self._server(server, [e.tool for e in entries]):
            return
        names = [self._encode(tokenize(e.name)) for e in entries]
        self._fields["name"].append(Rows.of(names))
        self._fields["description"].append(
            Rows.of([self._encode(tokenize(e.description)) for e in entries])
        )
        self._fields["arguments"].append(
            Rows.of([self._encode(tokenize(e.arguments)) for e in entries])
        )
        self._fields["examples"].append(
            Rows.of([self._encode(tokenize(e.examples)) for e in entries])
        )
        summary = self._encode(tokenize(entries[0].server_text))
        self._server_docs.append(Rows.of([summary + [i for row in names for i in row]]))

    def add_copied(self, server: str, base: ToolColumns, start: int, stop: int) -> None:
        """Rows ``start``–``stop`` of ``base``: all of ``server``'s tools there."""
        if not self._server(server, base.tool_names[start:stop]):
            return
        if len(self._words) < len(base.vocabulary):
            raise ValueError("the builder must start from the base's vocabulary")
        for field, parts in self._fields.items():
            parts.append(base.fields[field].span(start, stop))
        position = base.servers.index(server)
        self._server_docs.append(base.server_docs.span(position, position + 1))

    def build(self) -> ToolColumns:
        counts = np.asarray(self._counts, dtype=np.int64)
        return ToolColumns(
            servers=tuple(self._servers),
            tool_server=np.repeat(np.arange(len(counts), dtype=np.int64), counts),
            tool_names=tuple(self._names),
            vocabulary=tuple(self._words),
            fields={f: Rows.concat(parts) for f, parts in self._fields.items()},
            server_docs=Rows.concat(self._server_docs),
        )


def columns_from_entries(entries: Sequence[IndexEntry]) -> ToolColumns:
    """Columns for ``entries`` in their order (positions are the entries' positions)."""
    builder = ColumnsBuilder()
    encode = builder._encode
    servers = tuple(sorted({e.server for e in entries}))
    position = {server: i for i, server in enumerate(servers)}
    names = [encode(tokenize(e.name)) for e in entries]
    fields = {
        "name": Rows.of(names),
        "description": Rows.of([encode(tokenize(e.description)) for e in entries]),
        "arguments": Rows.of([encode(tokenize(e.arguments)) for e in entries]),
        "examples": Rows.of([encode(tokenize(e.examples)) for e in entries]),
    }
    docs: dict[str, list[int]] = {}
    for entry, name in zip(entries, names, strict=True):
        if entry.server not in docs:
            docs[entry.server] = encode(tokenize(entry.server_text))
        docs[entry.server].extend(name)
    return ToolColumns(
        servers=servers,
        tool_server=np.array([position[e.server] for e in entries], dtype=np.int64),
        tool_names=tuple(e.tool for e in entries),
        vocabulary=tuple(builder._words),
        fields=fields,
        server_docs=Rows.of([docs[s] for s in servers]),
    )


__all__ = ["TOOL_FIELDS", "ColumnsBuilder", "Rows", "ToolColumns", "columns_from_entries"]
