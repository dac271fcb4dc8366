"""A KG in PostgreSQL: the native schema in one schema of a shared database (docs/postgres.md).

The same contract as ``NativeStore``: reads of ``GraphStore``, the same writes with the same
semantics (spec/002 upserts, merged properties, max weights), one transaction per write. The version
is bumped by triggers on every write, whoever makes it, and other servers learn of it by
LISTEN/NOTIFY (``postgres_db``). Values only ever travel as parameters; the one identifier in the
SQL, the KG's schema, is quoted by psycopg and comes from ``kgos.kgs``.

>>> # store = PostgresStore("postgresql://kgos@/kgos?host=/run/postgresql", "notes")  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from ..errors import InvalidArgument, KGNotFound
from ..model import Edge, Neighbor, Node, normalize_name
from .arrays import GraphArrays
from .base import GraphStore
from .native import _conn_of, edge_of_row, graph_arrays_of, node_of_row
from .postgres_db import PgDatabase, database
from .postgres_schema import apply_kg

NODE_COLS = "rowid, id, name, type, description, properties::text, created_at, updated_at"
EDGE_COLS = "s.id, t.id, e.type, e.weight, e.properties::text, e.id, e.created_at"


class PostgresStore(GraphStore):
    """One KG of a PostgreSQL database. ``db`` is a URL or a ``PgDatabase``; ``remote_id`` is the KG's
    name in that database when it differs from ``db_id`` (a KG attached under another name)."""

    native_schema = True

    def __init__(self, db: str | PgDatabase, db_id: str, read_only: bool = False,
                 remote_id: str | None = None) -> None:
        self.db = database(db) if isinstance(db, str) else db
        self.db_id, self.remote_id, self.read_only = db_id, remote_id or db_id, read_only
        self.schema = self.db.require_kg(self.remote_id)
        self.s = self.db.ident(self.schema)
        self._local = threading.local()  # the connection of a transaction open in this thread
        # Also when attached read-only: the schema is KG-OS's own, and a newer one must be refused
        # before a read misses a table (read-only is about the KG's content).
        with self.db.connection() as conn, conn.transaction():
            apply_kg(conn, self.s)

    @classmethod
    def create(cls, db: str | PgDatabase, db_id: str, name: str | None = None,
               description: str = "") -> PostgresStore:
        pg = database(db) if isinstance(db, str) else db
        pg.create_kg(db_id, name, description)
        return cls(pg, db_id)

    @property
    def location(self) -> str:
        return f"{self.db.label}#{self.remote_id}"

    def close(self) -> None:
        """The pool is shared by every KG of the database (and closed with it)."""

    # -- connections and transactions ------------------------------------------------------------
    @contextmanager
    def _conn(self) -> Iterator[Any]:
        """The connection of this thread's open transaction, else a pooled one for one statement."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self.db.connection() as conn, _data_errors(self.db, self.db_id):
            yield conn

    def _rows(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql.replace("{s}", self.s), args).fetchall()

    def _one(self, sql: str, args: Any = ()) -> tuple[Any, ...] | None:
        rows = self._rows(sql, args)
        return rows[0] if rows else None

    supports_writes = True
    sql_dialect = "postgresql"
    supports_bulk = True

    def transaction(self, bump: bool = True) -> AbstractContextManager[Any]:
        """One atomic write: everything or nothing. Node, edge and metadata writes bump the version by
        trigger; ``bump`` also bumps it for writes to other tables (vectors search reads). Nests as a
        unit of work does (a savepoint inside an open one)."""
        return _conn_of(self._unit(bump))

    @contextmanager
    def _write_scope(self, nested: bool, bump: Callable[[], bool]) -> Iterator[Any]:
        if nested:
            conn = self._local.conn
            with _data_errors(self.db, self.db_id), conn.transaction():  # psycopg: a SAVEPOINT
                yield conn
            return
        with self.db.connection() as conn, _data_errors(self.db, self.db_id):
            with conn.transaction():
                self._local.conn = conn
                try:
                    yield conn
                    if bump():
                        self.db.bump(conn, self.s, self.schema)
                    version = self.db.version_of(conn, self.s)
                finally:
                    self._local.conn = None
            self.db.remember(self.schema, version)

    def _write_ops(self, conn: Any) -> Any:
        from .postgres_writes import PgOps
        return PgOps(self)

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """Several reads of one state (REPEATABLE READ): the version, arrays, nodes and vectors agree."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self.db.connection() as conn, _data_errors(self.db, self.db_id), conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    # -- metadata ----------------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        """Key/values of the KG; kept per version while the listener runs (search reads them per
        query, and every write to them bumps the version)."""
        inside = getattr(self._local, "conn", None) is not None
        version = None if inside else self.db.cached_version(self.schema)
        cached = getattr(self, "_meta", None)
        if version is not None and cached is not None and cached[0] == version:
            return dict(cached[1])
        meta = dict(self._rows("SELECT key, value FROM {s}.kg_meta"))
        if version is not None:
            self._meta = (version, meta)
        return dict(meta)  # type: ignore[arg-type]

    def set_meta(self, **values: str) -> None:
        with self.transaction(bump=False) as conn:  # the kg_meta trigger bumps
            conn.cursor().executemany(f"INSERT INTO {self.s}.kg_meta VALUES (%s, %s) ON CONFLICT (key) "
                                      "DO UPDATE SET value = excluded.value", list(values.items()))

    def version(self) -> str:
        """Creation time plus the write counter; from the listener's notices when it is up (no query),
        else read from the database (inside a read transaction always: that transaction's state)."""
        inside = getattr(self._local, "conn", None) is not None
        cached = None if inside else self.db.cached_version(self.schema)
        if cached is None:
            with self._conn() as conn:
                cached = self.db.version_of(conn, self.s)
            if not inside:
                self.db.remember(self.schema, cached)
        return f"{self._created_at()}#{cached}"

    def _created_at(self) -> str:
        created = getattr(self, "_created", None)
        if created is None:
            row = self._one("SELECT value FROM {s}.kg_meta WHERE key = 'created_at'")
            created = self._created = row[0] if row else ""
        return created

    # -- reads -------------------------------------------------------------------------------------
    def node_count(self) -> int:
        return int(self._rows("SELECT count(*) FROM {s}.nodes")[0][0])

    def edge_count(self) -> int:
        return int(self._rows("SELECT count(*) FROM {s}.edges")[0][0])

    def node_types(self) -> dict[str, int]:
        return dict(self._rows("SELECT type, count(*) FROM {s}.nodes GROUP BY type ORDER BY 2 DESC, 1"))  # type: ignore[arg-type]

    def edge_types(self) -> dict[str, int]:
        return dict(self._rows("SELECT type, count(*) FROM {s}.edges GROUP BY type ORDER BY 2 DESC, 1"))  # type: ignore[arg-type]

    _node = staticmethod(node_of_row)
    _edge = staticmethod(edge_of_row)

    def get_node(self, node_id: str) -> Node | None:
        row = self._one(f"SELECT {NODE_COLS} FROM {{s}}.nodes WHERE id = %s", (node_id,))
        return self._node(row) if row else None

    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, Node]:
        ids = list(dict.fromkeys(node_ids))
        rows = self._rows(f"SELECT {NODE_COLS} FROM {{s}}.nodes WHERE id = ANY(%s)", (ids,)) if ids else []
        return {row[1]: self._node(row) for row in rows}

    def find_nodes(self, name: str, type: str | None = None, limit: int = 50) -> list[Node]:
        sql, args = f"SELECT {NODE_COLS} FROM {{s}}.nodes WHERE norm_name = %s", [normalize_name(name)]
        if type is not None:
            sql, args = sql + " AND type = %s", args + [type]
        return [self._node(r) for r in self._rows(sql + " ORDER BY rowid LIMIT %s", (*args, limit))]

    def search_names(self, text: str, limit: int = 10) -> list[Node]:
        pattern = "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = (f"SELECT {NODE_COLS} FROM {{s}}.nodes WHERE norm_name LIKE %s ESCAPE '\\' "
               "OR lower(id) LIKE %s ESCAPE '\\' ORDER BY length(name), rowid LIMIT %s")
        return [self._node(r) for r in self._rows(sql, (pattern, pattern, limit))]

    def iter_nodes(self) -> Iterator[Node]:
        for row in self._rows(f"SELECT {NODE_COLS} FROM {{s}}.nodes ORDER BY rowid"):
            yield self._node(row)

    def iter_edges(self) -> Iterator[Edge]:
        for row in self._rows(f"SELECT {EDGE_COLS} {_EDGE_FROM} ORDER BY e.rowid"):
            yield self._edge(row)

    def get_edge(self, source: str, target: str, type: str) -> Edge | None:
        row = self._one(f"SELECT {EDGE_COLS} {_EDGE_FROM} WHERE s.id = %s AND t.id = %s AND e.type = %s",
                        (source, target, type))
        return self._edge(row) if row else None

    def _node_key(self, node_id: str) -> int:
        return self.rowid(node_id)

    def _hop(self, rowid: int, side: str, types: list[str] | None, limit: int | None) -> list[Neighbor]:
        # `here`/`there` are one of two fixed column names, never user input.
        here, there = ("source", "target") if side == "outgoing" else ("target", "source")
        node_cols = ", ".join("n." + c for c in NODE_COLS.split(", "))
        sql = (f"SELECT {EDGE_COLS}, {node_cols} {_EDGE_FROM} JOIN {{s}}.nodes n ON n.rowid = e.{there} "
               f"WHERE e.{here} = %s")
        args: list[Any] = [rowid]
        if types is not None:
            sql, args = sql + " AND e.type = ANY(%s)", args + [types]
        sql += " ORDER BY e.weight DESC, e.rowid" + (" LIMIT %s" if limit is not None else "")
        args += [limit] if limit is not None else []
        return [Neighbor(node=self._node(r[7:]), edge=self._edge(r[:7]), direction=side)  # type: ignore[arg-type]
                for r in self._rows(sql, args)]

    def graph_arrays(self) -> GraphArrays:
        with self.read_transaction():
            rows = self._rows("SELECT rowid, id, type FROM {s}.nodes ORDER BY rowid")
            edges = self._rows("SELECT source, target, type, weight FROM {s}.edges ORDER BY rowid")
        return graph_arrays_of(rows, edges)

    def node_rowids(self) -> np.ndarray:
        return np.fromiter((r[0] for r in self._rows("SELECT rowid FROM {s}.nodes ORDER BY rowid")), np.int64)

    def rowid(self, node_id: str) -> int:
        row = self._one("SELECT rowid FROM {s}.nodes WHERE id = %s", (node_id,))
        if row is None:
            raise self.not_found(node_id)
        return int(row[0])

    # -- validation hooks (kgos.store.validation) ---------------------------------------------------------
    def dangling_edges(self, limit: int) -> tuple[int, list[Edge]]:
        """Foreign keys with ON DELETE CASCADE: an edge cannot outlive its nodes here."""
        return 0, []

    def invalid_properties(self, limit: int) -> tuple[int, list[str]]:
        """jsonb holds valid JSON only, and every write went through ``limits``."""
        return 0, []

    # -- vectors (kgos.index.vectors) ---------------------------------------------------------------------
    def vector_table(self) -> PgVectorTable:
        return PgVectorTable(self)

    def proposal_store(self) -> Any:
        """The review queue (kgos.store.proposals) in this KG's schema."""
        from .postgres_proposals import PgProposalStore
        return PgProposalStore(self)

    def vector_models(self) -> dict[str, int]:
        return dict(self._rows("SELECT model, count(*) FROM {s}.node_embeddings GROUP BY model"))  # type: ignore[arg-type]


_EDGE_FROM = ("FROM {s}.edges e JOIN {s}.nodes s ON s.rowid = e.source JOIN {s}.nodes t ON t.rowid = e.target")


class PgVectorTable:
    """(node id, model) -> (content hash, float32 bytes), the interface of ``index.vectors``'s table.
    ``native``: the KG's own table, written inside the store's transactions."""

    native = True

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def rows(self, model: str, with_vectors: bool = False) -> dict[str, Any]:
        cols = "e.content_hash, e.vector, e.dims" if with_vectors else "e.content_hash"
        rows = self.store._rows(f"SELECT n.id, {cols} FROM {{s}}.node_embeddings e JOIN {{s}}.nodes n "
                                "ON n.rowid = e.node WHERE e.model = %s", (model,))
        if with_vectors:
            return {r[0]: (r[1], bytes(r[2]), r[3]) for r in rows}
        return {r[0]: r[1] for r in rows}

    def hashes(self, model: str, node_ids: list[str]) -> dict[str, str]:
        return dict(self.store._rows("SELECT n.id, e.content_hash FROM {s}.node_embeddings e JOIN {s}.nodes n "  # type: ignore[arg-type]
                                     "ON n.rowid = e.node WHERE e.model = %s AND n.id = ANY(%s)", (model, node_ids)))

    def write(self, model: str, dims: int, items: list[tuple[str, str, bytes]]) -> None:
        with self.store._conn() as conn:
            conn.cursor().executemany(
                f"INSERT INTO {self.store.s}.node_embeddings (node, model, dims, content_hash, vector) "
                f"SELECT rowid, %s, %s, %s, %s FROM {self.store.s}.nodes WHERE id = %s ON CONFLICT (node, model) "
                "DO UPDATE SET dims = excluded.dims, content_hash = excluded.content_hash, vector = excluded.vector",
                [(model, dims, h, v, nid) for nid, h, v in items])

    def remove(self, model: str, node_ids: Iterable[str]) -> None:
        ids = list(node_ids)
        if ids:
            self.store._rows("DELETE FROM {s}.node_embeddings e USING {s}.nodes n WHERE n.rowid = e.node "
                             "AND e.model = %s AND n.id = ANY(%s) RETURNING 1", (model, ids))

    def drop(self, model: str) -> None:
        self.store._rows("DELETE FROM {s}.node_embeddings WHERE model = %s RETURNING 1", (model,))


@contextmanager
def _data_errors(db: PgDatabase, db_id: str) -> Iterator[None]:
    """Values PostgreSQL cannot hold (a NUL character in text) become InvalidArgument, as a 400; a KG
    another server deleted meanwhile (its schema is gone) becomes KGNotFound, a 404."""
    errors = db.psycopg.errors
    try:
        yield
    except (errors.UndefinedTable, errors.InvalidSchemaName):
        raise KGNotFound(f"KG '{db_id}' was deleted from {db.label}") from None
    except db.psycopg.DataError as exc:
        raise InvalidArgument(f"PostgreSQL cannot store this value: {str(exc).splitlines()[0]} "
                              "(text and properties may not contain NUL characters)") from None
    except db.psycopg.IntegrityError as exc:  # a unique id taken meanwhile by another server's write
        raise InvalidArgument(f"KG '{db_id}' refused the write: {str(exc).splitlines()[0]}") from None
