"""The write primitives of a PostgreSQL KG (``writing.WriteOps``), on the store's open transaction.

Rows a write will change are read ``FOR UPDATE``: two servers merging into one node serialise (the
second waits, then merges into what the first wrote) instead of losing one write. Bulk merges are the
importer's: one statement per batch, the old properties read (locked) first and merged in Python.
"""

from __future__ import annotations

from typing import Any

from ..errors import ImportFailed, InvalidArgument
from ..model import Edge, Node, normalize_name, slugify
from .limits import check_properties, parse_json
from .native import edge_of_row, node_of_row
from .postgres import _EDGE_FROM as EDGE_FROM
from .postgres import EDGE_COLS, NODE_COLS
from .writing import WriteOps, dumps, merge_properties

_ROWID = "(SELECT rowid FROM {s}.nodes WHERE id = %s)"


class PgOps(WriteOps):
    def __init__(self, store: Any) -> None:
        self.store = store
        self._rows = store._rows  # runs on the transaction's connection ({s}: the KG's schema)

    def node(self, node_id: str) -> Node | None:
        rows = self._rows(f"SELECT {NODE_COLS} FROM {{s}}.nodes WHERE id = %s FOR UPDATE", (node_id,))
        return node_of_row(rows[0]) if rows else None

    def entity(self, norm_name: str, type: str) -> Node | None:
        rows = self._rows(f"SELECT {NODE_COLS} FROM {{s}}.nodes WHERE norm_name = %s AND type = %s ORDER BY rowid "
                          "LIMIT 1 FOR UPDATE", (norm_name, type))
        return node_of_row(rows[0]) if rows else None

    def id_taken(self, node_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM {s}.nodes WHERE id = %s", (node_id,)))

    def fresh_id(self, type: str, name: str) -> str:
        """One query for every taken ``<base>_<n>`` (not one per candidate)."""
        base = f"{slugify(type)}:{slugify(name)}"
        like = base.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "\\_%"
        taken = {r[0] for r in self._rows("SELECT id FROM {s}.nodes WHERE id = %s OR id LIKE %s", (base, like))}
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        return candidate

    def insert_node(self, n: Node) -> None:
        self._rows("INSERT INTO {s}.nodes (id, name, norm_name, type, description, properties, created_at, "
                   "updated_at) VALUES (%s,%s,%s,%s,%s,%s::jsonb,%s,%s) RETURNING 1",
                   (n.id, n.name, normalize_name(n.name), n.type, n.description, dumps(n.properties),
                    n.created_at, n.updated_at))

    def update_node(self, n: Node) -> None:
        self._rows("UPDATE {s}.nodes SET name=%s, norm_name=%s, type=%s, description=%s, properties=%s::jsonb, "
                   "updated_at=%s WHERE id=%s RETURNING 1",
                   (n.name, normalize_name(n.name), n.type, n.description, dumps(n.properties), n.updated_at, n.id))

    def degree(self, node_id: str) -> int:
        rows = self._rows("SELECT count(*) FROM {s}.edges WHERE source = " + _ROWID + " OR target = " + _ROWID,
                          (node_id, node_id))
        return int(rows[0][0])

    def delete_node(self, node_id: str) -> int:
        n_edges = self.degree(node_id)
        self._rows("DELETE FROM {s}.nodes WHERE id = %s RETURNING 1", (node_id,))  # edges: ON DELETE CASCADE
        return n_edges

    def edge(self, source: str, target: str, type: str) -> Edge | None:
        rows = self._rows(f"SELECT {EDGE_COLS} {EDGE_FROM} WHERE s.id = %s AND t.id = %s AND e.type = %s "
                          "FOR UPDATE OF e", (source, target, type))
        return edge_of_row(rows[0]) if rows else None

    def edge_id_taken(self, edge_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM {s}.edges WHERE id = %s", (edge_id,)))

    def insert_edge(self, e: Edge) -> None:
        self._rows("INSERT INTO {s}.edges (source, target, type, weight, properties, created_at, id) "
                   "SELECT s.rowid, t.rowid, %s, %s, %s::jsonb, %s, %s FROM {s}.nodes s, {s}.nodes t "
                   "WHERE s.id = %s AND t.id = %s RETURNING 1",
                   (e.type, e.weight, dumps(e.properties), e.created_at, e.id, e.source, e.target))

    def update_edge(self, e: Edge) -> None:
        self._rows("UPDATE {s}.edges SET weight = %s, properties = %s::jsonb WHERE source = " + _ROWID +
                   " AND target = " + _ROWID + " AND type = %s RETURNING 1",
                   (e.weight, dumps(e.properties), e.source, e.target, e.type))

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        return bool(self._rows("DELETE FROM {s}.edges WHERE source = " + _ROWID + " AND target = " + _ROWID +
                               " AND type = %s RETURNING 1", (source, target, type)))

    # -- bulk mode -----------------------------------------------------------------------------------------
    def merge_node_rows(self, rows: list[tuple[Any, ...]], ts: str) -> None:
        s = self.store.s
        sql = (f"INSERT INTO {s}.nodes (id, name, norm_name, type, description, properties, created_at, updated_at) "
               "VALUES (%s,%s,%s,%s,%s,%s::jsonb,%s,%s) ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
               "norm_name = excluded.norm_name, type = excluded.type, description = CASE WHEN excluded.description "
               "= '' THEN nodes.description ELSE excluded.description END, properties = excluded.properties, "
               "updated_at = GREATEST(nodes.updated_at, %s)")
        with self.store._conn() as conn:
            old = dict(conn.execute(f"SELECT id, properties::text FROM {s}.nodes WHERE id = ANY(%s) FOR UPDATE",
                                    ([r[0] for r in rows],)).fetchall())
            conn.cursor().executemany(sql, [(*r[:5], _merged(old.get(r[0]), r[5]), *r[6:], ts) for r in rows])

    def patch_node_properties(self, rows: list[tuple[str, str]], ts: str) -> None:
        s = self.store.s  # jsonb ||: the given top-level keys replace theirs, the others stay
        with self.store._conn() as conn:
            conn.cursor().executemany(f"UPDATE {s}.nodes SET properties = properties || %s::jsonb, "
                                      "updated_at = GREATEST(updated_at, %s) WHERE id = %s",
                                      [(props, ts, node_id) for node_id, props in rows])

    def node_keys(self) -> dict[str, Any]:
        return dict(self._rows("SELECT id, rowid FROM {s}.nodes"))

    def merge_edge_rows(self, rows: list[tuple[Any, ...]]) -> None:
        s = self.store.s
        sql = (f"INSERT INTO {s}.edges (source, target, type, weight, properties, created_at, id) "
               "VALUES (%s,%s,%s,%s,%s::jsonb,%s,%s) ON CONFLICT (source, target, type) DO UPDATE SET "
               "weight = GREATEST(edges.weight, excluded.weight), properties = excluded.properties")
        with self.store._conn() as conn:
            current = _existing_edges(conn, s, rows)
            for row in rows:  # several rows of one key in the file merge in order, as row-by-row upserts do
                key = row[:3]
                props = _merged(current[key][1], row[4]) if key in current else row[4]
                weight = max(current[key][0], row[3]) if key in current else row[3]
                current[key] = (weight, props, row)
            final = [(k[0], k[1], k[2], w, p, r[5], r[6]) for k, (w, p, r) in current.items() if r is not None]
            conn.cursor().executemany(sql, final)


def _merged(old: str | None, new: str) -> str:
    if old is None:
        return new
    try:
        return check_properties(merge_properties(parse_json(old), parse_json(new)))
    except InvalidArgument as exc:
        raise ImportFailed(f"{exc} (once merged with the properties already in the KG)") from None


def _existing_edges(conn: Any, s: str, rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], Any]:
    """(source, target, type) -> (weight, properties text, None) of the edges already in the KG."""
    if not rows:
        return {}
    found = conn.execute(
        f"SELECT e.source, e.target, e.type, e.weight, e.properties::text FROM {s}.edges e JOIN "
        "unnest(%s::bigint[], %s::bigint[], %s::text[]) AS k(s, t, y) ON e.source = k.s AND e.target = k.t "
        "AND e.type = k.y FOR UPDATE OF e", ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))
    return {(r[0], r[1], r[2]): (r[3], r[4], None) for r in found.fetchall()}
