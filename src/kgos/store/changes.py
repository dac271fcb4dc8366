"""The change feed of a KG: which node, edge and vector rows each write touched (issue 31 goal 3).

Triggers in the database record every written row, whoever writes (a server, another process on the
same SQLite file, ``psql``), in ``kg_changes (tag, kind, key)``: ``kind`` is 'n' (a node rowid; also
for its vectors) or 'e' (an edge rowid), ``tag`` the KG version the writing transaction started from
(the last committed one: SQLite serialises writers, and PostgreSQL's trigger locks the version row
first, so no commit lands between the tag and the write). So a snapshot of version V needs exactly
the rows tagged >= V to become the current version: a superset of what changed since V (a row read
again unchanged costs time, never correctness).

``kg_changes_floor`` holds the lowest tag the feed is complete from: a snapshot older than it (the
feed pruned past it, or made before the feed existed, or a bulk import) rebuilds in full.
``prune`` keeps the feed bounded; writers call it at commit.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

KEEP_ROWS = 20_000  # rows kept by ``prune``: far more than a delta is allowed to apply (see index.delta)
PRUNE_EVERY = 16  # commits of this process between two prunes (a prune walks up to KEEP_ROWS index entries)
_commits = itertools.count(1)

_SQLITE_TAG = "COALESCE((SELECT CAST(value AS INTEGER) FROM kg_meta WHERE key = 'version'), 0)"


def _sqlite_trigger(table: str, kind: str, column: str) -> str:
    return f"""
CREATE TRIGGER kg_changes_{table}_ai AFTER INSERT ON {table} BEGIN
  INSERT INTO kg_changes VALUES ({_SQLITE_TAG}, '{kind}', new.{column});
END;
CREATE TRIGGER kg_changes_{table}_au AFTER UPDATE ON {table} BEGIN
  INSERT INTO kg_changes VALUES ({_SQLITE_TAG}, '{kind}', old.{column});
  INSERT INTO kg_changes SELECT {_SQLITE_TAG}, '{kind}', new.{column} WHERE new.{column} <> old.{column};
END;
CREATE TRIGGER kg_changes_{table}_ad AFTER DELETE ON {table} BEGIN
  INSERT INTO kg_changes VALUES ({_SQLITE_TAG}, '{kind}', old.{column});
END;"""


SQLITE_TRIGGER_NAMES = tuple(f"kg_changes_{t}_{op}" for t in ("nodes", "edges", "node_embeddings")
                             for op in ("ai", "au", "ad"))
SQLITE_TRIGGERS = "".join(_sqlite_trigger(t, k, c) for t, k, c in (
    ("nodes", "n", "rowid"), ("edges", "e", "rowid"), ("node_embeddings", "n", "node")))

# The native file's migration 005: the feed starts complete at the file's current version.
SQLITE_MIGRATION = f"""
CREATE TABLE kg_changes (tag INTEGER NOT NULL, kind TEXT NOT NULL, key INTEGER NOT NULL);
CREATE INDEX kg_changes_tag ON kg_changes(tag);
CREATE TABLE kg_changes_floor (one INTEGER PRIMARY KEY CHECK (one = 1), v INTEGER NOT NULL);
INSERT INTO kg_changes_floor VALUES (1, {_SQLITE_TAG});
{SQLITE_TRIGGERS}
"""

# PostgreSQL: one shared trigger function (a database migration), one trigger per table (a KG one).
PG_FUNCTION = """
CREATE FUNCTION kgos.record_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE v bigint; old_key bigint; new_key bigint;
BEGIN
  -- FOR UPDATE: a writer waits for the other writers of this KG to commit, so its tag is the
  -- version it will follow (read committed: the row as the last commit left it)
  EXECUTE format('SELECT v FROM %I.kg_version FOR UPDATE', TG_TABLE_SCHEMA) INTO v;
  IF TG_OP <> 'INSERT' THEN old_key := (to_jsonb(OLD) ->> TG_ARGV[1])::bigint; END IF;
  IF TG_OP <> 'DELETE' THEN new_key := (to_jsonb(NEW) ->> TG_ARGV[1])::bigint; END IF;
  IF old_key IS NOT NULL THEN
    EXECUTE format('INSERT INTO %I.kg_changes VALUES ($1, $2, $3)', TG_TABLE_SCHEMA) USING v, TG_ARGV[0], old_key;
  END IF;
  IF new_key IS NOT NULL AND new_key IS DISTINCT FROM old_key THEN
    EXECUTE format('INSERT INTO %I.kg_changes VALUES ($1, $2, $3)', TG_TABLE_SCHEMA) USING v, TG_ARGV[0], new_key;
  END IF;
  RETURN NULL;
END $$;
-- A TRUNCATE fires no row trigger: the feed cannot name what went, so it starts after it (BEFORE:
-- the version row still holds the last commit, which the truncating write's version follows)
CREATE FUNCTION kgos.record_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
  EXECUTE format('SELECT v FROM %I.kg_version FOR UPDATE', TG_TABLE_SCHEMA) INTO v;
  EXECUTE format('UPDATE %I.kg_changes_floor SET v = $1', TG_TABLE_SCHEMA) USING v + 1;
  RETURN NULL;
END $$;
"""

PG_KG_MIGRATION = """
CREATE TABLE {s}.kg_changes (tag bigint NOT NULL, kind text NOT NULL, key bigint NOT NULL);
CREATE INDEX kg_changes_tag ON {s}.kg_changes(tag);
CREATE TABLE {s}.kg_changes_floor (one boolean PRIMARY KEY DEFAULT true CHECK (one), v bigint NOT NULL);
INSERT INTO {s}.kg_changes_floor SELECT true, v FROM {s}.kg_version;
CREATE TRIGGER nodes_changes AFTER INSERT OR UPDATE OR DELETE ON {s}.nodes
  FOR EACH ROW EXECUTE FUNCTION kgos.record_change('n', 'rowid');
CREATE TRIGGER edges_changes AFTER INSERT OR UPDATE OR DELETE ON {s}.edges
  FOR EACH ROW EXECUTE FUNCTION kgos.record_change('e', 'rowid');
CREATE TRIGGER node_embeddings_changes AFTER INSERT OR UPDATE OR DELETE ON {s}.node_embeddings
  FOR EACH ROW EXECUTE FUNCTION kgos.record_change('n', 'node');
CREATE TRIGGER nodes_truncate BEFORE TRUNCATE ON {s}.nodes FOR EACH STATEMENT EXECUTE FUNCTION kgos.record_truncate();
CREATE TRIGGER edges_truncate BEFORE TRUNCATE ON {s}.edges FOR EACH STATEMENT EXECUTE FUNCTION kgos.record_truncate();
CREATE TRIGGER node_embeddings_truncate BEFORE TRUNCATE ON {s}.node_embeddings
  FOR EACH STATEMENT EXECUTE FUNCTION kgos.record_truncate();
"""


@dataclass(frozen=True)
class Changes:
    """The rows written since a version: node rowids (text, type or vectors) and edge rowids."""

    nodes: frozenset[int]
    edges: frozenset[int]

    @property
    def size(self) -> int:
        return len(self.nodes) + len(self.edges)


def read(conn: Any, prefix: str, param: str, since: int) -> Changes | None:
    """The changes tagged >= ``since`` (a version), or None when the feed cannot tell (no feed in
    this database, or it starts after ``since``). ``prefix``: the tables' schema (``"s."`` or "");
    ``param``: the placeholder of the driver. Call it inside the read transaction of the snapshot."""
    floor = conn.execute(f"SELECT v FROM {prefix}kg_changes_floor").fetchone()
    if floor is None or int(floor[0]) > since:
        return None
    rows = conn.execute(f"SELECT DISTINCT kind, key FROM {prefix}kg_changes WHERE tag >= {param}", (since,)).fetchall()
    return Changes(frozenset(int(k) for kind, k in rows if kind == "n"),
                   frozenset(int(k) for kind, k in rows if kind == "e"))


def prune_now_and_then(conn: Any, prefix: str) -> None:
    """``prune`` at every ``PRUNE_EVERY``-th commit of this process (writers call it at commit): the
    feed stays within ``KEEP_ROWS`` plus what a few writes add."""
    if next(_commits) % PRUNE_EVERY == 0:
        prune(conn, prefix, KEEP_ROWS)


def prune(conn: Any, prefix: str, keep: int = KEEP_ROWS) -> None:
    """Drop the oldest tags past the newest ``keep`` rows and raise the floor to the oldest tag kept
    (a tag is dropped whole: the feed stays complete from the floor on). Runs in a writer's
    transaction: an index range of ``keep`` entries, a few ms."""
    row = conn.execute(f"SELECT tag FROM {prefix}kg_changes ORDER BY tag DESC LIMIT 1 OFFSET {int(keep)}").fetchone()
    if row is None:
        return
    cut = int(row[0])
    conn.execute(f"DELETE FROM {prefix}kg_changes WHERE tag < {cut}")
    conn.execute(f"UPDATE {prefix}kg_changes_floor SET v = {cut} WHERE v < {cut}")


def restart(conn: Any, prefix: str, version_sql: str) -> None:
    """Empty the feed and start it at the current version (after a bulk load, which wrote every row
    with the feed's triggers off: no older snapshot of the KG may apply a delta)."""
    conn.execute(f"DELETE FROM {prefix}kg_changes")
    conn.execute(f"UPDATE {prefix}kg_changes_floor SET v = ({version_sql})")


@dataclass(frozen=True)
class Rows:
    """The current rows of what changed, each list in rowid order (rows deleted since are absent)."""

    nodes: list[tuple[Any, ...]]  # (rowid, id, type, name, description, properties as JSON text)
    edges: list[tuple[Any, ...]]  # (rowid, source rowid, target rowid, type, weight)
    vectors: list[tuple[Any, ...]]  # (node rowid, float32 bytes, dims) of the model asked for


def rows(conn: Any, prefix: str, dialect: str, feed: Changes, model: str | None) -> Rows:
    """Read the rows ``feed`` names (inside the caller's read transaction)."""
    props = "properties::text" if dialect == "postgresql" else "properties"
    nodes = _where_in(conn, dialect, f"SELECT rowid, id, type, name, description, {props} FROM {prefix}nodes",
                      "rowid", sorted(feed.nodes))
    edges = _where_in(conn, dialect, f"SELECT rowid, source, target, type, weight FROM {prefix}edges", "rowid",
                      sorted(feed.edges))
    vectors = _where_in(conn, dialect, f"SELECT node, vector, dims FROM {prefix}node_embeddings", "node",
                        sorted(feed.nodes), ("model", model)) if model else []
    return Rows(sorted(nodes), sorted(edges), sorted(vectors, key=lambda r: r[0]))


def _where_in(conn: Any, dialect: str, select: str, column: str, keys: list[int],
              also: tuple[str, Any] | None = None) -> list[tuple[Any, ...]]:
    if not keys:
        return []
    extra = f" AND {also[0]} = " if also else ""
    if dialect == "postgresql":
        args = [keys] + ([also[1]] if also else [])
        return conn.execute(f"{select} WHERE {column} = ANY(%s){extra}{'%s' if also else ''}", args).fetchall()
    out: list[tuple[Any, ...]] = []
    for start in range(0, len(keys), 500):  # under SQLite's bound-parameter limit
        chunk = keys[start:start + 500]
        sql = f"{select} WHERE {column} IN ({','.join('?' * len(chunk))}){extra}{'?' if also else ''}"
        out += conn.execute(sql, chunk + ([also[1]] if also else [])).fetchall()
    return out
