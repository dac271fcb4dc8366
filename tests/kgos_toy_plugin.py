"""A third-party plugin for tests/test_plugins.py: one embedder and one predictor, registered through
the hooks of kgos.plugins exactly as an installed package's ``kgos`` entry point would."""

from __future__ import annotations

import numpy as np

from kgos.embed.base import Embedder
from kgos.embed.registry import Backend
from kgos.linkpred.base import Predictor
from kgos.plugins import hookimpl


class LetterEmbedder(Embedder):
    """Counts of the letters a, e, i, o: texts with the same vowels embed alike."""

    name = "toy-letters-4"
    dims = 4
    spec = "toyletters"

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.array([[t.lower().count(c) + 0.01 for c in "aeio"] for t in texts], dtype=np.float32)


class InDegree(Predictor):
    """Every entity scored by how many edges already point to it (as a tail) or leave it (as a head)."""

    name = "toy_indegree"
    light = True
    relation_blind = True

    def _fit(self, graph, valid) -> None:
        n = graph.n_entities
        self.into = np.bincount(graph.triples.tail, minlength=n).astype(np.float32)
        self.out = np.bincount(graph.triples.head, minlength=n).astype(np.float32)

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return np.tile(self.into, (len(head), 1))

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return np.tile(self.out, (len(tail), 1))


@hookimpl
def register_embedders() -> dict[str, Backend]:
    return {"toyletters": Backend("toyletters", f"{__name__}:LetterEmbedder", name="toy-letters-4", dims=4,
                                  description="vowel counts (a test plugin)")}


@hookimpl
def register_predictors() -> dict[str, type[Predictor]]:
    return {"toy_indegree": InDegree}
