"""The log of expert turns that learning from use reads (gap detection, dimension drift): each turn's
question, answer, retrieval metadata and vote, newest first, from the workspace's conversations."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..memory.pii import redact_secrets

if TYPE_CHECKING:
    from ..kg import Workspace
    from .config import ExpertConfig

MAX_TURNS = 5_000


@dataclass(frozen=True)
class LoggedTurn:
    """One question and its answer. ``query`` is redacted of secrets; ``rating`` is +1, -1 or None."""

    turn_id: str
    expert_id: str
    conversation_id: str
    query: str
    answer: str
    metadata: dict[str, Any]
    rating: int | None
    comment: str
    created_at: str

    def covers(self, db_id: str) -> bool:
        """Did the turn search this KG?"""
        return db_id in (self.metadata.get("kg_db_ids") or [self.metadata.get("kg_db_id")])

    @property
    def cited(self) -> frozenset[str]:
        """``db:id`` keys of the nodes the answer cited."""
        citations = self.metadata.get("citations")
        return frozenset(citations.get("valid") or ()) if isinstance(citations, dict) else frozenset()


def turns(ws: Workspace, db_id: str | None = None, since: str | None = None,
          limit: int = MAX_TURNS) -> list[LoggedTurn]:
    """The newest ``limit`` turns (of the KG ``db_id`` if given; at or after ISO time ``since``)."""
    rows = ws.shared.execute(  # workspace.db or PostgreSQL
        "SELECT a.turn_id, c.expert_id, c.id, u.content, a.content, a.metadata, f.rating, f.comment, a.created_at "
        "FROM messages a JOIN conversations c ON c.id = a.conversation_id "
        "JOIN messages u ON u.turn_id = a.turn_id AND u.role = 'user' "
        "LEFT JOIN feedback f ON f.turn_id = a.turn_id "
        "WHERE a.role = 'assistant' AND a.turn_id IS NOT NULL AND a.created_at >= ? ORDER BY a.id DESC LIMIT ?",
        (since or "", limit))
    out = [LoggedTurn(tid, expert, conv, redact_secrets(query), answer, json_object(meta), rating, comment or "", at)
           for tid, expert, conv, query, answer, meta, rating, comment, at in rows]
    return [t for t in out if db_id is None or t.covers(db_id)]


def expert_configs(ws: Workspace) -> dict[str, ExpertConfig]:
    """Every stored expert's config that this version can read (a newer one's is skipped)."""
    from .config import ExpertConfig
    out = {}
    for eid, config in ws.shared.execute("SELECT id, config FROM experts"):
        try:
            out[eid] = ExpertConfig.model_validate_json(config)
        except ValueError:
            continue
    return out


def json_object(text: str | None) -> dict[str, Any]:
    """A stored JSON object column read leniently: ``{}`` for NULL, bad JSON or a non-object (a turn's
    metadata is advisory; one bad row must not hide the others)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
