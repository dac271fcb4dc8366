"""A KG-adapted query adapter (issue 13, lever 1): a linear map trained on the KG itself, no labels.

spec/001 1.5 and spec/003 3.1 train embeddings with InfoNCE where the KG is the curriculum. Here the
embedding model stays frozen and only the query side moves: ``q' = normalise(W q)``, with ``W``
(dims x dims) learned so that a node's *pseudo-queries* (its name and aliases, embedded alone: the
name vectors of ``index.vectors``) land nearest its full-text vector (name + description), against
the other nodes of the batch and, as hard negatives, the nodes *connected* to it (InfoNCE; van den
Oord et al. 2018, "Representation Learning with Contrastive Predictive Coding", eq. 4). The graph is
what makes it work: a query must tell a node from its parent, child or sibling, and random in-batch
negatives alone taught nothing measurable (docs/embedders.md). Node vectors are untouched, so nothing
is embedded again; removing the adapter restores the model's own query vectors.

``W`` starts at the identity, is pulled back toward it (``reg * ||W - I||^2``) and training stops
when the mean reciprocal rank of a held-out tenth of the KG's own pairs (whole nodes held out) stops
improving; the best epoch is kept, and nothing is saved unless it beats the identity on that split.
The ``names+sentences`` curriculum adds, for goal- and definition-style queries, one sentence of
each node's own description as a further pseudo-query of that node (loss weight ``sentence_weight``).
Probe sets never enter training. The adapter is stored in the KG's ``kg_meta`` under
``query_adapter:<model>``, so it is scoped to the vectors it was fitted on and travels with the KG.

An optional ``progress(phase, done, total)`` is called per embedding batch of the pseudo-queries and
once per epoch; whatever it raises (an HTTP job's cancel) stops the fit there, and since the adapter is
written only after the last epoch, a stopped fit stores nothing.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from ..errors import AdapterNeedsData, InvalidArgument
from ..index.nearest import single_thread_blas
from ..index.vectors import load_name_vectors, load_vectors, name_texts
from ..store.base import GraphStore
from .base import Embedder
from .projections import _Adam

META_PREFIX = "query_adapter:"
MIN_NODES = 20  # nodes with a pseudo-query apart from their full text; fewer cannot hold out a split
MAX_PAIRS = 20_000  # pseudo-queries (a random sample beyond): embedding them is most of the time
HELD_OUT = 0.1
MAX_HELD_OUT_NODES = 1_000
VAL_CANDIDATES = 5_000  # the held-out pairs are ranked among their own targets + this many others
CURRICULA = ("names", "names+sentences")
SENTENCE_WORDS = (3, 40)  # a sentence shorter or longer than this is no query
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(`'\"])|\n+")
PhaseProgress = Callable[[str, int, int], None]  # (phase, done, total)
NAMES_PHASE = "embedding names and aliases (texts)"
SENTENCES_PHASE = "embedding description sentences (texts)"
EPOCHS_PHASE = "training the adapter (epochs)"


@dataclass(frozen=True)
class AdapterConfig:
    """Training settings (the defaults are the measured ones of docs/embedders.md)."""

    temperature: float = 0.05
    reg: float = 0.1  # weight of ||W - I||^2
    lr: float = 1e-4
    batch: int = 256
    epochs: int = 8
    patience: int = 3
    neighbours: int = 8  # connected nodes per pair, as hard negatives
    seed: int = 0
    # names: pseudo-queries are names and aliases; names+sentences adds one sentence of each
    # description (goal/definition-style queries: "list directory contents" -> ls); measured settings
    # of the latter: SENTENCES_CONFIG (docs/embedders.md)
    curriculum: str = "names"
    sentence_weight: float = 2.0  # loss weight of a sentence pair (a name pair weighs 1)
    max_sentences: int = 10_000  # sentence pseudo-queries (a random sample beyond)
    sentence: str = "random"  # which sentence of a description: first, or random


# the names+sentences curriculum as measured (go +2.4%, python-stdlib +1.1% over "names"; not the
# default: demo -0.2%, docs/embedders.md)
SENTENCES_CONFIG = AdapterConfig(curriculum="names+sentences", reg=0.03, lr=3e-4)
CONFIGS = {"names": AdapterConfig(), "names+sentences": SENTENCES_CONFIG}  # by curriculum: kg.adapt(curriculum)


def curriculum_config(curriculum: str) -> AdapterConfig:
    """The measured settings of a curriculum (``CONFIGS``); ``InvalidArgument`` naming the choices."""
    config = CONFIGS.get(curriculum)
    if config is None:
        raise InvalidArgument(f"unknown curriculum {curriculum!r}: one of {', '.join(CURRICULA)}")
    return config


@dataclass(frozen=True)
class AdapterReport:
    db_id: str
    model: str
    pairs: int
    held_out: int
    epochs: int
    val_mrr_before: float
    val_mrr_after: float
    saved: bool
    seconds: float
    fit_seconds: float = 0.0  # the training itself; the rest is reading vectors and embedding names

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AdapterStatus:
    """Whether the search model (``model``, a vector name; None: no vectors yet) has a query adapter
    stored in the KG, and what it was fitted with: its curriculum (None for adapters stored before it
    was recorded), training pairs and held-out MRR."""

    db_id: str
    model: str | None
    present: bool
    curriculum: str | None = None
    pairs: int | None = None
    val_mrr: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def adapter_status(store: GraphStore, model: str | None) -> AdapterStatus:
    """What ``store`` keeps of ``model``'s query adapter (a damaged entry counts as none, as in search)."""
    meta = store.meta()
    if model is None or load_adapter(meta, model) is None:
        return AdapterStatus(store.db_id, model, False)
    data = json.loads(meta[meta_key(model)])
    return AdapterStatus(store.db_id, model, True, data.get("curriculum"), data.get("pairs"), data.get("val_mrr"))


def meta_key(model: str) -> str:
    return META_PREFIX + model


def train_adapter(store: GraphStore, embedder: Embedder, cache_root: Path | None = None,
                  config: AdapterConfig = AdapterConfig(), save: bool = True,
                  progress: PhaseProgress | None = None) -> AdapterReport:
    """Fit the query adapter of ``embedder``'s vectors on this KG and store it (``save``) when it
    beats the identity on the held-out pairs. Raises ``AdapterNeedsData`` (nothing changed) when the
    KG has too few nodes whose name says something apart from their full text; an exception raised by
    ``progress`` also leaves the KG unchanged (the adapter is written after the last epoch only)."""
    t0 = time.perf_counter()
    if save and (store.read_only or not hasattr(store, "set_meta")):
        raise InvalidArgument(f"'{store.db_id}' is read-only: a query adapter is stored in the KG itself")
    if config.curriculum not in CURRICULA:
        raise InvalidArgument(f"unknown curriculum {config.curriculum!r}: one of {', '.join(CURRICULA)}")
    queries, targets, owner = training_pairs(store, embedder, cache_root, progress)
    weights = np.ones(len(owner), np.float32)
    if config.curriculum == "names+sentences":
        queries, owner, weights = _with_sentences(store, embedder, queries, owner, targets, config, progress)
    graph = adjacency(store)
    if graph.nnz == 0:
        raise AdapterNeedsData(f"'{store.db_id}' has no edges: a query adapter learns to tell each node from the "
                               "nodes connected to it, so it needs a KG with edges")
    train, val = _split(owner, config.seed)
    t1 = time.perf_counter()
    with single_thread_blas():  # small products: a BLAS pool on shared cores waits more than it works
        w, epochs, before, after = fit(queries, targets, owner, graph, train, val, config, weights, progress)
    fitted = time.perf_counter() - t1
    saved = save and after > before
    if saved:
        store.set_meta(**{meta_key(embedder.name): _encode(w, embedder.name, len(train), after, config.curriculum)})  # type: ignore[attr-defined]
    return AdapterReport(store.db_id, embedder.name, len(train), len(val), epochs, before, after, saved,
                         time.perf_counter() - t0, fitted)


def search_embedder(store: GraphStore) -> Embedder:
    """The embedder of the vectors this KG's search uses (its ``embedder`` setting)."""
    from .registry import get_embedder
    spec = store.meta().get("embedder")
    if not spec:
        raise AdapterNeedsData(f"'{store.db_id}' has no vectors yet: run `kgos embed {store.db_id}` first")
    return get_embedder(spec)


def adapt_kg(store: GraphStore, cache_root: Path | None = None, config: AdapterConfig = AdapterConfig(),
             progress: PhaseProgress | None = None) -> AdapterReport:
    """``kgos embed KG --adapt``: fit (and store, when it wins) the query adapter of the KG's search model."""
    return train_adapter(store, search_embedder(store), cache_root, config, progress=progress)


def drop_kg_adapter(store: GraphStore) -> bool:
    """``kgos embed KG --drop-adapter``: remove the query adapter of the KG's search model."""
    spec = store.meta().get("embedder")
    return drop_adapter(store, search_embedder(store).name) if spec else False


def drop_adapter(store: GraphStore, model: str) -> bool:
    """Remove the query adapter of ``model`` (search uses the model's own query vectors again)."""
    if not store.meta().get(meta_key(model)):
        return False
    store.set_meta(**{meta_key(model): ""})  # type: ignore[attr-defined]  # empty = none (every store can write it)
    return True


def load_adapter(meta: dict[str, str], model: str) -> np.ndarray | None:
    """The adapter matrix of ``model`` from a KG's metadata, or None (none, or of other dims)."""
    raw = meta.get(meta_key(model))
    if not raw:
        return None
    try:
        data = json.loads(raw)
        dims = int(data["dims"])
        w = np.frombuffer(base64.b64decode(data["w"]), np.float32).reshape(dims, dims)
    except (ValueError, KeyError, TypeError):
        return None  # a damaged entry: search goes on without it
    return w


def adapt(w: np.ndarray | None, query: np.ndarray) -> np.ndarray:
    """``normalise(W q)``: the adapted query vector (``query`` itself without an adapter)."""
    if w is None or query.shape[0] != w.shape[1] or not np.any(query):
        return query
    with single_thread_blas():  # a BLAS pool on shared cores made this 0.05 ms product cost ~1 ms
        out = w @ query
    norm = float(np.linalg.norm(out))
    return (out / norm).astype(np.float32) if norm > 0 else query


# -- the curriculum ---------------------------------------------------------------------------------
def adjacency(store: GraphStore) -> sparse.csr_matrix:
    """Who is connected to whom (either direction), rows in ``store.iter_nodes()`` order."""
    arrays = store.graph_arrays()
    order = {nid: i for i, nid in enumerate(n.id for n in store.iter_nodes())}
    rows = np.fromiter((order[nid] for nid in arrays.node_ids), np.int64, len(arrays.node_ids))
    src, dst = rows[np.asarray(arrays.src, np.int64)], rows[np.asarray(arrays.dst, np.int64)]
    keep = src != dst
    n = len(order)
    ones = np.ones(2 * int(keep.sum()), np.float32)
    both = sparse.csr_matrix((ones, (np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]]))),
                             shape=(n, n))
    both.sum_duplicates()
    return both


def sample_neighbours(graph: sparse.csr_matrix, rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` connected nodes of each row, drawn with replacement (-1 for a node without any)."""
    start, degree = graph.indptr[rows], np.diff(graph.indptr)[rows]
    pos = start[:, None] + (rng.random((len(rows), k)) * degree[:, None]).astype(np.int64)
    picked = graph.indices[np.minimum(pos, max(graph.indices.size - 1, 0))] if graph.indices.size else pos
    return np.where(degree[:, None] > 0, picked, -1)


def training_pairs(store: GraphStore, embedder: Embedder, cache_root: Path | None = None,
                   progress: PhaseProgress | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pseudo-query vectors, their nodes' full-text vectors, owner node row of each pair): every name
    and alias vector of a node that has a full-text vector (the stored name vectors; embedded here,
    without storing, for nodes that have none)."""
    nodes = list(store.iter_nodes())
    ids = tuple(n.id for n in nodes)
    full = load_vectors(store, embedder.name, ids, cache_root)
    if full is None:
        raise AdapterNeedsData(f"'{store.db_id}' has no vectors of {embedder.name}: run `kgos embed {store.db_id}` first")
    has = np.einsum("ij,ij->i", full, full) > 0
    names = load_name_vectors(store, embedder.name, ids, cache_root)
    queries, owner = _stored_names(names, has)
    named = set(owner.tolist())
    missing = [i for i, n in enumerate(nodes) if has[i] and i not in named and name_texts(n)]
    if len(missing) > MAX_PAIRS:  # embedding the names is most of the time: only as many as are used
        missing = sorted(np.random.default_rng(0).choice(missing, MAX_PAIRS, replace=False).tolist())
    if missing:
        q2, o2 = _embedded_names(embedder, [nodes[i] for i in missing], np.array(missing), progress)
        queries = np.vstack([queries, q2]) if len(owner) else q2
        owner = np.concatenate([owner, o2])
    if len(np.unique(owner)) < MIN_NODES:
        raise AdapterNeedsData(
            f"'{store.db_id}' has {len(np.unique(owner))} node(s) whose name or aliases differ from their full text "
            f"(name + description); a query adapter needs at least {MIN_NODES}: add descriptions or aliases")
    if len(owner) > MAX_PAIRS:
        keep = np.sort(np.random.default_rng(0).choice(len(owner), MAX_PAIRS, replace=False))
        queries, owner = queries[keep], owner[keep]
    return queries.astype(np.float32), full, owner


def description_sentences(text: str) -> list[str]:
    """A description's sentences that can stand for a query (``SENTENCE_WORDS`` long), whitespace
    collapsed, in order: the first is a man page's NAME summary, a definition's genus."""
    out = []
    for part in _SENTENCE_END.split(text.strip()) if text else ():
        words = part.rstrip(" .;").split()
        if SENTENCE_WORDS[0] <= len(words) <= SENTENCE_WORDS[1]:
            out.append(" ".join(words))
    return out


def pick_sentence(text: str, which: str, rng: np.random.Generator) -> str:
    """The pseudo-query of a description: its ``first`` usable sentence or a ``random`` one ("" if none)."""
    usable = description_sentences(text)
    if not usable:
        return ""
    return usable[0] if which == "first" else usable[int(rng.integers(len(usable)))]


def sentence_pairs(store: GraphStore, embedder: Embedder, has: np.ndarray, limit: int, which: str = "first",
                   progress: PhaseProgress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(first-sentence vectors, owner rows): a goal- or definition-style pseudo-query of each node
    with a full-text vector whose description opens with a usable sentence (at most ``limit``,
    a fixed random sample beyond; embedded here, not stored)."""
    rows, texts = [], []
    rng = np.random.default_rng(0)
    for i, node in enumerate(store.iter_nodes()):
        sentence = pick_sentence(node.description or "", which, rng) if has[i] else ""
        if sentence and sentence.casefold() != node.name.casefold():
            rows.append(i)
            texts.append(sentence)
    if len(rows) > limit:
        keep = np.sort(np.random.default_rng(0).choice(len(rows), limit, replace=False))
        rows, texts = [rows[k] for k in keep], [texts[k] for k in keep]
    if not rows:
        return np.zeros((0, 0), np.float32), np.zeros(0, np.int64)
    vectors = embedder.embed(texts, progress=phase_progress(progress, SENTENCES_PHASE, len(texts)))
    return np.asarray(vectors, np.float32), np.asarray(rows, np.int64)


def _with_sentences(store: GraphStore, embedder: Embedder, queries: np.ndarray, owner: np.ndarray,
                    targets: np.ndarray, config: AdapterConfig,
                    progress: PhaseProgress | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    has = np.einsum("ij,ij->i", targets, targets) > 0
    sq, so = sentence_pairs(store, embedder, has, config.max_sentences, config.sentence, progress)
    weights = np.concatenate([np.ones(len(owner), np.float32), np.full(len(so), config.sentence_weight, np.float32)])
    return (np.vstack([queries, sq]) if len(so) else queries), np.concatenate([owner, so]), weights


def _stored_names(names: Any, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if names is None:
        return np.zeros((0, 0), np.float32), np.zeros(0, np.int64)
    keep = has[names.owner]
    return np.asarray(names.matrix[keep], np.float32), names.owner[keep]


def _embedded_names(embedder: Embedder, nodes: list[Any], rows: np.ndarray,
                    progress: PhaseProgress | None = None) -> tuple[np.ndarray, np.ndarray]:
    texts = [name_texts(n) for n in nodes]
    flat = [t for ts in texts for t in ts]
    vectors = embedder.embed(flat, progress=phase_progress(progress, NAMES_PHASE, len(flat)))
    owner = np.repeat(rows, [len(ts) for ts in texts])
    return np.asarray(vectors, np.float32), owner


def phase_progress(progress: PhaseProgress | None, phase: str, total: int) -> Callable[[int], None] | None:
    """An embedder's per-batch ``progress(n)`` as ``progress(phase, done, total)`` calls."""
    if progress is None:
        return None
    done = [0]

    def advance(n: int) -> None:
        done[0] += n
        progress(phase, done[0], total)
    return advance


def _split(owner: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair indices of training and held-out pairs; whole nodes are held out (no name leaks)."""
    nodes = np.unique(owner)
    rng = np.random.default_rng(seed)
    held = rng.choice(nodes, min(MAX_HELD_OUT_NODES, max(2, int(len(nodes) * HELD_OUT))), replace=False)
    val_mask = np.isin(owner, held)
    return np.flatnonzero(~val_mask), np.flatnonzero(val_mask)


# -- training ---------------------------------------------------------------------------------------
def fit(queries: np.ndarray, targets: np.ndarray, owner: np.ndarray, graph: sparse.csr_matrix,
        train: np.ndarray, val: np.ndarray, config: AdapterConfig, weights: np.ndarray | None = None,
        progress: PhaseProgress | None = None) -> tuple[np.ndarray, int, float, float]:
    """(W, epochs run, held-out MRR of the identity, held-out MRR of W): Adam on the InfoNCE loss
    (pair i weighted by ``weights[i]``), early-stopped on the held-out MRR (the best epoch is kept);
    ``progress(EPOCHS_PHASE, epoch, config.epochs)`` before the first epoch (0) and after each."""
    report = progress or (lambda phase, done, total: None)
    weights = np.ones(len(owner), np.float32) if weights is None else weights
    dims = queries.shape[1]
    eye = np.eye(dims, dtype=np.float32)
    rng = np.random.default_rng(config.seed)
    candidates = _candidates(owner[val], graph, rng)
    before = best = held_out_mrr(eye, queries[val], owner[val], targets, candidates)
    w, best_w, best_epoch, epoch = eye.copy(), eye.copy(), 0, 0
    adam = _Adam(config.lr, (w,))
    report(EPOCHS_PHASE, 0, config.epochs)
    for epoch in range(1, config.epochs + 1):
        for batch in np.array_split(rng.permutation(train), max(1, len(train) // config.batch)):
            rows = owner[batch]
            columns = np.concatenate([rows, sample_neighbours(graph, rows, config.neighbours, rng).ravel()])
            grad = infonce_grad(w, queries[batch], targets[np.maximum(columns, 0)], rows, columns, config.temperature,
                                weights[batch])
            (w,) = adam.step((w,), (grad + 2 * config.reg * (w - eye),))
        score = held_out_mrr(w, queries[val], owner[val], targets, candidates)
        report(EPOCHS_PHASE, epoch, config.epochs)
        if score > best:
            best, best_w, best_epoch = score, w.copy(), epoch
        elif epoch - best_epoch >= config.patience:
            break
    return best_w.astype(np.float32), epoch, float(before), float(best)


def infonce_grad(w: np.ndarray, q: np.ndarray, c: np.ndarray, rows: np.ndarray, columns: np.ndarray,
                 tau: float, weights: np.ndarray | None = None) -> np.ndarray:
    """dL/dW of L = mean_i weight_i * -log softmax_j(cos(W q_i, c_j) / tau)[i] (InfoNCE, van den Oord
    et al. 2018, eq. 4; weights 1 without ``weights``): candidate j of node ``columns[j]`` (the first ``len(rows)`` are the batch's own targets,
    so pair i's positive is column i); other columns of pair i's own node and -1 columns are masked."""
    batch = len(rows)
    u = q @ w.T
    norm = np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
    qn = u / norm
    masked = (columns[None, :] == rows[:, None]) | (columns[None, :] < 0)
    masked[np.arange(batch), np.arange(batch)] = False
    logits = np.where(masked, -np.inf, (qn @ c.T) / tau)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(batch), np.arange(batch)] -= 1.0
    if weights is not None:
        p *= np.asarray(weights, p.dtype)[:, None]
    g_qn = (p @ c) / (tau * batch)
    g_u = (g_qn - np.sum(g_qn * qn, axis=1, keepdims=True) * qn) / norm
    return (g_u.T @ q).astype(np.float32)


def _candidates(val_owner: np.ndarray, graph: sparse.csr_matrix, rng: np.random.Generator) -> np.ndarray:
    """What held-out pairs are ranked among: their own nodes, the nodes connected to those (the hard
    part of the real task) and a random sample of the rest."""
    own = np.unique(val_owner)
    near = graph[own].indices
    n = graph.shape[0]
    return np.union1d(np.union1d(own, near), rng.choice(n, min(n, VAL_CANDIDATES), replace=False))


def held_out_mrr(w: np.ndarray, q: np.ndarray, owner: np.ndarray, targets: np.ndarray, candidates: np.ndarray) -> float:
    """Mean reciprocal rank of each held-out pseudo-query's node among ``candidates`` (full vectors)."""
    if len(owner) == 0:
        return 0.0
    u = q @ w.T
    u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
    scores = u @ targets[candidates].T
    own = np.einsum("ij,ij->i", u, targets[owner])
    ranks = 1 + (scores > own[:, None]).sum(axis=1)
    return float(np.mean(1.0 / ranks))


def _encode(w: np.ndarray, model: str, pairs: int, val_mrr: float, curriculum: str = "names") -> str:
    return json.dumps({"model": model, "dims": int(w.shape[0]), "pairs": pairs, "val_mrr": round(val_mrr, 4),
                       "curriculum": curriculum,
                       "w": base64.b64encode(np.ascontiguousarray(w, np.float32).tobytes()).decode("ascii")})
