"""The ensemble: member predictors combined with weights equal to their validation MRR.

Each member's scores are standardised per query (z-score over the candidates: members score on
different scales) and summed with weight = the member's filtered MRR on a validation slice. Of every subset
of members, the one whose weighted sum ranks the validation edges best is kept (a member that only adds
noise gets weight 0). Without a validation split, ``valid_fraction`` of the edges (at most
``max_valid``) is held out of the members' training to measure it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import KGOSError
from .base import Predictor, predictor, register
from .protocol import KnownEdges, ranks_from_scores
from .triples import LinkGraph, Triples

# relation_prior types the relation-blind members' votes: on the demo's 10% holdout it lifts the
# default ensemble's MRR from 0.282 to 0.351 (adamic_adar alone: 0.140 -> 0.252 with it)
LIGHT_MEMBERS = ("metapath", "adamic_adar", "text", "seed", "relation_prior")
DEFAULT_MEMBERS = (*LIGHT_MEMBERS, "complex")
MAX_SUBSET_MEMBERS = 6  # every subset of up to 6 members is tried (63); more members: all of them
COMPLEX_MAX_ENTITIES = 20_000  # 1-N scoring costs n per query: beyond this ComplEx is left out by default


def _z(scores: np.ndarray) -> np.ndarray:
    mean = scores.mean(axis=1, keepdims=True)
    std = scores.std(axis=1, keepdims=True)
    return (scores - mean) / np.where(std > 0, std, 1.0)


def _weighted_sum(items: Iterable[tuple[float, np.ndarray]]) -> np.ndarray:
    """Sum of weight x array, one array at a time (stacking them first would multiply the memory)."""
    total: np.ndarray | None = None
    for w, a in items:
        total = w * a if total is None else total + w * a
    assert total is not None, "an ensemble has at least one member"
    return total


@register("ensemble")
class Ensemble(Predictor):
    name = "ensemble"

    def __init__(self, members: tuple[str, ...] | list[str] | None = None, params: dict[str, dict[str, Any]] | None = None,
                 valid_fraction: float = 0.05, max_valid: int = 500, seed: int = 0) -> None:
        super().__init__()
        self.member_names = tuple(members) if members is not None else None
        self.params = params or {}
        self.valid_fraction, self.max_valid, self.seed = valid_fraction, max_valid, seed
        self.members: dict[str, Predictor] = {}
        self.weights: dict[str, float] = {}
        self.valid_mrr: dict[str, float] = {}
        self.skipped: dict[str, str] = {}

    @property
    def light(self) -> bool:  # type: ignore[override]
        return all(m.light for m in self.members.values())

    def _names(self, graph: LinkGraph) -> tuple[str, ...]:
        if self.member_names is not None:
            return self.member_names
        if graph.n_entities > COMPLEX_MAX_ENTITIES:
            return LIGHT_MEMBERS
        return DEFAULT_MEMBERS

    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None:
        train = graph
        if valid is None or len(valid) == 0:
            train, valid = self._hold_out(graph)
        for name in self._names(graph):
            try:
                self.members[name] = predictor(name, **self.params.get(name, {})).fit(train)
            except KGOSError as exc:  # e.g. text on a KG without vectors: the others still vote
                self.skipped[name] = str(exc)
        if not self.members:
            raise KGOSError(f"no ensemble member could be trained: {self.skipped}")
        self._weigh(train.triples, valid)

    @classmethod
    def of(cls, members: dict[str, Predictor], graph: LinkGraph, valid: Triples) -> Ensemble:
        """An ensemble of members already fitted on ``graph`` (a benchmark fits each once), weighed on ``valid``."""
        ens = cls(members=tuple(members))
        ens.members, ens.graph = dict(members), graph
        ens._weigh(graph.triples, valid)
        return ens

    def _hold_out(self, graph: LinkGraph) -> tuple[LinkGraph, Triples]:
        t = graph.triples
        m = min(self.max_valid, int(len(t) * self.valid_fraction))
        if m == 0 or len(t) - m < 1:
            return graph, t.subset(np.arange(0))
        rows = np.random.default_rng(self.seed).permutation(len(t))
        keep = np.sort(rows[m:])
        train = LinkGraph(t.subset(keep), graph.node_types, graph.type_names, graph.vectors)
        return train, t.subset(np.sort(rows[:m]))

    def _weigh(self, train: Triples, valid: Triples) -> None:
        """Weights = validation MRR; the member subset kept is the one whose weighted sum ranks the
        validation edges best (every subset is scored from one pass over the members' scores)."""
        if len(valid) == 0:
            self.weights = {name: 1.0 for name in self.members}
            return
        known = KnownEdges(train, valid)
        names = list(self.members)
        self.valid_mrr = {name: float(np.mean(1.0 / r)) for name, r in self._ranks(valid, known, [
            {name: 1.0} for name in names]).items()}
        subsets = [{n: self.valid_mrr[n] for i, n in enumerate(names) if mask >> i & 1}
                   for mask in range(1, 2 ** len(names))] if len(names) <= MAX_SUBSET_MEMBERS else [self.valid_mrr]
        scored = {key: float(np.mean(1.0 / r)) for key, r in self._ranks(valid, known, subsets).items()}
        best = max(scored, key=lambda k: (scored[k], -len(k.split("+"))))
        self.weights = {n: self.valid_mrr[n] for n in best.split("+")}
        self.valid_mrr["ensemble"] = scored[best]

    def _ranks(self, valid: Triples, known: KnownEdges, combos: list[dict[str, float]],
               batch: int = 256) -> dict[str, np.ndarray]:
        """Filtered ranks of ``valid`` under each weighted combination of members (key: names joined by +)."""
        out: dict[str, list[np.ndarray]] = {"+".join(c): [] for c in combos}
        used = sorted({n for c in combos for n in c})
        for side in ("tail", "head"):
            for i in range(0, len(valid), batch):
                h, r, t = (a[i:i + batch] for a in (valid.head, valid.relation, valid.tail))
                query, target = (h, t) if side == "tail" else (t, h)
                z = {n: _z(np.asarray(self._side(n, query, r, side), np.float64)) for n in used}
                mask = known.mask(query, r, side)
                for c in combos:
                    combined = _weighted_sum((w, z[n]) for n, w in c.items())
                    out["+".join(c)].append(ranks_from_scores(combined, target, mask))
        return {k: np.concatenate(v) for k, v in out.items()}

    def _side(self, name: str, entity: np.ndarray, relation: np.ndarray, side: str) -> np.ndarray:
        m = self.members[name]
        return m.score_tails(entity, relation) if side == "tail" else m.score_heads(entity, relation)

    def parts(self, entity: np.ndarray, relation: np.ndarray, side: str) -> dict[str, np.ndarray]:
        """Each weighted member's raw (batch, n) scores."""
        return {name: self._side(name, entity, relation, side) for name in self.weights}

    def combine(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        return _weighted_sum((self.weights[name], _z(np.asarray(s, np.float64))) for name, s in parts.items())

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self.combine(self.parts(np.asarray(head), np.asarray(relation), "tail"))

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self.combine(self.parts(np.asarray(tail), np.asarray(relation), "head"))

    def evidence(self, head: int, relation: int, tail: int) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for m in self.members.values():
            found.update(m.evidence(head, relation, tail))
        return found

    def summary(self) -> dict[str, Any]:
        return {"weights": self.weights, "valid_mrr": self.valid_mrr, "skipped": self.skipped}

