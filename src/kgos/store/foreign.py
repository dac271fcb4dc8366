"""A KG kept in a foreign SQLite schema, read (and, when attached writable, written) through a ``Profile``.

The file stays in its own layout: nothing is migrated or added to it. Node ids are exposed as text
whatever their storage class, missing columns get the native defaults (type ``entity``, weight 1.0,
empty description and properties), and edges whose endpoints are not node ids ("dangling") are left
out of the graph and reported by ``dangling_edges``. Every identifier in SQL comes from the profile and
is quoted by ``quote_ident``; every value is a bound parameter.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument, KGNotFound
from ..model import Edge, Neighbor, Node, normalize_name
from .arrays import GraphArrays, codes
from .base import GraphStore, sqlite_read
from .migrations import now_iso
from .native import refused_writes, sqlite_uri, sqlite_write
from .node_table import NodeTable
from .profiles import (
    VECTOR_TABLES,
    Profile,
    Schema,
    VectorTable,
    explain,
    profile_for,
    quote_ident,
    vector_tables,
)
from .writing import WriteOps, dumps

DEFAULT_EDGE_TYPE = "relates_to"  # for rows whose type cell is NULL
# Python's str.strip() removes these ASCII characters too; SQLite's trim() needs them spelled out.
_ASCII_SPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_NON_ASCII_GLOB = "*[^\x01-\x7f]*"
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]{0,18}")
_CHUNK = 250


def connect_foreign(path: Path, read_only: bool) -> sqlite3.Connection:
    """An autocommit connection; ``mode=ro`` when read-only, and never creates the file."""
    uri = sqlite_uri(path.resolve(), "ro" if read_only else "rw")
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.create_function("kgos_norm", 1, _norm, deterministic=True)
    return conn


def _norm(value: Any) -> str | None:
    return None if value is None else normalize_name(str(value))


def parse_properties(value: Any) -> dict[str, Any]:
    """A properties cell as a dict: JSON objects as they are, anything else as ``{"value": ...}``."""
    if value is None or value == "" or value == b"":
        return {}
    if not isinstance(value, (str, bytes)):
        return {"value": value}
    try:
        parsed = json.loads(value)
    except ValueError:  # not JSON: keep the text rather than fail the read; the validator reports it
        return {"value": value if isinstance(value, str) else value.decode("utf-8", "replace")}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def affinity(declared: str) -> str:
    """SQLite's column affinity for a declared type (https://sqlite.org/datatype3.html 3.1)."""
    d = declared.upper()
    if "INT" in d:
        return "INTEGER"
    if any(k in d for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not d or "BLOB" in d:
        return "BLOB"
    return "REAL" if any(k in d for k in ("REAL", "FLOA", "DOUB")) else "NUMERIC"


def key_forms(node_id: str) -> list[Any]:
    """The stored forms an exposed id may have: ``"12"`` may be the text '12' or the integer 12."""
    node_id = str(node_id)
    if _CANONICAL_INT.fullmatch(node_id) and -(2**63) <= int(node_id) < 2**63:  # SQLite's INTEGER range
        return [node_id, int(node_id)]
    return [node_id]


class Sql:
    """The SQL fragments of one profile. The only place identifiers are turned into SQL text."""

    def __init__(self, p: Profile) -> None:
        self.p = p
        self.nodes, self.edges = quote_ident(p.node_table), quote_ident(p.edge_table)
        # Rows with a NULL id are not nodes: nothing could point at them.
        self.node_rows = f"FROM {self.nodes} n WHERE {self.col('n', 'node_id')} IS NOT NULL"
        self.joined = (f"FROM {self.edges} e JOIN {self.nodes} s ON {self.col('s', 'node_id')} = "
                       f"{self.col('e', 'edge_source')} JOIN {self.nodes} t ON {self.col('t', 'node_id')} = "
                       f"{self.col('e', 'edge_target')}")
        self.dangling = (f"FROM {self.edges} e WHERE NOT EXISTS (SELECT 1 FROM {self.nodes} s WHERE "
                         f"{self.col('s', 'node_id')} = {self.col('e', 'edge_source')}) OR NOT EXISTS "
                         f"(SELECT 1 FROM {self.nodes} t WHERE {self.col('t', 'node_id')} = "
                         f"{self.col('e', 'edge_target')})")

    def opt(self, alias: str, attr: str) -> str | None:
        """``alias."column"`` of a profile field (bare ``"column"`` for alias ``""``), or ``None``."""
        column = getattr(self.p, attr)
        if column is None:
            return None
        return f"{alias}.{quote_ident(column)}" if alias else quote_ident(column)

    def col(self, alias: str, attr: str) -> str:
        """Like ``opt``, for a field the profile is known to map."""
        column = self.opt(alias, attr)
        assert column is not None, attr
        return column

    def text(self, alias: str, attr: str, default: str) -> str:
        column = self.opt(alias, attr)
        return f"coalesce(CAST({column} AS TEXT), {default})" if column else default

    def node_id(self, alias: str) -> str:
        return f"CAST({self.col(alias, 'node_id')} AS TEXT)"

    def node_type(self, alias: str) -> str:
        return self.text(alias, "node_type", "'entity'")

    def edge_type(self, alias: str = "e") -> str:
        return self.text(alias, "edge_type", f"'{DEFAULT_EDGE_TYPE}'")

    def weight(self, alias: str = "e") -> str:
        column = self.opt(alias, "edge_weight")
        return f"coalesce(CAST({column} AS REAL), 1.0)" if column else "1.0"

    def node_select(self, a: str) -> str:
        """id, name, type, description, properties, created_at, updated_at of node alias ``a``."""
        return ", ".join((self.node_id(a), self.text(a, "node_name", "''"), self.node_type(a),
                          self.text(a, "node_description", "''"), self.opt(a, "node_properties") or "NULL",
                          self.text(a, "node_created", "NULL"), self.text(a, "node_updated", "NULL")))

    def edge_select(self, source: str, target: str) -> str:
        """source, target, type, weight, properties, id, created_at of edge alias ``e``."""
        return ", ".join((source, target, self.edge_type(), self.weight(),
                          self.opt("e", "edge_properties") or "NULL", self.text("e", "edge_id", "NULL"),
                          self.text("e", "edge_created", "NULL")))

    def joined_edges(self, extra: str = "") -> str:
        """Edges whose endpoints are both nodes, ids as the nodes spell them; ``extra`` adds columns."""
        return f"SELECT {self.edge_select(self.node_id('s'), self.node_id('t'))}{extra} {self.joined}"

    def raw_edges(self) -> str:
        """Edges as stored, endpoints not joined: for the dangling report."""
        src = f"CAST({self.col('e', 'edge_source')} AS TEXT)"
        dst = f"CAST({self.col('e', 'edge_target')} AS TEXT)"
        return f"SELECT {self.edge_select(src, dst)}"

    def columns(self, values: dict[str, Any]) -> tuple[list[str], list[Any]]:
        """Profile field -> value, reduced to the fields the file has, as (quoted columns, values)."""
        kept = [(self.col("", attr), v) for attr, v in values.items() if getattr(self.p, attr) is not None]
        return [c for c, _ in kept], [v for _, v in kept]


def _node(row: tuple[Any, ...]) -> Node:
    return Node(id=row[0], name=row[1], type=row[2], description=row[3],
                properties=parse_properties(row[4]), created_at=row[5], updated_at=row[6])


def _edge(row: tuple[Any, ...]) -> Edge:
    return Edge(source=row[0], target=row[1], type=row[2], weight=float(row[3]),
                properties=parse_properties(row[4]), id=row[5], created_at=row[6])


def _file_stamp(path: Path) -> str:
    try:
        st = path.stat()
    except FileNotFoundError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


def _change_counter(path: Path) -> str:
    """Bytes 24-27 of the SQLite header: bumped by every commit in rollback-journal mode, so two
    writes within one mtime tick still give different versions."""
    try:
        with path.open("rb") as fh:
            header = fh.read(28)
    except OSError:
        return "-"
    return header[24:28].hex()


class ForeignStore(GraphStore):
    """A KG in a foreign SQLite schema. ``profile``: ``None`` detects, a name forces, a ``Profile`` maps."""

    def __init__(self, path: Path | str, db_id: str, profile: str | Profile | None = None,
                 read_only: bool = True) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise KGNotFound(f"no file '{self.path}' to attach as KG '{db_id}'")
        self.db_id = db_id
        self.read_only = read_only
        self._lock = threading.RLock()
        self.conn = connect_foreign(self.path, read_only)
        try:
            self.profile = profile_for(self.conn, profile)
            self.sql = Sql(self.profile)
            self._node_affinity = self._affinity(self.profile.node_table, self.profile.node_id)
            self._edge_id_affinity = (self._affinity(self.profile.edge_table, self.profile.edge_id)
                                      if self.profile.edge_id else "TEXT")
        except BaseException:
            self.conn.close()
            raise

    def _affinity(self, table: str, column: str) -> str:
        row = self.conn.execute("SELECT type FROM pragma_table_info(?) WHERE name = ?",
                                (table, column)).fetchone()
        return affinity(row[0] if row else "")

    def close(self) -> None:
        self.conn.close()

    # -- how the file was read, and the vectors it already has ---------------------------------
    def detection(self) -> list[str]:
        """The mapping of tables and columns, why it was chosen, and the vector tables found."""
        with self._lock:
            return explain(self.profile, Schema(self.conn))

    def vector_tables(self) -> list[VectorTable]:
        with self._lock:
            return vector_tables(Schema(self.conn))

    def stored_vectors(self, model: str | None = None, batch: int = 4096) -> Iterator[tuple[list[str], np.ndarray]]:
        """The file's own vectors (spec/001 1.5's float32 BLOBs) in batches of (node ids, (m, dims)
        float32); ``model`` picks the rows of that model in a table with a model column (required when
        it holds several). A row of another length than the table's first is a clear error naming it."""
        table = self._vector_table(model)
        q = quote_ident
        where = f" AND {q(table.model)} = ?" if table.model and model is not None else ""
        sql = (f"SELECT {q(table.node_id)}, {q(table.vector)} FROM {q(table.table)} "
               f"WHERE {q(table.vector)} IS NOT NULL{where}")
        with self._lock:
            cur = self.conn.execute(sql, (model,) if where else ())
            while rows := cur.fetchmany(batch):
                yield [str(r[0]) for r in rows], self._vectors(rows, table)

    def _vector_table(self, model: str | None) -> VectorTable:
        found = self.vector_tables()
        if not found:
            raise InvalidArgument(f"'{self.path.name}' has no vector table ({', '.join(VECTOR_TABLES)}) "
                                  "of node ids and float32 BLOBs")
        for t in found:
            if model is None and len(t.models) == 1 or model in t.models:
                return t
        have = sorted({m for t in found for m in t.models})
        raise InvalidArgument(f"name the model of the vectors to read: the file has {', '.join(have)}"
                              if model is None else f"no vectors of model {model!r}; the file has {', '.join(have)}")

    @staticmethod
    def _vectors(rows: list[tuple[Any, ...]], table: VectorTable) -> np.ndarray:
        size = 4 * table.dims
        bad = next((r[0] for r in rows if not isinstance(r[1], bytes) or len(r[1]) != size), None)
        if bad is not None:
            raise InvalidArgument(f"the vector of node {bad!r} in {table.table} is not {table.dims} float32 values")
        return np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), table.dims)

    # -- metadata ------------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return {"name": self.db_id, "description": "", "format": f"foreign/{self.profile.name}",
                "profile": self.profile.name, "path": str(self.path),
                "read_only": "true" if self.read_only else "false"}

    def version(self) -> str:
        """A fingerprint of the file and its -wal: size, mtime_ns and the header's change counter."""
        wal = self.path.with_name(self.path.name + "-wal")
        stamp = f"{_file_stamp(self.path)}|{_change_counter(self.path)}|{_file_stamp(wal)}"
        return hashlib.sha1(stamp.encode()).hexdigest()[:16]

    def read_transaction(self) -> AbstractContextManager[None]:
        """Several reads as one state of the file (rollback-journal files hold writers back until it
        ends; WAL files do not). Call ``version()`` first inside it: the fingerprint is read from the
        file, outside SQLite, so it must not be newer than the data the first SELECT pins."""
        return sqlite_read(self.conn, self._lock)

    # -- counts --------------------------------------------------------------------------------
    def node_count(self) -> int:
        return self.conn.execute(f"SELECT count(*) {self.sql.node_rows}").fetchone()[0]

    def edge_count(self) -> int:
        """Edges whose endpoints are both nodes (dangling ones are counted by ``dangling_edges``)."""
        return self.conn.execute(f"SELECT count(*) {self.sql.joined}").fetchone()[0]

    def node_types(self) -> dict[str, int]:
        sql = f"SELECT {self.sql.node_type('n')}, count(*) {self.sql.node_rows} GROUP BY 1 ORDER BY 2 DESC"
        return dict(self.conn.execute(sql))

    def edge_types(self) -> dict[str, int]:
        sql = f"SELECT {self.sql.edge_type()}, count(*) {self.sql.joined} GROUP BY 1 ORDER BY 2 DESC"
        return dict(self.conn.execute(sql))

    # -- node reads ----------------------------------------------------------------------------
    def _select_nodes(self, where: str, args: list[Any], tail: str = "") -> list[Node]:
        sql = f"SELECT {self.sql.node_select('n')} {self.sql.node_rows} AND ({where}) {tail}"
        return [_node(r) for r in self.conn.execute(sql, args)]

    def _id_in(self, alias: str, ids: list[str]) -> tuple[str, list[Any]]:
        """``alias.id IN (...)`` over every stored form of ``ids``."""
        args = [form for i in ids for form in key_forms(i)]
        return f"{self.sql.col(alias, 'node_id')} IN ({','.join('?' * len(args))})", args

    def get_node(self, node_id: str) -> Node | None:
        where, args = self._id_in("n", [node_id])
        found = self._select_nodes(where, args, "LIMIT 1")
        return found[0] if found else None

    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, Node]:
        ids = list(dict.fromkeys(str(i) for i in node_ids))
        found: dict[str, Node] = {}
        for i in range(0, len(ids), _CHUNK):
            where, args = self._id_in("n", ids[i:i + _CHUNK])
            found.update((n.id, n) for n in self._select_nodes(where, args))
        return found

    def find_nodes(self, name: str, type: str | None = None, limit: int = 50) -> list[Node]:
        """Nodes whose normalised name equals ``name``'s: by the file's normalised-name column when it
        has one, else by SQL lower/trim for ASCII names and ``normalize_name`` only for the others."""
        norm = normalize_name(name)
        if self.profile.node_norm_name:
            where, args = f"{self.sql.col('n', 'node_norm_name')} = ?", [norm]
        else:
            col = self.sql.col("n", "node_name")
            where = f"(lower(trim({col}, ?)) = ? OR ({col} GLOB ? AND kgos_norm({col}) = ?))"
            args = [_ASCII_SPACE, norm, _NON_ASCII_GLOB, norm]
        if type is not None:
            where, args = f"{where} AND {self.sql.node_type('n')} = ?", args + [type]
        return self._select_nodes(where, args + [limit], "LIMIT ?")

    def search_names(self, text: str, limit: int = 10) -> list[Node]:
        """Name or id contains ``text``: LIKE ignores ASCII case, the norm column (if any) the rest."""
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        cols = [self.sql.col("n", "node_name"), self.sql.node_id("n")]
        args: list[Any] = [pattern, pattern]
        if self.profile.node_norm_name:
            cols.append(self.sql.col("n", "node_norm_name"))
            args.append(pattern.lower())
        where = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in cols)
        tail = f"ORDER BY length({self.sql.col('n', 'node_name')}), {self.sql.col('n', 'node_id')} LIMIT ?"
        return self._select_nodes(f"({where})", args + [limit], tail)

    def iter_nodes(self) -> Iterator[Node]:
        for row in self.conn.execute(f"SELECT {self.sql.node_select('n')} {self.sql.node_rows}"):
            yield _node(row)

    def stored_key(self, node_id: str) -> Any:
        """The id cell of a node exactly as stored (text or integer); raises NodeNotFound."""
        where, args = self._id_in("n", [node_id])
        row = self.conn.execute(f"SELECT {self.sql.col('n', 'node_id')} FROM {self.sql.nodes} n "
                                f"WHERE {where} LIMIT 1", args).fetchone()
        if row is None:
            raise self.not_found(str(node_id))
        return row[0]

    # -- edge reads ----------------------------------------------------------------------------
    def iter_edges(self) -> Iterator[Edge]:
        for row in self.conn.execute(self.sql.joined_edges()):
            yield _edge(row)

    def get_edge(self, source: str, target: str, type: str) -> Edge | None:
        s_where, s_args = self._id_in("s", [source])
        t_where, t_args = self._id_in("t", [target])
        sql = (f"{self.sql.joined_edges()} WHERE {s_where} AND {t_where} "
               f"AND {self.sql.edge_type()} = ? LIMIT 1")
        row = self.conn.execute(sql, s_args + t_args + [type]).fetchone()
        return _edge(row) if row else None

    def _node_key(self, node_id: str) -> Any:
        return self.stored_key(node_id)

    def _hop(self, key: Any, side: str, types: list[str] | None, limit: int | None) -> list[Neighbor]:
        # `here`/`there` are the fixed aliases "s"/"t", never user input.
        here, there = ("s", "t") if side == "outgoing" else ("t", "s")
        sql = (f"{self.sql.joined_edges(', ' + self.sql.node_select(there))} "
               f"WHERE {self.sql.col(here, 'node_id')} = ?")
        args: list[Any] = [key]
        if types is not None:
            sql += f" AND {self.sql.edge_type()} IN ({','.join('?' * len(types))})"
            args += types
        sql += f" ORDER BY {self.sql.weight()} DESC, {self.sql.node_id(there)}, {self.sql.edge_type()}"
        if limit is not None:
            sql, args = sql + " LIMIT ?", args + [limit]
        return [Neighbor(node=_node(r[7:]), edge=_edge(r[:7]), direction=side)  # type: ignore[arg-type]
                for r in self.conn.execute(sql, args)]

    def graph_arrays(self) -> GraphArrays:
        """Two queries: the nodes, and the edges joined to them (so dangling edges drop out and the
        endpoints come back spelled exactly as the node ids); positions by one dict over the ids."""
        s = self.sql
        with self.read_transaction():  # nodes and edges of one state: no edge to a node not yet listed
            nodes = self.conn.execute(f"SELECT {s.node_id('n')}, {s.node_type('n')} {s.node_rows}").fetchall()
            edges = self.conn.execute(
                f"SELECT {s.node_id('s')}, {s.node_id('t')}, {s.edge_type()}, {s.weight()} {s.joined}").fetchall()
        node_ids = tuple(map(itemgetter(0), nodes))
        position = dict(zip(node_ids, range(len(node_ids)))).__getitem__
        ntype, ntype_names = codes(list(map(itemgetter(1), nodes)))
        etype, etype_names = codes(list(map(itemgetter(2), edges)))
        n = len(edges)
        # map() over C callables: no Python-level loop body per edge.
        return GraphArrays(
            node_ids=node_ids, node_types=ntype, node_type_names=ntype_names,
            src=np.fromiter(map(position, map(itemgetter(0), edges)), np.int32, n),
            dst=np.fromiter(map(position, map(itemgetter(1), edges)), np.int32, n),
            type_code=etype, types=etype_names, weight=np.fromiter(map(itemgetter(3), edges), np.float32, n))

    # -- validation ----------------------------------------------------------------------------
    def dangling_edges(self, limit: int = 20) -> tuple[int, list[Edge]]:
        """(how many edges have an endpoint that is no node id, the first ``limit`` of them)."""
        count = self.conn.execute(f"SELECT count(*) {self.sql.dangling}").fetchone()[0]
        rows = self.conn.execute(f"{self.sql.raw_edges()} {self.sql.dangling} LIMIT ?", (limit,))
        return count, [_edge(r) for r in rows]

    def invalid_properties(self, limit: int = 20) -> tuple[int, list[str]]:
        """(how many nodes have a properties cell that is not valid JSON, the first ``limit`` ids)."""
        col = self.sql.opt("n", "node_properties")
        if col is None:
            return 0, []
        where = f"{self.sql.node_rows} AND {col} IS NOT NULL AND {col} <> '' AND NOT json_valid({col})"
        count = self.conn.execute(f"SELECT count(*) {where}").fetchone()[0]
        ids = [r[0] for r in self.conn.execute(f"SELECT {self.sql.node_id('n')} {where} LIMIT ?", (limit,))]
        return count, ids

    def node_table(self) -> NodeTable:
        s = self.sql
        raw = s.opt("n", "node_properties")
        props = f"CASE WHEN json_valid({raw}) THEN {raw} END" if raw else None
        node_id = s.node_id("n")
        return NodeTable("sqlite", s.node_rows, node_id, s.text("n", "node_name", "''"), s.node_type("n"),
                         s.text("n", "node_description", "''"), props, node_id, self._select)

    def _select(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """A pushed-down query of the methods layer, on this store's connection and under its lock."""
        with self._lock:
            return self.conn.execute(sql, args).fetchall()

    # -- writes: the primitives of the unit of work (kgos.store.writing) -------------------------------
    supports_writes = True
    sql_dialect = "sqlite"

    @contextmanager
    def _write_scope(self, nested: bool, bump: Callable[[], bool]) -> Iterator[sqlite3.Connection]:
        """One atomic write (a savepoint when nested). Constraint violations of the foreign table become
        ``InvalidArgument``. The file's own change counter is its version: nothing to bump."""
        tables = f"table {self.profile.node_table!r}/{self.profile.edge_table!r}"
        with refused_writes(tables), sqlite_write(self.conn, self._lock, self._units(), nested, lambda: None) as conn:
            yield conn

    def _write_ops(self, conn: sqlite3.Connection) -> WriteOps:
        return ForeignOps(self)

    def _insert(self, table: str, values: dict[str, Any]) -> None:
        cols, args = self.sql.columns(values)
        marks = ",".join("?" * len(cols))
        self.conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", args)

    def _update(self, table: str, values: dict[str, Any], where: str, where_args: list[Any]) -> None:
        cols, args = self.sql.columns(values)
        if cols:
            sets = ", ".join(f"{c} = ?" for c in cols)
            self.conn.execute(f"UPDATE {table} SET {sets} WHERE {where}", args + where_args)

    def _next_int(self, table: str, column: str) -> int:
        """max + 1 of an integer id column: how new ids are minted where ids are numbers."""
        return self.conn.execute(f"SELECT coalesce(max({column}), 0) + 1 FROM {table}").fetchone()[0]

    def _write_key(self, node_id: str) -> Any:
        """The storage form of a new node id: an integer in a numeric id column, else text."""
        forms = key_forms(node_id)
        return forms[-1] if self._node_affinity in ("INTEGER", "REAL", "NUMERIC") else forms[0]

    def _node_values(self, n: Node) -> dict[str, Any]:
        return {"node_name": n.name, "node_norm_name": normalize_name(n.name), "node_type": n.type,
                "node_description": n.description, "node_properties": dumps(n.properties),
                "node_updated": n.updated_at or now_iso()}

    def _edge_where(self, s: Any, t: Any, type: str) -> tuple[str, list[Any]]:
        where = (f"{self.sql.col('', 'edge_source')} = ? AND {self.sql.col('', 'edge_target')} = ? "
                 f"AND {self.sql.edge_type('')} = ?")
        return where, [s, t, type]


class ForeignOps(WriteOps):
    """The unit of work's primitives on a foreign table, through the profile's column mapping."""

    def __init__(self, store: ForeignStore) -> None:
        self.f = store

    def node(self, node_id: str) -> Node | None:
        return self.f.get_node(node_id)

    def entity(self, norm_name: str, type: str) -> Node | None:
        found = self.f.find_nodes(norm_name, type, limit=1)
        return found[0] if found else None

    def fresh_id(self, type: str, name: str) -> str:
        """``<type>:<slug>``, like the native store; max + 1 where ids are integers."""
        if self.f._node_affinity == "INTEGER":
            return str(self.f._next_int(self.f.sql.nodes, self.f.sql.col("", "node_id")))
        return super().fresh_id(type, name)

    def insert_node(self, n: Node) -> None:
        values = {"node_id": self.f._write_key(n.id), **self.f._node_values(n)}
        self.f._insert(self.f.sql.nodes, {**values, "node_created": n.created_at or values["node_updated"]})

    def update_node(self, n: Node) -> None:
        self.f._update(self.f.sql.nodes, self.f._node_values(n), f"{self.f.sql.col('', 'node_id')} = ?",
                       [self.f.stored_key(n.id)])

    def _edges_of(self, key: Any) -> str:
        sql = self.f.sql
        return f"FROM {sql.edges} WHERE {sql.col('', 'edge_source')} = ? OR {sql.col('', 'edge_target')} = ?"

    def degree(self, node_id: str) -> int:
        key = self.f.stored_key(node_id)
        return int(self.f.conn.execute(f"SELECT count(*) {self._edges_of(key)}", (key, key)).fetchone()[0])

    def delete_node(self, node_id: str) -> int:
        sql, key = self.f.sql, self.f.stored_key(node_id)
        n_edges = self.degree(node_id)
        self.f.conn.execute(f"DELETE {self._edges_of(key)}", (key, key))
        self.f.conn.execute(f"DELETE FROM {sql.nodes} WHERE {sql.col('', 'node_id')} = ?", (key,))
        return n_edges

    def edge(self, source: str, target: str, type: str) -> Edge | None:
        return self.f.get_edge(source, target, type)

    def fresh_edge_id(self) -> Any:
        if not self.f.profile.edge_id:
            return None
        if self.f._edge_id_affinity == "INTEGER":
            return self.f._next_int(self.f.sql.edges, self.f.sql.col("", "edge_id"))
        return f"edge:{uuid.uuid4()}"  # spec/002's edge id form

    def insert_edge(self, e: Edge) -> None:
        self.f._insert(self.f.sql.edges, {
            "edge_source": self.f.stored_key(e.source), "edge_target": self.f.stored_key(e.target),
            "edge_type": e.type, "edge_weight": e.weight, "edge_properties": dumps(e.properties),
            "edge_created": e.created_at, "edge_id": e.id})

    def update_edge(self, e: Edge) -> None:
        where, args = self.f._edge_where(self.f.stored_key(e.source), self.f.stored_key(e.target), e.type)
        self.f._update(self.f.sql.edges, {"edge_weight": e.weight, "edge_properties": dumps(e.properties)},
                       where, args)

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        where, args = self.f._edge_where(self.f.stored_key(source), self.f.stored_key(target), type)
        return self.f.conn.execute(f"DELETE FROM {self.f.sql.edges} WHERE {where}", args).rowcount > 0


__all__ = ["ForeignStore", "connect_foreign", "parse_properties"]
