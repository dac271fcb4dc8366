"""The write primitives of the native SQLite schema (``writing.WriteOps``), on the open transaction.

Everything a write means (validation, spec/002's merge rules, ids) is decided in ``writing.Writer``;
this module only says how a row is read, inserted, updated and deleted here. Edges refer to nodes by
rowid inside the file, so endpoints are looked up by id in the same statement.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..errors import ImportFailed, InvalidArgument
from ..model import Edge, Node, normalize_name
from .limits import check_properties, parse_json
from .native import EDGE_SELECT, NODE_COLS, edge_of_row, node_of_row
from .writing import WriteOps, dumps, merge_properties

_ROWID = "(SELECT rowid FROM nodes WHERE id = ?)"


class NativeOps(WriteOps):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def node(self, node_id: str) -> Node | None:
        row = self.conn.execute(f"SELECT {NODE_COLS} FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return node_of_row(row) if row else None

    def entity(self, norm_name: str, type: str) -> Node | None:
        row = self.conn.execute(f"SELECT {NODE_COLS} FROM nodes WHERE norm_name = ? AND type = ? "
                                "ORDER BY rowid LIMIT 1", (norm_name, type)).fetchone()
        return node_of_row(row) if row else None

    def id_taken(self, node_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone() is not None

    def insert_node(self, n: Node) -> None:
        self.conn.execute("INSERT INTO nodes (id, name, norm_name, type, description, properties, created_at, "
                          "updated_at) VALUES (?,?,?,?,?,?,?,?)",
                          (n.id, n.name, normalize_name(n.name), n.type, n.description, dumps(n.properties),
                           n.created_at, n.updated_at))

    def update_node(self, n: Node) -> None:
        self.conn.execute("UPDATE nodes SET name=?, norm_name=?, type=?, description=?, properties=?, updated_at=? "
                          "WHERE id=?", (n.name, normalize_name(n.name), n.type, n.description,
                                         dumps(n.properties), n.updated_at, n.id))

    def degree(self, node_id: str) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM edges WHERE source = {_ROWID} OR target = {_ROWID}",
                                     (node_id, node_id)).fetchone()[0])

    def delete_node(self, node_id: str) -> int:
        n_edges = self.degree(node_id)
        self.conn.execute("DELETE FROM nodes WHERE id = ?", (node_id,))  # edges go by ON DELETE CASCADE
        return n_edges

    def edge(self, source: str, target: str, type: str) -> Edge | None:
        row = self.conn.execute(EDGE_SELECT + " WHERE s.id = ? AND t.id = ? AND e.type = ?",
                                (source, target, type)).fetchone()
        return edge_of_row(row) if row else None

    def edge_id_taken(self, edge_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM edges WHERE id = ?", (edge_id,)).fetchone() is not None

    def insert_edge(self, e: Edge) -> None:
        self.conn.execute("INSERT INTO edges (source, target, type, weight, properties, created_at, id) "
                          "SELECT s.rowid, t.rowid, ?, ?, ?, ?, ? FROM nodes s, nodes t WHERE s.id = ? AND t.id = ?",
                          (e.type, e.weight, dumps(e.properties), e.created_at, e.id, e.source, e.target))

    def update_edge(self, e: Edge) -> None:
        self.conn.execute(f"UPDATE edges SET weight = ?, properties = ? WHERE source = {_ROWID} AND "
                          f"target = {_ROWID} AND type = ?",
                          (e.weight, dumps(e.properties), e.source, e.target, e.type))

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        cur = self.conn.execute(f"DELETE FROM edges WHERE source = {_ROWID} AND target = {_ROWID} AND type = ?",
                                (source, target, type))
        return cur.rowcount > 0

    # -- bulk mode -----------------------------------------------------------------------------------------
    def merge_node_rows(self, rows: list[tuple[Any, ...]], ts: str) -> None:
        merge = _merge_function(self.conn)
        sql = ("INSERT INTO nodes (id, name, norm_name, type, description, properties, created_at, updated_at) "
               "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET name=excluded.name, "
               "norm_name=excluded.norm_name, type=excluded.type, "
               "description=CASE WHEN excluded.description = '' THEN description ELSE excluded.description END, "
               "properties=kgos_merge(properties, excluded.properties), updated_at=max(updated_at, ?) "
               # a row the merge leaves as it is is not rewritten (no FTS churn, no new updated_at)
               "WHERE nodes.name IS NOT excluded.name OR nodes.type IS NOT excluded.type OR (excluded.description "
               "<> '' AND nodes.description IS NOT excluded.description) OR "
               "kgos_merge(nodes.properties, excluded.properties) IS NOT nodes.properties")
        with merge.reported():
            self.conn.executemany(sql, [(*row, ts) for row in rows])

    def patch_node_properties(self, rows: list[tuple[str, str]], ts: str) -> None:
        # json_patch (RFC 7396, in SQLite's C): a shallow set of these keys, nested objects merged
        self.conn.executemany("UPDATE nodes SET properties = json_patch(properties, ?), updated_at = max(updated_at, ?) "
                              "WHERE id = ?", [(props, ts, node_id) for node_id, props in rows])

    def node_keys(self) -> dict[str, Any]:
        return dict(self.conn.execute("SELECT id, rowid FROM nodes"))

    def merge_edge_rows(self, rows: list[tuple[Any, ...]]) -> None:
        merge = _merge_function(self.conn)
        sql = ("INSERT INTO edges (source, target, type, weight, properties, created_at, id) VALUES (?,?,?,?,?,?,?) "
               "ON CONFLICT(source, target, type) DO UPDATE SET weight = max(weight, excluded.weight), "
               "properties = kgos_merge(properties, excluded.properties)")
        with merge.reported():
            self.conn.executemany(sql, rows)


class PropertyMerge:
    """SQLite function ``kgos_merge(old, new)``: spec/002's merge in SQL. SQLite turns any exception
    raised inside it into an OperationalError, so the limit it broke is kept here to report."""

    def __init__(self) -> None:
        self.error: InvalidArgument | None = None

    def __call__(self, old: str, new: str) -> str:
        try:
            return check_properties(merge_properties(parse_json(old or "{}"), parse_json(new or "{}")))
        except InvalidArgument as exc:
            self.error = exc
            raise

    def reported(self) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def scope() -> Any:
            self.error = None
            try:
                yield
            except sqlite3.OperationalError:
                if self.error is None:
                    raise
                raise ImportFailed(f"{self.error} (once merged with the properties already in the KG)") from None
        return scope()


def _merge_function(conn: sqlite3.Connection) -> PropertyMerge:
    merge = PropertyMerge()
    conn.create_function("kgos_merge", 2, merge, deterministic=True)
    return merge
