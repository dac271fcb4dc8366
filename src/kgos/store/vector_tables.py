"""Node vectors in a SQLite table: the native file's own ``node_embeddings`` (rows keyed by node rowid)
or a sidecar file's (keyed by node id). ``kgos.index.vectors`` reads and writes them through this."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any


class SQLiteVectorTable:
    """(node id, model) -> (content hash, vector) over some SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, native: bool) -> None:
        self.conn = conn
        self.native = native
        key = "n.id" if native else "e.node_id"
        join = "JOIN nodes n ON n.rowid = e.node" if native else ""
        self._select = f"SELECT {key}, e.content_hash, e.vector, e.dims FROM node_embeddings e {join} WHERE e.model = ?"

    def rows(self, model: str, with_vectors: bool = False) -> dict[str, Any]:
        out = {}
        for node_id, digest, blob, dims in self.conn.execute(self._select, (model,)):
            out[node_id] = (digest, blob, dims) if with_vectors else digest
        return out

    def hashes(self, model: str, node_ids: list[str]) -> dict[str, str]:
        """The content hash of each of these nodes' vectors (the write path checks a few, not all)."""
        key = "n.id" if self.native else "e.node_id"
        out: dict[str, str] = {}
        for start in range(0, len(node_ids), 500):  # under SQLite's bound-parameter limit
            chunk = node_ids[start:start + 500]
            sql = f"{self._select} AND {key} IN ({','.join('?' * len(chunk))})"
            out.update((r[0], r[1]) for r in self.conn.execute(sql, (model, *chunk)))
        return out

    def write(self, model: str, dims: int, items: list[tuple[str, str, bytes]]) -> None:
        if self.native:
            sql = ("INSERT OR REPLACE INTO node_embeddings (node, model, dims, content_hash, vector) "
                   "SELECT rowid, ?, ?, ?, ? FROM nodes WHERE id = ?")
            self.conn.executemany(sql, [(model, dims, h, v, nid) for nid, h, v in items])
        else:
            self.conn.executemany("INSERT OR REPLACE INTO node_embeddings VALUES (?, ?, ?, ?, ?)",
                                  [(nid, model, dims, h, v) for nid, h, v in items])

    def drop(self, model: str) -> None:
        self.conn.execute("DELETE FROM node_embeddings WHERE model = ?", (model,))

    def remove(self, model: str, node_ids: Iterable[str]) -> None:
        ids = list(node_ids)
        if self.native:  # cascades remove vectors of deleted nodes; this drops vectors of other dims
            self.conn.executemany("DELETE FROM node_embeddings WHERE model = ? AND node = "
                                  "(SELECT rowid FROM nodes WHERE id = ?)", [(model, i) for i in ids])
        else:
            self.conn.executemany("DELETE FROM node_embeddings WHERE model = ? AND node_id = ?",
                                  [(model, i) for i in ids])
