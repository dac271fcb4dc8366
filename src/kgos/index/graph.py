"""The graph index of one KG version: CSR adjacency plus the graph signals and BFS primitives.

Built once per KG version from :class:`~kgos.store.arrays.GraphArrays` and immutable afterwards (every
array is read-only; loaded arrays are memory-mapped). It serves

* the hybrid scorer's graph signals: ``graph_boost`` (spec/001 1.6), ``intent_edge_scores`` (spec/001
  1.7), ``edge_type_boost`` (spec/000 method 12), PageRank (1.6) and community labels (1.8);
* the query methods' primitives: BFS levels and parents (spec/000 methods 6 and 10), bidirectional
  shortest paths (method 9), neighbour gathers, one-against-all Jaccard, degree centrality.

Everything is vectorised over CSR ``indptr``/``indices`` gathers (DESIGN.md section 8): no Python loop
runs over nodes or edges, only over BFS levels and power iterations.

Conventions: node ids are row numbers of ``GraphArrays.node_ids``; edge type codes index ``types``;
"edge" ids are rows of the ``GraphArrays`` edge arrays. Parallel edges (same pair, any types) are all
kept and each one counts, except where a docstring says otherwise (degree centrality, Jaccard,
communities work on simple graphs, as networkx does).
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..errors import IndexDamaged, InvalidArgument
from ..store.arrays import GraphArrays

FORMAT = "kgos-graph-index/1"
PAGERANK_MIN_EDGES = 20  # spec/001 1.6: PageRank only for graphs with >= 20 edges
COMMUNITY_MIN_EDGES = 10  # spec/001 1.8: communities only for graphs with >= 10 edges
PAGERANK_FALLBACK = (200, 1e-4)  # spec/001 1.6: (max_iter, tol) retried when the first run fails
COMMUNITY_SEED = 42
DIRECTIONS = {"outgoing": (True, False), "forward": (True, False), "out": (True, False),
              "incoming": (False, True), "backward": (False, True), "in": (False, True),
              "both": (True, True)}
_EDGE_FIELDS = ("indptr", "indices", "etype", "weight", "edge")


# -- small vectorised helpers ----------------------------------------------------------------------
def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view, so nobody (scipy's in-place canonicalisation included) can alter the index."""
    view = np.asarray(a).view()
    view.flags.writeable = False
    return view


def _unique(a: np.ndarray) -> np.ndarray:
    """Sorted unique values. np.sort + a run mask: NumPy 2's hash-based np.unique is ~20x slower here."""
    s = np.sort(np.asarray(a).ravel())
    if s.size == 0:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def _first_of_runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique values, index of each one's first occurrence): a deterministic pick per value."""
    order = np.argsort(values, kind="stable")
    s = values[order]
    keep = np.ones(s.size, bool)
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep], order[keep]


def _sum_by_node(nodes: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``values`` per node id: (sorted nodes with a non-zero sum, sums)."""
    if nodes.size * 8 > n:  # dense scratch is cheaper than sorting when many nodes are touched
        dense = np.bincount(nodes, weights=values, minlength=n)
        nz = np.flatnonzero(dense)
        return nz, dense[nz]
    order = np.argsort(nodes, kind="stable")
    s = nodes[order]
    if s.size == 0:
        return s.astype(np.int64), np.zeros(0)
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    sums = np.add.reduceat(values[order].astype(np.float64), starts)
    nz = sums != 0
    return s[starts][nz].astype(np.int64), sums[nz]


def _ranked(cands: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop zeros, divide by the max so the best is 1.0, sort by score desc then node id."""
    keep = scores != 0
    cands, scores = cands[keep].astype(np.int64), scores[keep].astype(np.float64)
    top = scores.max() if scores.size else 0.0
    if top > 0:
        scores = scores / top
    order = np.lexsort((cands, -scores))
    return cands[order], scores[order]


def _positions(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(CSR entry positions of the given rows, concatenated; how many each row has)."""
    starts = indptr[rows].astype(np.int64)
    counts = indptr[rows + 1] - starts
    # Each position = its row's start + its rank inside the row, all in one arange.
    shift = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return shift + np.arange(shift.size, dtype=np.int64), counts


def _direction(direction: str) -> tuple[bool, bool]:
    """(use out-edges, use in-edges); accepts spec/000's forward/backward and outgoing/incoming."""
    try:
        return DIRECTIONS[direction]
    except KeyError:
        raise InvalidArgument(f"direction must be one of {sorted(DIRECTIONS)}, not {direction!r}") from None


def _as_nodes(nodes: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(nodes, dtype=np.int64))


# -- CSR adjacency ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Adjacency:
    """One direction of the graph as CSR: row ``u`` lists the edges leaving (or entering) ``u``.

    ``indices[k]`` is the node at the other end of entry ``k``; ``etype``, ``weight`` and ``edge``
    (row in the GraphArrays edge arrays) are aligned with it, so parallel edges of different types
    between the same pair stay separate entries. Within a row, entries keep the input edge order.
    """

    indptr: np.ndarray
    indices: np.ndarray
    etype: np.ndarray
    weight: np.ndarray
    edge: np.ndarray

    @classmethod
    def build(cls, rows: np.ndarray, cols: np.ndarray, etype: np.ndarray, weight: np.ndarray,
              n: int) -> Adjacency:
        m = int(rows.shape[0])
        idx = np.int32 if max(m, n) < 2**31 - 1 else np.int64
        # Sorting the unique key row*m + edge is a stable sort by row at the price of a plain sort.
        key = np.sort(rows.astype(np.int64) * max(m, 1) + np.arange(m, dtype=np.int64))
        edge = (key % max(m, 1)).astype(idx)
        indptr = np.zeros(n + 1, idx)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(_frozen(indptr), _frozen(cols[edge].astype(idx)), _frozen(etype[edge].astype(np.int32)),
                   _frozen(weight[edge].astype(np.float32)), _frozen(edge))

    @property
    def degree(self) -> np.ndarray:
        """Entries per row (parallel edges counted)."""
        return np.diff(self.indptr)

    def positions(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(entry positions of the given rows, concatenated; how many each row has)."""
        return _positions(self.indptr, rows)

    def matrix(self, data: np.ndarray | None = None) -> sp.csr_array:
        """A scipy CSR view (no copy) with ``data`` (default: the edge weights) as values.

        Duplicates are deliberate (parallel edges); products sum them. Read-only buffers make any
        in-place canonicalisation fail loudly instead of misaligning ``etype``/``weight``.
        """
        n = self.indptr.shape[0] - 1
        return sp.csr_array((self.weight if data is None else data, self.indices, self.indptr),
                            shape=(n, n), copy=False)


class Neighbors(NamedTuple):
    """One entry per edge gathered by :meth:`GraphIndex.neighbors_of`."""

    node: np.ndarray  # the node at the other end
    edge_type: np.ndarray  # type code
    weight: np.ndarray  # edge weight
    src_side: np.ndarray  # bool: the queried node is the edge's source (an outgoing edge)
    origin: np.ndarray  # which queried node the edge belongs to
    edge: np.ndarray  # edge row in GraphArrays


@dataclass(frozen=True)
class BFSTree:
    """Nodes reached by a BFS with, for each, the predecessor and the edge used (spec/000 6, 9, 10).

    Arrays are aligned and ordered level by level, ascending node id within a level; entry 0 is the
    start (parent -1, edge_type -1, edge -1). ``forward`` is True when the edge points parent -> node.
    Among several predecessors the first in gather order wins: the lowest-numbered parent, and an
    out-edge before an in-edge.
    """

    node: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    edge_type: np.ndarray
    edge: np.ndarray
    weight: np.ndarray
    forward: np.ndarray

    def levels(self) -> list[np.ndarray]:
        cuts = np.flatnonzero(np.diff(self.depth)) + 1
        return np.split(self.node, cuts)

    def path_to(self, node: int) -> list[tuple[int, int | None, bool | None]] | None:
        """[(start, None, None), ..., (node, type code, forward)], or None when ``node`` was not reached."""
        i = self._find(int(node))
        if i is None:
            return None
        path = []
        while self.parent[i] >= 0:
            path.append((int(self.node[i]), int(self.edge_type[i]), bool(self.forward[i])))
            i = self._find(int(self.parent[i]))
        path.append((int(self.node[i]), None, None))
        return path[::-1]

    def _find(self, node: int) -> int | None:
        hits = np.flatnonzero(self.node == node)
        return int(hits[0]) if hits.size else None


@dataclass
class _Hop:
    """The entries gathered from a node set in one or two directions (type filter applied)."""

    out_pos: np.ndarray
    in_pos: np.ndarray
    out_origin: np.ndarray
    in_origin: np.ndarray


# -- the index -------------------------------------------------------------------------------------
class GraphIndex:
    """CSR out/in adjacency of one KG version with lazily cached PageRank and communities."""

    def __init__(self, n: int, types: tuple[str, ...], out: Adjacency, inn: Adjacency,
                 derived: Mapping[str, np.ndarray] | None = None) -> None:
        self.n = int(n)
        self.types = tuple(types)
        self.out = out
        self.inn = inn
        self.out_degree = _frozen(out.degree)
        self.in_degree = _frozen(inn.degree)
        self._cache: dict[Any, Any] = dict(derived or {})
        self._lock = threading.RLock()  # re-entrant: cached values build on other cached values

    # construction and persistence -----------------------------------------------------------------
    @classmethod
    def build(cls, arrays: GraphArrays) -> GraphIndex:
        """Index a KG's arrays (src/dst int32 row numbers, type codes into ``arrays.types``)."""
        n, src, dst = arrays.n_nodes, np.asarray(arrays.src), np.asarray(arrays.dst)
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise InvalidArgument(f"edge endpoints must be node rows in [0, {n}): the arrays do not fit together")
        etype, weight = np.asarray(arrays.type_code), np.asarray(arrays.weight)
        out = Adjacency.build(src, dst, etype, weight, n)
        inn = Adjacency.build(dst, src, etype, weight, n)
        return cls(n, arrays.types, out, inn)

    @property
    def n_edges(self) -> int:
        return int(self.out.indices.shape[0])

    @property
    def out_adj(self) -> sp.csr_array:
        """Out-adjacency as scipy CSR (values: edge weights; aligned with ``out.etype``)."""
        return self.out.matrix()

    @property
    def in_adj(self) -> sp.csr_array:
        """In-adjacency (the transpose) as scipy CSR, aligned with ``inn.etype``."""
        return self.inn.matrix()

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every array of the index, PageRank and communities included once computed."""
        arrays = {f"{side}_{f}": getattr(adj, f) for side, adj in (("out", self.out), ("in", self.inn))
                  for f in _EDGE_FIELDS}
        for name in ("pagerank", "communities"):
            if name in self._cache:
                arrays[name] = self._cache[name]
        return arrays

    @classmethod
    def from_arrays(cls, n: int, types: Iterable[str], arrays: Mapping[str, np.ndarray]) -> GraphIndex:
        """Rebuild from :meth:`to_arrays` output (no copy); IndexDamaged if the arrays do not fit together."""
        out, inn = (Adjacency(**{f: _frozen(arrays[f"{side}_{f}"]) for f in _EDGE_FIELDS})
                    for side in ("out", "in"))
        derived = {k: _frozen(arrays[k]) for k in ("pagerank", "communities") if k in arrays}
        m = out.indices.shape[0]
        fits = all(a.indptr.shape == (n + 1,) and int(a.indptr[-1]) == m for a in (out, inn))
        fits &= all(getattr(a, f).shape == (m,) for a in (out, inn) for f in _EDGE_FIELDS[1:])
        if not fits or any(v.shape != (n,) for v in derived.values()):
            raise IndexDamaged("graph index arrays do not fit together (a damaged cache; it is rebuilt from the KG)")
        return cls(n, tuple(types), out, inn, derived)

    def save(self, folder: str | Path) -> None:
        """Write ``.npy`` files and ``meta.json`` (last, so a half-written folder never loads)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = self.to_arrays()
        for name, a in arrays.items():
            tmp = folder / f".{name}.{os.getpid()}.npy"
            np.save(tmp, np.asarray(a))
            os.replace(tmp, folder / f"{name}.npy")
        meta = {"format": FORMAT, "n": self.n, "types": list(self.types), "arrays": sorted(arrays)}
        tmp = folder / f".meta.{os.getpid()}.json"
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, folder / "meta.json")

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = True) -> GraphIndex:
        """Load a saved index; arrays are memory-mapped read-only unless ``mmap`` is False."""
        folder = Path(folder)
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            if meta.get("format") == FORMAT:
                mode = "r" if mmap else None
                arrays = {name: np.load(folder / f"{name}.npy", mmap_mode=mode) for name in meta["arrays"]}
                return cls.from_arrays(meta["n"], meta["types"], arrays)
        except (OSError, AttributeError, KeyError, TypeError, ValueError) as exc:  # missing, half-written, foreign
            raise IndexDamaged(f"cannot load the graph index in {folder}: {exc}") from exc
        raise IndexDamaged(f"not a {FORMAT} folder: {folder}")

    # lazily computed, cached ----------------------------------------------------------------------
    def _cached(self, key: Any, compute: Callable[[], np.ndarray]) -> np.ndarray:
        value = self._cache.get(key)
        if value is None:
            with self._lock:  # concurrent first queries compute once
                value = self._cache.get(key)
                if value is None:
                    value = self._cache[key] = compute()
                    for a in value if isinstance(value, tuple) else (value,):
                        a.flags.writeable = False  # cached results are shared: nobody may alter them
        return value

    def precompute(self, communities_from: np.ndarray | None = None) -> GraphIndex:
        """Compute PageRank and communities now (e.g. before ``save``) instead of on first use.
        ``communities_from``: a label per node (e.g. the previous version's) that Leiden refines
        instead of starting from singletons: one pass, ~4x faster, labels then depend on it."""
        self.pagerank()
        if communities_from is None or self.n_edges < COMMUNITY_MIN_EDGES:
            self.communities()
        else:
            self._cached("communities", lambda: self._communities(COMMUNITY_SEED, communities_from))
        return self

    def cached_communities(self) -> np.ndarray | None:
        """The default communities if computed (or loaded) already, else None; never computes."""
        return self._cache.get("communities")

    def pagerank(self, damping: float = 0.85, max_iter: int = 100, tol: float = 1e-6,
                 tol_per_node: bool = True) -> np.ndarray:
        """PageRank (float64, sums to 1) exactly as ``networkx.pagerank`` on the MultiDiGraph (spec/001 1.6).

        Power iteration on the row-stochastic transition matrix; every edge counts once, so parallel
        edges add up (networkx sums multi-edge weights; KG edge weights are ignored, as the spec's
        unweighted call does), self loops included; dangling nodes spread their rank uniformly.
        Converged when the L1 change < n * tol, as networkx tests it; that is loose on big graphs
        (n * 1e-6 = 1.0 at a million nodes stops after ~2 iterations), so ``tol_per_node=False``
        compares the L1 change with ``tol`` itself. If ``max_iter`` iterations do not converge, the
        result is what the spec's retry ``pagerank(max_iter=200, tol=1e-4)`` would return. Graphs
        with fewer than 20 edges get all zeros: the spec skips PageRank for them.
        """
        params = (damping, max_iter, tol, tol_per_node)
        key = "pagerank" if params == (0.85, 100, 1e-6, True) else ("pagerank", *params)
        return self._cached(key, lambda: self._pagerank(damping, max_iter, tol, self.n if tol_per_node else 1))

    def _pagerank_max(self) -> float:
        top = self._cache.get("pagerank_max")
        if top is None:
            pr = self.pagerank()
            top = self._cache["pagerank_max"] = float(pr.max()) if pr.size else 0.0
        return top

    def _pagerank(self, damping: float, max_iter: int, tol: float, scale: int) -> np.ndarray:
        n = self.n
        if self.n_edges < PAGERANK_MIN_EDGES:
            return np.zeros(n)
        outdeg = self.out_degree.astype(np.float64)
        dangling = np.flatnonzero(outdeg == 0)
        inv = np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0)
        # Row v of the in-adjacency holds v's sources u: P[v, u] = mult(u, v) / outdeg(u), so x' = P x.
        trans = self.inn.matrix(inv[self.inn.indices])
        x = np.full(n, 1.0 / n)
        fb_iter, fb_tol = PAGERANK_FALLBACK
        fallback = None
        for i in range(1, max(max_iter, fb_iter) + 1):
            last = x
            x = damping * (trans @ x + x[dangling].sum() / n) + (1.0 - damping) / n
            err = np.abs(x - last).sum()
            if i <= max_iter and err < scale * tol:
                return x
            if fallback is None and i <= fb_iter and err < scale * fb_tol:
                fallback = x  # where the spec's retry (from scratch, same iterates) would stop
            if i >= max_iter and fallback is not None:
                return fallback
        warnings.warn("PageRank did not converge; returning the last iterate", RuntimeWarning, stacklevel=3)
        return x

    def communities(self, seed: int = COMMUNITY_SEED) -> np.ndarray:
        """Community label (int32) per node on the undirected simple projection (spec/001 1.8).

        igraph's Leiden with the modularity objective, two iterations (igraph's default), seeded so
        labels are deterministic; labels are renumbered by each community's lowest node id (node 0
        is in community 0). Graphs with fewer than 10 edges: every node is its own community, as the
        spec skips detection for them. Why Leiden: networkx's greedy modularity (the spec's) is pure
        Python; igraph's multilevel (Louvain) reached the same modularity on graphs with community
        structure but took 92 s against Leiden's 4.4 s on a random 100k-node / 1M-edge graph, and
        iterating Leiden until stable took over 5 minutes there. Cost: ~1 s per million edges with
        community structure, ~10 s per million on structureless random graphs; compute it when a
        snapshot is built (``precompute``) and save it, never on a query's path.
        """
        key = "communities" if seed == COMMUNITY_SEED else ("communities", seed)
        return self._cached(key, lambda: self._communities(seed))

    def _communities(self, seed: int, initial: np.ndarray | None = None) -> np.ndarray:
        if self.n_edges < COMMUNITY_MIN_EDGES:
            return np.arange(self.n, dtype=np.int32)
        import igraph as ig

        indptr, indices, _ = self._undirected()
        rows = np.repeat(np.arange(self.n, dtype=indices.dtype), np.diff(indptr))
        upper = indices > rows  # each undirected pair once, self loops dropped
        g = ig.Graph(n=self.n)
        g.add_edges(np.column_stack([rows[upper], indices[upper]]))
        with _igraph_seed(seed):
            membership = g.community_leiden(objective_function="modularity", n_iterations=2 if initial is None else 1,
                                            initial_membership=None if initial is None else initial.tolist()).membership
        return _canonical_labels(np.asarray(membership, dtype=np.int64))

    def _undirected(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, indices, self-loop mask) of the symmetric simple 0/1 adjacency (cached)."""
        return self._cached("undirected", self._build_undirected)

    def _build_undirected(self) -> Any:
        n = np.int64(self.n)
        src = np.repeat(np.arange(self.n, dtype=np.int64), self.out_degree)
        dst = self.out.indices.astype(np.int64)
        key = _unique(np.concatenate([src * n + dst, dst * n + src]))  # both directions, deduplicated
        rows, cols = np.divmod(key, n)
        indptr = np.zeros(self.n + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n), out=indptr[1:])
        selfloop = np.zeros(self.n, bool)
        selfloop[rows[rows == cols]] = True
        idx = np.int32 if key.size < 2**31 - 1 else np.int64
        return indptr.astype(idx), cols.astype(idx), selfloop

    # scoring signals --------------------------------------------------------------------------------
    def type_mask(self, names: Iterable[str] | None) -> np.ndarray:
        """Boolean mask over type codes: True for the named types (all when None; unknown names ignored)."""
        if names is None:
            return np.ones(len(self.types), bool)
        wanted = {names} if isinstance(names, str) else set(names)
        return np.array([t in wanted for t in self.types], dtype=bool)

    def type_weight_vector(self, weights: Mapping[str, float], default: float = 0.5) -> np.ndarray:
        """Weight per edge type code; types absent from ``weights`` get ``default`` (DESIGN.md 5: 0.5,
        the relates_to weight of spec/001 1.6)."""
        return np.array([float(weights.get(t, default)) for t in self.types], dtype=np.float64)

    def _directional(self, seeds: Any, out_value: np.ndarray,
                     in_value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sum, per node, ``out_value[type]`` over edges seed -> node and ``in_value[type]`` over
        edges node -> seed (duplicate seeds count once)."""
        seeds = _unique(_as_nodes(seeds))
        po, _ = self.out.positions(seeds)
        pi, _ = self.inn.positions(seeds)
        nodes = np.concatenate([self.out.indices[po], self.inn.indices[pi]])
        values = np.concatenate([out_value[self.out.etype[po]], in_value[self.inn.etype[pi]]])
        keep = values != 0
        return _sum_by_node(nodes[keep].astype(np.int64), values[keep], self.n)

    def graph_boost(self, seeds: Any, type_weights: np.ndarray, out_factor: float = 1.0,
                    in_factor: float = 0.7, two_hop: bool = False, two_hop_top: int = 20,
                    two_hop_score: float = 0.15, pagerank_blend: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
        """Edge-type-aware graph boost of spec/001 1.6: (candidates, scores), best first, max 1.0.

        proximity(v) = sum over edges seed -> v of ``type_weight * out_factor`` + sum over edges
        v -> seed of ``type_weight * in_factor`` (every seed and every parallel edge counts). With
        ``two_hop`` (the spec's workflow/exploratory intents), each of the ``two_hop_top`` best 1-hop
        nodes (ties: lower node id) adds ``two_hop_score`` to the node at the other end of each of its
        edges, out- and in-edges alike, all types. Then over the boosted nodes
        ``final = (1 - pagerank_blend) * proximity + pagerank_blend * pagerank / max(pagerank)`` and
        final / max(final). Seeds are scored like any node, so a seed linked from another seed is
        boosted; duplicate seeds count once. Only non-zero candidates are returned, sorted by score
        desc, then node id; ``type_weights`` is indexed by type code (see ``type_weight_vector``).
        """
        tw = np.asarray(type_weights, dtype=np.float64)
        cands, prox = self._directional(seeds, tw * out_factor, tw * in_factor)
        if two_hop and cands.size:
            cands, prox = self._two_hop(cands, prox, two_hop_top, two_hop_score)
        if pagerank_blend and cands.size:
            pr, top = self.pagerank(), self._pagerank_max()
            pr_norm = pr[cands] / top if top > 0 else 0.0
            prox = (1.0 - pagerank_blend) * prox + pagerank_blend * pr_norm
        return _ranked(cands, prox)

    def _two_hop(self, cands: np.ndarray, prox: np.ndarray, top: int,
                 score: float) -> tuple[np.ndarray, np.ndarray]:
        """spec/001 1.6 step 3: +score per edge of the top 1-hop nodes to their neighbours."""
        hubs = cands[np.lexsort((cands, -prox))[:top]]
        hop = self._hop(hubs, True, True, None)
        reached = np.concatenate([self.out.indices[hop.out_pos], self.inn.indices[hop.in_pos]])
        nodes = np.concatenate([cands, reached.astype(np.int64)])
        values = np.concatenate([prox, np.full(reached.size, float(score))])
        return _sum_by_node(nodes, values, self.n)

    def intent_edge_scores(self, seeds: Any, edge_type_names: Iterable[str], forward: float = 1.0,
                           backward: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
        """Intent edge scoring of spec/001 1.7: over edges of the given types, +``forward`` to the
        target of each edge leaving a seed, +``backward`` to the source of each edge entering a seed;
        summed, divided by the max. (candidates, scores), best first. Unknown type names are ignored."""
        mask = self.type_mask(edge_type_names).astype(np.float64)
        return _ranked(*self._directional(seeds, mask * forward, mask * backward))

    def edge_type_boost(self, seeds: Any, boost_types: Iterable[str] | None = None, out_boost: float = 0.5,
                        in_boost: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
        """``_edge_type_boost`` of spec/000 method 12: +0.5 per outgoing edge seed -> v, +0.3 per
        incoming edge v -> seed, only over ``boost_types`` (None: all types), normalised to max 1.0."""
        mask = self.type_mask(boost_types).astype(np.float64)
        return _ranked(*self._directional(seeds, mask * out_boost, mask * in_boost))

    def edges_between(self, node: int, others: Any,
                      type_weights: np.ndarray | None = None) -> list[tuple[int, int, str]]:
        """Edges linking ``node`` to any of ``others`` either way, as (source, target, type name).

        Strongest first: by ``type_weights[type]`` when given, else by edge weight; ties by edge row.
        """
        others = _unique(_as_nodes(others))
        nb = self.neighbors_of(np.array([node]), "both")
        hit = np.isin(nb.node, others) & (nb.src_side | (nb.node != node))  # a self loop once, not twice
        etype, edge, src_side = nb.edge_type[hit], nb.edge[hit], nb.src_side[hit]
        other = nb.node[hit].astype(np.int64)
        strength = type_weights[etype] if type_weights is not None else nb.weight[hit]
        order = np.lexsort((edge, -np.asarray(strength, dtype=np.float64)))
        return [(int(node), int(o), self.types[t]) if s else (int(o), int(node), self.types[t])
                for o, t, s in zip(other[order], etype[order], src_side[order])]

    # gathers and BFS --------------------------------------------------------------------------------
    def _hop(self, nodes: np.ndarray, use_out: bool, use_in: bool, ok: np.ndarray | None) -> _Hop:
        """Entry positions of the nodes' edges in the chosen directions, filtered by type mask ``ok``."""
        empty = np.zeros(0, np.int64)
        parts = []
        for use, adj in ((use_out, self.out), (use_in, self.inn)):
            if not use:
                parts.append((empty, empty))
                continue
            pos, counts = adj.positions(nodes)
            origin = np.repeat(nodes, counts)
            if ok is not None:
                keep = ok[adj.etype[pos]]
                pos, origin = pos[keep], origin[keep]
            parts.append((pos, origin))
        return _Hop(parts[0][0], parts[1][0], parts[0][1], parts[1][1])

    def neighbors_of(self, nodes: Any, direction: str = "both",
                     edge_types: Iterable[str] | None = None) -> Neighbors:
        """Every edge of ``nodes`` in ``direction`` (optionally only ``edge_types``), out-edges first,
        each row's edges in input order. Parallel edges give one entry each."""
        nodes = _as_nodes(nodes)
        use_out, use_in = _direction(direction)
        ok = None if edge_types is None else self.type_mask(edge_types)
        hop = self._hop(nodes, use_out, use_in, ok)
        o, i = self.out, self.inn
        return Neighbors(
            node=np.concatenate([o.indices[hop.out_pos], i.indices[hop.in_pos]]).astype(np.int64),
            edge_type=np.concatenate([o.etype[hop.out_pos], i.etype[hop.in_pos]]),
            weight=np.concatenate([o.weight[hop.out_pos], i.weight[hop.in_pos]]),
            src_side=np.r_[np.ones(hop.out_pos.size, bool), np.zeros(hop.in_pos.size, bool)],
            origin=np.concatenate([hop.out_origin, hop.in_origin]),
            edge=np.concatenate([o.edge[hop.out_pos], i.edge[hop.in_pos]]).astype(np.int64))

    def _step(self, frontier: np.ndarray, seen: np.ndarray, use_out: bool, use_in: bool,
              ok: np.ndarray | None) -> dict[str, np.ndarray]:
        """One BFS level: the unseen nodes next to ``frontier``, each with its first-found edge."""
        hop = self._hop(frontier, use_out, use_in, ok)
        nbr = np.concatenate([self.out.indices[hop.out_pos], self.inn.indices[hop.in_pos]])
        fresh = np.flatnonzero(~seen[nbr])
        nodes, first = _first_of_runs(nbr[fresh])
        pick = fresh[first]  # index into the out-then-in concatenation
        is_out = pick < hop.out_pos.size
        pos_out, pos_in = hop.out_pos[pick[is_out]], hop.in_pos[pick[~is_out] - hop.out_pos.size]
        origin = np.concatenate([hop.out_origin, hop.in_origin])[pick]

        def field(name: str) -> np.ndarray:
            out = np.empty(pick.size, getattr(self.out, name).dtype)
            out[is_out], out[~is_out] = getattr(self.out, name)[pos_out], getattr(self.inn, name)[pos_in]
            return out

        return {"node": nodes.astype(np.int64), "parent": origin, "edge_type": field("etype"),
                "edge": field("edge").astype(np.int64), "weight": field("weight"), "forward": is_out}

    def bfs_parents(self, start: int, direction: str = "both", max_depth: int = 3,
                    edge_types: Iterable[str] | None = None) -> BFSTree:
        """BFS from ``start`` up to ``max_depth`` hops with each reached node's predecessor and edge.

        ``direction``: "outgoing"/"forward" follows edges, "incoming"/"backward" follows them
        backwards, "both" ignores direction; ``edge_types`` restricts the edges followed.
        """
        use_out, use_in = _direction(direction)
        ok = None if edge_types is None else self.type_mask(edge_types)
        seen = np.zeros(self.n, bool)
        seen[start] = True
        root = {"node": np.array([start], np.int64), "parent": np.array([-1], np.int64),
                "edge_type": np.array([-1], np.int32), "edge": np.array([-1], np.int64),
                "weight": np.array([0.0], np.float32), "forward": np.array([False])}
        levels = [root]
        while len(levels) <= max_depth:
            level = self._step(levels[-1]["node"], seen, use_out, use_in, ok)
            if level["node"].size == 0:
                break
            seen[level["node"]] = True
            levels.append(level)
        depth = np.repeat(np.arange(len(levels), dtype=np.int32), [lv["node"].size for lv in levels])
        return BFSTree(depth=depth, **{k: np.concatenate([lv[k] for lv in levels]) for k in root})

    def bfs_levels(self, start: int, direction: str = "both", max_depth: int = 3,
                   edge_types: Iterable[str] | None = None) -> list[np.ndarray]:
        """Nodes first reached at each depth, level 0 = [start]; sorted within a level. Stops early
        (fewer than ``max_depth + 1`` levels) when a level is empty."""
        use_out, use_in = _direction(direction)
        ok = None if edge_types is None else self.type_mask(edge_types)
        seen = np.zeros(self.n, bool)
        seen[start] = True
        levels = [np.array([start], np.int64)]
        while len(levels) <= max_depth:
            hop = self._hop(levels[-1], use_out, use_in, ok)
            nbr = np.concatenate([self.out.indices[hop.out_pos], self.inn.indices[hop.in_pos]])
            new = _unique(nbr[~seen[nbr]]).astype(np.int64)
            if new.size == 0:
                break
            seen[new] = True
            levels.append(new)
        return levels

    def shortest_path(self, a: int, b: int, max_depth: int = 5, direction: str = "both",
                      edge_types: Iterable[str] | None = None) -> list[tuple[int, str | None, str | None]] | None:
        """Shortest path a -> b of at most ``max_depth`` edges by bidirectional BFS (spec/000 method 9).

        Returns [(a, None, None), (v1, type, dir), ..., (b, type, dir)] where type/dir describe the
        edge between the previous node and this one: dir "forward" if it points previous -> this,
        "backward" otherwise. None when no path is within ``max_depth``. ``direction`` "both"
        (default) ignores edge direction; "outgoing" only follows edges forwards (and "incoming" only
        backwards). Deterministic: among equally short paths the meeting node with the lowest id wins.
        """
        if a == b:
            return [(int(a), None, None)]
        use_out, use_in = _direction(direction)
        ok = None if edge_types is None else self.type_mask(edge_types)
        sides = [_Side(self.n, a, use_out, use_in), _Side(self.n, b, use_in, use_out)]
        while sides[0].reach + sides[1].reach < max_depth:
            grow, other = sorted(sides, key=lambda s: s.cost(self))
            if grow.frontier.size == 0:
                return None
            level = self._step(grow.frontier, grow.seen, grow.use_out, grow.use_in, ok)  # type: ignore[arg-type]
            grow.add(level)
            met = level["node"][other.depth[level["node"]] >= 0]
            if met.size:
                best = met[np.lexsort((met, other.depth[met]))[0]]
                return self._join(sides[0], sides[1], int(best))
        return None

    def _join(self, fwd: _Side, bwd: _Side, meet: int) -> list[tuple[int, str | None, str | None]]:
        """Stitch the two half paths at ``meet``; the b side's edges flip direction."""
        head = fwd.path(meet)  # a ... meet, each step (node, type, edge points prev -> node)
        tail = bwd.path(meet)  # b ... meet, in b-side order
        path = [(v, self.types[t] if t is not None else None, _dir(f)) for v, t, f in head]
        # Walking b ... meet backwards: the step into tail[k] becomes the step from tail[k] to tail[k-1].
        for k in range(len(tail) - 1, 0, -1):
            _, t, f = tail[k]
            path.append((tail[k - 1][0], self.types[t], _dir(not f)))
        return path

    # similarity and centrality ----------------------------------------------------------------------
    def jaccard_all(self, node: int) -> np.ndarray:
        """Jaccard similarity of ``node``'s undirected neighbour set with every node's (float64, n).

        Matches ``networkx.jaccard_coefficient`` on the undirected simple graph: |N(u) ∪ N(v)| counts
        self loops as neighbours, while common neighbours exclude u and v themselves (which only
        matters with self loops); 0 where the union is empty. |N(u) ∩ N(v)| for all v at once is the
        row product U[u] @ U, computed as a gather of the neighbours' rows.
        """
        indptr, indices, selfloop = self._undirected()
        nb = indices[indptr[node]:indptr[node + 1]].astype(np.int64)
        pos, _ = _positions(indptr, nb)
        inter = np.bincount(indices[pos], minlength=self.n).astype(np.float64)
        deg = np.diff(indptr).astype(np.float64)
        union = deg[node] + deg - inter
        common = inter
        if selfloop[node]:
            common[nb] -= 1.0  # u is not its own common neighbour with anyone
        others = nb[nb != node]
        common[others] -= selfloop[others]  # nor is v with u
        return np.divide(common, union, out=np.zeros(self.n), where=union > 0)

    def jaccard_of(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """``jaccard_all(node)`` on the nodes it can be non-zero for, those sharing a neighbour with
        ``node``: (sorted nodes, Jaccard). Costs the two-hop neighbourhood, not n."""
        indptr, indices, selfloop = self._undirected()
        nb = indices[indptr[node]:indptr[node + 1]].astype(np.int64)
        pos, _ = _positions(indptr, nb)
        reached = np.sort(indices[pos].astype(np.int64))
        if reached.size == 0:
            return reached, np.zeros(0)
        starts = np.flatnonzero(np.r_[True, reached[1:] != reached[:-1]])
        cands = reached[starts]
        common = np.diff(np.r_[starts, reached.size]).astype(np.float64)
        union = float(indptr[node + 1] - indptr[node]) + (indptr[cands + 1] - indptr[cands]) - common
        in_nb = np.isin(cands, nb)
        if selfloop[node]:
            common[in_nb] -= 1.0  # u is not its own common neighbour with anyone (as jaccard_all)
        others = in_nb & (cands != node)
        common[others] -= selfloop[cands[others]]  # nor is v with u
        return cands, np.divide(common, union, out=np.zeros(cands.size), where=union > 0)

    def degree_centrality(self) -> np.ndarray:
        """``networkx.degree_centrality`` of the DiGraph: (distinct out-neighbours + distinct
        in-neighbours) / (n - 1); parallel edges count once, a self loop twice; 1.0 when n == 1."""
        return self._cached("degree_centrality", self._degree_centrality)

    def _degree_centrality(self) -> np.ndarray:
        if self.n <= 1:
            return np.ones(self.n)
        n = np.int64(self.n)
        src = np.repeat(np.arange(self.n, dtype=np.int64), self.out_degree)
        rows, cols = np.divmod(_unique(src * n + self.out.indices), n)
        degree = np.bincount(rows, minlength=self.n) + np.bincount(cols, minlength=self.n)
        return degree / (self.n - 1.0)

    def edge_type_diversity(self, nodes: Any) -> np.ndarray:
        """Number of distinct edge types on each node's edges, both directions (spec/000 method 10)."""
        nodes = _as_nodes(nodes)
        t = max(len(self.types), 1)
        _, out_counts = self.out.positions(nodes)
        _, in_counts = self.inn.positions(nodes)
        slot = np.concatenate([np.repeat(np.arange(nodes.size), c) for c in (out_counts, in_counts)])
        pairs = _unique(slot * t + self.neighbors_of(nodes, "both").edge_type)
        return np.bincount(pairs // t, minlength=nodes.size)


# -- internals ---------------------------------------------------------------------------------------
class _Depths:
    """Depth per reached node, -1 for the others, held as sorted arrays of the reached nodes only:
    a traced path reaches a few hundred nodes, and n-sized arrays per call made trace 10x slower
    at a million nodes than at 100k. ``depths[nodes]`` reads, ``depths[new_nodes] = d`` adds."""

    def __init__(self, start: int) -> None:
        self.keys = np.array([start], np.int64)
        self.values = np.zeros(1, np.int32)

    def __getitem__(self, nodes: Any) -> Any:
        nodes = np.asarray(nodes, np.int64)
        pos = np.minimum(np.searchsorted(self.keys, nodes), self.keys.size - 1)
        out = np.where(self.keys[pos] == nodes, self.values[pos], -1)
        return int(out) if out.ndim == 0 else out

    def __setitem__(self, nodes: np.ndarray, depth: int) -> None:
        keys = np.concatenate([self.keys, np.asarray(nodes, np.int64)])
        values = np.concatenate([self.values, np.full(np.size(nodes), depth, np.int32)])
        order = np.argsort(keys, kind="stable")
        self.keys, self.values = keys[order], values[order]


class _Seen:
    """``seen[nodes]`` as a bool mask over a :class:`_Depths` (what ``GraphIndex._step`` reads)."""

    def __init__(self, depths: _Depths) -> None:
        self.depths = depths

    def __getitem__(self, nodes: np.ndarray) -> np.ndarray:
        return np.asarray(self.depths[nodes]) >= 0


class _Side:
    """One half of a bidirectional BFS: depth per node (-1 unseen) and per-level parent records."""

    def __init__(self, n: int, start: int, use_out: bool, use_in: bool) -> None:
        self.depth = _Depths(start)
        self.seen = _Seen(self.depth)
        self.use_out, self.use_in = use_out, use_in
        self.frontier = np.array([start], np.int64)
        self.levels: list[dict[str, np.ndarray]] = []
        self.start = start

    @property
    def reach(self) -> int:
        return len(self.levels)

    def cost(self, g: GraphIndex) -> int:
        """Entries the next expansion would gather: grow the cheaper side first."""
        total = 0
        if self.use_out:
            total += int(g.out_degree[self.frontier].sum())
        if self.use_in:
            total += int(g.in_degree[self.frontier].sum())
        return total if self.frontier.size else -1

    def add(self, level: dict[str, np.ndarray]) -> None:
        self.depth[level["node"]] = len(self.levels) + 1
        self.levels.append(level)
        self.frontier = level["node"]

    def path(self, node: int) -> list[tuple[int, int | None, bool | None]]:
        """start ... node as (node, type code of the step into it, edge points prev -> node)."""
        steps = []
        for level in reversed(self.levels[: self.depth[node]]):
            i = int(np.searchsorted(level["node"], node))
            steps.append((node, int(level["edge_type"][i]), bool(level["forward"][i])))
            node = int(level["parent"][i])
        steps.append((int(self.start), None, None))
        return steps[::-1]


def _dir(forward: bool | None) -> str | None:
    return None if forward is None else ("forward" if forward else "backward")


def preload_igraph() -> None:
    """Import igraph in a background thread (0.5-2 s) if nothing has yet: a process that writes to a
    KG then finds it loaded when an edge write's snapshot refines its communities on a query's path."""
    global _preloading
    with _preload_lock:
        if _preloading or "igraph" in sys.modules:
            return
        _preloading = True
    threading.Thread(target=_import_igraph, name="kgos-igraph-import", daemon=True).start()


def _import_igraph() -> None:
    try:
        import igraph  # noqa: F401
    except ImportError:  # then communities fail where they are computed, with the usual message
        pass


_preload_lock = threading.Lock()
_preloading = False


def _canonical_labels(membership: np.ndarray) -> np.ndarray:
    """Renumber communities by their lowest node id, so labels depend only on the partition."""
    k = int(membership.max()) + 1 if membership.size else 0
    first = np.full(k, membership.size, np.int64)
    np.minimum.at(first, membership, np.arange(membership.size))
    rank = np.empty(k, np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(k, dtype=np.int32)
    return rank[membership]


@contextmanager
def _igraph_seed(seed: int) -> Iterator[None]:
    """Give igraph a private seeded RNG (it defaults to Python's global ``random``), then restore it."""
    import igraph as ig

    ig.set_random_number_generator(random.Random(seed))
    try:
        yield
    finally:
        ig.set_random_number_generator(random)
