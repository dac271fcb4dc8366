"""A snapshot brought to a newer KG version by what changed, not rebuilt (issue 31 goal 3).

The store's change feed (``store.changes``) names the node and edge rows written since the
snapshot's version; only those are read. Unchanged nodes keep their rows of every part (text index
term counts, name index entries, vectors), in the same order a full build gives (node rowid order:
a node keeps its rowid on update, a new node gets a higher one), so the result is the snapshot a
full build of the version would give: the BM25 scores are recomputed from the new corpus statistics
(document count, lengths, document frequencies) over the reused term counts, and the graph index is
rebuilt from the previous edge arrays with the changed rows replaced (PageRank and degrees exact;
communities carried from the previous ones, an added node alone in its own, and refined by one
Leiden pass, as a full build given that previous snapshot does, once the edges written since the
last detection pass ``REFINE_SHARE`` of the graph's).

``updated`` returns None, and the caller builds in full, when the feed cannot tell (no feed, a gap:
pruned, another file or schema, a bulk import) or when more than ``MAX_SHARE`` of the KG changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..store.arrays import GraphArrays
from ..store.base import GraphStore, load_json_object
from ..store.changes import Rows
from .graph import COMMUNITY_MIN_EDGES, Adjacency, GraphIndex, _canonical_labels, _frozen
from .names import NameIndex, alias_strings
from .snapshot import (
    Snapshot,
    _carried_rows,
    _fields,
    _graph,
    _graph_fingerprint,
    _parsed_content,
    _raw_content,
    _row_keys,
    _unchanged,
    _with_vectors,
)
from .text import TextConfig, TextIndex

MAX_SHARE = 0.05  # more changed rows than this share of the KG's nodes + edges: a full build
MIN_LIMIT = 2_000  # ... but a small KG always takes deltas of up to this many rows
REFINE_SHARE = 0.01  # edges written since the last community detection, as a share of all: refine then
DELTA_IDS = "delta"  # in a graph fingerprint: the node ids' digest was not computed (never equals one)


def updated(store: GraphStore, previous: Snapshot, config: TextConfig, embedder: str | None) -> Snapshot | None:
    """``previous`` brought to the store's current version, or None (then build in full)."""
    if not _usable(store, previous, config, embedder):
        return None
    with store.read_transaction():
        version = store.version()
        feed = store.changes_since(previous.version)  # type: ignore[attr-defined]
        if feed is None or feed.size > max(MIN_LIMIT, MAX_SHARE * (previous.n + previous.graph.n_edges)):
            return None
        rows = store.changed_rows(feed, embedder if previous.vectors is not None else None)  # type: ignore[attr-defined]
    return _apply(previous, version, feed.nodes, feed.edges, rows, config)


def _usable(store: GraphStore, previous: Snapshot, config: TextConfig, embedder: str | None) -> bool:
    """Has ``previous`` every part a delta updates, of this analysis and vector model?"""
    return (hasattr(store, "changes_since") and previous.rowids is not None and previous.edge_rowids is not None
            and previous.keys is not None and previous.name_keys is not None and previous.name_index is not None
            and previous.text.tf is not None and previous.text.config == config
            and (previous.parts.get("rows") or [None])[0] in _CONTENT
            and previous.parts.get("rows") == [previous.parts["rows"][0], config.key()]
            # vectors of this model (none stored yet: a write may add the first, a full build's job)
            and ((previous.vectors is not None and previous.embedder == embedder) if embedder
                 else previous.vectors is None))


@dataclass(frozen=True)
class _Nodes:
    """The new node order (rowids) and, per new row, its row in the previous snapshot or -1 (fresh)."""

    rowids: np.ndarray
    reuse: np.ndarray
    fresh: list[tuple[Any, ...]]  # the fresh rows' stored columns, in row order
    was: np.ndarray  # per new row, the previous row of its rowid (also for fresh rows), or -1

    @classmethod
    def merge(cls, previous: Snapshot, changed: frozenset[int], rows: list[tuple[Any, ...]]) -> _Nodes:
        old = previous.rowids
        assert old is not None  # checked by _usable
        kept = np.flatnonzero(~np.isin(old, np.fromiter(changed, np.int64, len(changed))))
        fresh_ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        rowids = np.concatenate([old[kept], fresh_ids])
        order = np.argsort(rowids, kind="stable")
        reuse = np.concatenate([kept, np.full(len(rows), -1, np.int64)])[order]
        rowids = rowids[order]
        pos = np.searchsorted(old, rowids)
        found = pos < old.size
        found[found] = old[pos[found]] == rowids[found]
        return cls(rowids, reuse, rows, np.where(found, pos, -1))


def _apply(previous: Snapshot, version: str, changed_nodes: frozenset[int], changed_edges: frozenset[int],
           rows: Rows, config: TextConfig) -> Snapshot:
    nodes = _Nodes.merge(previous, changed_nodes, rows.nodes)
    texts = _Texts.of(previous, nodes, config)
    text = previous.text if _unchanged(nodes.reuse, previous) else TextIndex.updated(
        previous.text, texts.docs, nodes.reuse)
    graph, edge_rowids, fingerprint, carried = _graph_part(previous, nodes, changed_edges, rows.edges, texts.ids)
    parts = {"rows": previous.parts["rows"], "graph": fingerprint}
    snap = Snapshot(db_id=previous.db_id, version=version, node_ids=texts.ids, names=texts.names, text=text,
                    graph=graph, rowids=nodes.rowids, index=_index(previous, nodes, texts.ids),
                    parts=parts, keys=texts.keys, name_keys=texts.name_keys, edge_rowids=edge_rowids)
    snap.edges_since_communities = carried
    names = _name_reuse(previous, nodes, texts.name_keys)
    snap.name_index = previous.name_index if _unchanged(names, previous) else NameIndex.build(
        texts.names, texts.aliases, text.analyzer, previous.name_index, names)
    return _with_vectors(snap, _vectors(previous, nodes, rows.vectors), previous.embedder)


def _index(previous: Snapshot, nodes: _Nodes, ids: tuple[str, ...]) -> dict[str, int]:
    """Node id -> row: the previous map with the fresh rows' ids set when no row moved (edits and
    adds), else built anew (empty: ``Snapshot`` builds it). A fresh row may hold another node than
    before (SQLite gives a deleted last rowid to the next insert): its old id goes."""
    if previous.n > len(ids) or not np.array_equal(nodes.was[:previous.n], np.arange(previous.n)):
        return {}
    index = dict(previous.index)
    for i in np.flatnonzero(nodes.reuse < 0).tolist():
        if i < previous.n and previous.node_ids[i] != ids[i]:
            index.pop(previous.node_ids[i], None)
        index[ids[i]] = i
    return index


def _name_reuse(previous: Snapshot, nodes: _Nodes, name_keys: np.ndarray) -> np.ndarray:
    """Per new row, its previous row when its names are unchanged (a node whose description alone
    changed keeps its name index entries), else -1."""
    if not previous.n:
        return np.full(nodes.was.size, -1, np.int64)
    same = (nodes.was >= 0) & (previous.name_keys[np.maximum(nodes.was, 0)] == name_keys)  # type: ignore[index]
    return np.where(same, nodes.was, -1)


# -- node texts ------------------------------------------------------------------------------------------
_CONTENT = {"raw": _raw_content, "fields": _parsed_content}


@dataclass(frozen=True)
class _Texts:
    """Ids, names, digests and (fresh rows only) text fields and aliases of the new node order, as
    ``snapshot._texts_of`` makes them for a full build of the same kind."""

    ids: tuple[str, ...]
    names: list[str]
    keys: np.ndarray
    name_keys: np.ndarray
    docs: list[tuple[str, str, str, str] | None]
    aliases: list[list[str] | None]

    @classmethod
    def of(cls, previous: Snapshot, nodes: _Nodes, config: TextConfig) -> _Texts:
        kind = previous.parts["rows"][0]
        n, reuse = nodes.reuse.size, nodes.reuse
        kept = np.flatnonzero(reuse >= 0)
        fresh_at = np.flatnonzero(reuse < 0).tolist()
        ids, names = _carried(previous.node_ids, reuse, kept), _carried(previous.names, reuse, kept)
        keys = np.zeros(n, np.uint64)
        name_keys = np.zeros(n, np.uint64)
        keys[kept] = previous.keys[reuse[kept]]  # type: ignore[index]
        name_keys[kept] = previous.name_keys[reuse[kept]]  # type: ignore[index]
        docs: list[tuple[str, str, str, str] | None] = [None] * n
        aliases: list[list[str] | None] = [None] * n
        stored = [_stored(kind, r) for r in nodes.fresh]
        name_parts = []
        for i, row, raw in zip(fresh_at, stored, nodes.fresh):
            docs[i], aliases[i], name_part = _CONTENT[kind](row)
            ids[i], names[i] = raw[1], docs[i][0]  # type: ignore[index]
            name_parts.append(name_part)
        keys[fresh_at] = _row_keys(stored)
        name_keys[fresh_at] = _row_keys(name_parts)
        return cls(tuple(ids), names, keys, name_keys, docs, aliases)


def _carried(values: Any, reuse: np.ndarray, kept: np.ndarray) -> list[Any]:
    """``values[reuse[i]]`` at the kept rows, "" or a stale value elsewhere (the fresh rows, filled
    by the caller): a list copy when every kept row stayed in place (edits, added nodes), else an
    object-array gather (a Python loop over go's 43,558 rows cost 0.1-0.2 s)."""
    if np.array_equal(reuse[kept], kept):
        return list(values[:reuse.size]) + [""] * max(reuse.size - len(values), 0)
    out = np.full(reuse.size, "", dtype=object)
    if kept.size:
        out[kept] = np.array(values, dtype=object)[reuse[kept]]
    return out.tolist()


def _stored(kind: str, row: tuple[Any, ...]) -> tuple[str, ...]:
    """A changed node row (rowid, id, type, name, description, properties) as the full build's
    ``_texts_of`` digests it: the stored columns ("raw"), or the parsed fields and aliases."""
    _, _, type_, name, description, properties = row
    if kind == "raw":
        return (name, type_, description, properties)
    props = load_json_object(properties, "node properties")
    return (*_fields(name, type_, description, props), *alias_strings(props))


# -- edges -----------------------------------------------------------------------------------------------
def _edges(previous: Snapshot, nodes: _Nodes, changed: frozenset[int], fresh: list[tuple[Any, ...]],
           ids: tuple[str, ...]) -> tuple[np.ndarray, GraphArrays]:
    """The new edge rowids and graph arrays: the previous edges minus the changed rows and those of
    deleted nodes, plus the changed rows as they are now, in edge rowid order (as a full build reads)."""
    g, old_rowids = previous.graph, previous.rowids
    assert old_rowids is not None and previous.edge_rowids is not None  # checked by _usable
    m = g.n_edges
    src, dst = np.empty(m, np.int64), np.empty(m, np.int64)
    etype, weight = np.empty(m, np.int32), np.empty(m, np.float32)
    at = np.asarray(g.out.edge, np.int64)
    src[at] = old_rowids[np.repeat(np.arange(g.n), np.diff(g.out.indptr))]
    dst[at], etype[at], weight[at] = old_rowids[g.out.indices], g.out.etype, g.out.weight
    alive = np.isin(src, nodes.rowids) & np.isin(dst, nodes.rowids)
    keep = np.flatnonzero(alive & ~np.isin(previous.edge_rowids, np.fromiter(changed, np.int64, len(changed))))
    types = sorted({g.types[c] for c in np.unique(etype[keep]).tolist()} | {r[3] for r in fresh})
    code = {t: i for i, t in enumerate(types)}
    remap = np.array([code.get(t, -1) for t in g.types] or [0], np.int32)
    new_rowids = np.concatenate([previous.edge_rowids[keep], np.fromiter((r[0] for r in fresh), np.int64, len(fresh))])
    order = np.argsort(new_rowids, kind="stable")
    cat = [(src[keep], [r[1] for r in fresh], np.int64), (dst[keep], [r[2] for r in fresh], np.int64),
           (remap[etype[keep]], [code[r[3]] for r in fresh], np.int32), (weight[keep], [r[4] for r in fresh], np.float32)]
    s, d, t, w = (np.concatenate([a.astype(dt), np.asarray(b, dt)])[order] for a, b, dt in cat)
    arrays = GraphArrays(node_ids=ids, node_types=np.zeros(len(ids), np.int32), node_type_names=(),  # unused by the index
                         src=np.searchsorted(nodes.rowids, s).astype(np.int32),
                         dst=np.searchsorted(nodes.rowids, d).astype(np.int32),
                         type_code=t, types=tuple(types), weight=w)
    return new_rowids[order], arrays


def _graph_part(previous: Snapshot, nodes: _Nodes, changed: frozenset[int], fresh: list[tuple[Any, ...]],
                ids: tuple[str, ...]) -> tuple[GraphIndex, np.ndarray, Any, int]:
    """(graph index, edge rowids, fingerprint, edge rows written on carried communities) of the new
    version. When no edge changed and no node row moved (edits and added nodes), the previous
    adjacency stands, with empty rows appended."""
    old, since = previous.parts.get("graph"), previous.edges_since_communities
    in_place = previous.n <= len(ids) and np.array_equal(nodes.was[:previous.n], np.arange(previous.n))
    if not changed and in_place and old is not None:
        if len(ids) == previous.n:
            return previous.graph, previous.edge_rowids, old, since  # type: ignore[return-value]
        # the node ids' digest is left out (DELTA_IDS, 0.02-0.04 s on go): only a full build compares
        # it, and then rebuilds the graph part, as after any node write
        return _extended(previous, nodes), previous.edge_rowids, [old[0], DELTA_IDS, old[2]], since  # type: ignore[return-value]
    edge_rowids, arrays = _edges(previous, nodes, changed, fresh, ids)
    fingerprint = _graph_fingerprint(arrays)
    if fingerprint == old:
        return previous.graph, edge_rowids, fingerprint, since
    since += max(len(changed), abs(edge_rowids.size - previous.graph.n_edges))  # rows dropped with their nodes too
    if since > REFINE_SHARE * max(arrays.n_edges, 1) or previous.graph.cached_communities() is None:
        return _graph(arrays, None, previous), edge_rowids, fingerprint, 0  # Leiden refines the partition
    return _with_communities(GraphIndex.build(arrays), previous, nodes), edge_rowids, fingerprint, since


def _extended(previous: Snapshot, nodes: _Nodes) -> GraphIndex:
    """The previous graph index with one empty row per added node (they have no edge yet)."""
    g, n = previous.graph, nodes.was.size

    def grown(adj: Adjacency) -> Adjacency:
        pad = np.full(n - g.n, adj.indptr[-1], adj.indptr.dtype)
        return Adjacency(_frozen(np.concatenate([adj.indptr, pad])), adj.indices, adj.etype, adj.weight, adj.edge)

    graph = GraphIndex(n, g.types, grown(g.out), grown(g.inn))
    return _with_communities(graph, previous, nodes)


def _with_communities(graph: GraphIndex, previous: Snapshot, nodes: _Nodes) -> GraphIndex:
    """PageRank computed, communities carried from ``previous`` (new nodes alone), as no edge moved."""
    labels = previous.graph.cached_communities()
    if labels is None or graph.n_edges < COMMUNITY_MIN_EDGES or labels.size != previous.n:
        return graph.precompute()
    graph.pagerank()
    carried = np.where(nodes.was >= 0, labels[np.maximum(nodes.was, 0)], labels.size + np.arange(nodes.was.size))
    graph._cached("communities", lambda: _canonical_labels(np.unique(carried, return_inverse=True)[1]))
    return graph


# -- vectors ---------------------------------------------------------------------------------------------
def _vectors(previous: Snapshot, nodes: _Nodes, fresh: list[tuple[Any, ...]]) -> np.ndarray | None:
    """The previous rows of unchanged nodes, the stored vectors of changed ones (zero: none yet)."""
    if previous.vectors is None:
        return None
    kept = np.flatnonzero(nodes.reuse >= 0)
    matrix = _carried_rows(previous.vectors, nodes.reuse.size, kept, nodes.reuse[kept])
    dims = matrix.shape[1]
    for rowid, blob, n_dims in fresh:
        i = int(np.searchsorted(nodes.rowids, rowid))
        if n_dims == dims and len(blob) == 4 * dims and i < nodes.rowids.size and nodes.rowids[i] == rowid:
            matrix[i] = np.frombuffer(blob, np.float32)
    return matrix
