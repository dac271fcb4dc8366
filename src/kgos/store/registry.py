"""``workspace.db``: the registry of attached foreign KGs, per-KG settings, and the shared tables
(experts, conversations, feedback, A/B tests, links, memory). A workspace with a PostgreSQL URL keeps
the shared tables in the database instead (store/postgres_workspace.py, ``Workspace.shared``); the
attachments and settings stay here, as they name things of this machine."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .migrations import apply, now_iso
from .native import connect

WORKSPACE_MIGRATIONS: list[tuple[str, str]] = [
    ("001_attached", """
CREATE TABLE attached (
  db_id TEXT PRIMARY KEY,
  path TEXT NOT NULL,
  profile TEXT,
  read_only INTEGER NOT NULL DEFAULT 1,
  attached_at TEXT NOT NULL
);"""),
    ("002_kg_settings", """
CREATE TABLE kg_settings (
  db_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (db_id, key)
);"""),
    # Agent memory (spec/002, kgos.memory): items with FTS5 over content and tags; the relations each
    # memory yielded (a time-indexed provenance log for temporal queries and expert filtering);
    # enrichment-failure counters; the reviewable alias table.
    ("003_memory", """
CREATE TABLE memories (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  content TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '{}',
  expert_id TEXT,
  conversation_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  kg_status TEXT NOT NULL DEFAULT 'pending',
  kg_error TEXT
);
CREATE INDEX memories_created ON memories(created_at);
CREATE INDEX memories_expert ON memories(expert_id, created_at);
CREATE INDEX memories_conversation ON memories(conversation_id, created_at);
CREATE VIRTUAL TABLE memories_fts USING fts5(
  content, tags, content='memories', content_rowid='rowid',
  tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, old.content, old.tags);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, tags ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, old.content, old.tags);
  INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
END;
CREATE TABLE memory_relations (
  memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  subject_type TEXT NOT NULL,
  subject_norm TEXT NOT NULL,
  subject_name TEXT NOT NULL,
  predicate TEXT NOT NULL,
  object_type TEXT NOT NULL,
  object_norm TEXT NOT NULL,
  object_name TEXT NOT NULL,
  weight REAL NOT NULL,
  src TEXT NOT NULL,
  pattern TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX memory_relations_memory ON memory_relations(memory_id);
CREATE INDEX memory_relations_time ON memory_relations(predicate, created_at);
CREATE INDEX memory_relations_object ON memory_relations(object_type, object_norm);
CREATE TABLE memory_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL DEFAULT 0);
CREATE TABLE memory_aliases (
  id INTEGER PRIMARY KEY,
  db_id TEXT NOT NULL,
  type TEXT NOT NULL,
  alias_norm TEXT NOT NULL,
  alias_name TEXT NOT NULL,
  canonical_norm TEXT NOT NULL,
  canonical_name TEXT NOT NULL,
  reason TEXT NOT NULL,
  score REAL NOT NULL,
  status TEXT NOT NULL DEFAULT 'proposed' CHECK (status IN ('proposed', 'accepted', 'rejected')),
  created_at TEXT NOT NULL,
  decided_at TEXT,
  UNIQUE (db_id, type, alias_norm, canonical_norm)
);"""),
    # Expert agents (spec/000 section 8): the validated config as JSON with its schema_version;
    # conversations and their messages (spec/000 section 10), messages carrying retrieval metadata.
    ("004_experts", """
CREATE TABLE experts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  config TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE conversations (
  id TEXT PRIMARY KEY,
  expert_id TEXT NOT NULL,
  started_at TEXT NOT NULL,
  last_message_at TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0,
  preview TEXT NOT NULL DEFAULT ''
);
CREATE INDEX conversations_expert ON conversations(expert_id, last_message_at);
CREATE TABLE messages (
  id INTEGER PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
);
CREATE INDEX messages_conversation ON messages(conversation_id, id);"""),
    # Feedback on expert turns (spec/000 section 14): a turn is the pair of messages one question made,
    # named by a public turn_id (the /v1 completion id carries it); one vote per turn, the latest wins,
    # with a snapshot of the turn's retrieval metadata so a later change of the expert cannot rewrite it.
    ("005_feedback", """
ALTER TABLE messages ADD COLUMN turn_id TEXT;
CREATE INDEX messages_turn ON messages(turn_id);
CREATE TABLE feedback (
  turn_id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  expert_id TEXT NOT NULL,
  rating INTEGER NOT NULL CHECK (rating IN (-1, 1)),
  comment TEXT NOT NULL DEFAULT '',
  query TEXT NOT NULL DEFAULT '',
  retrieval TEXT NOT NULL DEFAULT '{}',
  revisions INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX feedback_expert ON feedback(expert_id, updated_at);
CREATE INDEX feedback_conversation ON feedback(conversation_id, updated_at);"""),
    # A/B tests of an expert's config: variants are JSON merge patches; assignment is a hash of the
    # test and conversation ids, so nothing per conversation is stored here (turns record their variant).
    ("006_ab_tests", """
CREATE TABLE ab_tests (
  id TEXT PRIMARY KEY,
  expert_id TEXT NOT NULL,
  variants TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'stopped')),
  min_votes INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  stopped_at TEXT
);
CREATE INDEX ab_tests_expert ON ab_tests(expert_id, status);"""),
    # Edges between nodes of two KGs (``kg:node`` at each end): neither KG owns them, the workspace does.
    ("007_cross_edges", """
CREATE TABLE cross_edges (
  source_kg TEXT NOT NULL,
  source_node TEXT NOT NULL,
  target_kg TEXT NOT NULL,
  target_node TEXT NOT NULL,
  type TEXT NOT NULL,
  weight REAL NOT NULL DEFAULT 1.0,
  properties TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  PRIMARY KEY (source_kg, source_node, target_kg, target_node, type)
);
CREATE INDEX cross_edges_target ON cross_edges(target_kg, target_node);"""),
]


def open_workspace_db(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    apply(conn, WORKSPACE_MIGRATIONS, table="ws_migrations")
    return conn


class Registry:
    """Attached KGs: db_id -> (path, profile, read_only)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, db_id: str) -> tuple[str, str | None, bool] | None:
        row = self.conn.execute("SELECT path, profile, read_only FROM attached WHERE db_id = ?",
                                (db_id,)).fetchone()
        return (row[0], row[1], bool(row[2])) if row else None

    def all(self) -> list[tuple[str, str, str | None, bool]]:
        return [(r[0], r[1], r[2], bool(r[3])) for r in
                self.conn.execute("SELECT db_id, path, profile, read_only FROM attached ORDER BY db_id")]

    def add(self, db_id: str, path: str, profile: str | None, read_only: bool) -> None:
        self.conn.execute("INSERT INTO attached VALUES (?, ?, ?, ?, ?)",
                          (db_id, path, profile, int(read_only), now_iso()))

    def remove(self, db_id: str) -> None:
        self.conn.execute("DELETE FROM attached WHERE db_id = ?", (db_id,))
