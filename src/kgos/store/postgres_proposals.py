"""The review queue of a PostgreSQL KG: ``ProposalStore`` (kgos.store.proposals) over the KG schema's
``kg_predictions`` table (KG migration 003).

The queue lives beside the graph, so a promotion writes the edge/node and the queue row in one
transaction of the store. Decisions lock their rows (``FOR UPDATE``): two reviewers on two servers
deciding one proposal are served in turn, and the second gets ``ProposalConflict``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ProposalConflict, ProposalNotFound
from .migrations import now_iso
from .postgres import PostgresStore
from .proposals import (
    _COLS,
    STATUSES,
    Proposal,
    ProposalDraft,
    ProposalFilter,
    Promotion,
    ProposalStore,
    ProposeReport,
    _json,
    _merged_scores,
    _row,
    all_pending,
)

Proposals = list[Proposal]
COLS = _COLS.replace("scores,", "scores::text,").replace("evidence,", "evidence::text,").replace(
    "payload,", "payload::text,")


class PgProposalStore(ProposalStore):
    def __init__(self, graph: PostgresStore) -> None:
        self.graph = graph

    def _rows(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        return self.graph._rows(sql, args)

    def _fetch(self, proposal_id: int, lock: bool = False) -> Proposal:
        rows = self._rows(f"SELECT {COLS} FROM {{s}}.kg_predictions WHERE prediction_id = %s"
                          + (" FOR UPDATE" if lock else ""), (int(proposal_id),))
        if not rows:
            raise ProposalNotFound(f"no proposal {proposal_id} in the review queue of KG '{self.graph.db_id}'")
        return _row(rows[0])

    # -- reads -------------------------------------------------------------------------------------
    def get(self, proposal_id: int) -> Proposal:
        return self._fetch(proposal_id)

    def list(self, where: ProposalFilter, limit: int = 50, offset: int = 0) -> tuple[int, Proposals]:
        if where.ids is not None and not where.ids:
            return 0, []
        sql, args = where.where()
        sql = sql.replace("?", "%s")  # the filter's own placeholders; columns are fixed names
        total = self._rows(f"SELECT count(*) FROM {{s}}.kg_predictions{sql}", args)[0][0]
        rows = self._rows(f"SELECT {COLS} FROM {{s}}.kg_predictions{sql} ORDER BY coalesce(combined_confidence, "
                          "score) * greatest(coalesce((scores->>'priority')::float8, 1.0), 0.0) DESC, "
                          "prediction_id LIMIT %s OFFSET %s", (*args, int(limit), int(offset)))
        return int(total), [_row(r) for r in rows]

    def counts(self) -> dict[str, int]:
        found = dict(self._rows("SELECT status, count(*) FROM {s}.kg_predictions GROUP BY status"))
        return {s: int(found.get(s, 0)) for s in STATUSES}

    def decided_edges(self, status: str) -> set[tuple[str, str, str]]:
        return {(r[0], r[1], r[2]) for r in self._rows(
            "SELECT source_node_id, target_node_id, predicted_relation FROM {s}.kg_predictions "
            "WHERE kind = 'edge' AND status = %s", (status,))}

    # -- writes ------------------------------------------------------------------------------------
    def add(self, drafts: Sequence[ProposalDraft]) -> ProposeReport:
        added, merged, rejected, accepted = [], [], 0, 0
        with self.graph.transaction(bump=False):
            for d in drafts:
                old = self._rows("SELECT prediction_id, status, scores::text, evidence::text, score FROM "
                                 "{s}.kg_predictions WHERE kind = %s AND source_node_id = %s AND target_node_id = %s "
                                 "AND predicted_relation = %s FOR UPDATE", d.key)
                if not old:
                    added.append(self._insert(d))
                elif old[0][1] == "rejected":
                    rejected += 1
                elif old[0][1] == "accepted":
                    accepted += 1
                else:
                    self._merge(old[0], d)
                    merged.append(int(old[0][0]))
        return ProposeReport(tuple(added), tuple(merged), rejected, accepted)

    def _insert(self, d: ProposalDraft) -> int:
        return int(self._rows(
            "INSERT INTO {s}.kg_predictions (kind, source_node_id, target_node_id, predicted_relation, predictor, "
            "score, scores, evidence, payload, combined_confidence, created_at) VALUES "
            "(%s,%s,%s,%s,%s,%s,%s::jsonb,%s::jsonb,%s::jsonb,%s,%s) RETURNING prediction_id",
            (*d.key, d.origin, d.score, _json(d.scores, "scores"), _json(d.evidence, "evidence"),
             _json(d.payload, "payload"), d.score, now_iso()))[0][0])

    def _merge(self, old: tuple[Any, ...], d: ProposalDraft) -> None:
        """A pending duplicate keeps the better score and gathers every source's scores and evidence."""
        from .base import load_json_object
        scores = _merged_scores(load_json_object(old[2], "scores"), d.scores)
        evidence = {**load_json_object(old[3], "evidence"), **d.evidence}
        self._rows("UPDATE {s}.kg_predictions SET score = GREATEST(score, %s), scores = %s::jsonb, "
                   "evidence = %s::jsonb, combined_confidence = GREATEST(coalesce(combined_confidence, score), %s) "
                   "WHERE prediction_id = %s RETURNING 1",
                   (d.score, _json(scores, "scores"), _json(evidence, "evidence"), d.score, old[0]))

    def set_verdict(self, proposal_id: int, verdict: bool | None, reasoning: str | None, model: str | None,
                    confidence: float | None) -> Proposal:
        with self.graph.transaction(bump=False):
            self._fetch(proposal_id, lock=True)
            self._rows("UPDATE {s}.kg_predictions SET llm_validated = %s, llm_reasoning = %s, llm_model = %s, "
                       "combined_confidence = coalesce(%s, combined_confidence) WHERE prediction_id = %s RETURNING 1",
                       (verdict, reasoning, model, confidence, int(proposal_id)))
        return self.get(proposal_id)

    def _pending(self, ids: Sequence[int]) -> Proposals:
        """The proposals, locked and each still pending (a second reviewer waits, then conflicts)."""
        return all_pending([self._fetch(i, lock=True) for i in ids])

    def reject(self, ids: Sequence[int], reviewer: str | None, note: str | None) -> Proposals:
        with self.graph.transaction(bump=False):
            for p in self._pending(ids):
                self._rows("UPDATE {s}.kg_predictions SET status = 'rejected', reviewer = %s, note = %s, "
                           "reviewed_at = %s WHERE prediction_id = %s RETURNING 1", (reviewer, note, now_iso(), p.id))
        return [self.get(i) for i in ids]

    def promote(self, ids: Sequence[int], reviewer: str | None, note: str | None) -> Proposals:
        self.graph.require_writable()
        with self.graph.writing() as w:  # the node/edge triggers bump the version
            for p in self._pending(ids):
                created = Promotion(w).write(p)
                ts = now_iso()
                self._rows("UPDATE {s}.kg_predictions SET status = 'accepted', reviewer = %s, note = %s, "
                           "reviewed_at = %s, promoted_at = %s, promoted_rowid = %s WHERE prediction_id = %s "
                           "RETURNING 1", (reviewer, note, ts, ts if created is not None else None, created, p.id))
        return [self.get(i) for i in ids]

    def undo(self, proposal_id: int) -> Proposal:
        with self.graph.transaction(bump=False):
            p = self._fetch(proposal_id, lock=True)
            if p.status == "pending":
                raise ProposalConflict(f"proposal {p.id} is pending: there is no review to undo")
            if p.status == "accepted" and p.promoted:
                self.graph.require_writable()
                with self.graph.writing() as w:
                    Promotion(w).remove(p)
            self._rows("UPDATE {s}.kg_predictions SET status = 'pending', reviewer = NULL, note = NULL, "
                       "reviewed_at = NULL, promoted_at = NULL, promoted_rowid = NULL WHERE prediction_id = %s "
                       "RETURNING 1", (p.id,))
        return self.get(proposal_id)
