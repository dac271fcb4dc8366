"""A read-only, versioned view of one KG for queries: ids, text index, graph index, vectors.

Built once per KG version (DESIGN.md section 8) and saved under the workspace cache keyed by that
version, so a new process loads arrays instead of re-tokenising and re-scanning the graph.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import pickle
import shutil
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexDamaged
from ..model import Node
from ..store.arrays import GraphArrays
from ..store.base import GraphStore, load_json_object
from ..store.native import graph_arrays_of
from .graph import GraphIndex, preload_igraph
from .names import NameIndex, alias_strings
from .text import TextConfig, TextIndex
from .vectors import load_name_vectors, load_vectors

TEXT_PROPERTIES = ("aliases", "keywords", "tags", "synonyms")
FORMAT = "snapshot/4"  # 2: one read transaction; 3: + name index; 4: + per-node content keys, term counts


def extra_text(properties: dict[str, Any]) -> str:
    """The text-like properties of a node (aliases, keywords, tags, synonyms) as one string."""
    parts: list[str] = []
    for key in TEXT_PROPERTIES:
        value = properties.get(key)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            parts.extend(v for v in value if isinstance(v, str))
    return " ; ".join(parts)


def node_fields(node: Node) -> tuple[str, str, str, str]:
    """(name, extra, type, description): the fields of the text index, in TextConfig order."""
    return _fields(node.name, node.type, node.description, node.properties)


def _fields(name: str, type: str, description: str, properties: dict[str, Any]) -> tuple[str, str, str, str]:
    return (name, extra_text(properties), type.replace("_", " "), description)


@dataclass
class Snapshot:
    db_id: str
    version: str
    node_ids: tuple[str, ...]
    names: list[str]
    text: TextIndex
    graph: GraphIndex
    rowids: np.ndarray | None = None  # native KGs: FTS5 rowid of each node index
    vectors: np.ndarray | None = None  # (n, dims) float32 unit rows, or None
    embedder: str | None = None
    ann: Any = None  # an index.ann.VectorIndex of this version and model (large KGs; see index.nearest)
    quantised: Any = None  # an index.quantised.QuantisedVectors of this version and model (mid-sized KGs)
    scans: int = field(default=0, repr=False)  # float32 scans so far (index.quantised starts its copy at the 3rd)
    build_seconds: float = 0.0
    index: dict[str, int] = field(default_factory=dict)
    name_index: NameIndex | None = None  # names + aliases, matched whole
    name_vectors: Any = None  # index.vectors.NameVectors of ``embedder`` (issue 13 lever 3), or None
    # Digests of what each part was built from (saved in meta.json), so the next version's build
    # reuses the parts a write left alone, also after a snapshot was loaded (see ``_build``).
    parts: dict[str, Any] = field(default_factory=dict, repr=False)
    # One 64-bit digest per node of what its text and its names were made from (``_NodeTexts``): the
    # next version analyses only the nodes whose digest moved.
    keys: np.ndarray | None = field(default=None, repr=False)
    name_keys: np.ndarray | None = field(default=None, repr=False)
    vector_keys: Any = field(default=None, repr=False)  # which stored rows ``vectors`` are (native KGs)
    local_keys: np.ndarray | None = field(default=None, repr=False)  # never saved: hash() is per process
    graph_local: int | None = field(default=None, repr=False)  # hash() of the node and edge rows (native)
    # The rowid of each edge row of the graph arrays: a delta (index.delta) replaces the rows it names.
    edge_rowids: np.ndarray | None = field(default=None, repr=False)
    edges_since_communities: int = field(default=0, repr=False)  # edge rows deltas wrote on carried communities

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {nid: i for i, nid in enumerate(self.node_ids)}

    @property
    def n(self) -> int:
        return len(self.node_ids)

    @functools.cached_property
    def vector_rows(self) -> np.ndarray:
        """One bool per row: has the node a vector? (Nodes written since the last embedding run have a
        zero row.) Computed once per snapshot, after ``vectors`` is attached."""
        if self.vectors is None:
            return np.zeros(self.n, bool)
        # squared row norms: unit rows 1, missing rows 0, with no (n, dims) temporary
        return np.asarray(np.einsum("ij,ij->i", self.vectors, self.vectors) > 0)

    @functools.cached_property
    def vectorless(self) -> np.ndarray:
        """The rows without a vector (empty when every node has one)."""
        return np.flatnonzero(~self.vector_rows)


def build(store: GraphStore, config: TextConfig, embedder: str | None = None,
          cache_root: Path | None = None, previous: Snapshot | None = None) -> Snapshot:
    """The snapshot of the store's current version: loaded from that version's cache folder when a
    process saved one, else built from one read transaction of the store (and saved for the next).
    ``previous`` (this process's snapshot of an older version, else the newest one in the cache
    folder) lends what a write left alone: the text and name index entries of unchanged nodes, and
    the graph index if no edge moved. A build given a ``previous`` (a process that has the KG open
    and wrote to it) saves in the background (``wait_for_saves``): its next query does not wait for
    the disk."""
    background = previous is not None
    if background:
        preload_igraph()  # a process that writes: its next edge write refines communities with igraph
        updated = _updated(store, previous, config, embedder, cache_root)  # type: ignore[arg-type]
        if updated is not None:
            return updated
    if cache_root is not None:
        cached = _load_cached(store, config, embedder, cache_root, store.version())
        if cached is not None:
            return _with_name_vectors(cached, store, cache_root)
        if previous is None:
            previous = _newest_cached(store, config, cache_root)
            updated = _updated(store, previous, config, embedder, cache_root) if previous else None
            if updated is not None:
                return updated
    t0 = time.perf_counter()
    snap = _build(_read(store, embedder, cache_root, config, previous), store.db_id, config, embedder, previous)
    snap.build_seconds = time.perf_counter() - t0
    if cache_root is not None:
        job = (snap, _folder(cache_root, store.db_id, snap.version, config), _caches_vectors(store))
        _SAVES.submit(*job) if background else _save(*job)
    return _with_name_vectors(snap, store, cache_root)


def _updated(store: GraphStore, previous: Snapshot, config: TextConfig, embedder: str | None,
             cache_root: Path | None) -> Snapshot | None:
    """``previous`` brought to the current version by the change feed (index.delta), or None when
    the feed cannot say what changed or too much did. Saved in the background as a build is (several
    writes in a row queue one save: the newest)."""
    from . import delta  # delta builds on this module's parts
    t0 = time.perf_counter()
    snap = delta.updated(store, previous, config, embedder)
    if snap is None:
        return None
    snap.build_seconds = time.perf_counter() - t0
    if cache_root is not None:
        _SAVES.submit(snap, _folder(cache_root, store.db_id, snap.version, config), _caches_vectors(store),
                      delay=DELTA_SAVE_DELAY)
    return _with_name_vectors(snap, store, cache_root)


def _with_name_vectors(snap: Snapshot, store: GraphStore, cache_root: Path | None) -> Snapshot:
    """Attach the name vectors of the snapshot's model (read from the store, by node id)."""
    snap.name_vectors = load_name_vectors(store, snap.embedder, snap.node_ids, cache_root)
    return snap


@dataclass(frozen=True)
class _NodeTexts:
    """The node texts of a version, aligned with its node ids, as far as the build needs them.

    ``keys[i]`` digests everything node i's text index entry is made of, ``name_keys[i]`` its names;
    ``text_reuse[i]`` / ``name_reuse[i]`` is its row in the previous snapshot when that digest is
    unchanged there, else -1, and only those rows have ``fields`` / ``aliases`` (by row)."""

    kind: str  # what the keys digest: "raw" (stored columns of a native KG) or "fields" (parsed nodes)
    names: list[str]
    keys: np.ndarray
    name_keys: np.ndarray
    text_reuse: np.ndarray
    name_reuse: np.ndarray
    fields: dict[int, tuple[str, str, str, str]]
    aliases: dict[int, list[str]]
    local_keys: np.ndarray  # ``hash()`` of each row: compares with this process's previous snapshot only


@dataclass(frozen=True)
class _Rows:
    """What a snapshot is made of, all read in one transaction."""

    version: str
    graph: _GraphRows
    texts: _NodeTexts
    rowids: np.ndarray | None
    vectors: np.ndarray | None
    vector_keys: _VectorKeys | None = None
    edge_rowids: np.ndarray | None = None


def _read(store: GraphStore, embedder: str | None, cache_root: Path | None, config: TextConfig,
          previous: Snapshot | None = None) -> _Rows:
    # One transaction: read one by one, a write committed in between by another process gave edges
    # to nodes the node list lacked and rowids or vectors of another length than the ids.
    with store.read_transaction():
        version = store.version()  # first: see ForeignStore.read_transaction
        graph = _GraphRows.read(store, previous)
        texts = _node_texts(store, graph.ids, config, previous, graph.nodes)
        rowids = store.node_rowids() if hasattr(store, "node_rowids") else None
        vectors, vector_keys = _vectors(store, embedder, graph.ids, rowids, cache_root, previous)
        edges = store.edge_rowids() if hasattr(store, "edge_rowids") else None
    return _Rows(version, graph, texts, rowids, vectors, vector_keys, edges)




@dataclass(frozen=True)
class _GraphRows:
    """The node ids and graph arrays of a version; ``arrays`` is None when a native KG's nodes
    (rowid, id, type) and edges are those of this process's previous snapshot (``local`` is their
    ``hash()``): then its graph index stands, and building the arrays (0.2-0.6 s on go) is skipped."""

    ids: tuple[str, ...]
    arrays: GraphArrays | None
    local: int | None = None
    nodes: list[Any] | None = None  # a native KG's NODE_ROWS, for the node texts

    @classmethod
    def read(cls, store: GraphStore, previous: Snapshot | None) -> _GraphRows:
        reader = store.row_reader()
        if reader is None:
            arrays = store.graph_arrays()
            return cls(arrays.node_ids, arrays)
        nodes, edges = reader.nodes(), reader.edges()
        ids = tuple(r[1] for r in nodes)
        local = hash((tuple(r[:3] for r in nodes), tuple(edges)))
        if previous is not None and previous.graph_local == local and previous.node_ids == ids:
            return cls(previous.node_ids, None, local, nodes)
        arrays = graph_arrays_of(nodes, edges)
        return cls(arrays.node_ids, arrays, local, nodes)




@dataclass(frozen=True)
class _VectorKeys:
    """Which stored row each vector of a native KG is (by node rowid, in node rowid order): a vector
    whose node, row and content hash are unchanged is the same vector."""

    node: np.ndarray
    row: np.ndarray
    digest: np.ndarray  # object array of content hashes
    dims: frozenset[int]

    @classmethod
    def read(cls, store: GraphStore, model: str) -> _VectorKeys:
        rows = store.row_reader().vector_keys(model)
        return cls(np.fromiter((r[0] for r in rows), np.int64, len(rows)),
                   np.fromiter((r[1] for r in rows), np.int64, len(rows)),
                   np.array([r[2] for r in rows] or [""], dtype=object)[:len(rows)], frozenset(r[3] for r in rows))

    def same_as(self, old: _VectorKeys) -> np.ndarray:
        """One bool per vector: is it, unchanged, among ``old``'s?"""
        j = np.minimum(np.searchsorted(old.node, self.node), max(old.node.size - 1, 0))
        if not old.node.size:
            return np.zeros(self.node.size, bool)
        return (old.node[j] == self.node) & (old.row[j] == self.row) & (old.digest[j] == self.digest)


def _vectors(store: GraphStore, embedder: str | None, ids: tuple[str, ...], rowids: np.ndarray | None,
             cache_root: Path | None, previous: Snapshot | None) -> tuple[np.ndarray | None, _VectorKeys | None]:
    """The vectors of ``ids``, and which stored rows they are (native KGs): the vectors a previous
    snapshot holds unchanged are copied from it, only the others read (a write re-embeds a few
    nodes; reading all 43,558 vectors of go took 0.6-1.3 s)."""
    if not embedder:
        return None, None
    if store.row_reader() is None or store.read_only or rowids is None:  # vectors elsewhere: read all
        return load_vectors(store, embedder, ids, cache_root), None
    keys = _VectorKeys.read(store, embedder)
    old = previous.vector_keys if previous is not None and previous.embedder == embedder else None
    if (old is None or previous is None or previous.vectors is None or previous.rowids is None
            or keys.dims != frozenset({previous.vectors.shape[1]})):
        return load_vectors(store, embedder, ids, cache_root), keys
    at = np.searchsorted(rowids, keys.node)  # the node row of each vector
    was = np.searchsorted(previous.rowids, keys.node)  # and its row in the previous snapshot
    same = keys.same_as(old) & (was < previous.n)
    same[same] = previous.rowids[was[same]] == keys.node[same]
    matrix = _carried_rows(previous.vectors, len(ids), at[same], was[same])
    _read_vector_rows(store, matrix, at[~same], keys.row[~same])
    return matrix, keys


def _carried_rows(old: np.ndarray, n: int, at: np.ndarray, was: np.ndarray) -> np.ndarray:
    """An (n, dims) matrix with ``old[was]`` at rows ``at`` and zeros elsewhere. When no row moved
    (edits, appended nodes) it is one block copy, not a gather of every row."""
    m = min(n, old.shape[0])
    if np.array_equal(at, was) and m:
        matrix = np.empty((n, old.shape[1]), np.float32)
        matrix[:m] = old[:m]
        keep = np.zeros(n, bool)
        keep[at] = True
        matrix[~keep] = 0.0
        return matrix
    matrix = np.zeros((n, old.shape[1]), np.float32)
    matrix[at] = old[was]
    return matrix


def _read_vector_rows(store: GraphStore, matrix: np.ndarray, at: np.ndarray, rows: np.ndarray) -> None:
    blobs = store.row_reader().vectors(rows.tolist())
    for i, row in zip(at.tolist(), rows.tolist()):
        matrix[i] = np.frombuffer(blobs[row], np.float32)


def _node_texts(store: GraphStore, ids: tuple[str, ...], config: TextConfig, previous: Snapshot | None,
                native_rows: list[Any] | None) -> _NodeTexts:
    """A native KG's node columns (``native_rows``, NODE_ROWS) are digested as stored, and only changed
    rows' properties parsed (parsing every node's JSON cost more than analysing the changed text);
    other stores' nodes are read whole and their fields digested."""
    if native_rows is not None:
        return _texts_of("raw", [(r[3], r[2], r[4], r[5]) for r in native_rows], ids, config, previous, _raw_content)
    nodes = {n.id: n for n in store.iter_nodes()}
    fields = [(*node_fields(nodes[nid]), *alias_strings(nodes[nid].properties)) for nid in ids]
    return _texts_of("fields", fields, ids, config, previous, _parsed_content)


def _raw_content(row: Sequence[str]) -> tuple[tuple[str, str, str, str], list[str], Sequence[str]]:
    """(text fields, aliases, what the name key digests) of a stored (name, type, description, properties) row."""
    properties = load_json_object(row[3], "node properties")
    return _fields(row[0], row[1], row[2], properties), alias_strings(properties), (row[0], row[3])


def _parsed_content(row: Sequence[str]) -> tuple[tuple[str, str, str, str], list[str], Sequence[str]]:
    aliases = list(row[4:])
    return tuple(row[:4]), aliases, (row[0], *aliases)  # type: ignore[return-value]


def _texts_of(kind: str, rows: Sequence[Sequence[str]], ids: tuple[str, ...], config: TextConfig,
              previous: Snapshot | None, content: Any) -> _NodeTexts:
    local = np.fromiter(map(hash, map(tuple, rows)), np.int64, len(rows))
    if getattr(previous, "local_keys", None) is not None:  # this process's: Python's hash, 10x cheaper than blake2b
        text_reuse = _reuse(local, ids, kind, config, previous, "local_keys")
        keys = np.zeros(len(ids), np.uint64)
        same = np.flatnonzero(text_reuse >= 0)
        keys[same] = previous.keys[text_reuse[same]]  # type: ignore[index, union-attr]
        other = np.flatnonzero(text_reuse < 0)
        keys[other] = _row_keys([rows[i] for i in other.tolist()])
    else:
        keys = _row_keys(rows)
        text_reuse = _reuse(keys, ids, kind, config, previous, "keys")
    name_keys = np.zeros(len(ids), np.uint64)
    reused = np.flatnonzero(text_reuse >= 0)
    if reused.size:
        name_keys[reused] = previous.name_keys[text_reuse[reused]]  # type: ignore[index, union-attr]
    fields, aliases, name_parts = {}, {}, []
    changed = np.flatnonzero(text_reuse < 0).tolist()
    for i in changed:
        fields[i], aliases[i], key_part = content(rows[i])
        name_parts.append(key_part)
    name_keys[changed] = _row_keys(name_parts)
    name_reuse = _reuse(name_keys, ids, kind, config, previous, "name_keys")
    names = [previous.names[j] if j >= 0 else fields[i][0]  # type: ignore[union-attr]
             for i, j in enumerate(text_reuse.tolist())]
    for i in np.flatnonzero(name_reuse >= 0).tolist():
        aliases.pop(i, None)
    for i in np.flatnonzero(name_reuse < 0).tolist():
        if i not in aliases:  # unchanged text, but a name index that cannot lend its row
            fields[i], aliases[i], _ = content(rows[i])
    return _NodeTexts(kind, names, keys, name_keys, text_reuse, name_reuse, fields, aliases, local)


def _reuse(keys: np.ndarray, ids: tuple[str, ...], kind: str, config: TextConfig, previous: Snapshot | None,
           attr: str) -> np.ndarray:
    """Each node's row in ``previous`` if its ``attr`` digest is the same there, else -1."""
    old = getattr(previous, attr, None)
    lender = None if previous is None else previous.name_index if attr == "name_keys" else previous.text.tf
    if previous is None or lender is None or old is None or previous.parts.get("rows") != [kind, config.key()]:
        return np.full(len(ids), -1, np.int64)
    get = previous.index.get
    rows = np.fromiter((get(nid, -1) for nid in ids), np.int64, len(ids))
    same = (rows >= 0) & (old[np.maximum(rows, 0)] == keys) if old.size else np.zeros(len(ids), bool)
    return np.where(same, rows, -1)


def _row_keys(rows: Iterable[Sequence[str]]) -> np.ndarray:
    """A 64-bit blake2b digest of each row of strings (their lengths first: no split is ambiguous)."""
    blake = hashlib.blake2b
    out = b"".join(blake((",".join(map(str, map(len, r))) + "|" + "".join(r)).encode("utf-8", "surrogatepass"),
                         digest_size=8).digest() for r in rows)
    return np.frombuffer(out, np.uint64).copy()


def _build(rows: _Rows, db_id: str, config: TextConfig, embedder: str | None,
           previous: Snapshot | None = None) -> Snapshot:
    ids, t, arrays = rows.graph.ids, rows.texts, rows.graph.arrays
    old = previous.parts if previous is not None else {}
    parts = {"rows": [t.kind, config.key()], "graph": old.get("graph") if arrays is None else _graph_fingerprint(arrays)}
    if _unchanged(t.text_reuse, previous):
        text = previous.text  # type: ignore[union-attr]
    else:
        text = TextIndex.build([t.fields.get(i) for i in range(len(ids))], config,
                               previous.text if previous is not None else None, t.text_reuse)
    snap = Snapshot(db_id=db_id, version=rows.version, node_ids=ids, names=t.names, text=text,
                    graph=_graph(arrays, previous if arrays is None or _same(old, parts, "graph") else None, previous),
                    rowids=rows.rowids, parts=parts, keys=t.keys, name_keys=t.name_keys,
                    vector_keys=rows.vector_keys, local_keys=t.local_keys, graph_local=rows.graph.local)
    if rows.edge_rowids is not None and rows.edge_rowids.size == snap.graph.n_edges:  # else no delta: a full build
        snap.edge_rowids = rows.edge_rowids
    if _unchanged(t.name_reuse, previous) and previous.name_index is not None:  # type: ignore[union-attr]
        snap.name_index = previous.name_index  # type: ignore[union-attr]
    else:
        snap.name_index = NameIndex.build(t.names, [t.aliases.get(i) for i in range(len(ids))], text.analyzer,
                                          previous.name_index if previous is not None else None, t.name_reuse)
    return _with_vectors(snap, rows.vectors, embedder)


def _unchanged(reuse: np.ndarray, previous: Snapshot | None) -> bool:
    """Every node reuses its own row of ``previous``, which has no other rows."""
    return previous is not None and previous.n == reuse.size and bool(np.array_equal(reuse, np.arange(reuse.size)))


def _same(old: dict[str, Any], new: dict[str, Any], part: str) -> bool:
    return part in old and old[part] == new[part]


def _digest(strings: Iterable[str]) -> str:
    """A digest of a sequence of strings: their lengths, then their text (so no split is ambiguous)."""
    items = list(strings)
    digest = hashlib.blake2b(np.fromiter(map(len, items), np.int64, len(items)).tobytes(), digest_size=16)
    digest.update("".join(items).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _graph_fingerprint(arrays: GraphArrays) -> list[Any]:
    digest = hashlib.blake2b(digest_size=16)
    for a in (arrays.src, arrays.dst, arrays.type_code, arrays.weight):
        digest.update(np.ascontiguousarray(a).tobytes())
    return [list(arrays.types), _digest(arrays.node_ids), digest.hexdigest()]


def _graph(arrays: GraphArrays | None, unchanged: Snapshot | None, previous: Snapshot | None) -> GraphIndex:
    """The previous version's index when the graph is unchanged; else a new one whose communities
    start from the previous version's (Leiden refining a partition: ~4x faster than from scratch,
    same modularity on a random 100k/1M graph), so one added edge does not cost a full detection."""
    if unchanged is not None or arrays is None:
        return unchanged.graph  # type: ignore[union-attr]
    graph = GraphIndex.build(arrays)
    return graph.precompute(_carried_communities(arrays.node_ids, previous))


def _carried_communities(ids: tuple[str, ...], previous: Snapshot | None) -> np.ndarray | None:
    """The previous labels per current row (new nodes alone in new communities), or None."""
    labels = previous.graph.cached_communities() if previous is not None else None
    if labels is None or previous is None or labels.size == 0:  # an empty KG's partition carries nothing
        return None
    rows = np.fromiter((previous.index.get(nid, -1) for nid in ids), np.int64, len(ids))
    carried = np.where(rows >= 0, labels[np.maximum(rows, 0)], labels.size + np.arange(len(ids)))
    return np.unique(carried, return_inverse=True)[1].astype(np.int64)


def _with_vectors(snap: Snapshot, vectors: np.ndarray | None, embedder: str | None) -> Snapshot:
    if vectors is not None and vectors.shape[0] != snap.n:
        raise IndexDamaged(f"{vectors.shape[0]} vectors for {snap.n} nodes (a damaged cache; it is rebuilt)")
    snap.vectors = vectors
    snap.embedder = embedder if vectors is not None else None
    return snap


def _caches_vectors(store: GraphStore) -> bool:
    # Only native KGs: an attached KG's vectors live in a sidecar whose writes leave its version alone,
    # so a cached copy under that version could go stale.
    return store.native_schema


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


def _folder(root: Path, db_id: str, version: str, config: TextConfig) -> Path:
    return root / db_id / "snapshots" / _safe(f"{version}-{config.key()}")


def _vectors_file(folder: Path, embedder: str) -> Path:
    return folder / f"vectors-{_safe(embedder)}.npy"


# -- the cache folder: published whole by a rename, pruned with care ---------------------------------
# A process loading a folder that another prunes meanwhile finds files missing and builds from the KG
# instead; the grace period only makes that rare.
PRUNE_AFTER_SECONDS = 30.0
DELTA_SAVE_DELAY = 5.0  # a snapshot made by a delta is saved once its KG had no newer one for this long
TMP_SUFFIX = ".tmp"  # folders being written (by any process) end so; never loaded
TMP_MAX_AGE_SECONDS = 3600.0  # a temp folder this old belongs to a build that died
LOAD_ERRORS = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, pickle.UnpicklingError)


class _VersionMoved(Exception):
    """The KG changed between finding a cache folder and reading what it lacks: build instead."""


def _load_cached(store: GraphStore, config: TextConfig, embedder: str | None, cache_root: Path,
                 version: str) -> Snapshot | None:
    """The cached snapshot of ``version``, or None when there is none, it is damaged, or it went away
    (pruned by another process) while being read."""
    folder = _folder(cache_root, store.db_id, version, config)
    if not (folder / "meta.json").exists():
        return None
    try:
        snap = _load(folder, store, config, version)
        return _with_vectors(snap, _cached_vectors(folder, store, embedder, cache_root, snap), embedder)
    except _VersionMoved:
        return None
    except LOAD_ERRORS:
        _discard(folder)  # a damaged folder is rebuilt, never trusted (and one already gone stays gone)
        return None


def _cached_vectors(folder: Path, store: GraphStore, embedder: str | None, cache_root: Path,
                    snap: Snapshot) -> np.ndarray | None:
    """The vectors of ``snap``: memory-mapped from its folder, else read from the store in a transaction
    that still sees the snapshot's version (and saved into the folder for the next process)."""
    if not embedder:
        return None
    if not _caches_vectors(store):
        return load_vectors(store, embedder, snap.node_ids, cache_root)
    path = _vectors_file(folder, embedder)
    if path.exists():
        return np.load(path, mmap_mode="r")
    with store.read_transaction():
        if store.version() != snap.version:
            raise _VersionMoved
        vectors = load_vectors(store, embedder, snap.node_ids, cache_root)
    if vectors is not None:
        _publish_array(path, vectors)
    return vectors


def _publish_array(path: Path, array: np.ndarray) -> None:
    """Write ``path`` whole or not at all (unique temp file + rename), so a reader never maps half of it."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{uuid.uuid4().hex}.npy")
    try:
        np.save(tmp, array)
        os.replace(tmp, path)
    except OSError:  # the folder was pruned meanwhile, or no space: the next process reads the store
        tmp.unlink(missing_ok=True)


def _save(snap: Snapshot, folder: Path, with_vectors: bool) -> None:
    """Publish the snapshot under ``folder``: written into a temp folder of this process and renamed
    into place (atomic; when several processes build one version the first rename wins), then older
    versions pruned. Caching only saves time: a folder that cannot be written is skipped."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=TMP_SUFFIX, dir=folder.parent))
    except OSError:
        return
    try:
        _write(snap, tmp, with_vectors)
        os.rename(tmp, folder)  # fails when another process published this version first
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return
    except BaseException:  # a bug or an interrupt: no half folder left, the older version's kept
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _prune(folder.parent, keep=folder)


class _Saver:
    """Saves snapshots in one background thread, so the query after a write does not wait for the disk.

    A save is the same temp-folder-and-rename publication as ``_save``: a reader in any process sees
    the old folder or the new one whole, never a half-written one; a save that fails (an exception,
    the process killed) leaves at most a temp folder that ``_prune`` removes, and the folder of the
    older version loadable. Several writes in a row queue one save per KG: the newest snapshot.
    ``delay``: the save waits until no newer snapshot of the KG came for that long (a delta per write
    is ~0.1-0.3 s of CPU; saving go's whole snapshot after each one tripled the write-to-search time
    on 2 loaded cores)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: dict[Path, tuple[Snapshot, Path, bool]] = {}  # KG's snapshot folder -> newest job
        self._due: dict[Path, float] = {}  # KG's snapshot folder -> when its job may run (monotonic)
        self._thread: threading.Thread | None = None
        self.failures = 0

    def submit(self, snap: Snapshot, folder: Path, with_vectors: bool, delay: float = 0.0) -> None:
        with self._lock:
            self._queue[folder.parent] = (snap, folder, with_vectors)
            self._due[folder.parent] = time.monotonic() + delay
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kgos-snapshot-save", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    return
                key = min(self._due, key=self._due.__getitem__)
                wait = self._due[key] - time.monotonic()
                job = self._queue.pop(key) if wait <= 0 else None
                if job is not None:
                    del self._due[key]
            if job is None:
                time.sleep(min(wait, 0.5))  # a newer job may come meanwhile: it replaces this one
                continue
            try:
                _save(*job)
            except Exception:  # noqa: BLE001 - a cache that cannot be written only costs the next process time
                self.failures += 1

    def wait(self, timeout: float | None = None) -> bool:
        """Run every queued save now (delayed ones too) and block until they are done (or ``timeout``
        s passed); True when none is left."""
        with self._lock:
            self._due = dict.fromkeys(self._due, 0.0)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                thread = self._thread
            if thread is None:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            thread.join(left)


_SAVES = _Saver()
wait_for_saves = _SAVES.wait
atexit.register(_SAVES.wait, 120.0)  # a CLI process that wrote and searched still leaves its snapshot


def _newest_cached(store: GraphStore, config: TextConfig, cache_root: Path) -> Snapshot | None:
    """The newest snapshot saved for this KG and text configuration (of an older version): a new
    process, or a server that another wrote behind, builds the current one from it incrementally."""
    parent = cache_root / store.db_id / "snapshots"
    suffix = _safe(f"-{config.key()}")
    try:
        folders = [f for f in parent.iterdir() if f.name.endswith(suffix) and not f.name.startswith(".")]
        folders.sort(key=lambda f: (f / "meta.json").stat().st_mtime, reverse=True)
    except OSError:
        return None
    for folder in folders[:1]:
        try:
            meta = json.loads((folder / "meta.json").read_text())
            return _load(folder, store, config, str(meta.get("version")))
        except (*LOAD_ERRORS, IndexDamaged):  # pruned meanwhile, half-gone or of another format: build in full
            return None
    return None


def _write(snap: Snapshot, tmp: Path, with_vectors: bool) -> None:
    np.save(tmp / "node_ids.npy", np.array(snap.node_ids, dtype=object), allow_pickle=True)
    np.save(tmp / "names.npy", np.array(snap.names, dtype=object), allow_pickle=True)
    if snap.rowids is not None:
        np.save(tmp / "rowids.npy", snap.rowids)
    if snap.edge_rowids is not None:
        np.save(tmp / "edge_rowids.npy", snap.edge_rowids)
    if with_vectors and snap.vectors is not None and snap.embedder:
        np.save(_vectors_file(tmp, snap.embedder), snap.vectors)
    snap.text.save(tmp)
    if snap.name_index is not None:
        snap.name_index.save(tmp / "names")
    snap.graph.save(tmp / "graph")
    if snap.keys is not None and snap.name_keys is not None:
        np.save(tmp / "node_keys.npy", snap.keys)
        np.save(tmp / "name_keys.npy", snap.name_keys)
    (tmp / "meta.json").write_text(json.dumps({"format": FORMAT, "version": snap.version, "parts": snap.parts}))


def _prune(parent: Path, keep: Path) -> None:
    """Remove the folders of other versions once no process is likely to be loading them still, and
    temp folders left by builds that died."""
    now = time.time()
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        try:
            age = now - entry.stat().st_mtime
        except OSError:
            continue
        limit = TMP_MAX_AGE_SECONDS if entry.name.endswith(TMP_SUFFIX) else PRUNE_AFTER_SECONDS
        if entry != keep and age > limit:
            _discard(entry)


def _discard(folder: Path) -> None:
    """Remove a folder at once for every process (renamed aside first, then deleted at leisure)."""
    trash = folder.with_name(f".{folder.name}.{uuid.uuid4().hex}.trash{TMP_SUFFIX}")
    try:
        os.rename(folder, trash)
    except OSError:
        return  # gone already (another process discarded it)
    shutil.rmtree(trash, ignore_errors=True)


def _load(folder: Path, store: GraphStore, config: TextConfig, version: str) -> Snapshot:
    meta = json.loads((folder / "meta.json").read_text())
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != version:
        raise IndexDamaged(f"stale or damaged snapshot in {folder}")
    rowids = np.load(folder / "rowids.npy") if (folder / "rowids.npy").exists() else None
    snap = Snapshot(db_id=store.db_id, version=version,
                    node_ids=tuple(np.load(folder / "node_ids.npy", allow_pickle=True).tolist()),
                    names=np.load(folder / "names.npy", allow_pickle=True).tolist(),
                    text=TextIndex.load(folder, config), graph=GraphIndex.load(folder / "graph"),
                    rowids=rowids, parts=meta.get("parts") or {})
    snap.name_index = NameIndex.load(folder / "names", snap.text.analyzer)
    if (folder / "edge_rowids.npy").exists():
        edges = np.load(folder / "edge_rowids.npy")
        snap.edge_rowids = edges if edges.size == snap.graph.n_edges else None
    if (folder / "node_keys.npy").exists():
        snap.keys, snap.name_keys = np.load(folder / "node_keys.npy"), np.load(folder / "name_keys.npy")
        if {snap.keys.size, snap.name_keys.size} != {snap.n}:
            raise IndexDamaged(f"the node keys in {folder} do not fit its nodes (a damaged cache; it is rebuilt)")
    sizes = {len(snap.names), snap.text.matrix.shape[0], snap.graph.n, snap.name_index.n, len(rowids) if rowids is not None else snap.n}
    if sizes != {snap.n}:
        raise IndexDamaged(f"the arrays in {folder} do not fit together (a damaged cache; it is rebuilt)")
    return snap
