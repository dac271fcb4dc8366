"""Link prediction: predictors, the filtered ranking protocol, and runs into the review queue.

``link_predictor(kg)`` is link prediction on a KG (one ``Predict`` per KG object, so fitted predictors
are reused across calls). The review queue itself is ``kg.proposals`` (``kgos.store.proposals``), shared
with every other proposal source.
"""

import threading
import weakref

from ..kg.facade import KG
from . import complex, ensemble, features, relations, structural  # noqa: F401  (importing registers the predictors)
from .base import Predictor, predictor, predictors
from .predict import Predict, evaluate_split
from .protocol import KnownEdges, RankMetrics, filtered_ranks, metrics
from .results import Prediction, PredictionList, RunReport, Verdict
from .triples import LinkGraph, Split, Triples, read_split

_PREDICTORS: "weakref.WeakKeyDictionary[KG, Predict]" = weakref.WeakKeyDictionary()
_MADE = threading.Lock()  # two threads asking at once get the same Predict (and its fitted models)


def link_predictor(kg: KG) -> Predict:
    """Link prediction on ``kg``: discover, run into the review queue, validate, evaluate. One per KG
    object (what it trained is kept per KG version), gone with the KG."""
    with _MADE:
        found = _PREDICTORS.get(kg)
        if found is None:
            found = _PREDICTORS[kg] = Predict(kg)
        return found

__all__ = [
    "KnownEdges",
    "LinkGraph",
    "Predict",
    "Prediction",
    "PredictionList",
    "Predictor",
    "RankMetrics",
    "RunReport",
    "Split",
    "Triples",
    "Verdict",
    "evaluate_split",
    "filtered_ranks",
    "link_predictor",
    "metrics",
    "predictor",
    "predictors",
    "read_split",
]
