"""The ensemble: member predictors combined with weights equal to their validation MRR.

Each member's scores are standardised per query (z-score over the candidates: members score on
different scales) and summed with weight = the member's filtered MRR on a validation slice. Members are
added greedily, best first, and only kept when they raise the ensemble's validation MRR (a member that
adds noise gets weight 0). Without a validation split, ``valid_fraction`` of the edges (at most
``max_valid``) is held out of the members' training to measure it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import KGOSError
from .base import Predictor, predictor, register
from .protocol import KnownEdges, filtered_ranks
from .triples import LinkGraph, Triples, concat

LIGHT_MEMBERS = ("metapath", "adamic_adar", "text", "seed")
DEFAULT_MEMBERS = (*LIGHT_MEMBERS, "complex")
COMPLEX_MAX_ENTITIES = 20_000  # 1-N scoring costs n per query: beyond this ComplEx is left out by default


def _z(scores: np.ndarray) -> np.ndarray:
    mean = scores.mean(axis=1, keepdims=True)
    std = scores.std(axis=1, keepdims=True)
    return (scores - mean) / np.where(std > 0, std, 1.0)


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
        if len(valid) == 0:
            self.weights = {name: 1.0 for name in self.members}
            return
        known = KnownEdges(train, valid)
        for name, m in self.members.items():
            self.valid_mrr[name] = float(np.mean(1.0 / filtered_ranks(m.score_tails, m.score_heads, valid, known)))
        chosen: dict[str, float] = {}
        best = -1.0
        for name in sorted(self.valid_mrr, key=lambda k: -self.valid_mrr[k]):
            trial = {**chosen, name: self.valid_mrr[name]}
            self.weights = trial
            mrr = float(np.mean(1.0 / filtered_ranks(self.score_tails, self.score_heads, valid, known)))
            if mrr > best:
                chosen, best = trial, mrr
        self.weights = chosen
        self.valid_mrr["ensemble"] = best

    def parts(self, entity: np.ndarray, relation: np.ndarray, side: str) -> dict[str, np.ndarray]:
        """Each weighted member's raw (batch, n) scores."""
        out = {}
        for name in self.weights:
            m = self.members[name]
            out[name] = m.score_tails(entity, relation) if side == "tail" else m.score_heads(entity, relation)
        return out

    def combine(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        return sum(self.weights[name] * _z(np.asarray(s, np.float64)) for name, s in parts.items())  # type: ignore[return-value]

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


def fit_split(name: str, train: Triples, valid: Triples, **params: Any) -> Predictor:
    """A predictor fitted on a benchmark split's train (the ensemble weighs on its valid)."""
    graph = LinkGraph(train)
    return predictor(name, **params).fit(graph, valid if name == "ensemble" else None)


__all__ = ["DEFAULT_MEMBERS", "LIGHT_MEMBERS", "Ensemble", "concat", "fit_split"]
