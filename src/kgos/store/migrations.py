"""Named, append-only migrations of the native KG file format.

Each migration is applied once, in order, and recorded in ``kg_migrations``. Never edit a
migration that has shipped: append a new one.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

# FTS indexes name, type, description and the text-like properties; the view is the FTS5
# "external content" so the text lives once, in ``nodes``.
_TEXT_PROPS = ("aliases", "keywords", "tags", "synonyms")
NODE_TEXT_EXTRA = " || ' ' || ".join(
    f"coalesce(json_extract(properties, '$.{key}'), '')" for key in _TEXT_PROPS)

FTS_TRIGGERS = f"""
CREATE TRIGGER nodes_fts_ai AFTER INSERT ON nodes BEGIN
  INSERT INTO nodes_fts(rowid, name, type, description, extra)
  VALUES (new.rowid, new.name, new.type, new.description,
          (SELECT extra FROM node_text WHERE rid = new.rowid));
END;
CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, name, type, description, extra)
  VALUES ('delete', old.rowid, old.name, old.type, old.description,
          {NODE_TEXT_EXTRA.replace("properties", "old.properties")});
END;
CREATE TRIGGER nodes_fts_au AFTER UPDATE OF name, type, description, properties ON nodes
WHEN old.name IS NOT new.name OR old.type IS NOT new.type OR old.description IS NOT new.description
  OR ({NODE_TEXT_EXTRA.replace("properties", "old.properties")})
     IS NOT ({NODE_TEXT_EXTRA.replace("properties", "new.properties")})
BEGIN
  INSERT INTO nodes_fts(nodes_fts, rowid, name, type, description, extra)
  VALUES ('delete', old.rowid, old.name, old.type, old.description,
          {NODE_TEXT_EXTRA.replace("properties", "old.properties")});
  INSERT INTO nodes_fts(rowid, name, type, description, extra)
  VALUES (new.rowid, new.name, new.type, new.description,
          (SELECT extra FROM node_text WHERE rid = new.rowid));
END;
"""
FTS_TRIGGER_NAMES = ("nodes_fts_ai", "nodes_fts_ad", "nodes_fts_au")

# Secondary indexes are dropped and rebuilt around bulk loads into an empty file.
EDGE_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS edges_key ON edges(source, target, type);
CREATE INDEX IF NOT EXISTS edges_target ON edges(target);
CREATE INDEX IF NOT EXISTS edges_type ON edges(type);
CREATE UNIQUE INDEX IF NOT EXISTS edges_id ON edges(id) WHERE id IS NOT NULL;
"""
NODE_INDEXES = """
CREATE INDEX IF NOT EXISTS nodes_norm_type ON nodes(norm_name, type);
CREATE INDEX IF NOT EXISTS nodes_type ON nodes(type);
"""
# The uniqueness of node ids, as a named index since migration 004 (it was the table's inline UNIQUE):
# a bulk load drops it with the others and builds it once at the end.
NODE_ID_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS nodes_id ON nodes(id);"
SECONDARY_INDEX_NAMES = ("edges_key", "edges_target", "edges_type", "edges_id",
                         "nodes_norm_type", "nodes_type", "nodes_id")
# The views over ``nodes`` (the FTS "external content", and edges with their endpoints' ids).
NODE_VIEWS = f"""CREATE VIEW node_text (rid, name, type, description, extra) AS
  SELECT rowid, name, type, description, {NODE_TEXT_EXTRA} FROM nodes;
CREATE VIEW edge_list AS
  SELECT e.rowid AS rowid, s.id AS source, t.id AS target, e.type, e.weight, e.properties,
         e.created_at, e.id AS edge_id
  FROM edges e JOIN nodes s ON s.rowid = e.source JOIN nodes t ON t.rowid = e.target;
"""

M001_NATIVE_SCHEMA = f"""
CREATE TABLE kg_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE nodes (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  norm_name TEXT NOT NULL,
  type TEXT NOT NULL DEFAULT 'entity',
  description TEXT NOT NULL DEFAULT '',
  properties TEXT NOT NULL DEFAULT '{{}}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE edges (
  rowid INTEGER PRIMARY KEY,
  source INTEGER NOT NULL REFERENCES nodes(rowid) ON DELETE CASCADE,
  target INTEGER NOT NULL REFERENCES nodes(rowid) ON DELETE CASCADE,
  type TEXT NOT NULL,
  weight REAL NOT NULL DEFAULT 1.0,
  properties TEXT NOT NULL DEFAULT '{{}}',
  created_at TEXT NOT NULL,
  id TEXT
);
{EDGE_INDEXES}
{NODE_INDEXES}
CREATE TABLE node_embeddings (
  node INTEGER NOT NULL REFERENCES nodes(rowid) ON DELETE CASCADE,
  model TEXT NOT NULL,
  dims INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  vector BLOB NOT NULL,
  PRIMARY KEY (model, node)
) WITHOUT ROWID;
{NODE_VIEWS}CREATE VIRTUAL TABLE nodes_fts USING fts5(
  name, type, description, extra,
  content='node_text', content_rowid='rid',
  tokenize='porter unicode61 remove_diacritics 2'
);
{FTS_TRIGGERS}
"""

# Vectors in a rowid table: a 1.5 KB BLOB row of the WITHOUT ROWID table of 001 overflowed its b-tree
# page, and 67 MB of vectors took 204 MB of pages (go, 384-d); here two rows share a 4 KB page (91 MB).
# The unique (node, model) index serves lookups by node (the cascade on delete) and by (node, model).
M002_COMPACT_VECTORS = """
ALTER TABLE node_embeddings RENAME TO node_embeddings_001;
CREATE TABLE node_embeddings (
  rowid INTEGER PRIMARY KEY,
  node INTEGER NOT NULL REFERENCES nodes(rowid) ON DELETE CASCADE,
  model TEXT NOT NULL,
  dims INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  vector BLOB NOT NULL
);
INSERT INTO node_embeddings (node, model, dims, content_hash, vector)
  SELECT node, model, dims, content_hash, vector FROM node_embeddings_001 ORDER BY model, node;
DROP TABLE node_embeddings_001;
CREATE UNIQUE INDEX node_embeddings_key ON node_embeddings(node, model);
"""

# The review queue of proposals (spec/003 kg_predictions, generalised: an edge or a node, any source);
# store/proposals.py reads and writes it. Also the schema of the sidecar queue of attached KGs.
M003_KG_PREDICTIONS = """
CREATE TABLE kg_predictions (
  prediction_id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL DEFAULT 'edge' CHECK (kind IN ('edge', 'node')),
  source_node_id TEXT NOT NULL,
  target_node_id TEXT NOT NULL DEFAULT '',
  predicted_relation TEXT NOT NULL,
  predictor TEXT NOT NULL,
  score REAL NOT NULL DEFAULT 0,
  scores TEXT NOT NULL DEFAULT '{}',
  evidence TEXT NOT NULL DEFAULT '{}',
  payload TEXT NOT NULL DEFAULT '{}',
  llm_validated INTEGER,
  llm_reasoning TEXT,
  llm_model TEXT,
  combined_confidence REAL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected')),
  reviewer TEXT,
  note TEXT,
  created_at TEXT NOT NULL,
  reviewed_at TEXT,
  promoted_at TEXT,
  promoted_rowid INTEGER,
  UNIQUE (kind, source_node_id, target_node_id, predicted_relation)
);
CREATE INDEX kg_predictions_status ON kg_predictions(status, combined_confidence DESC);
"""

# Node ids unique through a named index (NODE_ID_INDEX) rather than the table's inline UNIQUE, which
# SQLite cannot drop: kept up row by row, it cost 15-20% of a bulk load's node phase, which now drops
# the index and builds it once at the end. SQLite cannot alter a constraint, so the table is rebuilt
# (its rowids kept, so edges, vectors and the full-text index still point at the same rows);
# ``migrate`` turns foreign keys off around it, or dropping the old table would cascade into edges.
M004_NODES_ID_INDEX = f"""
DROP TRIGGER nodes_fts_ai;
DROP TRIGGER nodes_fts_ad;
DROP TRIGGER nodes_fts_au;
DROP VIEW edge_list;
DROP VIEW node_text;
CREATE TABLE nodes_004 (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  norm_name TEXT NOT NULL,
  type TEXT NOT NULL DEFAULT 'entity',
  description TEXT NOT NULL DEFAULT '',
  properties TEXT NOT NULL DEFAULT '{{}}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
INSERT INTO nodes_004 (rowid, id, name, norm_name, type, description, properties, created_at, updated_at)
  SELECT rowid, id, name, norm_name, type, description, properties, created_at, updated_at FROM nodes ORDER BY rowid;
DROP TABLE nodes;
ALTER TABLE nodes_004 RENAME TO nodes;
{NODE_ID_INDEX}
{NODE_INDEXES}
{NODE_VIEWS}
{FTS_TRIGGERS}
"""

# The full-text row of a node is rewritten only when its text changes: a property that is not text (a
# dimension value, a score) used to delete and re-insert the row, and ``dims auto`` on go (43,558
# property updates) spent most of its time there.
_AU_TRIGGER = "CREATE TRIGGER nodes_fts_au" + FTS_TRIGGERS.split("CREATE TRIGGER nodes_fts_au", 1)[1]
M005_FTS_TEXT_CHANGES = "DROP TRIGGER nodes_fts_au;\n" + _AU_TRIGGER

MIGRATIONS: list[tuple[str, str]] = [
    ("001_native_schema", M001_NATIVE_SCHEMA),
    ("002_compact_vectors", M002_COMPACT_VECTORS),
    ("003_kg_predictions", M003_KG_PREDICTIONS),
    ("004_nodes_id_index", M004_NODES_ID_INDEX),
    ("005_fts_text_changes", M005_FTS_TEXT_CHANGES),
]
# A migration that frees many pages (002 frees the old vector table) gives them back to the file system.
VACUUM_FREE_PAGES = 2048


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def statements(script: str) -> list[str]:
    """Split a SQL script into complete statements (triggers keep their inner semicolons)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a script statement by statement, inside the caller's transaction.

    (``executescript`` would COMMIT first, breaking all-or-nothing imports and migrations.)
    """
    for statement in statements(script):
        conn.execute(statement)


def apply(conn: sqlite3.Connection, migrations: list[tuple[str, str]], table: str = "kg_migrations") -> list[str]:
    """Apply the pending named migrations, each in its own transaction, recording them in ``table``.

    ``table`` is one of two fixed names chosen by the caller (kg_migrations, ws_migrations).
    """
    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {r[0] for r in conn.execute(f"SELECT name FROM {table}")}
    new = []
    for name, sql in migrations:
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # another process may have applied it while this one waited for the write lock
            pending = conn.execute(f"SELECT 1 FROM {table} WHERE name = ?", (name,)).fetchone() is None
            if pending:
                run_script(conn, sql)
                conn.execute(f"INSERT INTO {table} VALUES (?, ?)", (name, now_iso()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if pending:
            new.append(name)
    return new


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Bring a native KG file up to the current schema."""
    # Foreign keys off while migrations run (the pragma is a no-op inside a transaction, so here):
    # 004 drops the old nodes table, and with them on that DROP would delete every edge by cascade.
    enforced = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        new = apply(conn, MIGRATIONS)
    finally:
        conn.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")
    if new and conn.execute("PRAGMA freelist_count").fetchone()[0] > VACUUM_FREE_PAGES:
        try:
            conn.execute("VACUUM")
        except sqlite3.OperationalError:  # another connection is reading: the file shrinks another time
            pass
    return new


@contextmanager
def immediate(conn: sqlite3.Connection, lock: threading.RLock) -> Iterator[sqlite3.Connection]:
    """One write transaction on an autocommit connection: BEGIN IMMEDIATE (the write lock up front,
    so no deadlock between two readers upgrading), COMMIT, or ROLLBACK on any error."""
    with lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
