"""The native KG file: one SQLite database in the schema of ``migrations.py``.

Node ids are text and stable; inside the file edges point at node rowids so joins and indexes stay
small. Every write runs in one ``BEGIN IMMEDIATE`` transaction that also bumps ``kg_meta.version``,
which is what derived indexes and caches key on.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument, KGOSError
from ..model import Edge, Neighbor, Node, normalize_name
from .arrays import GraphArrays, codes
from .base import GraphStore, load_json_object, sqlite_read
from .migrations import migrate, now_iso
from .node_table import NodeTable
from .writing import WriteOps, check_weight, dumps, merge_properties  # noqa: F401  (re-exported)

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
    supports_writes = True
    sql_dialect = "sqlite"
    supports_bulk = True

    def transaction(self, bump: bool = True) -> AbstractContextManager[sqlite3.Connection]:
        """One atomic write: everything or nothing, and one version bump. ``bump=False`` is for writes
        no snapshot reads (vectors of a model search does not use yet): no reader rebuilds for them.
        Nests as a unit of work does (a savepoint inside an open one)."""
        return _conn_of(self._unit(bump))

    @contextmanager
    def _write_scope(self, nested: bool, bump: Callable[[], bool]) -> Iterator[sqlite3.Connection]:
        with refused_writes(f"KG '{self.db_id}'"), sqlite_write(self.conn, self._lock, self._units(), nested,
                                                                lambda: bump() and self._bump()) as conn:
            yield conn

    def _bump(self) -> None:
        self.conn.execute("INSERT INTO kg_meta VALUES ('version', '1') ON CONFLICT(key) "
                          "DO UPDATE SET value = CAST(value AS INTEGER) + 1")

    def _write_ops(self, conn: sqlite3.Connection) -> WriteOps:
        from .native_writes import NativeOps
        return NativeOps(conn)

    def node_table(self) -> NodeTable:
        return NodeTable("sqlite", "FROM nodes n WHERE 1", "n.id", "n.name", "n.type", "n.description",
                         "n.properties", "n.rowid", self._select)

    def _select(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """A pushed-down query of the methods layer, on this store's connection and under its lock."""
        with self._lock:
            return self.conn.execute(sql, args).fetchall()

    def vector_models(self) -> dict[str, int]:
        try:
            return dict(self.conn.execute("SELECT model, count(*) FROM node_embeddings GROUP BY model"))
        except sqlite3.OperationalError:  # a read-only file of a schema without the table
            return {}

    def row_reader(self) -> Any:
        from .native_rows import RowReader
        return RowReader(self.conn, self._lock)

    def proposal_store(self) -> Any:
        """The review queue in the KG file itself (``kg_predictions``): a promotion is one transaction."""
        if self.read_only:
            return None
        from .proposals import SQLiteProposalStore
        return SQLiteProposalStore(self.conn, self._lock, self, same_file=True)

    def vector_table(self) -> Any:
        from .vector_tables import SQLiteVectorTable
        return SQLiteVectorTable(self.conn, native=True)

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

def create_native(path: Path | str, db_id: str, name: str | None = None, description: str = "") -> GraphStore:
    """A new native KG file at ``path`` (a scratch KG of a layer above, e.g. a memory rebuild): callers
    outside ``store`` get a ``GraphStore``, never the class."""
    return NativeStore.create(path, db_id, name, description)


@contextmanager
def _conn_of(unit: AbstractContextManager[tuple[Any, Any]]) -> Iterator[Any]:
    with unit as (conn, _log):
        yield conn


@contextmanager
def sqlite_write(conn: sqlite3.Connection, lock: Any, units: list[Any], nested: bool,
                 before_commit: Callable[[], Any]) -> Iterator[sqlite3.Connection]:
    """A unit of work's transaction on a SQLite connection: ``BEGIN IMMEDIATE`` ... ``COMMIT`` (after
    ``before_commit``), or a SAVEPOINT when nested. The lock is held by the writing thread until its
    outermost unit ends (the connection is shared by the threads of this process)."""
    with lock:
        if nested:
            with savepoint(conn, units):
                yield conn
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            before_commit()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


@contextmanager
def refused_writes(what: str) -> Iterator[None]:
    """A constraint of the file that refused a write (a unique id taken meanwhile) as InvalidArgument,
    naming the table: a clear 400, never a 500."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise InvalidArgument(f"{what} refused the write: {exc}") from None


@contextmanager
def savepoint(conn: sqlite3.Connection, units: list[Any]) -> Iterator[None]:
    """A SQLite SAVEPOINT: what runs inside is taken back alone if it fails."""
    name = f"kgos_unit_{len(units)}"  # one per nesting depth; fixed text, never input
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    conn.execute(f"RELEASE {name}")


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

