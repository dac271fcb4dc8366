"""The native KG file: one SQLite database in the schema of ``migrations.py``.

Node ids are text and stable; inside the file edges point at node rowids so joins and indexes stay
small. Every write runs in one ``BEGIN IMMEDIATE`` transaction that also bumps ``kg_meta.version``,
which is what derived indexes and caches key on.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument, KGNotFound, KGOSError
from ..model import Edge, Neighbor, Node, normalize_name
from . import changes
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
    concurrent_reads = True  # a read connection per thread (``conn``)

    def __init__(self, path: Path | str, db_id: str, read_only: bool = False) -> None:
        self.path = Path(path)
        self.db_id = db_id
        self.read_only = read_only
        self._lock = threading.RLock()  # the writer connection: one unit of work at a time
        self.writer_conn = connect(self.path, read_only)
        self._readers = threading.local()  # each thread's own read connection (see ``conn``)
        self._closed = False
        self._inode = os.stat(self.path).st_ino  # the file opened (``replaced``)
        if not read_only:
            migrate(self.writer_conn)

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
        """Close the writer and this thread's reader. Readers of other threads may be inside a query
        (a search while the KG is deleted): they finish on the file they opened, and are closed when
        the store is collected; a thread without one gets ``KGNotFound`` once the file is gone."""
        with self._lock:  # a write in flight on another thread ends first
            self._closed = True
            self.writer_conn.close()
        reader = getattr(self._readers, "conn", None)
        if reader is not None:
            self._readers.conn = None
            reader.close()

    def replaced(self) -> bool:
        """Whether the file at ``path`` is no longer the one this store opened (deleted, or deleted and
        created anew by another process): its connections would go on reading the old one."""
        try:
            return os.stat(self.path).st_ino != self._inode
        except FileNotFoundError:
            return True

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection for a statement of this thread: the writer's inside this thread's unit of
        work (it sees its own uncommitted rows), else a read connection of this thread's own. So reads
        of many threads run at once (WAL: they never wait for the writer) and never see another
        thread's half-done write; writes are serialised by the writer's lock."""
        if self._units():
            return self.writer_conn
        reader: sqlite3.Connection | None = getattr(self._readers, "conn", None)
        if reader is None:
            reader = self._readers.conn = self._open_reader()
        return reader

    def _open_reader(self) -> sqlite3.Connection:
        try:  # "rw"/"ro", never "rwc": a KG deleted meanwhile is not created again, empty
            conn = sqlite3.connect(sqlite_uri(self.path, "ro" if self.read_only else "rw"), uri=True,
                                   isolation_level=None, check_same_thread=False)
        except sqlite3.OperationalError:
            raise KGNotFound(f"KG '{self.db_id}' is gone (deleted while in use): {self.path}") from None
        conn.execute("PRAGMA foreign_keys = ON")  # as the writer's: a statement behaves the same on either
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

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
        with self._lock:
            if self._closed:  # deleted or replaced by another thread meanwhile: nothing is written
                raise KGNotFound(f"KG '{self.db_id}' was deleted or replaced while this write waited")
            with refused_writes(f"KG '{self.db_id}'"), sqlite_write(self.writer_conn, self._lock, self._units(),
                                                                    nested, lambda: bump() and self._bump()) as conn:
                yield conn

    def _bump(self) -> None:
        self.writer_conn.execute("INSERT INTO kg_meta VALUES ('version', '1') ON CONFLICT(key) "
                          "DO UPDATE SET value = CAST(value AS INTEGER) + 1")
        if not self.read_only and self._has_feed():
            changes.prune_now_and_then(self.writer_conn, "")  # inside the unit: the writer's connection

    def _has_feed(self) -> bool:
        """Has this file the change feed (migration 006)? Read-only files of older schemas have not.
        Asked on the writer's connection: a reader opened during a commit would keep the file from
        leaving WAL mode (a bulk load's journal switch failed with "database is locked")."""
        if not hasattr(self, "_feed"):
            self._feed = self.writer_conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'kg_changes'").fetchone() is not None
        return self._feed

    def changes_since(self, version: str) -> changes.Changes | None:
        """The rows written since ``version`` (of this file), or None when the feed cannot tell."""
        created, _, counter = version.rpartition("#")
        if not self._has_feed() or created != self.meta().get("created_at", "") or not counter.isdigit():
            return None
        with self._lock:
            return changes.read(self.conn, "", "?", int(counter))

    def changed_rows(self, feed: changes.Changes, model: str | None) -> changes.Rows:
        """The current node, edge and vector rows of ``feed`` (see ``changes.rows``)."""
        with self._lock:
            return changes.rows(self.conn, "", "sqlite", feed, model)

    def edge_rowids(self) -> np.ndarray:
        """The rowid of every edge, in rowid order (the order of ``graph_arrays``' edges)."""
        with self._lock:
            rows = self.conn.execute("SELECT rowid FROM edges ORDER BY rowid").fetchall()
        return np.fromiter((r[0] for r in rows), np.int64, len(rows))

    def _write_ops(self, conn: sqlite3.Connection) -> WriteOps:
        from .native_writes import NativeOps
        return NativeOps(conn)

    def node_table(self) -> NodeTable:
        return NodeTable("sqlite", "FROM nodes n WHERE 1", "n.id", "n.name", "n.type", "n.description",
                         "n.properties", "n.rowid", self._select)

    def _select(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """A pushed-down query of the methods layer, on this store's connection and under its lock."""
        return self.conn.execute(sql, args).fetchall()

    def vector_models(self) -> dict[str, int]:
        try:
            return dict(self.conn.execute("SELECT model, count(*) FROM node_embeddings GROUP BY model"))
        except sqlite3.OperationalError:  # a read-only file of a schema without the table
            return {}

    def row_reader(self) -> Any:
        from .native_rows import RowReader
        return RowReader(LiveConnection(self), contextlib.nullcontext())  # this thread's connection

    def proposal_store(self) -> Any:
        """The review queue in the KG file itself (``kg_predictions``): a promotion is one transaction."""
        if self.read_only:
            return None
        from .proposals import SQLiteProposalStore
        return SQLiteProposalStore(LiveConnection(self), self._lock, self, same_file=True)

    def vector_table(self) -> Any:
        from .vector_tables import SQLiteVectorTable
        return SQLiteVectorTable(LiveConnection(self), native=True)

    def read_transaction(self) -> AbstractContextManager[None]:
        """Several reads as one: the version, graph arrays, nodes, rowids and vectors of one state
        (the file is in WAL mode, so writers in other processes are not held up)."""
        conn = self.conn  # this thread's reader (no lock: nobody else uses it), or the writer in a unit
        return sqlite_read(conn, self._lock if conn is self.writer_conn else contextlib.nullcontext())

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

class LiveConnection:
    """The store's connection of the calling thread, looked up at each statement (``NativeStore.conn``):
    for helpers made once and used from several threads (the review queue, the vector table)."""

    def __init__(self, store: NativeStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store.conn, name)


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

