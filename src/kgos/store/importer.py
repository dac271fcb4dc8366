"""Loading a ``Source`` into a native KG, all or nothing.

Two paths. ``bulk_load`` fills a brand-new file (the workspace builds it beside the target and
renames it into place, so a crash leaves the old KG untouched): secondary indexes and FTS triggers
are created after the rows, which is several times faster than maintaining them row by row.
``merge_into`` upserts into an existing KG inside one transaction. Both check every record and
name the offending one in the error.
"""

from __future__ import annotations

import gc
import math
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import islice
from itertools import repeat as _repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..errors import ImportFailed, InvalidArgument
from ..model import normalize_name
from . import migrations
from .formats import Record, Source
from .base import GraphStore
from .limits import check_properties, dumps_within_limits
from .native import NativeStore
from .writing import Writer

Progress = Callable[[str, int], None]
BATCH = 20_000
_EMPTY = "{}"


@dataclass(frozen=True)
class ImportReport:
    db_id: str
    format: str
    mode: str
    nodes: int
    edges: int
    skipped_dangling: int
    duplicate_edges: int
    seconds: float
    skipped_invalid: int = 0  # records left out by skip_invalid (nodes and edges)
    invalid_examples: tuple[str, ...] = ()  # the first few of them, with what was wrong
    dimensions: dict[str, Any] | None = None  # what the import's dimension inference wrote (kg.workspace)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Invalid:
    """What to do with a record that fails its checks: fail the import (the default) or, with
    ``skip``, leave it out, count it and keep the first few messages for the report."""

    EXAMPLES = 5

    def __init__(self, skip: bool = False) -> None:
        self.skip = skip
        self.count = 0
        self.examples: list[str] = []
        self.node_ids: set[str] = set()  # ids of nodes left out: edges to them are left out too

    def take(self, exc: ImportFailed, rec: Any = None) -> None:
        if not self.skip:
            raise exc
        self.count += 1
        if len(self.examples) < self.EXAMPLES:
            self.examples.append(str(exc))
        node_id = rec.get("id") if isinstance(rec, dict) else None
        if isinstance(node_id, (str, int)) and not isinstance(node_id, bool):
            self.node_ids.add(str(node_id))


# -- record checks ---------------------------------------------------------------------------------
def _fail(loc: str, message: str) -> ImportFailed:
    return ImportFailed(message, record=loc)


def _text(loc: str, rec: dict[str, Any], key: str, default: str | None = None) -> str:
    value = rec.get(key, default)
    if value is None:
        value = default
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key in ("id", "source", "target"):
        return str(value)
    if not isinstance(value, str):
        what = "missing" if value is None else f"a {type(value).__name__}, expected a string"
        raise _fail(loc, f"'{key}' is {what}")
    return value


def _props(loc: str, rec: dict[str, Any], extra_from: set[str] | None = None) -> str:
    props = rec.get("properties")
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise _fail(loc, f"'properties' must be an object, not a {type(props).__name__}")
    if extra_from is not None:  # networkx node-link puts attributes at the top level
        extras = {k: v for k, v in rec.items() if k not in extra_from}
        props = {**extras, **props} if extras else props
    return _dump(loc, props)


_NODE_KEYS = {"id", "name", "type", "description", "properties", "created_at", "updated_at"}
_FAST_NODE_KEYS = {"id", "name", "type", "description", "properties"}
_FAST_EDGE_KEYS = {"source", "target", "type", "weight", "properties"}
_NO_PROPS: dict[str, Any] = {}
_SECOND, _STR, _DICT = itemgetter(1), {str}, {dict}
_EDGE_KEYS = {"source", "target", "type", "weight", "properties", "id", "created_at", "key"}


def _dump(loc: str, props: dict[str, Any]) -> str:
    """The properties' JSON within ``limits``, or ImportFailed naming the record."""
    if not props:
        return _EMPTY
    try:
        return check_properties(props, "'properties'")
    except InvalidArgument as exc:
        raise _fail(loc, str(exc)) from None


def node_row(loc: str, rec: Any, ts: str) -> tuple[Any, ...]:
    """(id, name, norm_name, type, description, properties, created_at, updated_at) or ImportFailed."""
    # Fast path for the well-formed kgos-node-link record; anything else gets the full checks.
    if type(rec) is dict and rec.keys() <= _FAST_NODE_KEYS:
        nid, name, ntype = rec.get("id"), rec.get("name"), rec.get("type", "entity")
        desc, props = rec.get("description", ""), rec.get("properties", _NO_PROPS)
        if (type(nid) is str and nid and type(name) is str and name and type(ntype) is str and ntype
                and type(desc) is str and type(props) is dict):
            return (nid, name, normalize_name(name), ntype, desc, _dump(loc, props), ts, ts)
    return _checked_node_row(loc, rec, ts)


def _checked_node_row(loc: str, rec: Any, ts: str) -> tuple[Any, ...]:
    if not isinstance(rec, dict):
        raise _fail(loc, f"a node must be an object, not {type(rec).__name__}")
    node_id = _text(loc, rec, "id")
    if not node_id:
        raise _fail(loc, "'id' is empty")
    name = _text(loc, rec, "name", node_id) or node_id
    ntype = _text(loc, rec, "type", "entity") or "entity"
    created = rec.get("created_at") or ts
    return (node_id, name, normalize_name(name), ntype, _text(loc, rec, "description", ""),
            _props(loc, rec, _NODE_KEYS), created, rec.get("updated_at") or created)


def edge_fields(loc: str, rec: Any) -> tuple[str, str, str, float, str, str | None, str | None]:
    """(source, target, type, weight, properties, id, created_at) or ImportFailed."""
    if type(rec) is dict and rec.keys() <= _FAST_EDGE_KEYS:
        src, dst, etype = rec.get("source"), rec.get("target"), rec.get("type")
        weight, props = rec.get("weight", 1.0), rec.get("properties", _NO_PROPS)
        if (type(src) is str and type(dst) is str and type(etype) is str and etype
                and type(weight) is float and math.isfinite(weight) and type(props) is dict):
            return src, dst, etype, weight, _dump(loc, props), None, None
    return _checked_edge_fields(loc, rec)


def _checked_edge_fields(loc: str, rec: Any) -> tuple[str, str, str, float, str, str | None, str | None]:
    if not isinstance(rec, dict):
        raise _fail(loc, f"an edge must be an object, not {type(rec).__name__}")
    weight = rec.get("weight", 1.0)
    if weight is None:
        weight = 1.0
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
        raise _fail(loc, f"'weight' must be a finite number, not {weight!r}")
    etype = _text(loc, rec, "type", "relates_to") or "relates_to"
    edge_id = rec.get("id")
    return (_text(loc, rec, "source"), _text(loc, rec, "target"), etype, float(weight),
            _props(loc, rec, _EDGE_KEYS), str(edge_id) if edge_id is not None else None, rec.get("created_at"))


def _batches(records: Iterator[Record]) -> Iterator[list[Record]]:
    while batch := list(islice(records, BATCH)):
        yield batch


def _node_rows(batch: list[Record], ids: dict[str, int], ts: str, invalid: Invalid) -> list[tuple[Any, ...]]:
    """Rows ``(id, name, norm_name, type, description, properties, created_at, updated_at)`` of the
    batch's valid records, as ``_rowid_rows`` (for the merges and PostgreSQL)."""
    return [row[1:] for row in _rowid_rows(batch, ids, ts, invalid)]


def _rowid_rows(batch: list[Record], ids: dict[str, int], ts: str, invalid: Invalid) -> list[tuple[Any, ...]]:
    """Rows ``(rowid, id, name, norm_name, type, description, properties, created_at, updated_at)``
    of the batch's valid records; ``ids`` learns each new id with its rowid (counting on from
    ``len(ids)``). A record that fails its checks, or repeats an id of the file, is taken by
    ``invalid``: the first of the two stays, so edges to that id are kept."""
    rows = _clean_rows(batch, ids, ts)
    return rows if rows is not None else _record_rows(batch, ids, ts, invalid)


def _record_rows(batch: list[Record], ids: dict[str, int], ts: str, invalid: Invalid) -> list[tuple[Any, ...]]:
    """``_rowid_rows`` record by record, for a batch with a record off the fast path."""
    rows: list[tuple[Any, ...]] = []
    append, n = rows.append, len(ids)
    for loc, rec in batch:
        # Inline fast path (the common record: strings, no properties, a new id): a row costs a
        # few dict lookups; every other record takes node_row's checks and messages.
        if type(rec) is dict and rec.keys() <= _FAST_NODE_KEYS:
            nid, name, ntype = rec.get("id"), rec.get("name"), rec.get("type", "entity")
            desc, props = rec.get("description", ""), rec.get("properties", _NO_PROPS)
            if (type(nid) is str and nid and type(name) is str and name and type(ntype) is str and ntype
                    and type(desc) is str and type(props) is dict and not props and nid not in ids):
                n += 1
                ids[nid] = n
                # NFKC leaves ASCII text as it is: only other names need unicodedata
                norm = name.strip().lower() if name.isascii() else normalize_name(name)
                append((n, nid, name, norm, ntype, desc, _EMPTY, ts, ts))
                continue
        try:
            row = node_row(loc, rec, ts)
        except ImportFailed as exc:
            invalid.take(exc, rec)
            continue
        if row[0] in ids:
            invalid.take(_fail(loc, f"duplicate node id '{row[0]}' (ids must be unique within a file)"))
            continue
        n += 1
        ids[row[0]] = n
        append((n, *row))
    return rows


def _clean_rows(batch: list[Record], ids: dict[str, int], ts: str) -> list[tuple[Any, ...]] | None:
    """The rows of a batch whose records are all well-formed (string fields, properties an object
    that is provably within ``limits``, new and distinct ids), built column by column with C-level
    ``map``/``zip`` (a third of the per-record loop's time); None if any record needs more, for the
    loop to sort out with its checks and messages."""
    recs = list(map(_SECOND, batch))
    if not recs or set(map(type, recs)) != _DICT or not set().union(*recs) <= _FAST_NODE_KEYS:
        return None
    nids: list[Any] = list(map(dict.get, recs, _repeat("id")))
    names: list[Any] = list(map(dict.get, recs, _repeat("name")))
    types = list(map(dict.get, recs, _repeat("type"), _repeat("entity")))
    descs = list(map(dict.get, recs, _repeat("description"), _repeat("")))
    props = list(map(dict.get, recs, _repeat("properties"), _repeat(_NO_PROPS)))
    if (not (_only(nids, _STR) and _only(names, _STR) and _only(types, _STR) and _only(descs, _STR))
            or not (all(nids) and all(names) and all(types)) or not _only(props, _DICT)
            or len(set(nids)) != len(nids) or not ids.keys().isdisjoint(nids)):
        return None
    stored = dumps_within_limits(props) if any(props) else _repeat(_EMPTY)
    if stored is None:
        return None
    # NFKC leaves ASCII text as it is: only other names need unicodedata
    norms = (list(map(str.lower, map(str.strip, names))) if all(map(str.isascii, names))
             else [normalize_name(name) for name in names])
    rowids = range(len(ids) + 1, len(ids) + 1 + len(recs))
    ids.update(zip(nids, rowids))
    return list(zip(rowids, nids, names, norms, types, descs, stored, _repeat(ts), _repeat(ts)))


def _only(column: list[Any], types: set[Any]) -> bool:
    return set(map(type, column)) <= types


def _edge_rows(batch: list[Record], ids: dict[str, int], skip_dangling: bool,
               ts: str, invalid: Invalid | None = None) -> tuple[list[tuple[Any, ...]], int]:
    """Rows for the edges table (endpoints as node rowids) and the number of dangling edges skipped."""
    rows: list[tuple[Any, ...]] = []
    skipped, invalid = 0, invalid or Invalid()
    append, isfinite = rows.append, math.isfinite
    for loc, rec in batch:
        # Inline fast path (string endpoints both known, a type, a float weight, no properties); every
        # other edge takes edge_fields' checks and the dangling rules below.
        if type(rec) is dict and rec.keys() <= _FAST_EDGE_KEYS:
            src, dst, etype = rec.get("source"), rec.get("target"), rec.get("type")
            weight, props = rec.get("weight", 1.0), rec.get("properties", _NO_PROPS)
            if (type(src) is str and type(dst) is str and type(etype) is str and etype and type(weight) is float
                    and isfinite(weight) and type(props) is dict and not props):
                s, t = ids.get(src), ids.get(dst)
                if s is not None and t is not None:
                    append((s, t, etype, weight, _EMPTY, ts, None))
                    continue
        try:
            src, dst, etype, weight, props, edge_id, created = edge_fields(loc, rec)
        except ImportFailed as exc:
            invalid.take(exc)
            continue
        s, t = ids.get(src), ids.get(dst)
        if s is None or t is None:
            which, missing = ("source", src) if s is None else ("target", dst)
            if missing in invalid.node_ids:
                invalid.take(_fail(loc, f"{which} node '{missing}' was left out as invalid"))
            elif not skip_dangling:
                raise _dangling(loc, which, missing)
            else:
                skipped += 1
            continue
        append((s, t, etype, weight, props, created or ts, edge_id))
    return rows, skipped


def _dangling(loc: str, which: str, node_id: str) -> ImportFailed:
    return _fail(loc, f"{which} node '{node_id}' does not exist "
                      "(add the node, or import with --skip-dangling to drop such edges)")


# -- bulk load into a new file ---------------------------------------------------------------------
def bulk_load(path: Path, source: Source, db_id: str, skip_dangling: bool = False,
              progress: Progress | None = None, skip_invalid: bool = False) -> ImportReport:
    """Create a native KG at ``path`` (which must not exist) holding everything in ``source``.
    ``skip_invalid``: leave out (and count) records that fail their checks instead of failing."""
    t0 = time.perf_counter()
    invalid = Invalid(skip_invalid)
    store = NativeStore.create(path, db_id, name=source.meta.get("name") or db_id,
                               description=source.meta.get("description", ""))
    conn = store.conn
    try:
        with _gc_paused():
            _enter_bulk_mode(conn)
            ids = _bulk_nodes(conn, source.nodes(), progress, invalid)
            n_edges, skipped = _bulk_edges(conn, source.edges(), ids, skip_dangling, progress, invalid)
        duplicates = _finish_bulk(conn, progress)
    finally:
        store.close()
    return ImportReport(db_id, source.format, "create", len(ids), n_edges - duplicates, skipped,
                        duplicates, time.perf_counter() - t0, invalid.count, tuple(invalid.examples))


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic collector off while rows stream through: the millions of records and row tuples
    (which form no cycles) set off collections that walked every tracked object, 25% of the node
    phase; back on (as it was) at the end, whatever happens."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _enter_bulk_mode(conn: sqlite3.Connection) -> None:
    # The file is private until renamed into place, so durability is not needed until then.
    conn.execute("PRAGMA journal_mode = MEMORY")  # not OFF: a failed statement must still roll back
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA cache_size = -262144")
    conn.execute("BEGIN")
    for trigger in migrations.FTS_TRIGGER_NAMES:
        conn.execute(f"DROP TRIGGER {trigger}")
    for index in migrations.SECONDARY_INDEX_NAMES:
        conn.execute(f"DROP INDEX {index}")


def _bulk_nodes(conn: sqlite3.Connection, records: Iterator[Record], progress: Progress | None,
                invalid: Invalid) -> dict[str, int]:
    ids: dict[str, int] = {}
    ts = migrations.now_iso()
    if progress:
        progress("nodes", 0)
    sql = ("INSERT INTO nodes (rowid, id, name, norm_name, type, description, properties, created_at, "
           "updated_at) VALUES (?,?,?,?,?,?,?,?,?)")
    for batch in _batches(records):
        conn.executemany(sql, _rowid_rows(batch, ids, ts, invalid))
        if progress:
            progress("nodes", len(ids))
    return ids


def _bulk_edges(conn: sqlite3.Connection, records: Iterator[Record], ids: dict[str, int],
                skip_dangling: bool, progress: Progress | None, invalid: Invalid) -> tuple[int, int]:
    ts = migrations.now_iso()
    count = skipped = 0
    if progress:
        progress("edges", 0)
    sql = "INSERT INTO edges (source, target, type, weight, properties, created_at, id) VALUES (?,?,?,?,?,?,?)"
    for batch in _batches(records):
        rows, dropped = _edge_rows(batch, ids, skip_dangling, ts, invalid)
        skipped += dropped
        conn.executemany(sql, rows)
        count += len(rows)
        if progress:
            progress("edges", count)
    return count, skipped


def _finish_bulk(conn: sqlite3.Connection, progress: Progress | None) -> int:
    """Indexes, duplicate-edge collapse, FTS build, triggers; returns duplicate edges removed."""
    if progress:
        progress("indexes", 0)
    migrations.run_script(conn, migrations.NODE_ID_INDEX + migrations.NODE_INDEXES)
    duplicates = _create_edge_indexes(conn)
    if progress:
        progress("text index", 0)
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild')")
    migrations.run_script(conn, migrations.FTS_TRIGGERS)
    conn.execute("INSERT INTO kg_meta VALUES ('version', '1') ON CONFLICT(key) "
                 "DO UPDATE SET value = CAST(value AS INTEGER) + 1")
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = DELETE")
    return duplicates


def _create_edge_indexes(conn: sqlite3.Connection) -> int:
    """Build the edge indexes; if the unique key fails, collapse duplicates first. Returns how many."""
    duplicates = 0
    for statement in migrations.statements(migrations.EDGE_INDEXES):
        try:
            conn.execute(statement)
        except sqlite3.IntegrityError:
            if "edges_key" not in statement:
                raise ImportFailed("two edges in the file share the same id; edge ids must be unique") from None
            duplicates = _collapse_duplicate_edges(conn)
            conn.execute(statement)
    return duplicates


def _collapse_duplicate_edges(conn: sqlite3.Connection) -> int:
    """Several edges with one (source, target, type) become one: the first, with the max weight."""
    conn.execute("CREATE TEMP TABLE keep (rid INTEGER PRIMARY KEY, w REAL)")
    conn.execute("INSERT INTO keep SELECT min(rowid), max(weight) FROM edges GROUP BY source, target, type")
    removed = conn.execute("DELETE FROM edges WHERE rowid NOT IN (SELECT rid FROM keep)").rowcount
    conn.execute("UPDATE edges SET weight = (SELECT w FROM keep WHERE rid = edges.rowid)")
    conn.execute("DROP TABLE keep")
    return removed


# -- merge into an existing KG ---------------------------------------------------------------------
def merge_into(store: GraphStore, source: Source, skip_dangling: bool = False,
               progress: Progress | None = None, skip_invalid: bool = False) -> ImportReport:
    """Upsert ``source`` into ``store`` in one unit of work (bulk mode): nodes by id (properties merged),
    edges by (source, target, type) with weight = max(old, new). Any error rolls everything back;
    ``skip_invalid`` leaves out (and counts) records that fail their checks instead."""
    return merge_with(store, source, skip_dangling, progress, skip_invalid)


def merge_with(store: GraphStore, source: Source, skip_dangling: bool = False,
               progress: Progress | None = None, skip_invalid: bool = False) -> ImportReport:
    """``merge_into`` for any backend with a bulk mode (SQLite and PostgreSQL)."""
    t0 = time.perf_counter()
    invalid = Invalid(skip_invalid)
    with store.writing(bulk=True) as w:
        n_nodes = _merge_nodes(w, source.nodes(), progress, invalid)
        n_edges, skipped = _merge_edges(w, source.edges(), w.node_keys(), skip_dangling, progress, invalid)
    return ImportReport(store.db_id, source.format, "merge", n_nodes, n_edges, skipped, 0,
                        time.perf_counter() - t0, invalid.count, tuple(invalid.examples))


def _merge_nodes(w: Writer, records: Iterator[Record], progress: Progress | None, invalid: Invalid) -> int:
    ts, count = migrations.now_iso(), 0
    seen: dict[str, int] = {}  # ids of the file so far (a repeated one is invalid)
    for batch in _batches(records):
        rows = _node_rows(batch, seen, ts, invalid)
        w.merge_node_rows(rows, ts)
        count += len(rows)
        if progress:
            progress("nodes", count)
    return count


def _merge_edges(w: Writer, records: Iterator[Record], ids: dict[str, Any], skip_dangling: bool,
                 progress: Progress | None, invalid: Invalid) -> tuple[int, int]:
    ts, count, skipped = migrations.now_iso(), 0, 0
    for batch in _batches(records):
        rows, dropped = _edge_rows(batch, ids, skip_dangling, ts, invalid)
        skipped += dropped
        w.merge_edge_rows(rows)
        count += len(rows)
        if progress:
            progress("edges", count)
    return count, skipped
