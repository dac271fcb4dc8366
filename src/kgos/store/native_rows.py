"""The raw rows of a native KG file that the snapshot builder reads fast (``NativeStore.row_reader()``).

Rowid-level reads: node rows and edge rows in rowid order (edges by node rowid), and the rows of the
vector table by node rowid. A store that has them returns a ``RowReader``; the index layer asks for it
instead of checking the store's class, and never touches the connection itself.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

NODE_ROWS = "SELECT rowid, id, type, name, description, properties FROM nodes ORDER BY rowid"
EDGE_ROWS = "SELECT source, target, type, weight FROM edges ORDER BY rowid"  # as NativeStore.graph_arrays
VECTOR_KEYS = "SELECT node, rowid, content_hash, dims FROM node_embeddings WHERE model = ? ORDER BY node"


class RowReader:
    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self.conn, self.lock = conn, lock

    def nodes(self) -> list[tuple[Any, ...]]:
        """(rowid, id, type, name, description, properties) of every node, in rowid order."""
        with self.lock:
            return self.conn.execute(NODE_ROWS).fetchall()

    def edges(self) -> list[tuple[Any, ...]]:
        """(source rowid, target rowid, type, weight) of every edge, in rowid order."""
        with self.lock:
            return self.conn.execute(EDGE_ROWS).fetchall()

    def vector_keys(self, model: str) -> list[tuple[Any, ...]]:
        """(node rowid, vector rowid, content hash, dims) of ``model``'s vectors, by node rowid."""
        with self.lock:
            return self.conn.execute(VECTOR_KEYS, (model,)).fetchall()

    def fts(self, match: str, limit: int) -> list[tuple[int, float]] | None:
        """(node rowid, -bm25) of the FTS5 index's best ``limit`` matches; None if the index cannot
        answer (a file without it, a MATCH string FTS5 refuses)."""
        try:
            with self.lock:
                return self.conn.execute("SELECT rowid, -bm25(nodes_fts) FROM nodes_fts WHERE nodes_fts MATCH ? "
                                         "ORDER BY bm25(nodes_fts) LIMIT ?", (match, limit)).fetchall()
        except sqlite3.OperationalError:
            return None

    def vectors(self, rows: list[int]) -> dict[int, bytes]:
        """vector rowid -> float32 bytes, for these vector rows."""
        out: dict[int, bytes] = {}
        with self.lock:
            for start in range(0, len(rows), 500):  # under SQLite's bound-parameter limit
                chunk = rows[start:start + 500]
                out.update(self.conn.execute(f"SELECT rowid, vector FROM node_embeddings WHERE rowid IN "
                                             f"({','.join('?' * len(chunk))})", chunk))
        return out
