"""``GraphView``: what the query methods read of one KG version, and the checks they share.

A view is the snapshot's :class:`~kgos.index.graph.GraphIndex` plus, per node row, its id, name and
type code (the snapshot keeps no node types, so the view reads them once per KG version). Derived
arrays the methods need repeatedly (the name-token matrix of method 5, betweenness) are cached on
the view, so they are computed once per KG version. Benchmarks build a view straight from numpy
arrays, without any store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import scipy.sparse as sp

from ..errors import AmbiguousNode, InvalidArgument, NodeNotFound
from ..index.graph import GraphIndex
from ..index.text import tokenize
from ..store.arrays import GraphArrays, codes
from .results import NodeRef

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot
    from ..model import Node
    from ..store.base import GraphStore

MAX_DEPTH = 10  # deeper BFS on a real KG reaches most of the graph and answers nothing specific
DIRECTIONS = ("forward", "backward", "both")
PER_LEVEL_DEFAULT = 50  # nodes listed per BFS level in results (counts stay complete)


@dataclass(eq=False)
class GraphView:
    graph: GraphIndex
    node_ids: Sequence[str]
    names: Sequence[str]
    node_types: np.ndarray  # int32 code per row into type_names
    type_names: tuple[str, ...]
    index: Mapping[str, int]
    version: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)  # cached values build on others

    @property
    def n(self) -> int:
        return self.graph.n

    def ref(self, row: int) -> NodeRef:
        row = int(row)
        return NodeRef(id=self.node_ids[row], name=self.names[row], type=self.type_names[self.node_types[row]])

    def row(self, node_id: str) -> int:
        return self.index[node_id]

    def type_of(self, row: int) -> str:
        return self.type_names[int(self.node_types[row])]

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """Compute once per view (= per KG version), even under concurrent first calls."""
        if key not in self._cache:
            with self._lock:
                if key not in self._cache:
                    self._cache[key] = compute()
        return self._cache[key]

    def name_tokens(self) -> sp.csr_array:
        """Binary node x word matrix of the names (for method 5's name overlap), built once."""
        return self.name_index()[0]

    def name_index(self) -> tuple[sp.csr_array, dict[str, int]]:
        """(node x word matrix of the names, word -> column), built once per KG version."""
        return self.cached("name_tokens", lambda: name_token_matrix(self.names))

    def name_match(self, words: Sequence[str]) -> np.ndarray:
        """Jaccard of ``words`` with each node's name words (float64, n): "streaming" fits
        "Streaming responses" (1/2) better than "Incomplete JSON while streaming" (1/4)."""
        matrix, vocab = self.name_index()
        postings = self.cached("name_postings", lambda: matrix.T.tocsr())
        sizes = self.cached("name_sizes", lambda: np.diff(matrix.indptr).astype(np.float64))
        cols = [vocab[w] for w in dict.fromkeys(words) if w in vocab]
        hits = np.zeros(self.n)
        for c in cols:
            hits[postings.indices[postings.indptr[c]:postings.indptr[c + 1]]] += 1.0
        union = len(set(words)) + sizes - hits
        return np.divide(hits, union, out=np.zeros(self.n), where=union > 0)

    def type_rows(self, names: Sequence[str]) -> np.ndarray:
        """Boolean mask over rows whose node type is one of ``names``."""
        wanted = np.array([t in set(names) for t in self.type_names], dtype=bool)
        return wanted[self.node_types] if wanted.size else np.zeros(self.n, bool)


def name_token_matrix(names: Sequence[str]) -> tuple[sp.csr_array, dict[str, int]]:
    """(row i holds a 1 for each distinct word of name i, tokenised as the text index does; the
    word -> column vocabulary)."""
    vocab: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    for name in names:
        ids = sorted({vocab.setdefault(t, len(vocab)) for t in tokenize(name)})
        indices.extend(ids)
        indptr.append(len(indices))
    data = np.ones(len(indices), np.float32)
    matrix = sp.csr_array((data, np.asarray(indices, np.int64), np.asarray(indptr, np.int64)),
                          shape=(len(names), max(len(vocab), 1)))
    return matrix, vocab


def view_from_arrays(arrays: GraphArrays, names: Sequence[str] | None = None,
                     graph: GraphIndex | None = None) -> GraphView:
    """A view straight from ``GraphArrays`` (tests, benchmarks): names default to the ids."""
    ids = arrays.node_ids
    return GraphView(graph=graph if graph is not None else GraphIndex.build(arrays), node_ids=ids,
                     names=list(names) if names is not None else ids, node_types=np.asarray(arrays.node_types),
                     type_names=arrays.node_type_names or ("entity",), index=_LazyIndex(ids))


class _LazyIndex(Mapping[str, int]):
    """id -> row, built on first use (a million-entry dict is not free)."""

    def __init__(self, ids: Sequence[str]) -> None:
        self._ids = ids
        self._map: dict[str, int] | None = None

    def _get(self) -> dict[str, int]:
        if self._map is None:
            self._map = {nid: i for i, nid in enumerate(self._ids)}
        return self._map

    def __getitem__(self, key: str) -> int:
        return self._get()[key]

    def __iter__(self) -> Any:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._ids)


# -- building a view from a KG -------------------------------------------------------------------------
class ViewCache:
    """The view of one KG's current snapshot, built once per snapshot (= per KG version)."""

    def __init__(self) -> None:
        self._entry: tuple[Snapshot, GraphView] | None = None

    def view(self, store: GraphStore, snap: Snapshot) -> GraphView:
        entry = self._entry  # one read: another thread may replace it meanwhile
        if entry is not None and entry[0] is snap:
            return entry[1]
        view = build_view(store, snap)
        self._entry = (snap, view)
        return view


class HasView(Protocol):
    """Anything that keeps a view of its current version (``KGSource``, the ``kgos.KG`` facade)."""

    def view(self) -> GraphView: ...


def view_of(kg: HasView) -> GraphView:
    """The view of the KG's current version (cached by the KG until the version changes)."""
    return kg.view()


def build_view(store: GraphStore, snap: Snapshot) -> GraphView:
    ids, types = node_types(store)
    if tuple(ids) == tuple(snap.node_ids):  # native KGs: same rowid order, no mapping needed
        row_types = types
    else:
        row_types = ["entity"] * snap.n
        for nid, t in zip(ids, types):
            row = snap.index.get(nid)
            if row is not None:
                row_types[row] = t
    type_codes, type_names = codes(row_types)
    return GraphView(graph=snap.graph, node_ids=snap.node_ids, names=snap.names, node_types=type_codes,
                     type_names=type_names or ("entity",), index=snap.index, version=snap.version)


def node_types(store: GraphStore) -> tuple[list[str], list[str]]:
    """(ids, types) of every node, by one SQL query where the store allows it."""
    from .nodesql import node_table
    table = node_table(store)
    if table is None:
        nodes = list(store.iter_nodes())
        return [n.id for n in nodes], [n.type for n in nodes]
    rows = table.rows(f"SELECT {table.id}, {table.type} {table.source}")
    return [r[0] for r in rows], [r[1] or "entity" for r in rows]


# -- finding nodes and shared argument checks -------------------------------------------------------------
def find_node(store: GraphStore, ref: str) -> Node:
    """A node by id, or else by unambiguous (case-insensitive) name; ``NodeNotFound`` (with
    suggestions) or ``AmbiguousNode`` (with the candidates' ids) otherwise."""
    node = store.get_node(ref)
    if node is not None:
        return node
    matches = store.find_nodes(ref, limit=20)
    if len(matches) == 1:
        return matches[0]
    if matches:
        ids = [m.id for m in matches]
        raise AmbiguousNode(f"'{ref}' names {len(ids)} nodes in '{store.db_id}': {', '.join(ids)}; "
                            "pass one of these ids", ids)
    raise store.not_found(ref)


def resolve(store: GraphStore, ref: Any) -> NodeRef:
    """A node by id or unambiguous name (``find_node``), also accepting the id's slug
    (``prompt_caching`` for ``feature:prompt_caching``) and underscores for spaces."""
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidArgument(f"a node id or name is required, not {ref!r}")
    try:
        node = find_node(store, ref)
    except NodeNotFound as err:
        found = _loose_match(store, ref.strip())
        if found is None:
            raise err from None
        node = found
    return NodeRef(node.id, node.name, node.type, node.description)


def _loose_match(store: GraphStore, ref: str) -> Node | None:
    """Second chance for spec-style references: ``prompt_caching`` or ``prompt caching``."""
    spaced = ref.replace("_", " ")
    found = {n.id: n for n in store.find_nodes(spaced, limit=20)} if spaced != ref else {}
    if not found:
        suffix = ":" + ref.lower()
        found = {n.id: n for n in store.search_names(ref, limit=50) if n.id.lower().endswith(suffix)}
    if len(found) == 1:
        return next(iter(found.values()))
    if found:
        ids = sorted(found)
        raise AmbiguousNode(f"'{ref}' names {len(ids)} nodes in '{store.db_id}': {', '.join(ids)}; "
                            "pass one of these ids", ids)
    return None


def check_depth(value: Any, name: str = "max_depth", cap: int = MAX_DEPTH) -> tuple[int, tuple[str, ...]]:
    """(depth, notes): < 1 or not an integer is an error; more than ``cap`` is capped, with a note."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgument(f"{name} must be an integer >= 1, not {value!r}")
    if value > cap:
        return cap, (f"{name} {value} capped at {cap}: deeper traversals reach most of a graph",)
    return int(value), ()


def check_k(value: Any, name: str = "k", cap: int = 1000) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgument(f"{name} must be a positive integer, not {value!r}")
    return min(int(value), cap)


def check_direction(direction: Any) -> str:
    if direction not in DIRECTIONS:
        raise InvalidArgument(f"direction must be one of forward, backward, both; not {direction!r}")
    return str(direction)


def check_text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"the {what} is empty: describe it in a few words")
    return value.strip()
