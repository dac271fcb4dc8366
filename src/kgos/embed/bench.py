"""The embedding benchmark of spec/003 section 3.6: every installed embedder x every projection.

For each embedder, each node's text (``embed_text``) is embedded once (vectors already stored in the
KG for that model and that text are reused; nothing is written). Each configuration (a model and a
projection of :mod:`kgos.embed.projections`, or a pair of models and a hybrid projection) is scored on:

- **MRR** of true edges against corrupted ones: a held-out slice of the KG's edges (the learned
  projection trains on the rest), each (h, t) ranked by cosine against ``negatives`` corrupted tails
  (h, t') drawn uniformly; ties count half (the "realistic" rank of Berrendorf et al. 2020).
- **Intra-type / inter-type similarity**: the mean cosine over all pairs of distinct nodes of the
  same type / of different types; **type separation** = intra - inter (spec/003's table).
- **PCA variance**: the fraction of variance the kept components carry (PCA-based projections).

Per model it also records the embedding time per node and the memory the model took to load.
Scores are cosines of projected text vectors, not the spec's ULTRA scorer (which the link
predictors of ``kgos.linkpred`` may put on top of these projections).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument, KGOSError
from ..index.vectors import embed_text
from ..store.base import GraphStore
from .base import content_hash
from .nodes import stored_vectors
from .projections import (
    PCA,
    ConcatPCA,
    LearnedLinear,
    WeightedBlend,
    reciprocal_rank,
    split_space,
    truncate,
    unit_rows,
)
from .registry import available_embedders, get_embedder, resolve_spec

DIMS = 54  # spec/003 appendix C: ULTRA's text part of the 64-d node features
NEGATIVES = 50  # spec/003's validated run: 50 negative samples per edge
TIMING_SAMPLE = 256  # texts embedded (again) to time a model whose vectors were reused


@dataclass(frozen=True)
class ModelRun:
    """One embedder as the benchmark used it."""

    spec: str
    name: str
    dims: int
    seconds_per_node: float
    load_mb: float | None  # resident memory the model added when built (None: not measurable here)
    reused: int  # nodes whose stored vectors were reused

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProjectionScore:
    """One configuration's row of the spec/003 3.6 table."""

    config: str
    models: tuple[str, ...]
    projection: str
    dims: int
    mrr: float
    intra: float
    inter: float
    separation: float
    explained: float | None
    fit_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "models": list(self.models)}


@dataclass(frozen=True)
class EmbedBench:
    db_id: str
    nodes: int
    types: int
    train_edges: int
    test_edges: int
    negatives: int
    dims: int
    seed: int
    models: tuple[ModelRun, ...]
    rows: tuple[ProjectionScore, ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["models"] = [m.to_dict() for m in self.models]
        d["rows"] = [r.to_dict() for r in self.rows]
        return d

    def best(self) -> ProjectionScore:
        return max(self.rows, key=lambda r: r.mrr)


# -- metrics ----------------------------------------------------------------------------------------
def type_similarity(y: np.ndarray, types: np.ndarray) -> tuple[float, float]:
    """(mean cosine over same-type pairs, mean over different-type pairs) of unit rows ``y``, exact
    and O(n d): the pairs' sum of dot products is ``|sum of rows|^2`` minus the self terms."""
    y = unit_rows(y).astype(np.float64)
    codes, inverse, counts = np.unique(np.asarray(types), return_inverse=True, return_counts=True)
    sums = np.zeros((len(codes), y.shape[1]))
    np.add.at(sums, inverse, y)
    self_terms = np.bincount(inverse, weights=np.einsum("ij,ij->i", y, y), minlength=len(codes))
    same = float(np.sum(np.einsum("ij,ij->i", sums, sums) - self_terms))
    all_pairs = float(np.sum(sums.sum(axis=0) ** 2)) - float(self_terms.sum())
    n_same = float(np.sum(counts * (counts - 1)))
    n_other = float(len(y) * (len(y) - 1)) - n_same
    intra = same / n_same if n_same else 0.0
    inter = (all_pairs - same) / n_other if n_other else 0.0
    return intra, inter


def edge_mrr(y: np.ndarray, edges: np.ndarray, negatives: int, seed: int = 0) -> float:
    """Mean reciprocal rank of each true edge (h, t) among ``negatives`` corrupted (h, t'), t' drawn
    uniformly from the nodes other than h and t, scored by cosine; ties count half (Berrendorf et al.
    2020). Needs at least 3 rows."""
    if len(edges) == 0:
        return 0.0
    y = unit_rows(y)
    rng = np.random.default_rng(seed)
    h, t = edges[:, 0], edges[:, 1]
    neg = rng.integers(0, len(y) - 2, (len(edges), negatives))
    low, high = np.minimum(h, t)[:, None], np.maximum(h, t)[:, None]
    neg += neg >= low  # skip the head (a self loop is no corruption) and the true tail
    neg += neg >= high
    return reciprocal_rank(y[h], y[t], y[neg])


def split_edges(edges: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) rows of ``edges``, a seeded random split with at least one test edge."""
    order = np.random.default_rng(seed).permutation(len(edges))
    n_test = max(1, round(len(edges) * test_fraction))
    return edges[order[n_test:]], edges[order[:n_test]]


# -- the run ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Graph:
    db_id: str
    texts: list[str]
    types: np.ndarray
    edges: np.ndarray


def _graph(store: GraphStore, sample: int | None, seed: int) -> _Graph:
    arrays = store.graph_arrays()
    nodes = store.get_nodes(arrays.node_ids)
    keep = np.arange(arrays.n_nodes)
    if sample is not None and sample < arrays.n_nodes:
        keep = np.sort(np.random.default_rng(seed).choice(arrays.n_nodes, sample, replace=False))
    row = np.full(arrays.n_nodes, -1)
    row[keep] = np.arange(len(keep))
    pairs = np.stack([row[arrays.src], row[arrays.dst]], axis=1)
    pairs = pairs[(pairs >= 0).all(axis=1) & (pairs[:, 0] != pairs[:, 1])]
    texts = [embed_text(nodes[arrays.node_ids[i]]) for i in keep]
    return _Graph(store.db_id, texts, arrays.node_types[keep], np.unique(pairs, axis=0))


def installed_specs() -> list[str]:
    """The local embedders installed here, the default first (API embedders need keys and a network)."""
    default = resolve_spec("default")
    specs = [e.spec for e in available_embedders() if e.installed and e.kind == "local"]
    return sorted(specs, key=lambda s: (s != default.split(":", 1)[0], specs.index(s)))


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except (OSError, ValueError, IndexError):
        return None


def model_vectors(store: GraphStore, spec: str, texts: list[str], cache_root: Path | None = None,
                  progress: Callable[[int], None] | None = None) -> tuple[ModelRun, np.ndarray]:
    """The vectors of ``texts`` by ``spec``: stored ones (same model, same text) reused, the rest
    embedded in memory; with the model's speed (a timed sample) and its load memory."""
    before = _rss_mb()
    emb = get_embedder(spec)
    after = _rss_mb()
    load_mb = after - before if before is not None and after is not None else None
    try:
        known = stored_vectors(store, emb.name, cache_root)
    except KGOSError:  # a read-only KG with no cache folder: nothing stored to reuse
        known = {}
    hashes = [content_hash(emb.name, t) for t in texts]
    out = np.zeros((len(texts), emb.dims), np.float32)
    reuse = [i for i, h in enumerate(hashes) if h in known and known[h][1] == emb.dims]
    if reuse:
        out[reuse] = np.frombuffer(b"".join(known[hashes[i]][0] for i in reuse), np.float32).reshape(len(reuse), -1)
    todo = sorted(set(range(len(texts))) - set(reuse))
    t0 = time.perf_counter()
    if todo:
        out[todo] = emb.embed([texts[i] for i in todo], progress=progress)
        timed = len(todo)
    else:
        timed = min(TIMING_SAMPLE, len(texts))
        emb.embed(texts[:timed])
    seconds = (time.perf_counter() - t0) / max(timed, 1)
    return ModelRun(spec, emb.name, emb.dims, seconds, load_mb, len(texts) - len(todo)), out


def bench(store: GraphStore, specs: Sequence[str] | None = None, dims: int = DIMS, negatives: int = NEGATIVES,
          test_fraction: float = 0.2, seed: int = 0, sample: int | None = None, epochs: int = 20,
          cache_root: Path | None = None, progress: Callable[[str], None] | None = None) -> EmbedBench:
    """Run the spec/003 3.6 benchmark on a KG (see the module docstring). ``specs`` defaults to every
    installed local embedder; ``sample`` benchmarks that many random nodes (and the edges among them)."""
    _check(dims, negatives, test_fraction, sample, seed)
    graph = _graph(store, sample, seed)
    if len(graph.texts) < 3 or len(graph.edges) < 2:
        raise InvalidArgument(f"'{store.db_id}' is too small for this benchmark: it needs at least 3 nodes and 2 "
                              f"edges between them (has {len(graph.texts)} and {len(graph.edges)})")
    train, test = split_edges(graph.edges, test_fraction, seed)
    runs, vectors = [], {}
    for spec in dict.fromkeys(specs or installed_specs()):
        if progress is not None:
            progress(f"embedding {len(graph.texts):,} nodes with {spec}")
        run, vecs = model_vectors(store, spec, graph.texts, cache_root)
        runs.append(run)
        vectors[spec] = vecs
    rows = [r for spec, x in vectors.items() for r in _single(spec, x, graph, train, test, dims, negatives, seed, epochs)]
    for a, b in combinations(vectors, 2):
        rows.extend(_hybrid(a, b, vectors[a], vectors[b], graph, test, dims, negatives, seed))
    return EmbedBench(graph.db_id, len(graph.texts), len(np.unique(graph.types)), len(train), len(test),
                      negatives, dims, seed, tuple(runs), tuple(rows))


def _check(dims: int, negatives: int, test_fraction: float, sample: int | None, seed: int) -> None:
    if dims < 2:
        raise InvalidArgument(f"dims must be at least 2, got {dims}")
    if negatives < 1:
        raise InvalidArgument(f"negatives must be at least 1, got {negatives}")
    if not 0 < test_fraction < 1:
        raise InvalidArgument(f"test fraction must lie strictly between 0 and 1, got {test_fraction}")
    if sample is not None and sample < 2:
        raise InvalidArgument(f"sample must be at least 2 nodes, got {sample}")
    if seed < 0:
        raise InvalidArgument(f"seed must be a non-negative integer, got {seed}")


def _score(config: str, models: tuple[str, ...], projection: str, y: np.ndarray, graph: _Graph, test: np.ndarray,
           negatives: int, seed: int, explained: float | None, fit_seconds: float) -> ProjectionScore:
    intra, inter = type_similarity(y, graph.types)
    return ProjectionScore(config, models, projection, int(y.shape[1]), edge_mrr(y, test, negatives, seed),
                           intra, inter, intra - inter, explained, fit_seconds)


def _single(spec: str, x: np.ndarray, graph: _Graph, train: np.ndarray, test: np.ndarray, dims: int,
            negatives: int, seed: int, epochs: int) -> list[ProjectionScore]:
    def row(projection: str, y: np.ndarray, explained: float | None, t0: float) -> ProjectionScore:
        return _score(f"{spec}+{projection}", (spec,), projection, y, graph, test, negatives, seed, explained,
                      time.perf_counter() - t0)
    t0 = time.perf_counter()
    out = [row("none", unit_rows(x), None, t0)]
    t0 = time.perf_counter()
    out.append(row("truncate", truncate(x, dims), None, t0))
    t0 = time.perf_counter()
    pca = PCA.fit(x, dims)
    out.append(row("pca", pca.transform(x), pca.explained, t0))
    t0 = time.perf_counter()
    learned = LearnedLinear.fit(x, train, dims, epochs=epochs, seed=seed)
    out.append(row("learned", learned.transform(x), None, t0))
    return out


def _hybrid(a: str, b: str, x: np.ndarray, z: np.ndarray, graph: _Graph, test: np.ndarray, dims: int,
            negatives: int, seed: int) -> list[ProjectionScore]:
    def row(projection: str, y: np.ndarray, explained: float | None, t0: float) -> ProjectionScore:
        return _score(f"{a}+{b}+{projection}", (a, b), projection, y, graph, test, negatives, seed, explained,
                      time.perf_counter() - t0)
    t0 = time.perf_counter()
    out = [row("split", split_space(x, z, dims), None, t0)]
    t0 = time.perf_counter()
    blend = WeightedBlend.fit(x, z, dims)
    out.append(row("blend", blend.transform(x, z), blend.explained, t0))
    t0 = time.perf_counter()
    concat = ConcatPCA.fit(x, z, dims)
    out.append(row("concat-pca", concat.transform(x, z), concat.explained, t0))
    return out
