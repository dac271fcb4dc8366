"""``workspace.db``: the registry of attached foreign KGs (and, in later migrations, experts,
conversations, memory, predictions and run records)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .migrations import now_iso, run_script
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
]


def open_workspace_db(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS ws_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {r[0] for r in conn.execute("SELECT name FROM ws_migrations")}
    for name, sql in WORKSPACE_MIGRATIONS:
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            run_script(conn, sql)
            conn.execute("INSERT INTO ws_migrations VALUES (?, ?)", (name, now_iso()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
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
