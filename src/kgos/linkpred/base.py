"""The interface every link predictor implements, and the factory keyed by name.

A predictor is fitted on a ``LinkGraph`` and then scores every entity as the tail of (h, r, ?) or the
head of (?, r, t), for a batch of queries at once: one (batch, n_entities) array, higher is better.
Scores are only compared within one query (ranking), never read as probabilities.
"""

from __future__ import annotations

import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InvalidArgument, NotTrained
from ..plugins import add_builtin, entries, hookimpl
from .triples import LinkGraph, Triples


class Predictor(ABC):
    name: str = "predictor"
    light = False  # True: fitting is counting or a closed form, cheap enough for any KG
    relation_blind = False  # True: scores ignore the relation (proposals are typed by linkpred.relations)

    def __init__(self) -> None:
        self.graph: LinkGraph | None = None

    def fit(self, graph: LinkGraph, valid: Triples | None = None) -> Predictor:
        if len(graph.triples) == 0:
            raise NotTrained(f"{self.name}: the KG has no edges to learn from; add edges first")
        self.graph = graph
        self._fit(graph, valid)
        return self

    @abstractmethod
    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None: ...

    @abstractmethod
    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        """(batch, n) scores of every entity as the tail of (head[i], relation[i], ?)."""

    @abstractmethod
    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        """(batch, n) scores of every entity as the head of (?, relation[i], tail[i])."""

    def evidence(self, head: int, relation: int, tail: int) -> dict[str, Any]:
        """What supports (head, relation, tail) in this predictor's terms (paths, shared neighbours)."""
        return {}

    def fitted(self) -> LinkGraph:
        if self.graph is None:
            raise NotTrained(f"{self.name} is not fitted yet: call fit(graph) first")
        return self.graph


def per_entity(entities: np.ndarray, score: Callable[[np.ndarray], np.ndarray],
               last: dict[bytes, np.ndarray] | None = None) -> np.ndarray:
    """Rows of a relation-blind predictor: ``score`` runs once per distinct entity (a discovery asks
    the same node for every relation), then rows are repeated into place. ``last`` keeps the latest
    answer: a symmetric predictor's head query right after its tail query costs nothing."""
    unique, inverse = np.unique(np.asarray(entities), return_inverse=True)
    key = unique.tobytes()
    if last is not None and key in last:
        rows = last[key]
    else:
        rows = score(unique)
        if last is not None:
            last.clear()
            last[key] = rows
    return rows if unique.size == inverse.size and np.array_equal(unique, entities) else rows[inverse]


def without_self(rows: np.ndarray, entities: np.ndarray) -> np.ndarray:
    """A similarity predictor's rows with each query node's own score lowered to its row's minimum:
    a node is most similar to itself, which predicts no edge (and would take rank 1 of every query)."""
    rows[np.arange(entities.size), entities] = rows.min(axis=1)
    return rows


#: the built-in predictors, filled by ``@register`` in this package's modules
REGISTRY: dict[str, Callable[..., Predictor]] = {}


def register(name: str) -> Callable[[type[Predictor]], type[Predictor]]:
    def deco(cls: type[Predictor]) -> type[Predictor]:
        REGISTRY[name] = cls
        return cls
    return deco


@hookimpl
def register_predictors() -> dict[str, Callable[..., Predictor]]:
    """The built-in predictors, through the hook third-party packages answer too (kgos.plugins)."""
    return REGISTRY


def factories() -> dict[str, Callable[..., Predictor]]:
    """Every predictor by name: the built-ins, then those of plugins."""
    return {e.name: e.value for e in entries("predictors") if callable(e.value)}


def predictor(name: str, **params: Any) -> Predictor:
    """A new predictor by name (``kgos.linkpred.predictors()`` lists the names)."""
    known = factories()
    try:
        factory = known[name]
    except KeyError:
        raise InvalidArgument(f"unknown predictor {name!r}; choose one of {', '.join(sorted(known))}") from None
    _check_params(name, params)
    try:
        return factory(**params)
    except TypeError as exc:
        raise InvalidArgument(f"bad parameters for predictor {name!r}: {exc}") from None


# Upper bounds of the size and effort parameters (requests over HTTP and MCP set them): past these a
# fit runs for hours or exhausts memory instead of answering.
PARAM_LIMITS = {"dim": 4096, "hidden": 4096, "epochs": 10_000, "batch": 1 << 20, "max_edges": 10_000_000,
                "max_valid": 1_000_000, "max_length": 3, "rules_per_relation": 10_000, "beam": 1_000,
                "sample": 1_000_000, "min_support": 1_000_000, "seed": 2**32 - 1}


def _check_params(name: str, params: dict[str, Any]) -> None:
    """Numeric parameters of every predictor are finite, non-negative and within ``PARAM_LIMITS``."""
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        limit = PARAM_LIMITS.get(key, math.inf)
        if not math.isfinite(value) or value < 0 or value > limit:
            bound = f"0..{limit:,}" if math.isfinite(limit) else "a finite number >= 0"
            raise InvalidArgument(f"bad parameter {key}={value!r} for predictor {name!r}: expected {bound}")


def predictors() -> list[str]:
    return sorted(factories())


add_builtin(sys.modules[__name__], "kgos.linkpred")
