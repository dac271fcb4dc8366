"""Link prediction: predictors, the filtered ranking protocol, and runs into the review queue.

Importing this package registers ``kg.predict`` (``kgos.linkpred.Predict``) on every KG. The review
queue itself is ``kg.proposals`` (``kgos.store.proposals``), shared with every other proposal source.
"""

from ..kg.facade import KG
from . import complex, ensemble, features, relations, structural  # noqa: F401  (importing registers the predictors)
from .base import Predictor, predictor, predictors
from .predict import Predict, evaluate_split
from .protocol import KnownEdges, RankMetrics, filtered_ranks, metrics
from .results import Prediction, PredictionList, RunReport, Verdict
from .triples import LinkGraph, Split, Triples, read_split

KG.register_extension("predict", Predict)

__all__ = ["KnownEdges", "LinkGraph", "Predict", "Prediction", "PredictionList", "Predictor", "RankMetrics",
           "RunReport", "Split", "Triples", "Verdict", "evaluate_split", "filtered_ranks", "metrics", "predictor", "predictors",
           "read_split"]
