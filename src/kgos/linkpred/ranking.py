"""Ranking the candidate edges of one node on one training graph: scores, filters, relation typing.

``Ranker`` holds what the filters read of a graph (its known edges, the node types seen at each end
of each relation, the relations each node pair carries, the relation model), so the same code ranks
the KG's live graph (``link_predictor(kg)``) and a graph with edges withheld (calibration, evaluation).

Candidates are every node, scored in one vectorised pass per side, then filtered: existing edges, the
node itself, the relation's type constraints, rejected proposals. A relation-blind predictor's score
is the same under every relation, so its candidates are typed by the relation model: each node pair
keeps the relation (and direction) the model finds most probable, plus any other whose probability
is at least ``SECOND_RELATION`` and which the KG shows can co-occur with it. For every predictor, a
pair is never proposed under two mutually exclusive relations, nor under one exclusive with an edge
the pair already has (``relations.exclusive_relations``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from .base import Predictor
from .ensemble import Ensemble
from .protocol import KnownEdges
from .relations import RelationModel, exclusive_relations
from .triples import LinkGraph

SECOND_RELATION = 0.35  # a relation-blind pair gets a second relation only when the model is this sure of it
RejectedFn = Callable[[np.ndarray, np.ndarray, str], np.ndarray]


@dataclass(frozen=True)
class Block:
    """Scores of one side's queries: row i asks (ent[i], rels[i], ?) for "tail", (?, rels[i], ent[i]) for "head"."""

    side: str
    ent: np.ndarray
    rels: np.ndarray
    scores: np.ndarray
    raw: dict[str, np.ndarray]


@dataclass(frozen=True)
class Candidate:
    """One ranked candidate edge (codes into the graph's entities and relations)."""

    head: int
    relation: int
    tail: int
    score: float
    rank: int
    scores: dict[str, float]


def relation_blind(m: Predictor) -> bool:
    """True when ``m`` scores a node pair the same under every relation (an ensemble: all its voting members)."""
    if isinstance(m, Ensemble):
        return all(relation_blind(m.members[name]) for name in m.weights)
    return bool(getattr(m, "relation_blind", False))


class Ranker:
    def __init__(self, graph: LinkGraph, rejected: RejectedFn | None = None) -> None:
        self.graph = graph
        self.known = KnownEdges(graph.triples)
        self.ends_seen = {side: _type_table(graph, side) for side in ("tail", "head")}
        self._rejected = rejected
        self._relation_model: RelationModel | None = None
        self._pair_rels: dict[tuple[int, int], set[int]] | None = None
        self._exclusive: np.ndarray | None = None

    def exclusive(self) -> np.ndarray:
        if self._exclusive is None:
            self._exclusive = exclusive_relations(self.graph.triples)
        return self._exclusive

    def relation_model(self) -> RelationModel:
        if self._relation_model is None:
            self._relation_model = RelationModel.fit(self.graph)
        return self._relation_model

    @property
    def fitted_relation_model(self) -> RelationModel | None:
        """The relation model if it was fitted already (it is trained: a query must not wait for it)."""
        return self._relation_model

    def adopt_relation_model(self, model: RelationModel | None) -> None:
        """Use a relation model fitted elsewhere on the same graph (a worker process), if none is yet."""
        if self._relation_model is None:
            self._relation_model = model

    def pair_relations(self) -> dict[tuple[int, int], set[int]]:
        """Unordered node pair -> the relations of its existing edges."""
        if self._pair_rels is None:
            t = self.graph.triples
            out: dict[tuple[int, int], set[int]] = {}
            for h, r, tl in zip(t.head.tolist(), t.relation.tolist(), t.tail.tolist()):
                out.setdefault((min(h, tl), max(h, tl)), set()).add(r)
            self._pair_rels = out
        return self._pair_rels

    # -- scoring ------------------------------------------------------------------------------------
    def rank(self, m: Predictor, row: int, rels: np.ndarray, sides: tuple[str, ...], k: int) -> tuple[list[Candidate], int]:
        """The ``k`` best candidate edges of node ``row`` (and how many candidates were scored)."""
        blocks = [self.block(m, np.full(rels.size, row, np.int64), rels, side) for side in sides]
        if relation_blind(m):
            blocks = self._typed(blocks, row)
        scores = np.concatenate([b.scores for b in blocks])
        # a few spare candidates: the exclusivity filter below may drop some of the best
        pool = _top(scores, min(scores.size, 4 * k + 16))
        found = self._compatible(self._candidate(blocks, i, c) for i, c in pool)
        return [Candidate(c.head, c.relation, c.tail, c.score, rank, c.scores)
                for rank, c in enumerate(found[:k], 1)], int(np.isfinite(scores).sum())

    def block(self, m: Predictor, ent: np.ndarray, rels: np.ndarray, side: str) -> Block:
        """The (batch, n) scores of one side's queries, every filtered candidate at -inf."""
        if isinstance(m, Ensemble):
            raw = m.parts(ent, rels, side)
            scores = m.combine(raw)
        else:
            scores = m.score_tails(ent, rels) if side == "tail" else m.score_heads(ent, rels)
            raw = {m.name: scores}
        scores = np.array(scores, np.float64)
        blocked = self.known.mask(ent, rels, side)
        blocked[np.arange(ent.size), ent] = True
        blocked |= self._type_block(rels, side)
        if self._rejected is not None:
            blocked |= self._rejected(ent, rels, side)
        flat = scores.max(axis=1, keepdims=True) == scores.min(axis=1, keepdims=True)
        scores[blocked | flat] = -np.inf  # a constant row carries no signal: nothing to propose
        return Block(side, ent, rels, scores, raw)

    def _type_block(self, rels: np.ndarray, side: str) -> np.ndarray:
        """(batch, n) True where the candidate's node type never occurs at this end of the relation."""
        g = self.graph
        if g.node_types is None or len(g.type_names) < 2:
            return np.zeros((rels.size, g.n_entities), bool)
        return ~self.ends_seen[side][rels][:, g.node_types]

    def _typed(self, blocks: list[Block], row: int) -> list[Block]:
        """A relation-blind predictor's blocks with each candidate kept only under the relation(s)
        the relation model picks for the pair; ``relation_p`` added to the scores."""
        rm, n, nr = self.relation_model(), self.graph.n_entities, self.graph.triples.n_relations
        p = np.exp(rm.log_proba_from(row))  # (n, 2R): row -r-> c, c -r-> row
        probs = [np.where(np.isfinite(b.scores), p[:, b.rels + (0 if b.side == "tail" else nr)].T, 0.0) for b in blocks]
        stacked = np.concatenate(probs)
        rels = np.concatenate([b.rels for b in blocks])
        best = stacked.argmax(axis=0)
        cols = np.arange(n)
        keep = np.zeros_like(stacked, bool)
        keep[best, cols] = stacked[best, cols] > 0
        # second[i, c]: row i's relation is sure enough and compatible with candidate c's best relation
        second = (stacked >= SECOND_RELATION) & ~self.exclusive()[rels][:, rels[best]]
        keep |= second & (stacked > 0)
        out, start = [], 0
        for b, pb in zip(blocks, probs):
            k = keep[start:start + b.rels.size]
            start += b.rels.size
            out.append(Block(b.side, b.ent, b.rels, np.where(k, b.scores, -np.inf), {**b.raw, "relation_p": pb}))
        return out

    def _candidate(self, blocks: list[Block], i: int, cand: int) -> Candidate:
        for b in blocks:
            if i < b.ent.size:
                break
            i -= b.ent.size
        e, r = int(b.ent[i]), int(b.rels[i])
        h, t = (e, cand) if b.side == "tail" else (cand, e)
        member = {name: round(float(s[i, cand]), 6) for name, s in b.raw.items()}
        return Candidate(h, r, t, round(float(b.scores[i, cand]), 6), 0, member)

    def _compatible(self, ranked: Iterable[Candidate]) -> list[Candidate]:
        ranked = list(ranked)
        keep = self.compatible([(c.head, c.relation, c.tail) for c in ranked])
        return [c for c, ok in zip(ranked, keep) if ok]

    def compatible(self, ranked: Iterable[tuple[int, int, int]],
                   staged: Iterable[tuple[int, int, int]] = ()) -> list[bool]:
        """For (head, relation, tail) codes best first: False where the relation is exclusive with a
        better one of the same node pair, with an edge the pair already has, or with one ``staged``
        (proposals already pending review)."""
        exclusive = self.exclusive()
        pairs = self.pair_relations()
        kept: dict[tuple[int, int], set[int]] = {}
        for h, r, t in staged:
            pair = (min(h, t), max(h, t))
            kept.setdefault(pair, set(pairs.get(pair, ()))).add(r)
        out = []
        for h, r, t in ranked:
            pair = (min(h, t), max(h, t))
            taken = kept.setdefault(pair, set(pairs.get(pair, ())))
            ok = not any(exclusive[r, other] for other in taken)
            if ok:
                taken.add(r)
            out.append(ok)
        return out


def _type_table(g: LinkGraph, side: str) -> np.ndarray:
    """(relations, node types) True where the type occurs at that end of the relation."""
    t = g.triples
    seen = np.zeros((t.n_relations, max(1, len(g.type_names))), bool)
    if g.node_types is not None:
        seen[t.relation, g.node_types[t.tail if side == "tail" else t.head]] = True
    return seen


def _top(scores: np.ndarray, k: int) -> list[tuple[int, int]]:
    flat = scores.ravel()
    ok = np.argpartition(-flat, k - 1)[:k] if flat.size > k else np.arange(flat.size)
    ok = ok[np.isfinite(flat[ok])]  # filtered candidates sit at -inf
    ok = ok[np.lexsort((ok, -flat[ok]))]
    n = scores.shape[1]
    return [(int(i // n), int(i % n)) for i in ok]
