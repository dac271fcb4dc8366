"""Loading a ``Source`` into a PostgreSQL KG, all or nothing (the PostgreSQL twin of ``importer``).

``bulk_load`` builds the KG in a fresh schema with ``COPY`` (rows first, indexes after, as the
SQLite bulk path), then, in the same transaction, drops the KG it replaces and renames the new
schema into place: a server killed at any point leaves the KG as it was. ``merge_into`` upserts
inside one transaction of the store. Records are checked by the importer's own functions, so an
import fails (or skips, with ``skip_invalid``) on exactly the records the SQLite import would.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from ..errors import ImportFailed, KGExists
from .formats import Record, Source
from .importer import ImportReport, Invalid, Progress, _batches, _edge_rows, _node_rows
from .migrations import now_iso
from .postgres import PostgresStore
from .postgres_db import PgDatabase, psycopg_modules, schema_name
from .postgres_schema import AFTER_BULK, BULK_INDEXES, CHANGE_FEED, KG_MIGRATIONS, lock, record

NODE_COPY = "COPY {s}.nodes (rowid, id, name, norm_name, type, description, properties, created_at, updated_at) FROM STDIN"
EDGE_COPY = "COPY {s}.edges (source, target, type, weight, properties, created_at, id) FROM STDIN"


def bulk_load(db: PgDatabase, db_id: str, source: Source, mode: str = "create", skip_dangling: bool = False,
              progress: Progress | None = None, skip_invalid: bool = False) -> ImportReport:
    """Create (``mode="create"``) or replace (``"replace"``) the KG ``db_id`` with ``source``'s content."""
    t0, invalid = time.perf_counter(), Invalid(skip_invalid)
    temp = f"kgi_{uuid.uuid4().hex[:16]}"
    meta = {"name": source.meta.get("name") or db_id, "description": source.meta.get("description", ""),
            "format": "kgos-native/1", "created_at": now_iso()}
    with db.connection() as conn, conn.transaction():
        lock(conn)  # one import or create of a name at a time; migrations wait for it too
        old = conn.execute("SELECT schema_name FROM kgos.kgs WHERE db_id = %s", (db_id,)).fetchone()
        if old is not None and mode != "replace":
            raise KGExists(f"KG '{db_id}' already exists: use --merge to add to it or --replace to overwrite it")
        db.create_schema(conn, db_id, temp, meta, only=tuple(n for n, _ in KG_MIGRATIONS if n not in AFTER_BULK))
        s = db.ident(temp)
        conn.execute(f"ALTER TABLE {s}.edges DROP CONSTRAINT edges_source_fkey, DROP CONSTRAINT edges_target_fkey")
        ids = _copy_nodes(conn, s, source.nodes(), progress, invalid)
        n_edges, skipped = _copy_edges(conn, s, source.edges(), ids, skip_dangling, progress, invalid)
        duplicates = _finish(conn, s, progress)
        _swap(db, conn, db_id, temp, old[0] if old else None, meta["created_at"])
    return ImportReport(db_id, source.format, mode, len(ids), n_edges - duplicates, skipped, duplicates,
                        time.perf_counter() - t0, invalid.count, tuple(invalid.examples))


def _copy_nodes(conn: Any, s: str, records: Iterator[Record], progress: Progress | None,
                invalid: Invalid) -> dict[str, int]:
    ids: dict[str, int] = {}
    ts = now_iso()
    if progress:
        progress("nodes", 0)
    with conn.cursor().copy(NODE_COPY.replace("{s}", s)) as copy:
        for batch in _batches(records):
            for row in _node_rows(batch, ids, ts, invalid):
                copy.write_row((ids[row[0]], *row))
            if progress:
                progress("nodes", len(ids))
    conn.execute("SELECT setval(pg_get_serial_sequence(%s, 'rowid'), %s, true)", (f"{s}.nodes", max(len(ids), 1)))
    return ids


def _copy_edges(conn: Any, s: str, records: Iterator[Record], ids: dict[str, int], skip_dangling: bool,
                progress: Progress | None, invalid: Invalid) -> tuple[int, int]:
    ts, count, skipped = now_iso(), 0, 0
    if progress:
        progress("edges", 0)
    with conn.cursor().copy(EDGE_COPY.replace("{s}", s)) as copy:
        for batch in _batches(records):
            rows, dropped = _edge_rows(batch, ids, skip_dangling, ts, invalid)
            skipped += dropped
            for row in rows:
                copy.write_row(row)
            count += len(rows)
            if progress:
                progress("edges", count)
    return count, skipped


def _finish(conn: Any, s: str, progress: Progress | None) -> int:
    """Collapse duplicate edges (the first row, the max weight), build the indexes; duplicates removed."""
    if progress:
        progress("indexes", 0)
    conn.execute(f"CREATE TEMP TABLE kgos_keep ON COMMIT DROP AS SELECT min(rowid) AS rid, max(weight) AS w "
                 f"FROM {s}.edges GROUP BY source, target, type HAVING count(*) > 1")
    removed = conn.execute(f"DELETE FROM {s}.edges e USING kgos_keep k, {s}.edges f WHERE f.rowid = k.rid "
                           "AND e.source = f.source AND e.target = f.target AND e.type = f.type "
                           "AND e.rowid <> k.rid").rowcount
    conn.execute(f"UPDATE {s}.edges e SET weight = k.w FROM kgos_keep k WHERE e.rowid = k.rid")
    conn.execute("DROP TABLE kgos_keep")
    # The foreign keys, checked once over all rows (checked per copied row they cost 3x the COPY).
    conn.execute(f"ALTER TABLE {s}.edges ADD CONSTRAINT edges_source_fkey FOREIGN KEY (source) REFERENCES "
                 f"{s}.nodes(rowid) ON DELETE CASCADE, ADD CONSTRAINT edges_target_fkey FOREIGN KEY (target) "
                 f"REFERENCES {s}.nodes(rowid) ON DELETE CASCADE")
    try:
        conn.execute(dict(KG_MIGRATIONS)[BULK_INDEXES].replace("{s}", s))
    except psycopg_modules()[0].errors.UniqueViolation:
        raise ImportFailed("two edges in the file share the same id; edge ids must be unique") from None
    record(conn, s, [BULK_INDEXES])
    conn.execute(dict(KG_MIGRATIONS)[CHANGE_FEED].replace("{s}", s))
    record(conn, s, [CHANGE_FEED])
    return int(removed)


def _swap(db: PgDatabase, conn: Any, db_id: str, temp: str, old: str | None, created_at: str) -> None:
    """The new schema takes the KG's name; the KG it replaces is dropped (same transaction)."""
    final = schema_name(db_id)
    if old is not None:
        conn.execute(f"DROP SCHEMA {db.ident(old)} CASCADE")
        conn.execute("DELETE FROM kgos.kgs WHERE db_id = %s", (db_id,))
    conn.execute(f"ALTER SCHEMA {db.ident(temp)} RENAME TO {db.ident(final)}")
    conn.execute("INSERT INTO kgos.kgs VALUES (%s, %s, %s)", (db_id, final, created_at))
    db.bump(conn, db.ident(final), final)  # other servers learn the new version under the KG's own name


# -- merge into an existing KG ---------------------------------------------------------------------
def merge_into(store: PostgresStore, source: Source, skip_dangling: bool = False,
               progress: Progress | None = None, skip_invalid: bool = False) -> ImportReport:
    """Upsert ``source`` into ``store`` in one unit of work (bulk mode): nodes by id (properties
    merged), edges by (source, target, type) with weight = max(old, new), as ``importer.merge_into``."""
    from .importer import merge_with
    return merge_with(store, source, skip_dangling, progress, skip_invalid)
