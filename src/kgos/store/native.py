"""The native KG file: one SQLite database in the schema of ``migrations.py``.

Node ids are text and stable; inside the file edges point at node rowids so joins and indexes stay
small. Every write runs in one ``BEGIN IMMEDIATE`` transaction that also bumps ``kg_meta.version``,
which is what derived indexes and caches key on.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument, KGOSError
from ..model import Edge, Neighbor, Node, normalize_name, slugify
from .arrays import GraphArrays, codes
from .base import GraphStore, load_json_object, sqlite_read
from .limits import check_mergeable, check_properties
from .migrations import migrate, now_iso

NODE_COLS = "rowid, id, name, type, description, properties, created_at, updated_at"
EDGE_SELECT = ("SELECT s.id, t.id, e.type, e.weight, e.properties, e.id, e.created_at "
               "FROM edges e JOIN nodes s ON s.rowid = e.source JOIN nodes t ON t.rowid = e.target")


def connect(path: Path | str, read_only: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, foreign keys on."""
    uri = sqlite_uri(Path(path), "ro" if read_only else "rwc")
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 5000")
    if not read_only:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def sqlite_uri(path: Path, mode: str) -> str:
    """A SQLite ``file:`` URI for ``path``, percent-encoded: unescaped, a '#', '?' or '%' in a folder
    name would end or alter the path and the database would land somewhere else."""
    return f"{path.absolute().as_uri()}?mode={mode}"


def dumps(value: dict[str, Any], what: str = "properties") -> str:
    """Properties as stored: compact JSON, within the depth and size bounds of ``limits``."""
    return check_properties(value, what)


def merge_properties(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """New keys win, except ``evidence``, which accumulates (spec/002: evidence is merged)."""
    check_mergeable(old)
    merged = {**old, **new}
    if "evidence" in old and "evidence" in new:
        items = _as_list(old["evidence"])
        items += [e for e in _as_list(new["evidence"]) if e not in items]
        merged["evidence"] = items
    return merged


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def check_weight(weight: Any) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
        raise InvalidArgument(f"edge weight must be a finite number, not {weight!r}")
    return float(weight)


def node_of_row(row: tuple[Any, ...]) -> Node:
    """A ``Node`` from a row of ``NODE_COLS`` (the same columns in SQLite and PostgreSQL)."""
    return Node(id=row[1], name=row[2], type=row[3], description=row[4],
                properties=load_json_object(row[5], f"properties of node {row[1]!r}"),
                created_at=row[6], updated_at=row[7])


def edge_of_row(row: tuple[Any, ...]) -> Edge:
    """An ``Edge`` from a row (source id, target id, type, weight, properties, id, created_at)."""
    return Edge(source=row[0], target=row[1], type=row[2], weight=row[3],
                properties=load_json_object(row[4], "edge properties"), id=row[5], created_at=row[6])


class NativeStore(GraphStore):
    """A native KG file. Open with ``NativeStore(path, db_id)``; create with ``NativeStore.create``."""

    native_schema = True

    def __init__(self, path: Path | str, db_id: str, read_only: bool = False) -> None:
        self.path = Path(path)
        self.db_id = db_id
        self.read_only = read_only
        self._lock = threading.RLock()
        self.conn = connect(self.path, read_only)
        if not read_only:
            migrate(self.conn)

    @classmethod
    def create(cls, path: Path | str, db_id: str, name: str | None = None,
               description: str = "") -> NativeStore:
        store = cls(path, db_id)
        with store.transaction():
            for key, value in (("name", name or db_id), ("description", description),
                               ("format", "kgos-native/1"), ("created_at", now_iso())):
                store.conn.execute("INSERT OR IGNORE INTO kg_meta VALUES (?, ?)", (key, value))
        return store

    def close(self) -> None:
        self.conn.close()

    # -- transactions and metadata ------------------------------------------------------------
    @contextmanager
    def transaction(self, bump: bool = True) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything or nothing, and one version bump. ``bump=False`` is for writes
        no snapshot reads (vectors of a model search does not use yet): no reader rebuilds for them."""
        self.require_writable()
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                if bump:
                    self.conn.execute(
                        "INSERT INTO kg_meta VALUES ('version', '1') ON CONFLICT(key) "
                        "DO UPDATE SET value = CAST(value AS INTEGER) + 1")
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def read_transaction(self) -> AbstractContextManager[None]:
        """Several reads as one: the version, graph arrays, nodes, rowids and vectors of one state
        (the file is in WAL mode, so writers in other processes are not held up)."""
        return sqlite_read(self.conn, self._lock)

    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM kg_meta"))

    def set_meta(self, **values: str) -> None:
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO kg_meta VALUES (?, ?)", values.items())

    def version(self) -> str:
        """Write counter plus creation time: a file replaced by a new import never reuses a version."""
        rows = dict(self.conn.execute("SELECT key, value FROM kg_meta WHERE key IN ('version', 'created_at')"))
        return f"{rows.get('created_at', '')}#{rows.get('version', '0')}"

    def node_rowids(self) -> np.ndarray:
        """The rowid of each node, in ``graph_arrays`` order (FTS5 results are keyed by rowid)."""
        return np.fromiter((r[0] for r in self.conn.execute("SELECT rowid FROM nodes ORDER BY rowid")), np.int64)

    # -- reads ---------------------------------------------------------------------------------
    def node_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]

    def edge_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM edges").fetchone()[0]

    def node_types(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT type, count(*) FROM nodes GROUP BY type ORDER BY 2 DESC"))

    def edge_types(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT type, count(*) FROM edges GROUP BY type ORDER BY 2 DESC"))

    _node = staticmethod(node_of_row)
    _edge = staticmethod(edge_of_row)

    def get_node(self, node_id: str) -> Node | None:
        row = self.conn.execute(f"SELECT {NODE_COLS} FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return self._node(row) if row else None

    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, Node]:
        ids = list(dict.fromkeys(node_ids))
        found: dict[str, Node] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            sql = f"SELECT {NODE_COLS} FROM nodes WHERE id IN ({','.join('?' * len(chunk))})"
            found.update((row[1], self._node(row)) for row in self.conn.execute(sql, chunk))
        return found

    def find_nodes(self, name: str, type: str | None = None, limit: int = 50) -> list[Node]:
        sql, args = f"SELECT {NODE_COLS} FROM nodes WHERE norm_name = ?", [normalize_name(name)]
        if type is not None:
            sql, args = sql + " AND type = ?", args + [type]
        return [self._node(r) for r in self.conn.execute(sql + " LIMIT ?", (*args, limit))]

    def search_names(self, text: str, limit: int = 10) -> list[Node]:
        pattern = "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = (f"SELECT {NODE_COLS} FROM nodes WHERE norm_name LIKE ? ESCAPE '\\' "
               f"OR lower(id) LIKE ? ESCAPE '\\' ORDER BY length(name) LIMIT ?")
        return [self._node(r) for r in self.conn.execute(sql, (pattern, pattern, limit))]

    def iter_nodes(self) -> Iterator[Node]:
        for row in self.conn.execute(f"SELECT {NODE_COLS} FROM nodes ORDER BY rowid"):
            yield self._node(row)

    def iter_edges(self) -> Iterator[Edge]:
        for row in self.conn.execute(EDGE_SELECT + " ORDER BY e.rowid"):
            yield self._edge(row)

    def get_edge(self, source: str, target: str, type: str) -> Edge | None:
        row = self.conn.execute(EDGE_SELECT + " WHERE s.id = ? AND t.id = ? AND e.type = ?",
                                (source, target, type)).fetchone()
        return self._edge(row) if row else None

    def _node_key(self, node_id: str) -> int:
        return self.rowid(node_id)

    def _hop(self, rowid: int, side: str, types: list[str] | None, limit: int | None) -> list[Neighbor]:
        # `here`/`there` are one of two fixed column names, never user input.
        here, there = ("source", "target") if side == "outgoing" else ("target", "source")
        sql = (f"SELECT s.id, t.id, e.type, e.weight, e.properties, e.id, e.created_at, "
               f"{', '.join('n.' + c for c in NODE_COLS.split(', '))} FROM edges e "
               f"JOIN nodes s ON s.rowid = e.source JOIN nodes t ON t.rowid = e.target "
               f"JOIN nodes n ON n.rowid = e.{there} WHERE e.{here} = ?")
        args: list[Any] = [rowid]
        if types is not None:
            sql += f" AND e.type IN ({','.join('?' * len(types))})"
            args += types
        sql += " ORDER BY e.weight DESC, e.rowid" + (" LIMIT ?" if limit is not None else "")
        if limit is not None:
            args.append(limit)
        return [Neighbor(node=self._node(r[7:]), edge=self._edge(r[:7]), direction=side)  # type: ignore[arg-type]
                for r in self.conn.execute(sql, args)]

    def graph_arrays(self) -> GraphArrays:
        with self.read_transaction():  # nodes and edges of one state: no edge to a node not yet listed
            rows, edges = self._graph_rows()
        return graph_arrays_of(rows, edges)

    def _graph_rows(self) -> tuple[list[Any], list[Any]]:
        nodes = self.conn.execute("SELECT rowid, id, type FROM nodes ORDER BY rowid").fetchall()
        # Edges to missing nodes are dropped by graph_arrays, in numpy: an EXISTS probe per endpoint
        # made this read 4x slower (3.3 s against 0.9 s of CPU for 1M edges).
        edges = self.conn.execute("SELECT source, target, type, weight FROM edges ORDER BY rowid").fetchall()
        return nodes, edges

    def rowid(self, node_id: str) -> int:
        row = self.conn.execute("SELECT rowid FROM nodes WHERE id = ?", (node_id,)).fetchone()
        if row is None:
            raise self.not_found(node_id)
        return row[0]

    # -- node writes ---------------------------------------------------------------------------
    def add_node(self, name: str, type: str = "entity", description: str = "",
                 properties: dict[str, Any] | None = None, id: str | None = None) -> Node:
        """Insert a new node; ``id`` defaults to ``<type>:<slug of name>`` made unique."""
        check_node_fields(name, type, description, properties)
        with self.transaction() as conn:
            node_id = id if id is not None else self._fresh_id(type, name)
            if conn.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone():
                raise InvalidArgument(f"a node with id '{node_id}' already exists; use update_node")
            self._insert_node(conn, node_id, name, type, description, properties or {})
        return self.get_node(node_id)  # type: ignore[return-value]

    def upsert_node(self, id: str, name: str, type: str = "entity", description: str = "",
                    properties: dict[str, Any] | None = None) -> Node:
        """Insert, or update the node with this id (properties merged, created_at kept)."""
        check_node_fields(name, type, description, properties)
        with self.transaction() as conn:
            self._upsert_by_id(conn, id, name, type, description, properties or {})
        return self.get_node(id)  # type: ignore[return-value]

    def upsert_entity(self, name: str, type: str, properties: dict[str, Any] | None = None,
                      description: str = "", id: str | None = None) -> Node:
        """Entity semantics of spec/002: unique by (normalised name, type); metadata merged."""
        check_node_fields(name, type, description, properties)
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM nodes WHERE norm_name = ? AND type = ? ORDER BY rowid LIMIT 1",
                               (normalize_name(name), type)).fetchone()
            node_id = row[0] if row else (id or self._fresh_id(type, name))
            self._upsert_by_id(conn, node_id, row and self.get_node(node_id).name or name,  # type: ignore[union-attr]
                               type, description, properties or {})
        return self.get_node(node_id)  # type: ignore[return-value]

    def update_node(self, id: str, name: str | None = None, type: str | None = None,
                    description: str | None = None, properties: dict[str, Any] | None = None,
                    replace_properties: bool = False) -> Node:
        old = self.get_node(id)
        if old is None:
            raise self.not_found(id)
        new = updated_fields(old, name, type, description, properties, replace_properties)
        with self.transaction() as conn:
            conn.execute("UPDATE nodes SET name=?, norm_name=?, type=?, description=?, properties=?, "
                         "updated_at=? WHERE id=?",
                         (new[0], normalize_name(new[0]), new[1], new[2], dumps(new[3]), now_iso(), id))
        return self.get_node(id)  # type: ignore[return-value]

    def delete_node(self, id: str) -> int:
        """Delete a node and its edges; returns the number of edges removed with it."""
        with self.transaction() as conn:
            rowid = self.rowid(id)
            n_edges = conn.execute("SELECT count(*) FROM edges WHERE source = ? OR target = ?",
                                   (rowid, rowid)).fetchone()[0]
            conn.execute("DELETE FROM nodes WHERE rowid = ?", (rowid,))
        return n_edges

    def _fresh_id(self, type: str, name: str) -> str:
        base = f"{slugify(type)}:{slugify(name)}"
        candidate, n = base, 1
        while self.conn.execute("SELECT 1 FROM nodes WHERE id = ?", (candidate,)).fetchone():
            n += 1
            candidate = f"{base}_{n}"
        return candidate

    def _insert_node(self, conn: sqlite3.Connection, node_id: str, name: str, type: str,
                     description: str, props: dict[str, Any]) -> None:
        ts = now_iso()
        conn.execute("INSERT INTO nodes (id, name, norm_name, type, description, properties, created_at, "
                     "updated_at) VALUES (?,?,?,?,?,?,?,?)",
                     (node_id, name, normalize_name(name), type, description, dumps(props), ts, ts))

    def _upsert_by_id(self, conn: sqlite3.Connection, node_id: str, name: str, type: str,
                      description: str, props: dict[str, Any]) -> None:
        old = self.get_node(node_id)
        if old is None:
            self._insert_node(conn, node_id, name, type, description, props)
            return
        merged = merge_properties(old.properties, props)
        conn.execute("UPDATE nodes SET name=?, norm_name=?, type=?, description=?, properties=?, updated_at=? "
                     "WHERE id=?", (name, normalize_name(name), type, description or old.description,
                                    dumps(merged), now_iso(), node_id))

    # -- edge writes ---------------------------------------------------------------------------
    def add_edge(self, source: str, target: str, type: str, weight: float = 1.0,
                 properties: dict[str, Any] | None = None, id: str | None = None) -> Edge:
        """Upsert by (source, target, type): weight = max(old, new), properties/evidence merged,
        the original ``created_at`` kept (spec/002)."""
        weight = check_weight(weight)
        if not isinstance(type, str) or not type.strip():
            raise InvalidArgument("edge type must be a non-empty string")
        with self.transaction() as conn:
            s, t = self.rowid(source), self.rowid(target)
            old = self.get_edge(source, target, type)
            if old is None:
                conn.execute("INSERT INTO edges (source, target, type, weight, properties, created_at, id) "
                             "VALUES (?,?,?,?,?,?,?)", (s, t, type, weight, dumps(properties or {}),
                                                        now_iso(), id))
            else:
                merged = merge_properties(old.properties, properties or {})
                conn.execute("UPDATE edges SET weight = ?, properties = ? WHERE source=? AND target=? AND type=?",
                             (max(old.weight, weight), dumps(merged), s, t, type))
        return self.get_edge(source, target, type)  # type: ignore[return-value]

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        with self.transaction() as conn:
            cur = conn.execute("DELETE FROM edges WHERE source = ? AND target = ? AND type = ?",
                               (self.rowid(source), self.rowid(target), type))
        return cur.rowcount > 0


def check_node_fields(name: Any, type: Any, description: Any, properties: Any) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument("node name must be a non-empty string")
    if not isinstance(type, str) or not type.strip():
        raise InvalidArgument("node type must be a non-empty string")
    if not isinstance(description, str):
        raise InvalidArgument("node description must be a string")
    if properties is not None and not isinstance(properties, dict):
        raise InvalidArgument("node properties must be a JSON object (a dict)")


def updated_fields(old: Node, name: str | None, type: str | None, description: str | None,
                   properties: dict[str, Any] | None, replace_properties: bool) -> tuple[str, str, str, dict[str, Any]]:
    """(name, type, description, properties) of ``old`` after ``update_node``, checked: the given
    fields replace the old ones; properties are merged into the old ones unless ``replace_properties``."""
    props = properties if replace_properties else merge_properties(old.properties, properties or {})
    new = (name if name is not None else old.name, type if type is not None else old.type,
           description if description is not None else old.description)
    check_node_fields(*new, props)
    return (*new, props or {})


def graph_arrays_of(rows: list[Any], edges: list[Any]) -> GraphArrays:
    """``GraphArrays`` from node rows (rowid, id, type) and edge rows (source rowid, target rowid, type,
    weight), both in rowid order."""
    rowids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    ntype, ntype_names = codes([r[2] for r in rows])
    n = len(edges)
    src, src_ok = _rows_of(rowids, np.fromiter((e[0] for e in edges), np.int64, n))
    dst, dst_ok = _rows_of(rowids, np.fromiter((e[1] for e in edges), np.int64, n))
    keep = np.flatnonzero(src_ok & dst_ok)
    if keep.size < n:  # only edges whose both ends exist (the schemas enforce it; a hand-edited file may not)
        edges = [edges[i] for i in keep.tolist()]
        src, dst, n = src[keep], dst[keep], keep.size
    etype, etype_names = codes([e[2] for e in edges])
    return GraphArrays(node_ids=tuple(r[1] for r in rows), node_types=ntype, node_type_names=ntype_names,
                       src=src, dst=dst, type_code=etype, types=etype_names,
                       weight=np.fromiter((e[3] for e in edges), np.float32, n))


def _rows_of(rowids: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row number of each key in the sorted ``rowids`` as int32, whether the key is there at all)."""
    if rowids.size and rowids[-1] - rowids[0] == rowids.size - 1:  # no gaps (no node deleted): no search
        pos = keys - rowids[0]
        found = (pos >= 0) & (pos < rowids.size)
        return np.where(found, pos, 0).astype(np.int32), found
    pos = np.searchsorted(rowids, keys)
    found = pos < rowids.size
    found[found] = rowids[pos[found]] == keys[found]
    return pos.astype(np.int32), found


__all__ = ["KGOSError", "NativeStore", "check_weight", "connect", "dumps", "merge_properties"]

