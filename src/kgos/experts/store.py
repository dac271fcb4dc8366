"""Experts, conversations and messages in ``workspace.db`` (migration ``004_experts``), or in PostgreSQL
(``kgos_ws``, store/postgres_workspace.py) when the workspace has a database URL: the same SQL.

Plain SQL with parameters only; every multi-statement write is one transaction, so a failure
leaves the tables as they were.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConversationNotFound, ExpertExists, ExpertNotFound, InvalidArgument
from ..memory.pii import redact_secrets, redact_value
from ..store.migrations import now_iso
from ..store.postgres_workspace import write_transaction
from .config import Expert, ExpertConfig

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
ROLES = ("user", "assistant", "system", "tool")


def check_id(value: Any, what: str) -> str:
    """Expert and conversation ids: 1-128 letters, digits, '_', '-', '.'; they appear in URLs."""
    if not isinstance(value, str) or not ID_RE.fullmatch(value):
        raise InvalidArgument(f"invalid {what} {value!r}: use 1-128 letters, digits, '_', '-' or '.', "
                              "starting with a letter or digit")
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ExpertSummary:
    """A row of ``GET /api/experts``."""

    id: str
    name: str
    description: str
    kg_db_id: str
    kg_db_ids: tuple[str, ...]
    persona: dict[str, str]
    created_at: str
    updated_at: str
    conversation_count: int
    last_active: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "description": self.description, "kg_db_id": self.kg_db_id,
                "kg_db_ids": list(self.kg_db_ids), "persona": self.persona, "created_at": self.created_at,
                "updated_at": self.updated_at, "conversation_count": self.conversation_count,
                "last_active": self.last_active}


@dataclass(frozen=True)
class StoredMessage:
    id: int
    role: str
    content: str
    timestamp: str
    metadata: dict[str, Any] = field(default_factory=dict)
    turn_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "role": self.role, "content": self.content, "timestamp": self.timestamp}
        if self.turn_id:
            d["turn_id"] = self.turn_id
        if self.metadata:
            d["metadata"] = self.metadata
        return d


@dataclass(frozen=True)
class Conversation:
    id: str
    expert_id: str
    started_at: str
    last_message_at: str
    message_count: int
    preview: str
    messages: tuple[StoredMessage, ...] = ()

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "started_at": self.started_at, "last_message_at": self.last_message_at,
                "message_count": self.message_count, "preview": self.preview}

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "expert_id": self.expert_id, "started_at": self.started_at,
                "last_message_at": self.last_message_at, "message_count": self.message_count,
                "messages": [m.to_dict() for m in self.messages]}


class ExpertStore:
    """SQL over the three tables; knows nothing of KGs (``ExpertService`` checks those)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn  # workspace.db, or the PgWorkspaceDB of a PostgreSQL workspace
        self._lock = threading.RLock()

    def transaction(self) -> AbstractContextManager[Any]:
        return write_transaction(self.conn, self._lock)

    # -- experts ------------------------------------------------------------------------------------
    def exists(self, expert_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM experts WHERE id = ?", (expert_id,)).fetchone() is not None

    def insert(self, expert_id: str, config: ExpertConfig) -> Expert:
        stamp = now_iso()
        try:
            with self.transaction() as conn:
                conn.execute("INSERT INTO experts VALUES (?, ?, ?, ?, ?, ?)",
                             (expert_id, config.name, _dumps(config.model_dump(mode="json")),
                              config.schema_version, stamp, stamp))
        except sqlite3.IntegrityError:
            raise ExpertExists(f"an expert with id '{expert_id}' already exists; choose another id, "
                               "or update it (PUT /api/experts/{id}, kgos expert update)") from None
        return Expert(id=expert_id, config=config, created_at=stamp, updated_at=stamp)

    def get(self, expert_id: str) -> Expert:
        row = self.conn.execute("SELECT config, created_at, updated_at FROM experts WHERE id = ?",
                                (expert_id,)).fetchone()
        if row is None:
            raise ExpertNotFound(self._missing(expert_id))
        return Expert(id=expert_id, config=ExpertConfig.model_validate_json(row[0]), created_at=row[1],
                      updated_at=row[2])

    def _missing(self, expert_id: str) -> str:
        known = [r[0] for r in self.conn.execute("SELECT id FROM experts ORDER BY id LIMIT 20")]
        return (f"no expert with id '{expert_id}'; known experts: {', '.join(known) or 'none yet'} "
                "(create one with POST /api/experts or kgos expert create)")

    def replace(self, expert_id: str, config: ExpertConfig) -> Expert:
        stamp = now_iso()
        with self.transaction() as conn:
            cur = conn.execute("UPDATE experts SET name = ?, config = ?, schema_version = ?, updated_at = ? "
                               "WHERE id = ?", (config.name, _dumps(config.model_dump(mode="json")),
                                                config.schema_version, stamp, expert_id))
            if cur.rowcount == 0:
                raise ExpertNotFound(self._missing(expert_id))
        return self.get(expert_id)

    def delete(self, expert_id: str, with_conversations: bool) -> int:
        """Delete the expert (and its conversations if asked); returns conversations deleted."""
        with self.transaction() as conn:
            if conn.execute("DELETE FROM experts WHERE id = ?", (expert_id,)).rowcount == 0:
                raise ExpertNotFound(self._missing(expert_id))
            if not with_conversations:
                return 0
            ids = [r[0] for r in conn.execute("SELECT id FROM conversations WHERE expert_id = ?", (expert_id,))]
            conn.executemany("DELETE FROM messages WHERE conversation_id = ?", [(i,) for i in ids])
            conn.execute("DELETE FROM conversations WHERE expert_id = ?", (expert_id,))
            return len(ids)

    def summaries(self) -> list[ExpertSummary]:
        rows = self.conn.execute(
            "SELECT e.id, e.config, e.created_at, e.updated_at, count(c.id), max(c.last_message_at) "
            "FROM experts e LEFT JOIN conversations c ON c.expert_id = e.id GROUP BY e.id ORDER BY e.id")
        return [_summary(r) for r in rows]

    # -- conversations ------------------------------------------------------------------------------------
    def conversation(self, expert_id: str, conversation_id: str, messages: bool = True) -> Conversation:
        row = self.conn.execute("SELECT id, expert_id, started_at, last_message_at, message_count, preview "
                                "FROM conversations WHERE id = ? AND expert_id = ?",
                                (conversation_id, expert_id)).fetchone()
        if row is None:
            raise ConversationNotFound(f"expert '{expert_id}' has no conversation '{conversation_id}' "
                                       f"(list them: GET /api/experts/{expert_id}/conversations)")
        found = self._messages(conversation_id) if messages else ()
        return Conversation(*row, messages=found)

    def _messages(self, conversation_id: str) -> tuple[StoredMessage, ...]:
        rows = self.conn.execute("SELECT id, role, content, created_at, metadata, turn_id FROM messages "
                                 "WHERE conversation_id = ? ORDER BY id", (conversation_id,))
        return tuple(StoredMessage(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5]) for r in rows)

    def conversations(self, expert_id: str, limit: int, offset: int) -> tuple[list[Conversation], int]:
        total = self.conn.execute("SELECT count(*) FROM conversations WHERE expert_id = ?", (expert_id,)).fetchone()[0]
        rows = self.conn.execute("SELECT id, expert_id, started_at, last_message_at, message_count, preview "
                                 "FROM conversations WHERE expert_id = ? ORDER BY last_message_at DESC, id "
                                 "LIMIT ? OFFSET ?", (expert_id, limit, offset))
        return [Conversation(*r) for r in rows], int(total)

    def open_conversation(self, expert_id: str, conversation_id: str | None) -> tuple[str, bool]:
        """The conversation to write to: an existing one of this expert, or a new one (the client may
        name it). Returns (id, created). An id that belongs to another expert is not found."""
        cid = check_id(conversation_id, "conversation_id") if conversation_id else f"conv_{uuid.uuid4().hex[:16]}"
        row = self.conn.execute("SELECT expert_id FROM conversations WHERE id = ?", (cid,)).fetchone()
        if row is not None and row[0] != expert_id:
            raise ConversationNotFound(f"expert '{expert_id}' has no conversation '{cid}'")
        if row is not None:
            return cid, False
        stamp = now_iso()
        with self.transaction() as conn:  # another server may create the same named one meanwhile
            created = conn.execute("INSERT INTO conversations VALUES (?, ?, ?, ?, 0, '') ON CONFLICT DO NOTHING",
                                   (cid, expert_id, stamp, stamp)).rowcount > 0
        if not created:
            return self.open_conversation(expert_id, cid)
        return cid, True

    def add_messages(self, conversation_id: str, messages: list[tuple[str, str, Mapping[str, Any]]],
                     turn_id: str | None = None) -> list[int]:
        """Append (role, content, metadata) rows in one transaction, all of one turn; returns their ids."""
        stamp, ids = now_iso(), []
        with self.transaction() as conn:
            for role, content, metadata in messages:
                if role not in ROLES:
                    raise InvalidArgument(f"role must be one of {', '.join(ROLES)}, not {role!r}")
                # the one place turns are stored: no secret stays in a message or its metadata
                row = conn.execute("INSERT INTO messages (conversation_id, role, content, metadata, created_at, "
                                   "turn_id) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                                   (conversation_id, role, redact_secrets(content), _dumps(redact_value(dict(metadata))),
                                    stamp, turn_id)).fetchall()  # read to the end: SQLite then ends the statement
                ids.append(int(row[0][0]))
            first_user = redact_secrets(next((c for r, c, _ in messages if r == "user"), ""))
            conn.execute("UPDATE conversations SET last_message_at = ?, message_count = message_count + ?, "
                         "preview = CASE WHEN preview = '' THEN ? ELSE preview END WHERE id = ?",
                         (stamp, len(messages), first_user[:120], conversation_id))
        return ids

    def delete_conversation(self, expert_id: str, conversation_id: str) -> None:
        with self.transaction() as conn:
            cur = conn.execute("DELETE FROM conversations WHERE id = ? AND expert_id = ?", (conversation_id, expert_id))
            if cur.rowcount == 0:
                raise ConversationNotFound(f"expert '{expert_id}' has no conversation '{conversation_id}'")
            conn.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation_id,))


def _summary(row: tuple[Any, ...]) -> ExpertSummary:
    cfg = ExpertConfig.model_validate_json(row[1])
    return ExpertSummary(id=row[0], name=cfg.name, description=cfg.description, kg_db_id=cfg.primary_kg,
                         kg_db_ids=cfg.kgs, persona={"name": cfg.persona.name, "style": cfg.persona.style},
                         created_at=row[2], updated_at=row[3], conversation_count=int(row[4]), last_active=row[5])
