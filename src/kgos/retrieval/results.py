"""What a search returns: small frozen records whose ``to_dict()`` is the API's JSON shape
(DESIGN.md section 4, spec/000 ``/api/kgos/query``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import Node
from .intents import Intent

SIGNALS = ("embedding", "text", "graph", "intent", "name", "solution", "propagation")
DIGITS = 9  # JSON rounding of scores, components, weights and bonuses: the identity below holds to ~1e-8


@dataclass(frozen=True)
class Weights:
    """alpha (embedding), beta (text), gamma (graph), delta (intent); ``source`` says where they came from."""

    embedding: float
    text: float
    graph: float
    intent: float
    source: str = "profile"

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.embedding, self.text, self.graph, self.intent)

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.embedding, "beta": self.text, "gamma": self.graph, "delta": self.intent,
                "source": self.source}


@dataclass(frozen=True)
class Components:
    """Each signal normalised to 0..1, before weighting."""

    embedding: float = 0.0
    text: float = 0.0
    graph: float = 0.0
    intent: float = 0.0
    name: float = 0.0  # the name signal (query = a name or alias of the node), added with its own weight
    solution: float = 0.0  # relevance passed from a top hit this node solves (enables, fixes, ...)
    propagation: float = 0.0  # the fused score of a top hit this node neighbours, by edge-type weight
    rrf: float | None = None  # mode "rrf" only: the reciprocal-rank fusion score, the whole of its score

    def names(self) -> tuple[str, ...]:
        """The signals of this hit, in the order every view shows them (JSON, CLI, studio)."""
        return SIGNALS if self.rrf is None else (*SIGNALS, "rrf")

    def items(self) -> list[tuple[str, float]]:
        return [(s, float(getattr(self, s))) for s in self.names()]

    def to_dict(self) -> dict[str, float]:
        return {s: round(v, DIGITS) for s, v in self.items()}


@dataclass(frozen=True)
class EdgeAnnotation:
    """An edge that links a hit to a seed of the query: why the graph signals fired."""

    source: str
    target: str
    type: str
    direction: str  # "outgoing" | "incoming", as seen from the hit
    other: str  # the seed at the other end
    other_name: str

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "type": self.type, "direction": self.direction,
                "other": self.other, "other_name": self.other_name}


@dataclass(frozen=True)
class SearchHit:
    node: Node
    score: float
    components: Components
    method: str
    rank: int
    edge_annotations: tuple[EdgeAnnotation, ...] = ()
    source_kg: str | None = None
    diversity_bonus: float = 0.0  # included in score: +5% for the first hit of a community (spec/001 1.8)
    missing_signals: tuple[str, ...] = ()  # signals this node lacks (no vector yet): weights spread over the rest
    # The explanation (issue 29): the weight each signal of ``components`` was given for this hit (a
    # node without a vector has its other weights scaled up, so weights are per hit), and the additive
    # bonuses by name; ``score == sum(weights[s] * components[s]) + sum(bonuses)`` (``explained()``).
    weights: Mapping[str, float] = field(default_factory=dict)
    bonuses: Mapping[str, float] = field(default_factory=dict)

    def explained(self) -> float:
        """The score its explanation adds up to (equal to ``score`` up to float rounding)."""
        return (sum(self.weights.get(s, 0.0) * v for s, v in self.components.items())
                + sum(self.bonuses.values()))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"rank": self.rank, "node": self.node.to_dict(), "score": round(self.score, DIGITS),
                             "components": self.components.to_dict(),
                             "weights": {s: round(self.weights.get(s, 0.0), DIGITS) for s in self.components.names()},
                             "bonuses": {b: round(v, DIGITS) for b, v in self.bonuses.items()},
                             "method": self.method,
                             "edge_annotations": [a.to_dict() for a in self.edge_annotations],
                             "diversity_bonus": round(self.diversity_bonus, DIGITS),
                             "missing_signals": list(self.missing_signals)}
        if self.source_kg is not None:
            d["source_kg"] = self.source_kg
        return d


@dataclass(frozen=True)
class SearchResult:
    query: str
    intent: Intent
    weights: Weights
    results: tuple[SearchHit, ...]
    mode: str = "hybrid"
    kg: str | None = None
    took_ms: float = 0.0
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())  # why this ranking is weaker than it could be (e.g. no vectors)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "kg": self.kg, "mode": self.mode, "intent": self.intent.to_dict(),
                "weights": self.weights.to_dict(), "results": [h.to_dict() for h in self.results],
                "took_ms": round(self.took_ms, 3), "notes": list(self.notes), "warnings": list(self.warnings)}
