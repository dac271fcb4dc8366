"""Search and the graph methods of a PostgreSQL KG in pushdown mode (docs/postgres.md "Pushdown").

The database finds the candidates: text matches by its full-text index (GIN, ``ts_rank_cd``), nearest
vectors by pgvector's HNSW index, exact names, and the edges around the best of them. Those few
hundred nodes become a small in-memory KG (``SubgraphStore``), and the usual scorer
(``hybrid.search``) ranks it: same signals, weights, fusion and explanations
(``score == sum(weights * components) + sum(bonuses)``), with text statistics (BM25's document
frequencies) and graph signals over the candidates instead of the whole KG. Impact analysis is one
recursive CTE, path tracing a bidirectional BFS of indexed hops; both return the in-memory methods'
records. Nothing of the whole KG is held in the server's memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..index import snapshot as snapshots
from ..index.graph import BFSTree
from ..methods.results import ImpactedNode, ImpactResult, NodeRef, PathResult, PathStep
from ..methods.structure import critical_path
from ..model import Edge, Neighbor, Node
from ..store.base import GraphStore
from ..store.native import node_of_row
from ..store.postgres_pushdown import DEFAULT_NODES, NODES_ENV, Edge4, Pushdown, _env_int, env_mode
from . import hybrid
from .engine import Prefilter, SearchEngine
from .results import SearchResult

TEXT_CANDIDATES = 50
VECTOR_CANDIDATES = 50
SEEDS = 10  # of each channel: whose edges are read (the graph signals' neighbourhood)
PER_SEED_EDGES = 8
MAX_SUBGRAPH_EDGES = 1000


def wanted(store: GraphStore) -> bool:
    """Pushdown for this KG? Its own setting (``kg_meta`` key ``pushdown``: on/off/auto), else
    ``KGOS_PUSHDOWN``; auto = from ``KGOS_PUSHDOWN_NODES`` nodes (default 500,000) when the server has
    pgvector. Only PostgreSQL KGs push down."""
    if getattr(store, "sql_dialect", None) != "postgresql" or not hasattr(store, "schema"):
        return False
    mode = (store.meta().get("pushdown") or env_mode()).strip().lower()
    if mode not in ("on", "off", "auto"):
        raise InvalidArgument(f"KG '{store.db_id}': setting pushdown={mode!r}; choose on, off or auto")
    if mode != "auto":
        return mode == "on"
    pd = Pushdown(store)
    return pd.vector_version is not None and pd.approx_nodes() >= _env_int(NODES_ENV, DEFAULT_NODES)


class SubgraphStore(GraphStore):
    """A few hundred nodes of a KG with the edges among them and their vectors, in memory: what
    the scorer ranks in pushdown mode. Read-only."""

    def __init__(self, db_id: str, version: str, meta: dict[str, str], rows: list[tuple[Any, ...]],
                 edges: Iterable[Edge4], vectors: dict[int, tuple[str, bytes, int]], model: str | None) -> None:
        # read_only False (writes are still refused: supports_writes is False) lets index.vectors read
        # this store's own vector table instead of looking for a sidecar file
        self.db_id, self._version, self._meta, self.read_only = db_id, version, meta, False
        self.nodes = {r[1]: node_of_row(r) for r in rows}
        id_of = {int(r[0]): r[1] for r in rows}
        self.edges = [Edge(id_of[e.source], id_of[e.target], e.type, e.weight)
                      for e in edges if e.source in id_of and e.target in id_of]
        self.model = model
        self.vectors = {id_of[k]: v for k, v in vectors.items() if k in id_of}

    def meta(self) -> dict[str, str]:
        return dict(self._meta)

    def version(self) -> str:
        return self._version

    def close(self) -> None:
        """Nothing to release: all in memory."""

    def node_count(self) -> int:
        return len(self.nodes)

    def edge_count(self) -> int:
        return len(self.edges)

    def get_node(self, node_id: str) -> Node | None:
        return self.nodes.get(node_id)

    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, Node]:
        return {i: self.nodes[i] for i in node_ids if i in self.nodes}

    def find_nodes(self, name: str, type: str | None = None, limit: int = 50) -> list[Node]:
        from ..model import normalize_name
        key = normalize_name(name)
        return [n for n in self.nodes.values() if normalize_name(n.name) == key
                and (type is None or n.type == type)][:limit]

    def search_names(self, text: str, limit: int = 10) -> list[Node]:
        return [n for n in self.nodes.values() if text.lower() in n.name.lower()][:limit]

    def iter_nodes(self) -> Iterator[Node]:
        return iter(list(self.nodes.values()))

    def iter_edges(self) -> Iterator[Edge]:
        return iter(list(self.edges))

    def _node_key(self, node_id: str) -> str:
        if node_id not in self.nodes:
            raise self.not_found(node_id)
        return node_id

    def _hop(self, key: Any, side: str, types: list[str] | None, limit: int | None) -> list[Neighbor]:
        here = (lambda e: e.source) if side == "outgoing" else (lambda e: e.target)
        there = (lambda e: e.target) if side == "outgoing" else (lambda e: e.source)
        out = [Neighbor(node=self.nodes[there(e)], edge=e, direction=side) for e in self.edges
               if here(e) == key and (types is None or e.type in types)]
        return sorted(out, key=lambda n: -n.edge.weight)[:limit]

    def get_edge(self, source: str, target: str, type: str) -> Edge | None:
        return next((e for e in self.edges if (e.source, e.target, e.type) == (source, target, type)), None)

    def vector_table(self) -> Any:
        return _SubVectors(self)


class _SubVectors:
    """``index.vectors``' table interface over the subgraph's vectors (one model)."""

    native = True

    def __init__(self, sub: SubgraphStore) -> None:
        self.sub = sub

    def rows(self, model: str, with_vectors: bool = False) -> dict[str, Any]:
        if model != self.sub.model:
            return {}
        if with_vectors:
            return dict(self.sub.vectors)
        return {k: v[0] for k, v in self.sub.vectors.items()}


class PushdownEngine(SearchEngine):
    """``SearchEngine`` whose ``search`` runs in the database (the other methods of the engine, and
    the query methods other than impact and trace, still read the whole-KG snapshot)."""

    def __init__(self, store: GraphStore, cache_root: Path | None = None, embedder: str | None = None) -> None:
        super().__init__(store, cache_root, embedder=embedder)
        self.pd = Pushdown(store)
        self._cached_version: str | None = None

    def search(self, query: str, k: int = 10, weights: Any = None, intent: str | None = None,
               mode: str = "hybrid", prefilter: Prefilter | None = None) -> SearchResult:
        if prefilter is not None:  # a dimension filter's mask is over the whole-KG snapshot
            return super().search(query, k, weights, intent, mode, prefilter)
        query, k = hybrid.check_query(query), hybrid.check_k(k)
        version = self.store.version()
        if version != self._cached_version:
            self.cache.clear()
            self._cached_version = version
        key = ("pushdown", query, k, mode, intent, tuple(weights) if isinstance(weights, (list, tuple)) else str(weights))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        result = self._search(query, k, weights, intent, mode, version)
        self.cache.put(key, result)
        return result

    def _search(self, query: str, k: int, weights: Any, intent: str | None, mode: str, version: str) -> SearchResult:
        model = self._vector_model()
        self.pd.sync(model)
        qv = self.embed_query(query) if model and mode not in ("bm25", "fts", "text", "graph", "names") else None
        with self.pd.session():  # one transaction for every candidate read
            rowids, sub, counts, note = self._candidates(query, qv, model, version)
        snap = snapshots.build(sub, self.text, model if sub.vectors else None)
        tuned, warnings = self.usable_profile(snap)
        result = hybrid.search(snap, sub, query, k, weights, intent, mode, self.options,
                               embed_query=self.embed_query, tuned=tuned)
        notes = ((f"pushdown: ranked {len(rowids)} candidates from PostgreSQL ({counts[0]} by text, "
                 f"{counts[1]} by vector, {counts[2]} edges)"),) + ((note,) if note else ())
        if weights is not None:
            warnings = ()
        return replace(result, notes=result.notes + notes, warnings=result.warnings + warnings)

    def _candidates(self, query: str, qv: np.ndarray | None, model: str | None,
                    version: str) -> tuple[list[int], SubgraphStore, tuple[int, int, int], str | None]:
        text, note = self.pd.text_candidates(query, TEXT_CANDIDATES)
        near = self.pd.vector_candidates(model, qv, VECTOR_CANDIDATES) if qv is not None and model else []
        named = self.pd.name_candidates(query, 10)
        seeds = list(dict.fromkeys([r for r, _ in text[:SEEDS]] + [r for r, _ in near[:SEEDS]] + named))
        edges = self.pd.neighbourhood(seeds, PER_SEED_EDGES, MAX_SUBGRAPH_EDGES)
        rowids = sorted({r for r, _ in text} | {r for r, _ in near} | set(named)
                        | {e.source for e in edges} | {e.target for e in edges})
        sub = SubgraphStore(self.store.db_id, version, self.store.meta(), self.pd.node_rows(rowids), edges,
                            self.pd.vectors_of(model, rowids) if model else {}, model)
        return rowids, sub, (len(text), len(near), len(edges)), note


# -- the graph methods ---------------------------------------------------------------------------------
_DIRECTION = {"forward": "forward", "backward": "backward", "both": "both",
              "outgoing": "forward", "incoming": "backward"}


def impact(pd: Pushdown, ref: NodeRef, direction: str, max_depth: int, per_depth: int,
           notes: tuple[str, ...] = ()) -> ImpactResult:
    """Method 6 in the database: the BFS tree by one recursive CTE; risk = 1/depth x weight x
    criticality (edge count / the KG's largest), ranked and cut per depth as in memory."""
    with pd.session():
        return _impact(pd, ref, direction, max_depth, per_depth, notes)


def _impact(pd: Pushdown, ref: NodeRef, direction: str, max_depth: int, per_depth: int,
            notes: tuple[str, ...]) -> ImpactResult:
    root = pd.rowids_of([ref.id])[ref.id]
    rows = pd.reach(root, _DIRECTION.get(direction, direction), max_depth)
    rows.sort(key=lambda r: (r[1], r[0]))  # level by level, ascending node: the in-memory tree's order
    nodes = [r[0] for r in rows]
    top = pd.top_degree()
    types = sorted({r[3] for r in rows[1:]})
    pos = {n: i for i, n in enumerate(nodes)}
    tree = BFSTree(node=np.arange(len(rows), dtype=np.int64), depth=np.array([r[1] for r in rows], np.int32),
                   parent=np.array([pos.get(r[2], -1) for r in rows], np.int64),
                   edge_type=np.array([types.index(r[3]) if i else -1 for i, r in enumerate(rows)], np.int32),
                   edge=np.full(len(rows), -1, np.int64), weight=np.array([r[4] for r in rows], np.float32),
                   forward=np.array([r[5] for r in rows]))
    crit = np.array([r[6] / top if top else 0.0 for r in rows])
    risk = np.zeros(len(rows))
    risk[1:] = tree.weight[1:] * crit[1:] / np.maximum(tree.depth[1:], 1)
    counts, listed = {}, {}
    for d in range(1, int(tree.depth.max()) + 1 if len(rows) else 1):
        idx = np.flatnonzero(tree.depth == d)
        counts[d] = int(idx.size)
        listed[d] = idx[np.lexsort((tree.node[idx], -risk[idx]))][:per_depth]
    path = critical_path(tree, risk)
    # node rows only for what the result names (thousands of nodes are reached at depth 3)
    named = [nodes[i] for i in path] + [nodes[i] for idx in listed.values() for i in idx]
    refs = _refs(pd, named + [rows[i][2] for idx in listed.values() for i in idx])
    by_depth = {}
    for d, idx in listed.items():
        by_depth[d] = tuple(ImpactedNode(
            node=refs[nodes[i]], depth=d, risk=float(risk[i]), parent=refs[rows[i][2]].id, edge_type=rows[i][3],
            direction="forward" if rows[i][5] else "backward", weight=float(rows[i][4]), criticality=float(crit[i]))
            for i in idx)
    traversed: dict[str, int] = {}
    for r in rows[1:]:
        traversed[r[3]] = traversed.get(r[3], 0) + 1
    truncated = any(n > per_depth for n in counts.values())
    return ImpactResult(node=ref, direction=direction, max_depth=max_depth, total_impacted=len(rows) - 1,
                        counts_by_depth=counts, risk_by_depth=by_depth,
                        critical_path=tuple(refs[nodes[i]] for i in path),
                        edge_types_traversed=dict(sorted(traversed.items(), key=lambda kv: (-kv[1], kv[0]))),
                        truncated=truncated, notes=notes + ("pushdown: one recursive query in PostgreSQL",))


def trace(pd: Pushdown, a: NodeRef, b: NodeRef, max_depth: int, notes: tuple[str, ...] = ()) -> PathResult:
    """Method 9 in the database: a bidirectional BFS, one indexed query per level (the smaller frontier
    grows), ignoring edge direction; each step records whether its edge points along the path."""
    with pd.session():
        ids = pd.rowids_of([a.id, b.id])
        found = _meet(pd, ids[a.id], ids[b.id], max_depth)
        if found is None:
            return PathResult(a, b, False, None, (), max_depth, notes + (f"no path of at most {max_depth} edges",))
        refs = _refs(pd, [n for n, _, _ in found])
    steps = tuple(PathStep(refs[n], t, d) for n, t, d in found)
    return PathResult(a, b, True, len(steps) - 1, steps, max_depth, notes)


def _meet(pd: Pushdown, start: int, goal: int, max_depth: int) -> list[tuple[int, str | None, str | None]] | None:
    if start == goal:
        return [(start, None, None)]
    # parent maps: node -> (previous node, edge type, edge points previous -> node)
    sides: list[dict[int, tuple[int, str, bool] | None]] = [{start: None}, {goal: None}]
    frontiers = [[start], [goal]]
    for _ in range(max_depth):
        s = 0 if len(frontiers[0]) <= len(frontiers[1]) else 1
        seen, other, nxt = sides[s], sides[1 - s], []
        here = set(frontiers[s])
        for e in sorted(pd.hop(frontiers[s]), key=lambda e: (e.source, e.target, e.type)):
            for frm, to, fwd in ((e.source, e.target, True), (e.target, e.source, False)):
                if frm in here and to not in seen:
                    seen[to] = (frm, e.type, fwd)
                    nxt.append(to)
        meet = [n for n in nxt if n in other]
        if meet:
            return _join(sides[0], sides[1], min(meet))
        if not nxt:
            return None
        frontiers[s] = nxt
    return None


def _join(left: dict[int, Any], right: dict[int, Any], mid: int) -> list[tuple[int, str | None, str | None]]:
    back, n = [], mid
    while left[n] is not None:
        prev, t, fwd = left[n]
        back.append((n, t, "forward" if fwd else "backward"))
        n = prev
    path: list[tuple[int, str | None, str | None]] = [(n, None, None)] + back[::-1]
    n = mid
    while right[n] is not None:
        nxt, t, fwd = right[n]  # the edge nxt -> n points along fwd, seen from the goal's side
        path.append((nxt, t, "backward" if fwd else "forward"))
        n = nxt
    return path


def _refs(pd: Pushdown, rowids: list[int]) -> dict[int, NodeRef]:
    return {int(r[0]): NodeRef(r[1], r[2], r[3]) for r in pd.node_rows(list(dict.fromkeys(rowids)))}


def pushdown_of(kg: Any) -> Pushdown | None:
    """The KG's pushdown queries when its engine pushes down, else None."""
    engine = kg.engine
    return engine.pd if isinstance(engine, PushdownEngine) else None
