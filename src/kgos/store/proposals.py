"""The review queue of proposed knowledge (DESIGN.md section 4, "Proposals"; spec/003 ``kg_predictions``).

A proposal is an edge (or a node) plus the source that proposed it, its scores and its evidence.
It is ``pending`` until a reviewer accepts it (it is then promoted into the KG with the properties
``{"source", "confidence", "prediction_id"}``) or rejects it (remembered: the same edge is never
proposed again). Undo of an acceptance removes exactly what the promotion created, and only that.

``ProposalStore`` is the interface a store backend implements (SQLite here: the queue lives in the
native KG file, or in a sidecar file for attached KGs; a PostgreSQL store implements the same
methods). ``ProposalQueue`` adds input checks on top and is what ``kg.proposals`` returns.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument, ProposalConflict, ProposalNotFound, ProposalStale
from .base import GraphStore, load_json_object
from .limits import check_properties
from .migrations import M003_KG_PREDICTIONS, apply, now_iso
from .writing import Writer

STATUSES = ("pending", "accepted", "rejected")
KINDS = ("edge", "node")
PROVENANCE_KEYS = ("source", "confidence", "prediction_id")
MAX_BATCH = 10_000
# The queue's default order: expected value of a review = confidence x the source's priority (a number
# in scores, e.g. link prediction's novelty and centrality, kgos.linkpred.triage); 1 when it gives none.
VALUE_ORDER = "coalesce(combined_confidence, score) * max(coalesce(json_extract(scores, '$.priority'), 1.0), 0.0)"

# The native migration 003, also run on the sidecar queue of attached KGs.
PREDICTIONS_SCHEMA = M003_KG_PREDICTIONS
SIDECAR_MIGRATIONS = [("001_kg_predictions", PREDICTIONS_SCHEMA)]
_COLS = ("prediction_id, kind, source_node_id, target_node_id, predicted_relation, predictor, score, scores, "
         "evidence, payload, llm_validated, llm_reasoning, llm_model, combined_confidence, status, reviewer, "
         "note, created_at, reviewed_at, promoted_at, promoted_rowid")


@dataclass(frozen=True)
class ProposalDraft:
    """What a source proposes: an edge ``source -[type]-> target``, or (``kind="node"``) a node with
    id ``source`` and type ``type`` whose name/description/properties are in ``payload``."""

    source: str
    target: str
    type: str
    origin: str
    score: float = 0.0
    scores: Mapping[str, float] = field(default_factory=dict)
    evidence: Mapping[str, Any] = field(default_factory=dict)
    payload: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "edge"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.source, self.target, self.type)


@dataclass(frozen=True)
class Proposal:
    """One row of the review queue. ``confidence`` is the combined confidence (the score, or the
    score blended with the LLM verdict); ``promoted`` says whether acceptance created the edge/node
    (False when it existed already: undo then leaves it alone)."""

    id: int
    kind: str
    source: str
    target: str
    type: str
    origin: str
    score: float
    scores: dict[str, Any]
    evidence: dict[str, Any]
    payload: dict[str, Any]
    llm_verdict: bool | None
    llm_reasoning: str | None
    llm_model: str | None
    confidence: float | None
    status: str
    reviewer: str | None
    note: str | None
    created_at: str
    reviewed_at: str | None
    promoted_at: str | None
    promoted: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Proposals = list[Proposal]  # (a class defining a ``list`` method cannot write ``list[...]`` in its body)


@dataclass(frozen=True)
class ProposeReport:
    """Outcome of adding drafts: new ids, pending ones whose scores were merged, and those skipped
    because a reviewer already decided them (rejections are never re-proposed)."""

    added: tuple[int, ...]
    merged: tuple[int, ...]
    skipped_rejected: int
    skipped_accepted: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProposalFilter:
    """Which proposals a list or a batch review covers (all given conditions must hold)."""

    status: str | None = None
    origin: str | None = None
    type: str | None = None
    node: str | None = None  # the proposal touches this node (either end)
    min_confidence: float | None = None
    ids: tuple[int, ...] | None = None

    def where(self) -> tuple[str, list[Any]]:
        parts: list[str] = []
        args: list[Any] = []
        for column, value in (("status", self.status), ("predictor", self.origin),
                              ("predicted_relation", self.type)):
            if value is not None:
                parts.append(f"{column} = ?")
                args.append(value)
        if self.node is not None:
            parts.append("(source_node_id = ? OR target_node_id = ?)")
            args += [self.node, self.node]
        if self.min_confidence is not None:
            parts.append("coalesce(combined_confidence, score) >= ?")
            args.append(float(self.min_confidence))
        if self.ids is not None:
            parts.append(f"prediction_id IN ({','.join('?' * len(self.ids))})" if self.ids else "0")
            args.extend(self.ids)
        return (" WHERE " + " AND ".join(parts)) if parts else "", args


class ProposalStore(ABC):
    """Storage of one KG's review queue. Implementations make each method one transaction; a
    promotion writes the graph and the queue row together, or neither."""

    @abstractmethod
    def add(self, drafts: Sequence[ProposalDraft]) -> ProposeReport:
        """Insert new drafts; merge scores/evidence into pending duplicates; skip decided ones."""

    @abstractmethod
    def get(self, proposal_id: int) -> Proposal:
        """The proposal (``ProposalNotFound`` otherwise)."""

    @abstractmethod
    def list(self, where: ProposalFilter, limit: int = 50, offset: int = 0) -> tuple[int, Proposals]:
        """(how many match, one page ordered by expected value (``VALUE_ORDER``) then id)."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """Number of proposals per status (every status present, 0 when none)."""

    @abstractmethod
    def decided_edges(self, status: str) -> set[tuple[str, str, str]]:
        """(source, target, type) of the edge proposals with this status (predictors skip rejections)."""

    @abstractmethod
    def set_verdict(self, proposal_id: int, verdict: bool | None, reasoning: str | None, model: str | None,
                    confidence: float | None) -> Proposal:
        """Store an LLM verdict and the combined confidence."""

    @abstractmethod
    def reject(self, ids: Sequence[int], reviewer: str | None, note: str | None) -> Proposals:
        """Mark pending proposals rejected (``ProposalConflict`` if one is decided already)."""

    @abstractmethod
    def promote(self, ids: Sequence[int], reviewer: str | None, note: str | None) -> Proposals:
        """Accept pending proposals and write their edges/nodes into the KG, all or none."""

    @abstractmethod
    def undo(self, proposal_id: int) -> Proposal:
        """Back to pending; an accepted one's promoted edge/node is deleted first."""


def _json(value: Mapping[str, Any], what: str) -> str:
    return check_properties(dict(value), what)


def _row(r: tuple[Any, ...]) -> Proposal:
    return Proposal(id=r[0], kind=r[1], source=r[2], target=r[3], type=r[4], origin=r[5], score=r[6],
                    scores=load_json_object(r[7], "scores"), evidence=load_json_object(r[8], "evidence"),
                    payload=load_json_object(r[9], "payload"),
                    llm_verdict=None if r[10] is None else bool(r[10]), llm_reasoning=r[11], llm_model=r[12],
                    confidence=r[13], status=r[14], reviewer=r[15], note=r[16], created_at=r[17],
                    reviewed_at=r[18], promoted_at=r[19], promoted=r[20] is not None)


def _merged_scores(old: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    return {**old, **{k: v for k, v in new.items() if k not in old or (v or 0) > (old[k] or 0)}}


class SQLiteProposalStore(ProposalStore):
    """The queue in a SQLite file. ``graph`` is the KG the promotions write to. When the queue lives
    in the KG file itself (``same_file``), a promotion is one transaction over graph and queue."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock, graph: GraphStore,
                 same_file: bool) -> None:
        self.conn, self._lock, self.graph, self.same_file = conn, lock, graph, same_file

    @classmethod
    def sidecar(cls, path: Path, graph: GraphStore) -> SQLiteProposalStore:
        """A queue file of its own (attached KGs: KG-OS never adds tables to a foreign file)."""
        from .native import connect
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = connect(path)
        apply(conn, SIDECAR_MIGRATIONS)
        return cls(conn, threading.RLock(), graph, same_file=False)

    @contextmanager
    def _tx(self, bump: bool = False) -> Iterator[sqlite3.Connection]:
        if self.same_file:  # the native store's transaction (it bumps the KG version when the graph changes)
            with self.graph.transaction(bump=bump) as conn:  # type: ignore[attr-defined]
                yield conn
            return
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def _fetch(self, proposal_id: int) -> Proposal:
        row = self.conn.execute(f"SELECT {_COLS} FROM kg_predictions WHERE prediction_id = ?",
                                (int(proposal_id),)).fetchone()
        if row is None:
            raise ProposalNotFound(f"no proposal {proposal_id} in the review queue of KG '{self.graph.db_id}'")
        return _row(row)

    # -- reads -------------------------------------------------------------------------------------
    def get(self, proposal_id: int) -> Proposal:
        with self._lock:
            return self._fetch(proposal_id)

    def list(self, where: ProposalFilter, limit: int = 50, offset: int = 0) -> tuple[int, Proposals]:
        sql, args = where.where()
        with self._lock:
            total = self.conn.execute(f"SELECT count(*) FROM kg_predictions{sql}", args).fetchone()[0]
            rows = self.conn.execute(
                f"SELECT {_COLS} FROM kg_predictions{sql} ORDER BY {VALUE_ORDER} DESC, prediction_id LIMIT ? OFFSET ?", (*args, int(limit), int(offset))).fetchall()
        return total, [_row(r) for r in rows]

    def counts(self) -> dict[str, int]:
        with self._lock:
            found = dict(self.conn.execute("SELECT status, count(*) FROM kg_predictions GROUP BY status"))
        return {s: int(found.get(s, 0)) for s in STATUSES}

    def decided_edges(self, status: str) -> set[tuple[str, str, str]]:
        with self._lock:
            return {tuple(r) for r in self.conn.execute(  # type: ignore[misc]
                "SELECT source_node_id, target_node_id, predicted_relation FROM kg_predictions "
                "WHERE kind = 'edge' AND status = ?", (status,))}

    # -- writes ------------------------------------------------------------------------------------
    def add(self, drafts: Sequence[ProposalDraft]) -> ProposeReport:
        added, merged, rejected, accepted = [], [], 0, 0
        with self._tx() as conn:
            for d in drafts:
                old = conn.execute(
                    "SELECT prediction_id, status, scores, evidence, score FROM kg_predictions WHERE kind = ? "
                    "AND source_node_id = ? AND target_node_id = ? AND predicted_relation = ?", d.key).fetchone()
                if old is None:
                    cur = conn.execute(
                        "INSERT INTO kg_predictions (kind, source_node_id, target_node_id, predicted_relation, "
                        "predictor, score, scores, evidence, payload, combined_confidence, created_at) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        (*d.key, d.origin, d.score, _json(d.scores, "scores"), _json(d.evidence, "evidence"),
                         _json(d.payload, "payload"), d.score, now_iso()))
                    added.append(int(cur.lastrowid))  # type: ignore[arg-type]
                elif old[1] == "rejected":
                    rejected += 1
                elif old[1] == "accepted":
                    accepted += 1
                else:
                    self._merge(conn, old, d)
                    merged.append(int(old[0]))
        return ProposeReport(tuple(added), tuple(merged), rejected, accepted)

    @staticmethod
    def _merge(conn: sqlite3.Connection, old: tuple[Any, ...], d: ProposalDraft) -> None:
        """A pending duplicate keeps the better score and gathers every source's scores and evidence."""
        scores = _merged_scores(load_json_object(old[2], "scores"), d.scores)
        evidence = {**load_json_object(old[3], "evidence"), **d.evidence}
        conn.execute("UPDATE kg_predictions SET score = max(score, ?), scores = ?, evidence = ?, "
                     "combined_confidence = max(coalesce(combined_confidence, score), ?) WHERE prediction_id = ?",
                     (d.score, _json(scores, "scores"), _json(evidence, "evidence"), d.score, old[0]))

    def set_verdict(self, proposal_id: int, verdict: bool | None, reasoning: str | None, model: str | None,
                    confidence: float | None) -> Proposal:
        with self._tx() as conn:
            self._fetch(proposal_id)
            conn.execute("UPDATE kg_predictions SET llm_validated = ?, llm_reasoning = ?, llm_model = ?, "
                         "combined_confidence = coalesce(?, combined_confidence) WHERE prediction_id = ?",
                         (None if verdict is None else int(verdict), reasoning, model, confidence, int(proposal_id)))
        return self.get(proposal_id)

    def _pending(self, ids: Sequence[int]) -> Proposals:
        """The proposals, each still pending (checked inside the write lock: two reviewers cannot both
        decide one proposal)."""
        return all_pending([self._fetch(i) for i in ids])

    def reject(self, ids: Sequence[int], reviewer: str | None, note: str | None) -> Proposals:
        with self._tx() as conn:
            for p in self._pending(ids):
                conn.execute("UPDATE kg_predictions SET status = 'rejected', reviewer = ?, note = ?, reviewed_at = ? "
                             "WHERE prediction_id = ?", (reviewer, note, now_iso(), p.id))
        return [self.get(i) for i in ids]

    def promote(self, ids: Sequence[int], reviewer: str | None, note: str | None) -> Proposals:
        self.graph.require_writable()
        if self.same_file:  # graph and queue in one file: one unit of work over both
            with self.graph.writing() as w, self._tx(bump=True) as conn:
                for p in self._pending(ids):
                    self._mark_accepted(conn, p.id, Promotion(w).write(p), reviewer, note)
            return [self.get(i) for i in ids]
        return [self._promote_apart(i, reviewer, note) for i in ids]

    def _promote_apart(self, proposal_id: int, reviewer: str | None, note: str | None) -> Proposal:
        """Graph and queue in different files: the graph's unit of work commits only once the queue's
        row is written (a failure there takes the graph write back); a failure committing the queue
        after it is undone by hand."""
        with self._tx() as conn:
            (p,) = self._pending([proposal_id])
            with self.graph.writing() as w:
                created = Promotion(w).write(p)
                self._mark_accepted(conn, p.id, created, reviewer, note)
        return self.get(proposal_id)

    @staticmethod
    def _mark_accepted(conn: sqlite3.Connection, pid: int, created: int | None, reviewer: str | None,
                       note: str | None) -> None:
        ts = now_iso()
        conn.execute("UPDATE kg_predictions SET status = 'accepted', reviewer = ?, note = ?, reviewed_at = ?, "
                     "promoted_at = ?, promoted_rowid = ? WHERE prediction_id = ?",
                     (reviewer, note, ts, ts if created is not None else None, created, pid))

    def undo(self, proposal_id: int) -> Proposal:
        p = self.get(proposal_id)
        if p.status == "pending":
            raise ProposalConflict(f"proposal {p.id} is pending: there is no review to undo")
        if p.status == "accepted" and p.promoted:
            self.graph.require_writable()
        if self.same_file:
            with self._tx(bump=p.promoted) as conn:
                p = self._fetch(proposal_id)  # again, under the write lock
                if p.status == "accepted" and p.promoted:
                    with self.graph.writing() as w:
                        Promotion(w).remove(p)
                self._mark_pending(conn, p.id)
        else:
            with self._tx() as conn:
                p = self._fetch(proposal_id)
                if p.status == "accepted" and p.promoted:
                    with self.graph.writing() as w:
                        Promotion(w).remove(p)
                self._mark_pending(conn, p.id)
        return self.get(proposal_id)

    @staticmethod
    def _mark_pending(conn: sqlite3.Connection, pid: int) -> None:
        conn.execute("UPDATE kg_predictions SET status = 'pending', reviewer = NULL, note = NULL, reviewed_at = NULL, "
                     "promoted_at = NULL, promoted_rowid = NULL WHERE prediction_id = ?", (pid,))


def provenance(p: Proposal) -> dict[str, Any]:
    """The properties a promoted edge or node carries: who proposed it, how sure, which proposal."""
    confidence = p.confidence if p.confidence is not None else p.score
    return {"source": p.origin, "confidence": round(float(confidence), 6), "prediction_id": p.id}


def _edge_fields(p: Proposal) -> tuple[float, dict[str, Any]]:
    weight = p.payload.get("weight", 1.0)
    props = p.payload.get("properties") or {}
    return float(weight), {**props, **provenance(p)}


def all_pending(found: Proposals) -> Proposals:
    """``found``, each still pending, or ``ProposalConflict`` naming the first one already decided."""
    decided = [p for p in found if p.status != "pending"]
    if decided:
        p = decided[0]
        raise ProposalConflict(f"proposal {p.id} is already {p.status} (by {p.reviewer or 'someone'} at "
                               f"{p.reviewed_at}); undo it first to review it again")
    return found


def _stale(p: Proposal, missing: str) -> ProposalStale:
    return ProposalStale(f"proposal {p.id} cannot be accepted: node '{missing}' is no longer in the KG "
                         f"(deleted since it was proposed, or proposed with it and not accepted yet); accept "
                         f"that node first or reject this")


class Promotion:
    """A proposal written into the KG, or taken back, through the store's unit of work (every backend
    alike). Undo removes only what the acceptance created: the row must still carry the proposal's id."""

    def __init__(self, w: Writer) -> None:
        self.w = w

    def write(self, p: Proposal) -> int | None:
        """Write the edge/node: 1, or None when it existed already (then nothing changes)."""
        if p.kind == "node":
            if self.w.node(p.source) is not None:
                return None
            name, description, props = _node_fields(p)
            self.w.add_node(name, p.type, description, props, id=p.source)
            return 1
        for node_id in (p.source, p.target):
            if self.w.node(node_id) is None:
                raise _stale(p, node_id)
        if self.w.edge(p.source, p.target, p.type) is not None:
            return None
        weight, props = _edge_fields(p)
        self.w.add_edge(p.source, p.target, p.type, weight, props)
        return 1

    def remove(self, p: Proposal) -> None:
        if p.kind == "node":
            node = self.w.node(p.source)
            if node is None or node.properties.get("prediction_id") != p.id:
                return
            self._refuse_if_linked(p)
            self.w.delete_node(p.source)
            return
        edge = self.w.edge(p.source, p.target, p.type)
        if edge is not None and edge.properties.get("prediction_id") == p.id:
            self.w.delete_edge(p.source, p.target, p.type)

    def _refuse_if_linked(self, p: Proposal) -> None:
        linked = self.w.ops.degree(p.source)
        if linked:
            raise ProposalConflict(f"node '{p.source}' of proposal {p.id} has {linked} edge(s) now; delete "
                                   "them first (undo removes only what the acceptance created)")


def _node_fields(p: Proposal) -> tuple[str, str, dict[str, Any]]:
    name = str(p.payload.get("name") or p.source)
    description = str(p.payload.get("description") or "")
    return name, description, {**(p.payload.get("properties") or {}), **provenance(p)}


# -- the checked front ---------------------------------------------------------------------------------
def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{what} must be a non-empty string")
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidArgument(f"{what} must be a finite number, not {value!r}")
    return float(value)


def _ids(ids: Iterable[int]) -> list[int]:
    out = list(dict.fromkeys(ids))
    if not out:
        raise InvalidArgument("give at least one proposal id")
    if any(isinstance(i, bool) or not isinstance(i, int) for i in out):
        raise InvalidArgument("proposal ids are integers")
    return out


class ProposalQueue:
    """``kg.proposals``: propose edges or nodes from any source, list, accept, reject, undo.

    >>> import kgos, tempfile
    >>> kg = kgos.Workspace(tempfile.mkdtemp()).create("q")
    >>> a, b = kg.add_node("Bash", type="tool"), kg.add_node("Read", type="tool")
    >>> pid = kg.proposals.propose_edge(a.id, b.id, "complements", origin="research", score=0.8).added[0]
    >>> kg.proposals.accept(pid).status, kg.store.get_edge(a.id, b.id, "complements").properties["source"]
    ('accepted', 'research')
    >>> kg.proposals.undo(pid).status, kg.store.get_edge(a.id, b.id, "complements")
    ('pending', None)
    """

    def __init__(self, store: ProposalStore, graph: GraphStore) -> None:
        self.store, self.graph = store, graph

    def propose(self, drafts: Iterable[ProposalDraft]) -> ProposeReport:
        """Stage drafts (checked) in one transaction."""
        drafts = list(drafts)
        proposed = {d.source for d in drafts if d.kind == "node"}  # an edge may point at a node proposed with it
        checked = [self._check(d, proposed) for d in drafts]
        return self.store.add(checked)

    def propose_edge(self, source: str, target: str, type: str, origin: str = "manual", score: float = 0.0,
                     scores: Mapping[str, float] | None = None, evidence: Mapping[str, Any] | None = None,
                     weight: float = 1.0, properties: Mapping[str, Any] | None = None) -> ProposeReport:
        """Stage one edge for review (both nodes must exist now; acceptance checks again)."""
        payload = {"weight": weight, **({"properties": dict(properties)} if properties else {})}
        return self.propose([ProposalDraft(source, target, type, origin, score, dict(scores or {}),
                                           dict(evidence or {}), payload)])

    def propose_node(self, id: str, name: str, type: str = "entity", origin: str = "manual", score: float = 0.0,
                     description: str = "", properties: Mapping[str, Any] | None = None,
                     scores: Mapping[str, float] | None = None,
                     evidence: Mapping[str, Any] | None = None) -> ProposeReport:
        """Stage one new node for review."""
        payload = {"name": name, "description": description, "properties": dict(properties or {})}
        return self.propose([ProposalDraft(id, "", type, origin, score, dict(scores or {}), dict(evidence or {}),
                                           payload, kind="node")])

    def _check(self, d: ProposalDraft, proposed: frozenset[str] | set[str] = frozenset()) -> ProposalDraft:
        if d.kind not in KINDS:
            raise InvalidArgument(f"kind must be one of {', '.join(KINDS)}, not {d.kind!r}")
        _text(d.source, "source"), _text(d.type, "type"), _text(d.origin, "origin")
        _number(d.score, "score")
        for name, value in d.scores.items():
            _number(value, f"scores[{name!r}]")
        if d.kind == "edge":
            _text(d.target, "target")
            if d.source == d.target:
                raise InvalidArgument("an edge proposal needs two different nodes")
            missing = [n for n in (d.source, d.target) if n not in proposed and self.graph.get_node(n) is None]
            if missing:
                raise self.graph.not_found(missing[0])
            _number(d.payload.get("weight", 1.0), "weight")
        else:
            _text(d.payload.get("name"), "name")
        return ProposalDraft(d.source, d.target if d.kind == "edge" else "", d.type, d.origin, float(d.score),
                             dict(d.scores), dict(d.evidence), dict(d.payload), d.kind)

    def get(self, proposal_id: int) -> Proposal:
        return self.store.get(proposal_id)

    def list(self, status: str | None = "pending", origin: str | None = None, type: str | None = None,
             node: str | None = None, min_confidence: float | None = None, limit: int = 50,
             offset: int = 0) -> tuple[int, Proposals]:
        """(how many match, a page of them, highest expected value first: confidence x the source's
        ``priority`` score); ``status=None`` lists every status."""
        if status is not None and status not in STATUSES:
            raise InvalidArgument(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        if not 1 <= limit <= MAX_BATCH or offset < 0:
            raise InvalidArgument(f"limit must be in 1..{MAX_BATCH} and offset >= 0")
        return self.store.list(ProposalFilter(status, origin, type, node, min_confidence), limit, offset)

    def counts(self) -> dict[str, int]:
        return self.store.counts()

    def rejected_edges(self) -> set[tuple[str, str, str]]:
        return self.store.decided_edges("rejected")

    def pending_edges(self) -> set[tuple[str, str, str]]:
        """(source, target, type) of the edge proposals waiting for review (a source staging more can
        keep clear of contradicting them)."""
        return self.store.decided_edges("pending")

    def accept(self, proposal_id: int, reviewer: str | None = None, note: str | None = None) -> Proposal:
        """Promote one proposal into the KG (``ReadOnlyKG`` on a read-only KG: the queue stays as it was)."""
        return self.store.promote(_ids([proposal_id]), reviewer, note)[0]

    def reject(self, proposal_id: int, reviewer: str | None = None, note: str | None = None) -> Proposal:
        """Reject one proposal; the same edge is never proposed again (until an undo)."""
        return self.store.reject(_ids([proposal_id]), reviewer, note)[0]

    def accept_many(self, ids: Iterable[int], reviewer: str | None = None, note: str | None = None) -> Proposals:
        return self.store.promote(_ids(ids), reviewer, note)

    def reject_many(self, ids: Iterable[int], reviewer: str | None = None, note: str | None = None) -> Proposals:
        return self.store.reject(_ids(ids), reviewer, note)

    def review_where(self, decision: str, origin: str | None = None, type: str | None = None,
                     min_confidence: float | None = None, limit: int = 1000, reviewer: str | None = None,
                     note: str | None = None) -> Proposals:
        """Batch review by filter: accept or reject the pending proposals that match (all or none)."""
        if decision not in ("accept", "reject"):
            raise InvalidArgument(f"decision must be accept or reject, not {decision!r}")
        _, page = self.list("pending", origin, type, None, min_confidence, limit)
        if not page:
            return []
        ids = [p.id for p in page]
        return self.accept_many(ids, reviewer, note) if decision == "accept" else self.reject_many(ids, reviewer, note)

    def undo(self, proposal_id: int) -> Proposal:
        """Undo a review: an accepted proposal's edge (or node) is removed, only if the acceptance
        created it; the proposal is pending again."""
        return self.store.undo(proposal_id)

    def set_verdict(self, proposal_id: int, verdict: bool | None, reasoning: str | None = None,
                    model: str | None = None, confidence: float | None = None) -> Proposal:
        if confidence is not None:
            _number(confidence, "confidence")
        return self.store.set_verdict(proposal_id, verdict, reasoning, model, confidence)



def open_proposal_store(graph: GraphStore, sidecar: Path) -> ProposalStore:
    """The queue of ``graph``: a store that brings its own (``graph.proposal_store()``, e.g. PostgreSQL),
    the native KG file's ``kg_predictions`` table, or else a sidecar SQLite file at ``sidecar``."""
    own = graph.proposal_store()
    return own if own is not None else SQLiteProposalStore.sidecar(sidecar, graph)
