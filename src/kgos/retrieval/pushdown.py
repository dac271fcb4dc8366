"""Search and the graph methods of a PostgreSQL KG in pushdown mode (docs/postgres.md "Pushdown").

The database finds the candidates: text matches by its full-text index (GIN, ``ts_rank_cd``), nearest
vectors by pgvector's HNSW index, exact names, and the edges around the best of them. Those few
hundred nodes become a small in-memory KG (``SubgraphStore``), and the usual scorer
(``hybrid.search``) ranks it: same signals, weights, fusion and explanations
(``score == sum(weights * components) + sum(bonuses)``), with the query words' BM25 document
frequencies of the whole KG (read from PostgreSQL) and graph signals over the candidates only. Impact analysis is a BFS
of one indexed query per level (the deepest ranked in SQL), path tracing a bidirectional BFS of
indexed hops; both return the in-memory methods' records. Nothing of the whole KG is held in the
server's memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..index.graph import GraphIndex
from ..index.names import NameIndex, alias_strings
from ..index.snapshot import Snapshot, node_fields
from ..index.text import Analyzer, TextConfig, TextIndex, bm25_idf, tokenize
from ..index.vectors import load_name_vectors, load_vectors
from ..model import Edge, Neighbor, Node
from ..settings import current
from ..store.base import GraphStore
from ..store.native import node_of_row
from ..store.postgres_pushdown import Edge4, Pushdown, env_mode, inflected
from . import hybrid
from .engine import Prefilter, SearchEngine
from .results import SearchResult

TEXT_CANDIDATES = 50
VECTOR_CANDIDATES = 50
SEEDS = 10  # of each channel: whose edges are read (the graph signals' neighbourhood)
PER_SEED_EDGES = 8
MAX_SUBGRAPH_EDGES = 1000
# The HNSW probe runs on its own connection while the text and name reads run on the caller's: at 1M
# nodes both take tens of ms in PostgreSQL, which has a core for each (issue 31)
_PROBES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kgos-pushdown-probe")


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
    return pd.vector_version is not None and pd.approx_nodes() >= current().pushdown_nodes


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
        self._memo: MemoAnalyzer | None = None

    def _analyzer(self) -> MemoAnalyzer:
        """One analyzer per text config for the engine's life: a node text met again is not re-analysed."""
        if self._memo is None or self._memo.config != self.text:
            self._memo = MemoAnalyzer(self.text)
        return self._memo

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
        lexemes = query_lexemes(query, self._analyzer())
        rowids, sub, counts, note, stats = self._candidates(query, qv, model, version, lexemes)
        snap = subgraph_snapshot(sub, self._analyzer(), model if sub.vectors else None)
        with_kg_idf(snap.text, lexemes, *stats)
        tuned, warnings = self.usable_profile(snap)
        result = hybrid.search(snap, sub, query, k, weights, intent, mode, self.options,
                               embed_query=self.embed_query, tuned=tuned)
        notes = ((f"pushdown: ranked {len(rowids)} candidates from PostgreSQL ({counts[0]} by text, "
                 f"{counts[1]} by vector, {counts[2]} edges)"),) + ((note,) if note else ())
        if weights is not None:
            warnings = ()
        return replace(result, notes=result.notes + notes, warnings=result.warnings + warnings)

    def _candidates(self, query: str, qv: np.ndarray | None, model: str | None, version: str,
                    lexemes: dict[str, str]) -> tuple[list[int], SubgraphStore, tuple[int, int, int], str | None,
                                                      tuple[dict[str, int], int]]:
        probe: Future[list[tuple[int, float]]] | None = None
        if qv is not None and model:
            probe = _PROBES.submit(self.pd.vector_candidates, model, qv, VECTOR_CANDIDATES)
        try:
            # no connection held while waiting for the probe's: searches never wait on each other's
            with self.pd.session():
                text, note = self.pd.text_candidates(query, TEXT_CANDIDATES, self._analyzer())
                stats = self.pd.document_frequencies(sorted(set(lexemes.values())))
                named = self.pd.name_candidates(query, 10)
                first = list(dict.fromkeys([r for r, _ in text[:SEEDS]] + named))
                edges = self.pd.neighbourhood(first, PER_SEED_EDGES, MAX_SUBGRAPH_EDGES)
                rows, vectors = self.pd.nodes_with_vectors(model, _ends(text, named, edges))
            self._analyse(rows)  # while the probe runs: the ranking's text analysis of these is done
        finally:
            near = probe.result() if probe is not None else []
        with self.pd.session():
            more = [r for r, _ in near[:SEEDS] if r not in set(first)]
            edges = _joined(edges, self.pd.neighbourhood(more, PER_SEED_EDGES, MAX_SUBGRAPH_EDGES))
            rowids = _ends(text + near, named, edges)
            have = {int(r[0]) for r in rows}
            rest, rest_vectors = self.pd.nodes_with_vectors(model, [r for r in rowids if r not in have])
        rows = sorted(rows + rest, key=lambda r: int(r[0]))  # rowid order, as one read gave them
        sub = SubgraphStore(self.store.db_id, version, self.store.meta(), rows, edges, vectors | rest_vectors, model)
        return rowids, sub, (len(text), len(near), len(edges)), note, stats

    def _analyse(self, rows: list[tuple[Any, ...]]) -> None:
        """Analyse the text of these node rows now (``MemoAnalyzer`` keeps the terms for the ranking)."""
        terms = self._analyzer().terms
        for row in rows:
            for text in node_fields(node_of_row(row)):
                if text:
                    terms(text)


def query_lexemes(query: str, analyzer: Analyzer, limit: int = 16) -> dict[str, str]:
    """{a query term the ranking scores (its stem): the tsquery lexeme whose matches count its nodes}."""
    out: dict[str, str] = {}
    for token in tokenize(query):
        if token not in analyzer.stop and len(token) > 1 and len(out) < limit:
            out.setdefault(analyzer.stem(token), inflected(token, analyzer))
    return out


def with_kg_idf(text: TextIndex, lexemes: dict[str, str], df: dict[str, int], n_kg: int) -> None:
    """BM25 of the query's terms with the KG's document frequencies, not the candidates': a word every
    candidate has (they were picked for it) weighed as rare as it is in the KG. Each query term's
    column of the subgraph's BM25 matrix is scaled by idf(KG) / idf(candidates); the other terms are
    never scored. The KG's count is at least the candidates' (its lexeme is not quite the stem)."""
    m, n_sub = text.matrix, text.n_docs
    for term, lexeme in lexemes.items():
        col = text.vocab.get(term)
        if col is None or lexeme not in df:
            continue
        lo, hi = m.indptr[col], m.indptr[col + 1]
        local = float(hi - lo)
        kg = bm25_idf(np.float64(max(df[lexeme], local)), max(n_kg, n_sub))
        m.data[lo:hi] *= np.float32(kg / bm25_idf(np.float64(local), n_sub))


def _ends(hits: list[tuple[int, float]], named: list[int], edges: list[Edge4]) -> list[int]:
    """The candidate nodes, in rowid order: the channels' hits, the named nodes, the edges' ends."""
    return sorted({r for r, _ in hits} | set(named) | {e.source for e in edges} | {e.target for e in edges})


def _joined(a: list[Edge4], b: list[Edge4]) -> list[Edge4]:
    """The edges of both reads, each once, in (source, target, type) order, at most MAX_SUBGRAPH_EDGES."""
    unique = {(e.source, e.target, e.type): e for e in a + b}
    return [unique[k] for k in sorted(unique)][:MAX_SUBGRAPH_EDGES]


MEMO_TEXTS = 50_000  # texts an engine's analyzer remembers (~10 MB); then it starts again


class MemoAnalyzer(Analyzer):
    """An ``Analyzer`` that remembers the terms of the texts it analysed: a subgraph's node names are
    analysed once for its text and name indexes, its few types once, and nodes met again in later
    searches not at all."""

    def __init__(self, config: TextConfig) -> None:
        super().__init__(config)
        self.config = config
        self._seen: dict[str, list[str]] = {}

    def terms(self, text: str) -> list[str]:
        got = self._seen.get(text)
        if got is None:
            if len(self._seen) >= MEMO_TEXTS:
                self._seen.clear()
            got = self._seen[text] = super().terms(text)
        return got


def subgraph_snapshot(sub: SubgraphStore, analyzer: MemoAnalyzer, model: str | None) -> Snapshot:
    """What ``index.snapshot.build(sub, config, model)`` builds, the same indexes and so the same scores,
    without what a one-off subgraph never uses: the digests that let a next version reuse rows, a
    cache folder, and PageRank and communities before they are asked for (built then, the same)."""
    arrays = sub.graph_arrays()
    ids = arrays.node_ids
    nodes = [sub.nodes[i] for i in ids]
    text = TextIndex.build([node_fields(n) for n in nodes], analyzer.config, analyzer=analyzer)
    names = NameIndex.build([n.name for n in nodes], [alias_strings(n.properties) for n in nodes], analyzer)
    vectors = load_vectors(sub, model, ids) if model else None
    snap = Snapshot(db_id=sub.db_id, version=sub.version(), node_ids=ids, names=[n.name for n in nodes], text=text,
                    graph=GraphIndex.build(arrays), name_index=names, vectors=vectors,
                    embedder=model if vectors is not None else None)
    snap.name_vectors = load_name_vectors(sub, snap.embedder, ids)
    return snap
