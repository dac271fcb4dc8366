"""What link prediction hands back: frozen records with ``to_dict()``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..store.proposals import ProposeReport


@dataclass(frozen=True)
class Prediction:
    """A missing edge ``source -[type]-> target`` at ``rank`` among the query's candidates, with each
    predictor's score and the evidence (rule paths, shared neighbours, the most similar existing edges)."""

    source: str
    target: str
    type: str
    score: float
    rank: int
    scores: dict[str, float]
    evidence: dict[str, Any]
    confidence: float | None = None  # calibrated probability that the edge is true (runs; None: not calibrated)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PredictionList:
    """Ranked predictions for one query: ``(head, relation, ?)``, ``(?, relation, tail)`` or the
    discovery of one node over all relations (``relation`` None)."""

    query: dict[str, Any]
    predictor: str
    predictions: tuple[Prediction, ...]
    candidates: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "predictions": [p.to_dict() for p in self.predictions]}


@dataclass(frozen=True)
class RunReport:
    """A prediction run: nodes scanned, the best predictions, and what the review queue took."""

    predictor: str
    nodes: int
    predictions: tuple[Prediction, ...]
    queued: ProposeReport
    weights: dict[str, float]
    seconds: float
    calibration: dict[str, Any] | None = None  # how the confidences were fitted (ECE on withheld edges...)

    def to_dict(self) -> dict[str, Any]:
        return {"predictor": self.predictor, "nodes": self.nodes, "predictions": [p.to_dict() for p in self.predictions],
                "queued": self.queued.to_dict(), "weights": self.weights, "seconds": self.seconds,
                "calibration": self.calibration}


@dataclass(frozen=True)
class Verdict:
    """An LLM's judgement of one proposal (spec/003's R1 step): ``valid`` is None when the provider
    failed or answered outside the schema (``error`` says why); it never accepts by itself unless
    ``accepted`` by the caller's policy."""

    proposal_id: int
    valid: bool | None
    reasoning: str
    model: str
    confidence: float | None
    accepted: bool
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
