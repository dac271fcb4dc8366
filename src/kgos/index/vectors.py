"""Node embeddings at rest: float32 BLOBs with a content hash, embedded only when the text changed.

Native KGs keep them in their own ``node_embeddings`` table; attached (foreign) KGs, which KG-OS
does not write to, keep them in a sidecar SQLite file in the workspace cache.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..model import Node
from ..store.base import GraphStore
from ..store.native import NativeStore

EMBED_TEXT_CHARS = 1000
# A rowid table, as in the native file (migration 002): 1.5 KB rows fit two to a page (a WITHOUT ROWID
# table spilled each to overflow pages, 3x the vectors' size). Sidecars made before keep their layout.
SIDECAR_SCHEMA = ("""CREATE TABLE IF NOT EXISTS node_embeddings (
  node_id TEXT NOT NULL, model TEXT NOT NULL, dims INTEGER NOT NULL, content_hash TEXT NOT NULL,
  vector BLOB NOT NULL)""", "CREATE UNIQUE INDEX IF NOT EXISTS node_embeddings_key ON node_embeddings(model, node_id)")


def embed_text(node: Node) -> str:
    """What a node's vector is made from: its name and description (capped)."""
    text = f"{node.name}. {node.description}" if node.description else node.name
    return text[:EMBED_TEXT_CHARS]


class _VectorTable:
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


def _table(store: GraphStore, cache_root: Path | None) -> Any:
    if isinstance(store, NativeStore) and not store.read_only:
        return _VectorTable(store.conn, native=True)
    own = getattr(store, "vector_table", None)  # a store with its own table (PostgreSQL)
    if own is not None and not store.read_only:
        return own()
    if cache_root is None:
        raise InvalidArgument("a read-only KG keeps its vectors in the workspace cache: open it through a "
                              "Workspace (or pass cache_root)")
    folder = cache_root / store.db_id
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "vectors.db", isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")  # readers in other processes never wait for an embedding run
    for statement in SIDECAR_SCHEMA:
        conn.execute(statement)
    return _VectorTable(conn, native=False)


def load_vectors(store: GraphStore, model: str, node_ids: tuple[str, ...],
                 cache_root: Path | None = None) -> np.ndarray | None:
    """The (n, dims) matrix aligned with ``node_ids`` (zero rows for nodes without a vector), or None."""
    try:
        table = _table(store, cache_root)
    except InvalidArgument:  # a read-only KG without a cache folder has no vectors to load
        return None
    try:
        rows = table.rows(model, with_vectors=True)
    finally:
        if not table.native:
            table.conn.close()  # the sidecar connection was opened for this read only
    if not rows:
        return None
    dims = next(iter(rows.values()))[2]
    index = {nid: i for i, nid in enumerate(node_ids)}
    hits = [(index[nid], blob) for nid, (_, blob, d) in rows.items() if d == dims and nid in index]
    matrix = np.zeros((len(node_ids), dims), np.float32)
    if hits:  # one bulk copy instead of a per-node loop
        positions = np.fromiter((i for i, _ in hits), np.int64, len(hits))
        matrix[positions] = np.frombuffer(b"".join(b for _, b in hits), np.float32).reshape(len(hits), dims)
    return matrix


def models(store: GraphStore) -> dict[str, int]:
    """Embedding models with stored vectors in a native KG, and how many nodes each covers."""
    own = getattr(store, "vector_models", None)
    if own is not None:
        return dict(own())
    if not hasattr(store, "conn"):
        return {}
    try:
        return dict(store.conn.execute("SELECT model, count(*) FROM node_embeddings GROUP BY model"))  # type: ignore[attr-defined]
    except sqlite3.OperationalError:
        return {}
