"""The intent-adaptive hybrid search of spec/001 (sections 1.2-1.8) over one snapshot.

score = alpha * embedding + beta * text + gamma * graph + delta * intent, each signal normalised to
0..1 by its maximum first (spec/000 section 7); ``SearchOptions.spec()`` is exactly that. The default
adds issue 13's terms, each shown as a component of every hit: the name signal, solution hops, and
lever 4's fusion (alpha and beta re-split by each signal's max / top-10 mean, and the fused score
propagated one hop into the top hits' in-edges). Every signal is a dense float32 array over the
snapshot's nodes, built with numpy/scipy (no per-node Python loop); result objects are made only
for the final top k.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..errors import InvalidArgument
from ..index import nearest
from ..index.text import tokenize
from ..store.base import GraphStore
from . import intents as I
from .results import SIGNALS, Components, EdgeAnnotation, SearchHit, SearchResult, Weights
from .vocabulary import MODES

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot

FTS_MODES = frozenset({"fts", "text", "rrf"})  # these always query FTS5, whatever SearchOptions.fts says
MAX_K = 1000
MAX_QUERY_TERMS = 64
MAX_NAME_QUERY_CHARS = 1000  # longer queries are no one's name
RRF_K = 60
DIVERSITY_BOOST = 1.05  # spec/001 1.8
DIVERSE_MODES = frozenset({"hybrid", "fixed3", "fixed4"})
NAME_MODES = frozenset({"hybrid", "names"})  # fixed3/fixed4 stay the spec's formulas


@dataclass(frozen=True)
class SearchOptions:
    """Engine switches; the defaults are the measured choices of docs/quality.md."""

    seeds_text: int = 10  # spec/001 1.6: seeds = top 10 text + top 10 embedding
    seeds_embedding: int = 10
    fts: bool = False  # spec: text = max(BM25, FTS5); measured equal quality at 2x the latency (docs/defaults.md)
    diversity: bool = True
    profiles: str = "kgos"  # "kgos": fitted on the bench dev probes (intents.KGOS_PROFILES); "spec": spec/001 1.2
    unmatched: str = "default"  # with "spec": "default" = 0.40/0.45/0.15/0 (DESIGN.md 5), "profile" = goal_based
    fts_candidates: int = 200
    keyword_boost: float = I.KEYWORD_BOOST  # spec/001 1.4: intent keywords count 5x in BM25
    # issue 13 lever 2: + name_weight x the name signal (a query that is a node's name or alias, whole;
    # index/names.py) in the hybrid mode; 0 = the spec's formula. 1.0 puts exact names first.
    name_weight: float = 1.0
    # issue 13 lever 0: + solution_hop x the score of the best hit, given to what answers it over a
    # solution edge (intents.SOLUTION_EDGES_*) in the hybrid mode, so the fix climbs toward the
    # restated problem; 0 = the spec's formula.
    solution_hop: float = 0.5
    # how much less a seed the query names passes on (SOLUTION_GATES: "linear" 1 - coverage, "square"
    # 1 - coverage ** 2), and how much each solution edge passes (intents.SOLUTION_EDGE_WEIGHTS);
    # measured: docs/defaults.md "Solution hop re-measured" ("linear" + "uniform" = the earlier default)
    solution_gate: str = "square"
    solution_edges: str = "graded"
    coord: float = 0.5  # BM25 x (share of query terms matched) ** coord (0 = spec); docs/defaults.md
    hop_seeds: int = 1  # only the best hit passes relevance on (1, 2, 3, 10 measured: docs/defaults.md)
    name_prefix: bool = False  # the weakest tier (the query begins a name): no gain on the dev sets
    # issue 13 lever 4, fusion (hybrid mode only; docs/defaults.md "Fusion"): ``norm`` puts the embedding
    # and text signals on one scale per query over their top ``norm_depth`` rows (NORMS; "max" = spec/000
    # section 7; "topk" keeps them max-normalised and re-splits alpha + beta by max / mean of their
    # top 10 instead, so components stay in 0..1); ``margin_power`` > 0 scales alpha and beta by how far
    # each signal's top hit stands out;
    # ``prf`` > 0 moves the query vector toward the top ``prf`` hits' vectors (Rocchio) and re-scores.
    norm: str = "topk"  # measured: docs/defaults.md "Fusion"
    norm_depth: int = 100
    margin_power: float = 0.0
    prf: int = 0
    prf_weight: float = 0.5
    # graph use beyond the gamma signal: + propagate x the best fused score of a top-``propagate_seeds``
    # neighbour, times the edge type's weight (docs/defaults.md "Fusion")
    propagate: float = 0.2
    propagate_seeds: int = 3
    propagate_out: float = 0.0  # weight of a seed's directed out-edges (0: only to what points at it, e.g. is_a children)
    propagate_own: bool = False  # True: a seed's neighbour gets its own fused score (x edge weight), not the seed's
    use_graph: bool = True  # False: gamma = 0 and no edge-derived additions (solution hops, propagation)
    use_intent: bool = True  # False: delta = 0

    @classmethod
    def spec(cls) -> SearchOptions:
        """The specification's formula (spec/001 1.2-1.8): its weight profiles, text = max(BM25, FTS5),
        and none of KG-OS's additions (name signal, solution hops, coordination, lever 4's fusion)."""
        return cls(fts=True, profiles="spec", name_weight=0.0, solution_hop=0.0, coord=0.0, norm="max",
                   propagate=0.0)


# -- inputs ----------------------------------------------------------------------------------------
def check_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("the query is empty: give some words to search for")
    return query.strip()


def check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgument(f"k must be a positive integer, not {k!r}")
    return min(k, MAX_K)


def parse_weights(weights: Any) -> tuple[float, float, float, float] | None:
    """Explicit weights (alpha, beta, gamma, delta): a sequence, a mapping, or "a,b,g,d"; None = profile.

    Negative or non-finite weights are rejected; the others are normalised to sum to 1.
    """
    if weights is None:
        return None
    if isinstance(weights, str):
        weights = weights.split(",")
    if isinstance(weights, dict):
        keys = (("alpha", "embedding"), ("beta", "text"), ("gamma", "graph"), ("delta", "intent"))
        weights = [weights.get(a, weights.get(b, 0.0)) for a, b in keys]
    try:
        values = [float(w) for w in weights]
    except (TypeError, ValueError):
        raise InvalidArgument(f"weights must be four numbers alpha,beta,gamma,delta, not {weights!r}") from None
    if len(values) != 4 or any(not math.isfinite(v) or v < 0 for v in values):
        raise InvalidArgument("weights must be four non-negative numbers alpha,beta,gamma,delta (e.g. 0.4,0.45,0.15,0)")
    total = sum(values)
    if total <= 0:
        raise InvalidArgument("at least one weight must be positive")
    return tuple(v / total for v in values)  # type: ignore[return-value]


def choose_weights(explicit: tuple[float, ...] | None, intent: I.Intent, mode: str, options: SearchOptions,
                   tuned: dict[str, Any] | None = None) -> Weights:
    """DESIGN.md section 5: explicit > the intent's profile > the no-match default; a KG's tuned
    profile (``kgos tune --save``) takes the place of the spec's profiles."""
    fixed = {"fixed3": (0.40, 0.45, 0.15, 0.0), "fixed4": I.EXPERT_DEFAULT_WEIGHTS,
             "embedding": (1, 0, 0, 0), "bm25": (0, 1, 0, 0), "fts": (0, 1, 0, 0), "text": (0, 1, 0, 0),
             "graph": (0, 0, 1, 0), "names": (0, 0, 0, 0)}
    if mode in fixed:
        return Weights(*map(float, fixed[mode]), source=mode)
    if explicit is not None:
        return Weights(*explicit, source="explicit")
    if tuned:
        key = intent.name if intent.name in tuned else "_default"
        if key in tuned:
            return Weights(*map(float, tuned[key]), source=f"tuned:{key}")
    if options.profiles == "kgos":
        key = intent.name if intent.name in I.KGOS_PROFILES else "_default"
        return Weights(*I.KGOS_PROFILES[key], source=f"kgos:{key}")
    if not intent.matched and options.unmatched == "default":
        return Weights(*I.NO_MATCH_WEIGHTS, source="no-match default")
    return Weights(*I.PROFILES[intent.name], source=f"profile:{intent.name}")


# -- signals ---------------------------------------------------------------------------------------
def normalise(x: np.ndarray) -> np.ndarray:
    """Divide by the maximum (spec/000 section 7); all-zero stays zero."""
    top = float(x.max()) if x.size else 0.0
    return x / top if top > 0 else x


def bm25_signal(snap: Snapshot, query: str, intent: str, boost: float = I.KEYWORD_BOOST,
                coord: float = 0.0) -> np.ndarray:
    """BM25 with the intent's keywords weighted ``boost`` times (5x in spec/001 1.4). ``coord`` > 0
    multiplies each node's score by (share of the query's terms it contains) ** coord (Lucene's
    classic coordination factor), so one rare word alone cannot carry a node to the top."""
    def weight(token: str) -> float:
        return boost if I.keyword_weight(token, intent) > 1.0 else 1.0
    terms = snap.text.query_terms(query, weight)[:MAX_QUERY_TERMS]
    scores = snap.text.scores(terms)
    distinct = len({c for c, _ in terms})
    if coord > 0 and distinct > 1:
        scores *= (_presence(snap, terms) / distinct) ** np.float32(coord)
    return normalise(scores)


def fts_query(query: str, stopwords: frozenset[str]) -> str | None:
    """An FTS5 MATCH string that is safe for any input: every token double-quoted, OR-ed."""
    tokens = list(dict.fromkeys(t for t in tokenize(query) if t not in stopwords))[:MAX_QUERY_TERMS]
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens) or None


def fts_signal(snap: Snapshot, store: GraphStore, query: str, limit: int) -> np.ndarray | None:
    """SQLite FTS5 ``bm25()`` over the native KG's text, as one more normalised text channel."""
    reader = store.row_reader()  # the native file's FTS5 index, run by the store
    match = fts_query(query, snap.text.analyzer.stop)
    out = np.zeros(snap.n, np.float32)
    if reader is None or snap.rowids is None or match is None:
        return None if match is not None else out
    rows = reader.fts(match, limit)
    if rows is None:
        return None
    if rows:
        ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        pos = np.searchsorted(snap.rowids, ids)
        ok = (pos < snap.n) & (snap.rowids[np.minimum(pos, snap.n - 1)] == ids)
        out[pos[ok]] = np.fromiter((r[1] for r in rows), np.float32, len(rows))[ok]
    return normalise(np.maximum(out, 0))


def embedding_signal(snap: Snapshot, query_vector: np.ndarray | None, exact: bool = False) -> np.ndarray | None:
    """Cosine of the query with every node (one matrix-vector product; on a large KG with an
    approximate index, its best candidates only, re-scored exactly); negatives count as 0."""
    if snap.vectors is None or query_vector is None or not np.any(query_vector):
        return None
    return normalise(np.maximum(nearest.similarities(snap, query_vector, exact), 0))


def name_signal(snap: Snapshot, query: str, options: SearchOptions, mode: str) -> np.ndarray | None:
    """How fully the query is a name or alias of each node (index/names.py tiers: 1.0 the exact name,
    0.9 an exact alias, 0.8/0.7 the same words in any order, <= 0.3 the start of a name). Not
    renormalised: the tiers are absolute, so 0 everywhere when the query names nothing."""
    if mode not in NAME_MODES or options.name_weight <= 0 or snap.name_index is None:
        return None
    # a pre-filter's mask is applied to the total in ``search``: not here as well
    return snap.name_index.scores(query[:MAX_NAME_QUERY_CHARS], prefix=options.name_prefix)


SOLUTION_GATES = ("linear", "square")


def solution_signal(snap: Snapshot, base: np.ndarray, seeds: int, query: str = "", gate: str = "square",
                    edges: str = "graded") -> np.ndarray:
    """Relevance passed one hop from the best-scoring nodes to what answers them: for every node, the
    highest ``base`` score x edge weight of a top-``seeds`` node it solves (``intents.SOLUTION_EDGES_*``
    weighted by ``intents.SOLUTION_EDGE_WEIGHTS[edges]``), else 0.

    A seed passes on only the part of its score the query did not earn by naming it: a query made of
    the words of a node's name or aliases asks for that node, not for its fix. The gate is
    ``1 - coverage`` ("linear") or ``1 - coverage ** 2`` ("square": a problem statement that re-uses a
    few of the problem's words still passes most of its score on; a full name still passes nothing).
    Issue 13 lever 0, no published formula: the gate and the grades are measured choices
    (docs/defaults.md "Solution hop re-measured on the topk/propagate fusion")."""
    top = top_indices(base, seeds)
    out = np.zeros(snap.n, np.float32)
    if top.size == 0:
        return out
    if query and snap.name_index is not None:
        base = base.copy()
        coverage = snap.name_index.coverage(query, top)
        base[top] *= 1.0 - (coverage ** 2 if gate == "square" else coverage)
    graded = I.SOLUTION_EDGE_WEIGHTS[edges]
    nb = snap.graph.neighbors_of(top, "both")
    forward = snap.graph.type_weight_vector({t: graded.get(t, 1.0) for t in I.SOLUTION_EDGES_OUT}, 0.0)
    backward = snap.graph.type_weight_vector({t: graded.get(t, 1.0) for t in I.SOLUTION_EDGES_IN}, 0.0)
    weight = np.where(nb.src_side, forward[nb.edge_type], backward[nb.edge_type])
    answers = weight > 0
    np.maximum.at(out, nb.node[answers], (base[nb.origin[answers]] * weight[answers]).astype(np.float32))
    return out


def top_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest positive entries, best first (argpartition, then a small sort)."""
    nz = np.flatnonzero(x >= _floor(x, k))
    if nz.size > k:
        nz = nz[np.argpartition(-x[nz], k - 1)[:k]]
    return nz[np.argsort(-x[nz], kind="stable")]


TOPK_STRIDE = 32  # every 32nd entry of a long signal bounds its k-th largest from below


def _floor(x: np.ndarray, k: int) -> float:
    """A positive value at most the k-th largest entry of ``x``: the k-th largest of every 32nd entry
    (k entries of the full array are at least that), so a long signal is partitioned over the few rows
    above it, not over all its non-zero rows (at 1M nodes that was 12% of a query)."""
    tiny = float(np.finfo(np.float32).tiny)
    if x.size < 64 * TOPK_STRIDE or k * TOPK_STRIDE * 4 > x.size:
        return tiny
    sample = x[::TOPK_STRIDE]
    sample = sample[sample > 0]
    if sample.size < k:
        return tiny
    return max(float(np.partition(sample, sample.size - k)[sample.size - k]), tiny)


def dense(n: int, candidates: np.ndarray, scores: np.ndarray) -> np.ndarray:
    out = np.zeros(n, np.float32)
    out[np.asarray(candidates, np.int64)] = scores
    return out


def graph_signal(snap: Snapshot, seeds: np.ndarray, intent: str) -> np.ndarray:
    """Edge-type-weighted proximity to the seeds blended with PageRank (spec/001 1.6)."""
    if seeds.size == 0:
        return np.zeros(snap.n, np.float32)
    weights = snap.graph.type_weight_vector(I.EDGE_TYPE_WEIGHTS, I.DEFAULT_EDGE_TYPE_WEIGHT)
    cand, score = snap.graph.graph_boost(seeds, weights, two_hop=intent in I.TWO_HOP_INTENTS)
    return dense(snap.n, cand, score)


def intent_signal(snap: Snapshot, seeds: np.ndarray, intent: str) -> np.ndarray:
    """Forward +1.0 / backward +0.7 over the intent's edge types (spec/001 1.7)."""
    types = I.INTENT_EDGE_TYPES.get(intent, ())
    if seeds.size == 0 or not types:
        return np.zeros(snap.n, np.float32)
    cand, score = snap.graph.intent_edge_scores(seeds, types)
    return dense(snap.n, cand, score)


@dataclass
class Signals:
    embedding: np.ndarray | None
    bm25: np.ndarray
    fts: np.ndarray | None
    text: np.ndarray
    graph: np.ndarray
    intent: np.ndarray
    seeds: np.ndarray
    name: np.ndarray | None = None  # issue 13 lever 2; None when off (spec formula, other modes)
    solution: np.ndarray | None = None  # issue 13 lever 0; None when off
    propagation: np.ndarray | None = None  # issue 13 lever 4; None when off
    rrf: np.ndarray | None = None  # mode "rrf": the fused reciprocal ranks, the whole score


def compute_signals(snap: Snapshot, store: GraphStore, query: str, intent: str,
                    query_vector: np.ndarray | None, options: SearchOptions,
                    mask: np.ndarray | None = None) -> Signals:
    """Every signal over the snapshot; with ``mask`` (a pre-filter, one bool per row) only the rows
    it keeps are considered: the others score 0 and each signal is normalised over the kept rows."""
    bm25 = within(bm25_signal(snap, query, intent, options.keyword_boost, options.coord), mask)
    fts = within(fts_signal(snap, store, query, options.fts_candidates), mask) if options.fts else None
    text = np.maximum(bm25, fts) if fts is not None else bm25
    emb = within(embedding_signal(snap, query_vector, exact=mask is not None), mask)  # filters: no ANN misses
    seeds = top_indices(text, options.seeds_text)
    if emb is not None:
        seeds = np.union1d(seeds, top_indices(emb, options.seeds_embedding))
    graph = within(graph_signal(snap, seeds, intent), mask)
    return Signals(emb, bm25, fts, text, graph, within(intent_signal(snap, seeds, intent), mask), seeds)


def within(signal: np.ndarray | None, mask: np.ndarray | None) -> np.ndarray | None:
    """The signal on the rows a pre-filter keeps, renormalised to a maximum of 1 over them."""
    if signal is None or mask is None:
        return signal
    return normalise(np.where(mask, signal, np.float32(0)))


# -- combination -----------------------------------------------------------------------------------
def effective_weights(weights: Weights, signals: Signals) -> Weights:
    """Without vectors the formula degrades to text + graph (+ intent), renormalised (spec/000 lesson 4)."""
    if signals.embedding is not None or weights.embedding == 0 or weights.embedding == 1:
        return weights
    rest = weights.text + weights.graph + weights.intent
    if rest <= 0:
        return weights
    return Weights(0.0, weights.text / rest, weights.graph / rest, weights.intent / rest,
                   source=weights.source + " (no vectors: renormalised)")


NORMS = ("max", "minmax", "zscore", "rank", "topk")
Signal = TypeVar("Signal", np.ndarray, "np.ndarray | None")
FUSION_MODES = frozenset({"hybrid"})  # fixed3/fixed4 stay the spec's formulas
MARGIN_DEPTH = 10
# Edge types without a direction of meaning: propagation crosses them both ways at full weight
SYMMETRIC_EDGES = ("see_also", "similar_to", "relates_to", "related_to", "alternative_to", "complements",
                   "same_as", "sibling_of", "synonym_of", "equivalent_to")


def check_options(options: SearchOptions) -> None:
    if options.norm not in NORMS:
        raise InvalidArgument(f"unknown norm {options.norm!r}; choose one of {', '.join(NORMS)}")
    if options.norm_depth < 2 or options.prf < 0 or options.propagate_seeds < 1:
        raise InvalidArgument("norm_depth must be >= 2, prf >= 0 and propagate_seeds >= 1")
    if not 0.0 <= options.propagate_out <= 1.0:
        raise InvalidArgument(f"propagate_out must be between 0 and 1, not {options.propagate_out!r}")
    if options.solution_gate not in SOLUTION_GATES:
        raise InvalidArgument(f"unknown solution_gate {options.solution_gate!r}; choose one of {', '.join(SOLUTION_GATES)}")
    if options.solution_edges not in I.SOLUTION_EDGE_WEIGHTS:
        raise InvalidArgument(f"unknown solution_edges {options.solution_edges!r}; "
                              f"choose one of {', '.join(I.SOLUTION_EDGE_WEIGHTS)}")


def rescale(x: Signal, how: str, depth: int) -> Signal:
    """Per-query score normalisation over the signal's top ``depth`` rows (the rest score 0).
    minmax: (x - x_depth) / (x_1 - x_depth); zscore: max(0, (x - mean) / sd), unscaled, so a signal
    whose top stands out counts more (Montague & Aslam, CIKM 2001, "Relevance score normalization for
    metasearch"); rank: (K + 1) / (K + rank), the reciprocal rank of RRF with K = 60 scaled to 1 at
    rank 1 (Cormack et al., SIGIR 2009). "max" (x / max, spec/000 section 7) and "topk" (a weight,
    see ``fusion_weights``) leave the max-normalised signal as it is."""
    if x is None or how in ("max", "topk"):
        return x
    top = top_indices(x, depth)
    if top.size == 0:
        return x
    v = x[top].astype(np.float64)
    if how == "rank":
        s = (RRF_K + 1) / (RRF_K + 1 + np.arange(top.size, dtype=np.float64))
    elif how == "minmax":
        span = v[0] - v[-1]
        s = (v - v[-1]) / span if span > 0 else np.ones_like(v)
    else:  # zscore
        sd = v.std()
        s = np.maximum((v - v.mean()) / sd, 0) if sd > 0 else np.ones_like(v)
    return dense(x.shape[0], top, s.astype(np.float32))


def margin(x: np.ndarray | None) -> float:
    """How far the top score stands out from the next nine, as a share of it (0..1)."""
    if x is None:
        return 0.0
    top = top_indices(x, MARGIN_DEPTH)
    if top.size < 2 or x[top[0]] <= 0:
        return float(top.size == 1)
    v = x[top]
    return float((v[0] - v[1:].mean()) / v[0])


def top_mean(x: np.ndarray | None) -> float:
    """The mean of the 10 largest entries (0 when none is positive)."""
    top = top_indices(x, MARGIN_DEPTH) if x is not None else np.zeros(0, np.int64)
    return float(x[top].mean()) if top.size else 0.0  # type: ignore[index]


def fusion_weights(w: Weights, signals: Signals, options: SearchOptions) -> Weights:
    """Query-dependent weights from the score distributions (the caller's explicit weights are kept).

    gamma/delta are dropped when ``use_graph``/``use_intent`` are off, the others rescaled to the same
    total. norm "topk": alpha and beta re-split in proportion to alpha / mean(top 10 of the embedding
    signal) and beta / mean(top 10 of the text signal), their sum kept: as if each signal were divided
    by its top-10 mean instead of its maximum, so the signal whose top stands out from the next nine
    counts more (score-distribution normalisation; cf. Arampatzis & Kamps, SIGIR 2008).
    ``margin_power`` > 0: alpha and beta re-split in proportion to ``margin`` ** ``margin_power``."""
    e, t = w.embedding, w.text
    g, d = (w.graph if options.use_graph else 0.0), (w.intent if options.use_intent else 0.0)
    if e + t + g + d > 0 and (g, d) != (w.graph, w.intent):
        scale = (w.embedding + w.text + w.graph + w.intent) / (e + t + g + d)
        e, t, g, d = e * scale, t * scale, g * scale, d * scale
    if w.source != "explicit" and signals.embedding is not None and e > 0 and t > 0:
        e, t = _distribution_weights(e, t, signals, options)
    if (e, t, g, d) == w.as_tuple():
        return w
    return Weights(e, t, g, d, source=w.source + " (fusion-weighted)")


def _distribution_weights(e: float, t: float, signals: Signals, options: SearchOptions) -> tuple[float, float]:
    if options.margin_power > 0:
        me, mt = (margin(x) ** options.margin_power for x in (signals.embedding, signals.text))
        if me + mt > 0:
            e, t = (e + t) * e * me / (e * me + t * mt), (e + t) * t * mt / (e * me + t * mt)
    if options.norm == "topk":  # their sum kept: the name signal's absolute tiers still come first
        me, mt = top_mean(signals.embedding), top_mean(signals.text)
        if me > 0 and mt > 0:
            e, t = (e + t) * (e / me) / (e / me + t / mt), (e + t) * (t / mt) / (e / me + t / mt)
    return e, t


def rocchio(snap: Snapshot, query_vector: np.ndarray, total: np.ndarray, options: SearchOptions) -> np.ndarray:
    """Pseudo-relevance feedback on the query vector: q + prf_weight * centroid of the top ``prf``
    hits' unit vectors, renormalised (Rocchio, "Relevance feedback in information retrieval", 1971)."""
    top = top_indices(total, options.prf)
    if top.size == 0 or snap.vectors is None:
        return query_vector
    centroid = np.asarray(snap.vectors[np.sort(top)], np.float32).mean(axis=0)
    q = np.asarray(query_vector, np.float32)
    q = q / (np.linalg.norm(q) or 1.0) + np.float32(options.prf_weight) * centroid / (np.linalg.norm(centroid) or 1.0)
    return q / (np.linalg.norm(q) or 1.0)


def propagation(snap: Snapshot, base: np.ndarray, seeds: int, out_weight: float = 1.0,
                own: bool = False) -> np.ndarray:
    """The fused score passed one hop from the top ``seeds`` hits to their neighbours, times the edge
    type's weight (intents.EDGE_TYPE_WEIGHTS; spec/001 1.6's proximity, on the fused score), times
    ``out_weight`` over the seed's out-edges of a directed type (in-edges and ``SYMMETRIC_EDGES``: 1;
    under is_a/part_of the in-edges come from the more specific nodes): for every node the best such value, else 0. With ``own`` the neighbour's own
    fused score is used instead of the seed's (a boost for being next to a top hit)."""
    top = top_indices(base, seeds)
    out = np.zeros(snap.n, np.float32)
    if top.size == 0:
        return out
    nb = snap.graph.neighbors_of(top, "both")
    tw = snap.graph.type_weight_vector(I.EDGE_TYPE_WEIGHTS, I.DEFAULT_EDGE_TYPE_WEIGHT)
    value = (base[nb.node] if own else base[nb.origin]) * tw[nb.edge_type]
    directed = snap.graph.type_weight_vector(dict.fromkeys(SYMMETRIC_EDGES, 0.0), 1.0)[nb.edge_type] > 0
    value = np.where(nb.src_side & directed, value * out_weight, value)
    np.maximum.at(out, nb.node, value.astype(np.float32))
    return out


def fuse(snap: Snapshot, signals: Signals, w: Weights, options: SearchOptions, qv: np.ndarray | None,
         vectorless: np.ndarray | None, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The hybrid mode's weighted sum with lever 4's normalisation, feedback and graph propagation;
    returns (total, the query vector last scored)."""
    total = combine(signals, w, vectorless)
    if options.prf > 0 and qv is not None and signals.embedding is not None:
        qv = rocchio(snap, qv, total, options)
        emb = within(embedding_signal(snap, qv, exact=mask is not None), mask)
        signals.embedding = rescale(emb, options.norm, options.norm_depth)
        total = combine(signals, w, vectorless)
    if options.use_graph and options.propagate > 0:
        signals.propagation = propagation(snap, total, options.propagate_seeds, options.propagate_out,
                                          options.propagate_own)
        total = total + np.float32(options.propagate) * signals.propagation
    return total, qv


def signal_for_mode(signals: Signals, mode: str) -> Signals:
    """Single-signal ablations swap the text channel for the one being measured."""
    if mode == "bm25":
        return replace(signals, text=signals.bm25)
    if mode == "fts":
        return replace(signals, text=signals.fts if signals.fts is not None else np.zeros_like(signals.bm25))
    return signals


def combine(signals: Signals, w: Weights, vectorless: np.ndarray | None = None) -> np.ndarray:
    """The 4-weight sum. Rows in ``vectorless`` (nodes written since they were last embedded) have no
    embedding signal to lose: their other signals are weighted as if alpha were spread over them."""
    total = w.text * signals.text + w.graph * signals.graph + w.intent * signals.intent
    if signals.embedding is None:
        return total
    rest = w.text + w.graph + w.intent
    if vectorless is not None and vectorless.size and rest > 0:
        total[vectorless] *= (rest + w.embedding) / rest
    return total + w.embedding * signals.embedding


def vectorless_rows(snap: Snapshot, signals: Signals) -> np.ndarray | None:
    """Rows without a vector while the embedding signal is on (None when every row has one)."""
    if signals.embedding is None or snap.vectors is None:
        return None
    return snap.vectorless if snap.vectorless.size else None


def keyword_presence(snap: Snapshot, query: str) -> np.ndarray:
    """Mechanism 1 of spec/000 section 4 (SQL LIKE): how many query terms a node contains."""
    return _presence(snap, snap.text.query_terms(query)[:MAX_QUERY_TERMS])


def _presence(snap: Snapshot, terms: list[tuple[int, float]]) -> np.ndarray:
    out = np.zeros(snap.n, np.float32)
    m = snap.text.matrix
    for col in dict.fromkeys(c for c, _ in terms):
        out[m.indices[m.indptr[col]:m.indptr[col + 1]]] += 1.0
    return out


def rrf_rankings(snap: Snapshot, signals: Signals, query: str) -> list[np.ndarray]:
    """The seven mechanisms of spec/000 section 4 that rank without filters: LIKE (term presence),
    FTS5, BM25, embedding, graph neighbour boost, Jaccard to the top text hit. (The seventh,
    dimension filtering, only filters: it has no ranking of its own without thresholds.)"""
    rankings = [keyword_presence(snap, query), signals.bm25, signals.graph]
    rankings += [r for r in (signals.fts, signals.embedding) if r is not None]
    top = top_indices(signals.text, 1)
    if top.size:
        rankings.append(snap.graph.jaccard_all(int(top[0])).astype(np.float32))
    return rankings


def rrf(rankings: Sequence[np.ndarray], depth: int = 100) -> np.ndarray:
    """Reciprocal rank fusion: sum over mechanisms of 1 / (60 + rank) (Cormack et al., SIGIR 2009)."""
    out = np.zeros(rankings[0].shape[0], np.float32)
    for scores in rankings:
        order = top_indices(scores, depth)
        out[order] += 1.0 / (RRF_K + 1 + np.arange(order.size, dtype=np.float32))
    return out


def diversify(order: np.ndarray, base: np.ndarray,
              communities: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """+5% for the first hit of each community, then re-sort (spec/001 1.8; only for > 3 results).

    ``base`` is each candidate's score before the boost, aligned with ``order``. Returns (order,
    score, bonus) aligned by position: the boosted score is the one ranked on, so it is the one
    shown; ``bonus`` is what the boost added (0 for hits of a community already seen).
    """
    score = np.asarray(base, np.float64)
    bonus = np.zeros(order.size)
    if communities is not None and order.size > 3:
        _, first = np.unique(communities[order], return_index=True)
        bonus[first] = score[first] * (DIVERSITY_BOOST - 1.0)
    resort = np.argsort(-(score + bonus), kind="stable")
    return order[resort], (score + bonus)[resort], bonus[resort]


@dataclass(frozen=True)
class Weighting:
    """The weight each signal was given, per row: how a hit's score is explained (issue 29).

    ``base`` holds one weight per signal of ``names``; rows in ``vectorless`` (no vector yet) use
    ``scaled``, where text/graph/intent carry the embedding's share (see ``combine``)."""

    names: tuple[str, ...]
    base: np.ndarray
    scaled: np.ndarray | None = None
    vectorless: np.ndarray | None = None

    def matrix(self, rows: np.ndarray) -> np.ndarray:
        """One row of weights per row index in ``rows``."""
        out = np.tile(self.base, (rows.size, 1))
        if self.scaled is not None and self.vectorless is not None:
            out[np.isin(rows, self.vectorless)] = self.scaled
        return out


def weighting(w: Weights, signals: Signals, options: SearchOptions, mode: str,
              vectorless: np.ndarray | None) -> Weighting:
    """The weights ``search`` summed its signals with, signal by signal (mirrors ``combine``, ``fuse``,
    the solution hop and the name signal; mode "rrf" is its fused ranks alone)."""
    if mode == "rrf":
        return Weighting((*SIGNALS, "rrf"), np.eye(len(SIGNALS) + 1)[-1])
    on = {"embedding": w.embedding if signals.embedding is not None else 0.0, "text": w.text,
          "graph": w.graph, "intent": w.intent,
          "name": (1.0 if mode == "names" else options.name_weight) if signals.name is not None else 0.0,
          "solution": options.solution_hop if signals.solution is not None else 0.0,
          "propagation": options.propagate if signals.propagation is not None else 0.0}
    base = np.array([on[s] for s in SIGNALS], np.float64)
    rest = w.text + w.graph + w.intent
    if signals.embedding is None or vectorless is None or not vectorless.size or rest <= 0:
        return Weighting(SIGNALS, base)
    scaled = base.copy()
    scaled[1:4] *= (rest + w.embedding) / rest
    return Weighting(SIGNALS, base, scaled, vectorless)


def component_matrix(signals: Signals, rows: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Each signal's value (0 when off) at ``rows``, one column per name, in float64."""
    cols = [getattr(signals, s) for s in names]
    return np.stack([c[rows].astype(np.float64) if c is not None else np.zeros(rows.size) for c in cols], axis=1)


def explained_scores(signals: Signals, rows: np.ndarray, weigh: Weighting) -> np.ndarray:
    """sum(weight x component) per row, in float64: the score shown is the one its explanation adds
    up to (the float32 total only chose the candidates; they are ranked on this)."""
    return (component_matrix(signals, rows, weigh.names) * weigh.matrix(rows)).sum(axis=1)


# -- results ---------------------------------------------------------------------------------------
def method_tags(c: Components) -> str:
    return "+".join(s for s in SIGNALS if getattr(c, s) > 0) or "none"


def annotations(snap: Snapshot, hits: np.ndarray, seeds: np.ndarray,
                limit: int = 3) -> dict[int, tuple[EdgeAnnotation, ...]]:
    """For every hit at once: the edges linking it to seeds of the query, strongest edge type first."""
    nb = snap.graph.neighbors_of(hits, "both")
    keep = np.isin(nb.node, seeds) & (nb.node != nb.origin)
    origin, other, etype, src_side = nb.origin[keep], nb.node[keep], nb.edge_type[keep], nb.src_side[keep]
    strength = snap.graph.type_weight_vector(I.EDGE_TYPE_WEIGHTS, I.DEFAULT_EDGE_TYPE_WEIGHT)[etype]
    order = np.lexsort((-strength, origin))
    out: dict[int, list[EdgeAnnotation]] = {}
    for j in order:
        h, o = int(origin[j]), int(other[j])
        if len(out.setdefault(h, [])) < limit:
            s, t = (h, o) if src_side[j] else (o, h)
            out[h].append(EdgeAnnotation(source=snap.node_ids[s], target=snap.node_ids[t],
                                         type=snap.graph.types[etype[j]],
                                         direction="outgoing" if src_side[j] else "incoming",
                                         other=snap.node_ids[o], other_name=snap.names[o]))
    return {h: tuple(a) for h, a in out.items()}


def make_hits(snap: Snapshot, store: GraphStore, order: np.ndarray, score: np.ndarray, bonus: np.ndarray,
              signals: Signals, mode: str, weigh: Weighting) -> tuple[SearchHit, ...]:
    """Result objects for the final top k; ``score`` and ``bonus`` are aligned with ``order``."""
    nodes = store.get_nodes(snap.node_ids[i] for i in order)
    notes = annotations(snap, order, signals.seeds)
    values, weights = component_matrix(signals, order, weigh.names), weigh.matrix(order)
    hits = []
    for rank, (i, s, b, v, wt) in enumerate(zip(order, score, bonus, values, weights), 1):
        by_name = dict(zip(weigh.names, map(float, v)))
        c = Components(**by_name)
        node = nodes.get(snap.node_ids[i])
        if node is None:  # deleted since the snapshot; the next query rebuilds it
            continue
        hits.append(SearchHit(node=node, score=float(s), components=c,
                              method="rrf" if mode == "rrf" else method_tags(c), rank=rank,
                              edge_annotations=notes.get(int(i), ()), diversity_bonus=float(b),
                              weights=dict(zip(weigh.names, map(float, wt))),
                              bonuses={"diversity": float(b)} if mode in DIVERSE_MODES else {}))
    return tuple(hits)


def search(snap: Snapshot, store: GraphStore, query: str, k: int = 10, weights: Any = None,
           intent: str | None = None, mode: str = "hybrid", options: SearchOptions = SearchOptions(),
           embed_query: Callable[[str], np.ndarray] | None = None,
           tuned: dict[str, Any] | None = None, mask: np.ndarray | None = None) -> SearchResult:
    """One query against one snapshot; see the module docstring for the formula. ``mask`` (one bool
    per snapshot row) is a pre-filter: only the rows it keeps are scored and returned."""
    t0 = time.perf_counter()
    query, k = check_query(query), check_k(k)
    if mode not in MODES:
        raise InvalidArgument(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    check_options(options)
    if mode in FTS_MODES and not options.fts:
        options = replace(options, fts=True)
    it = I.explicit(intent) if intent else I.classify(query)
    w = choose_weights(parse_weights(weights), it, mode, options, tuned)
    qv = embed_query(query) if embed_query is not None and snap.vectors is not None and w.embedding > 0 else None
    signals = signal_for_mode(compute_signals(snap, store, query, it.name, qv, options, mask), mode)
    signals.name = name_signal(snap, query, options, mode)
    notes, warnings = _notes(snap, signals, w, options), _warnings(snap, signals, w)
    w = effective_weights(w, signals)
    vectorless = vectorless_rows(snap, signals)
    if mode in FUSION_MODES:
        signals.embedding = rescale(signals.embedding, options.norm, options.norm_depth)
        signals.text = rescale(signals.text, options.norm, options.norm_depth)
        w = fusion_weights(w, signals, options)
        total, qv = fuse(snap, signals, w, options, qv, vectorless, mask)
    else:
        if mode == "rrf":
            total = signals.rrf = rrf(rrf_rankings(snap, signals, query))
        else:
            total = combine(signals, w, vectorless)
    if mode == "hybrid" and options.solution_hop > 0 and options.use_graph:
        signals.solution = solution_signal(snap, total, options.hop_seeds, query, options.solution_gate,
                                           options.solution_edges)
        total = total + np.float32(options.solution_hop) * signals.solution
    if signals.name is not None:
        total = total + np.float32(1.0 if mode == "names" else options.name_weight) * signals.name
    if signals.embedding is not None and mode != "rrf" and nearest.approximate(snap, exact=mask is not None):
        total = exact_fill(snap, qv, signals, total, w.embedding, max(k * 3, 30))  # type: ignore[arg-type]
    if mask is not None:
        total = np.where(mask, total, np.float32(0))
    order = top_indices(total, max(k * 3, 30) if options.diversity else k)
    communities = snap.graph.communities() if options.diversity and mode in DIVERSE_MODES else None
    weigh = weighting(w, signals, options, mode, vectorless)
    order, score, bonus = diversify(order, explained_scores(signals, order, weigh), communities)
    hits = make_hits(snap, store, order[:k], score[:k], bonus[:k], signals, mode, weigh)
    if vectorless is not None and w.embedding > 0:
        hits = _mark_vectorless(snap, hits, w)
    return SearchResult(query=query, intent=it, weights=w, results=hits, mode=mode, kg=snap.db_id,
                        took_ms=(time.perf_counter() - t0) * 1000, notes=notes, warnings=warnings)


def exact_fill(snap: Snapshot, query_vector: np.ndarray, signals: Signals, total: np.ndarray, alpha: float,
               k: int) -> np.ndarray:
    """On the approximate path (index.ann) only the index's candidates have an embedding score. The
    rows that could still reach the top ``k`` with one (their score without it is within ``alpha`` of
    the k-th) get their exact cosine, best first: the ranking of the exact scan, at a fraction of it."""
    emb = signals.embedding
    top = top_indices(total, k)
    if emb is None or top.size == 0:
        return total
    open_rows = np.where(emb == 0, total, np.float32(0))
    rows = top_indices(open_rows, nearest.FILL_ROWS)
    rows = rows[total[rows] >= total[top[-1]] - alpha]
    # fill_in completes a max-normalised signal: with the non-linear norms (minmax, zscore, rank) the
    # filled rows are on the max scale, an approximation on this path only
    signals.embedding = nearest.fill_in(snap, query_vector, emb, rows)
    return total + np.float32(alpha) * (signals.embedding - emb)


def _mark_vectorless(snap: Snapshot, hits: tuple[SearchHit, ...], w: Weights) -> tuple[SearchHit, ...]:
    """Say on each hit without a vector that its score was reweighted (see ``combine``)."""
    rest = w.text + w.graph + w.intent
    if rest <= 0:
        return hits
    return tuple(replace(h, missing_signals=("embedding",)) if not snap.vector_rows[snap.index[h.node.id]] else h
                 for h in hits)


def _notes(snap: Snapshot, signals: Signals, w: Weights, options: SearchOptions) -> tuple[str, ...]:
    notes = []
    if options.fts and signals.fts is None:
        notes.append("FTS5 channel unavailable for this KG: text = in-memory BM25 only")
    return tuple(notes)


def _warnings(snap: Snapshot, signals: Signals, w: Weights) -> tuple[str, ...]:
    """What makes this ranking weaker than the KG could give: missing vectors, all or some."""
    if w.embedding <= 0:
        return ()
    if snap.vectors is None:
        return (f"no node vectors for KG '{snap.db_id}': the embedding signal is off and its weight goes to "
                f"text/graph/intent, which can rank below plain BM25; run `kgos embed {snap.db_id}` "
                f"for search by meaning"),
    missing = int(snap.vectorless.size)
    if missing and signals.embedding is not None:
        return (f"{missing} of {snap.n} nodes of '{snap.db_id}' have no vector yet (written while embedding "
                f"was unavailable or deferred): they are scored on their other signals, reweighted; "
                f"`kgos embed {snap.db_id}` embeds them"),
    return ()
