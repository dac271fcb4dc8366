"""Feedback on expert turns: thumbs up or down with an optional comment (spec/000 section 14).

A turn is one question and its answer, named by the ``turn_id`` a chat reports (the SSE ``done``
event, ``kgos expert chat --json``, the ``kgos`` field and the completion id of ``/v1``). One vote
per turn: voting again replaces the vote (and counts as a revision). The vote is stored with a
snapshot of what the turn was grounded on (intent, nodes used, their scores and signal values,
provider, citation check), so the gap report and A/B tests read it without joining back to a
conversation that may since have been deleted.

>>> import tempfile, kgos
>>> from kgos.data import load_demo
>>> from kgos.llm import get_provider
>>> from kgos.api.turns import ask
>>> ws = kgos.Workspace(tempfile.mkdtemp()); _ = load_demo(ws, embedder=None)
>>> a = ask(ws, get_provider("offline"), "demo", "How do I reduce my API costs?")
>>> fb = FeedbackService(ws).give(a.turn_id, "down", comment="missed the batch API")
>>> fb.rating, fb.intent is not None, len(fb.nodes_used) > 0
('down', True, True)
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, RateLimited, TurnNotFound
from ..memory.pii import redact_secrets
from ..store.migrations import now_iso
from ..store.postgres_workspace import write_transaction

if TYPE_CHECKING:
    from ..kg import Workspace

RATINGS = {"up": 1, "down": -1, "+1": 1, "-1": -1, "1": 1, "thumbs_up": 1, "thumbs_down": -1}
TURN_RE = re.compile(r"^turn_[0-9a-f]{8,32}$")
MAX_COMMENT_CHARS = 2_000
#: votes (new or changed) one conversation may record per minute, and changes of one turn's vote:
#: generous for a person, a wall against a script flooding the failure log
PER_CONVERSATION_PER_MINUTE = 30
MAX_REVISIONS = 20
#: the metadata fields of the assistant message a vote keeps (spec/000 section 9 stage 8's names)
SNAPSHOT_KEYS = ("intent", "kg_db_id", "kg_db_ids", "kg_nodes_used", "retrieval_scores", "retrieval_components",
                 "retrieval_weights", "provider", "citations", "goal_mapping")


@dataclass(frozen=True)
class Feedback:
    """One turn's vote and what the turn was grounded on."""

    turn_id: str
    conversation_id: str
    expert_id: str
    rating: str
    comment: str
    query: str
    retrieval: dict[str, Any]
    revisions: int
    created_at: str
    updated_at: str

    @property
    def intent(self) -> str | None:
        return self.retrieval.get("intent")

    @property
    def nodes_used(self) -> list[str]:
        return list(self.retrieval.get("kg_nodes_used") or ())

    def to_dict(self) -> dict[str, Any]:
        return {"turn_id": self.turn_id, "conversation_id": self.conversation_id, "expert_id": self.expert_id,
                "rating": self.rating, "comment": self.comment, "query": self.query, "retrieval": self.retrieval,
                "revisions": self.revisions, "created_at": self.created_at, "updated_at": self.updated_at}


@dataclass(frozen=True)
class FeedbackSummary:
    """Counts per expert: what an A/B test or a dashboard reads."""

    expert_id: str | None
    up: int
    down: int
    with_comment: int

    @property
    def total(self) -> int:
        return self.up + self.down

    def to_dict(self) -> dict[str, Any]:
        rate = round(self.up / self.total, 4) if self.total else None
        return {"expert_id": self.expert_id, "up": self.up, "down": self.down, "total": self.total,
                "with_comment": self.with_comment, "positive_rate": rate}


def parse_rating(value: Any) -> int:
    """'up' / 'down' (or +1 / -1, thumbs_up / thumbs_down) as +1 / -1."""
    key = str(value).strip().lower() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    if key not in RATINGS:
        raise InvalidArgument(f"rating must be 'up' or 'down', not {value!r}")
    return RATINGS[key]


def turn_id_of(value: Any) -> str:
    """A turn id, also when given as a ``/v1`` completion id (``chatcmpl-turn_...``)."""
    text = value.strip() if isinstance(value, str) else ""
    text = text.removeprefix("chatcmpl-")
    if not TURN_RE.fullmatch(text):
        raise InvalidArgument(f"{value!r} is not a turn id: use the turn_id a chat reported (turn_ + hex), "
                              "or the id of a /v1 chat completion")
    return text


class FeedbackService:
    """Votes in ``workspace.db`` (migration ``005_feedback``) or PostgreSQL, beside the conversations they judge."""

    def __init__(self, workspace: Workspace) -> None:
        self.conn: Any = workspace.shared  # workspace.db or PostgreSQL
        self._lock = threading.RLock()

    def give(self, turn_id: str, rating: Any, comment: str | None = None) -> Feedback:
        """Record (or replace) the vote on a turn; raises TurnNotFound, InvalidArgument or RateLimited."""
        tid, value = turn_id_of(turn_id), parse_rating(rating)
        text = self._comment(comment)
        turn = self._turn(tid)
        with write_transaction(self.conn, self._lock) as conn:
            previous = conn.execute("SELECT revisions FROM feedback WHERE turn_id = ?", (tid,)).fetchone()
            self._check_rate(conn, turn["conversation_id"], previous)
            stamp = now_iso()
            conn.execute(
                "INSERT INTO feedback (turn_id, conversation_id, expert_id, rating, comment, query, retrieval, "
                "revisions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?) "
                "ON CONFLICT(turn_id) DO UPDATE SET rating = excluded.rating, comment = excluded.comment, "
                "revisions = feedback.revisions + 1, updated_at = excluded.updated_at",
                (tid, turn["conversation_id"], turn["expert_id"], value, text, turn["query"],
                 json.dumps(turn["retrieval"], ensure_ascii=False), stamp, stamp))
        return self.get(tid)

    def get(self, turn_id: str) -> Feedback:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM feedback WHERE turn_id = ?", (turn_id_of(turn_id),)).fetchone()
        if row is None:
            raise TurnNotFound(f"turn '{turn_id}' has no feedback yet")
        return _feedback(row)

    def list(self, expert_id: str | None = None, rating: Any = None, limit: int = 100) -> list[Feedback]:
        """Newest first, optionally of one expert and one rating."""
        sql, args = f"SELECT {_COLUMNS} FROM feedback WHERE 1 = 1", []
        if expert_id:
            sql, args = sql + " AND expert_id = ?", [*args, expert_id]
        if rating is not None:
            sql, args = sql + " AND rating = ?", [*args, parse_rating(rating)]
        rows = self.conn.execute(sql + " ORDER BY updated_at DESC, turn_id LIMIT ?", (*args, max(1, min(limit, 10_000))))
        return [_feedback(r) for r in rows]

    def summary(self, expert_id: str | None = None) -> FeedbackSummary:
        sql = ("SELECT count(*) FILTER (WHERE rating = 1), count(*) FILTER (WHERE rating = -1), "
               "count(*) FILTER (WHERE comment != '') FROM feedback")
        row = self.conn.execute(sql + (" WHERE expert_id = ?" if expert_id else ""),
                                (expert_id,) if expert_id else ()).fetchone()
        return FeedbackSummary(expert_id, int(row[0]), int(row[1]), int(row[2]))

    # -- helpers ---------------------------------------------------------------------------------------
    @staticmethod
    def _comment(comment: str | None) -> str:
        if comment is None:
            return ""
        if not isinstance(comment, str):
            raise InvalidArgument("comment must be text")
        if len(comment) > MAX_COMMENT_CHARS:
            raise InvalidArgument(f"comment is {len(comment):,} characters; the limit is {MAX_COMMENT_CHARS:,}")
        return redact_secrets(comment.strip())  # a key pasted into a comment is not kept either

    def _turn(self, tid: str) -> dict[str, Any]:
        rows = self.conn.execute(
            "SELECT m.role, m.content, m.metadata, m.conversation_id, c.expert_id FROM messages m "
            "JOIN conversations c ON c.id = m.conversation_id WHERE m.turn_id = ? ORDER BY m.id", (tid,)).fetchall()
        answer = next((r for r in rows if r[0] == "assistant"), None)
        if answer is None:
            raise TurnNotFound(f"no conversation holds turn '{tid}' (it was never saved, or its conversation "
                               "was deleted); use the turn_id a chat reported")
        meta = json.loads(answer[2] or "{}")
        query = next((r[1] for r in rows if r[0] == "user"), "")
        return {"conversation_id": answer[3], "expert_id": answer[4], "query": query,
                "retrieval": {k: meta[k] for k in SNAPSHOT_KEYS if k in meta}}

    @staticmethod
    def _check_rate(conn: Any, conversation_id: str, previous: tuple[int] | None) -> None:
        if previous is not None and previous[0] >= MAX_REVISIONS:
            raise RateLimited(f"this turn's vote was changed {previous[0]} times; it cannot be changed again")
        since = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # now_iso's format
        recent = conn.execute("SELECT count(*) FROM feedback WHERE conversation_id = ? AND updated_at > ?",
                              (conversation_id, since)).fetchone()[0]
        if recent >= PER_CONVERSATION_PER_MINUTE:
            err = RateLimited(f"{recent} votes in this conversation in the last minute (the limit is "
                              f"{PER_CONVERSATION_PER_MINUTE}); try again in a minute")
            err.retry_after = 60  # type: ignore[attr-defined]
            raise err


_COLUMNS = ("turn_id, conversation_id, expert_id, rating, comment, query, retrieval, revisions, created_at, "
            "updated_at")


def _feedback(row: tuple[Any, ...]) -> Feedback:
    return Feedback(row[0], row[1], row[2], "up" if row[3] == 1 else "down", row[4], row[5], json.loads(row[6]),
                    int(row[7]), row[8], row[9])
