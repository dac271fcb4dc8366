"""A read-only, versioned view of one KG for queries: ids, text index, graph index, vectors.

Built once per KG version (DESIGN.md section 8) and saved under the workspace cache keyed by that
version, so a new process loads arrays instead of re-tokenising and re-scanning the graph.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import shutil
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexDamaged
from ..model import Node
from ..store.arrays import GraphArrays
from ..store.base import GraphStore
from .graph import GraphIndex
from .names import NameIndex, alias_strings
from .text import TextConfig, TextIndex
from .vectors import load_vectors

TEXT_PROPERTIES = ("aliases", "keywords", "tags", "synonyms")
FORMAT = "snapshot/3"  # 2: built from one read transaction; folders of 1 may mix two versions; 3: + name index


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
    return (node.name, extra_text(node.properties), node.type.replace("_", " "), node.description)


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
    build_seconds: float = 0.0
    index: dict[str, int] = field(default_factory=dict)
    name_index: NameIndex | None = None  # names + aliases, matched whole
    # Digests of what each part was built from (saved in meta.json), so the next version's build
    # reuses the parts a write left alone, also after a snapshot was loaded (see ``_build``).
    parts: dict[str, Any] = field(default_factory=dict, repr=False)

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
    ``previous`` (this process's snapshot of an older version) lends the parts a write left alone."""
    if cache_root is not None:
        cached = _load_cached(store, config, embedder, cache_root, store.version())
        if cached is not None:
            return cached
    t0 = time.perf_counter()
    snap = _build(_read(store, embedder, cache_root), store.db_id, config, embedder, previous)
    snap.build_seconds = time.perf_counter() - t0
    if cache_root is not None:
        _save(snap, _folder(cache_root, store.db_id, snap.version, config), _caches_vectors(store))
    return snap


@dataclass(frozen=True)
class _Rows:
    """What a snapshot is made of, all read in one transaction."""

    version: str
    arrays: GraphArrays
    fields: dict[str, tuple[str, str, str, str]]
    aliases: dict[str, list[str]]
    rowids: np.ndarray | None
    vectors: np.ndarray | None


def _read(store: GraphStore, embedder: str | None, cache_root: Path | None) -> _Rows:
    # One transaction: read one by one, a write committed in between by another process gave edges
    # to nodes the node list lacked and rowids or vectors of another length than the ids.
    with store.read_transaction():
        version = store.version()  # first: see ForeignStore.read_transaction
        arrays = store.graph_arrays()
        nodes = list(store.iter_nodes())
        fields = {n.id: node_fields(n) for n in nodes}
        aliases = {n.id: alias_strings(n.properties) for n in nodes}
        rowids = store.node_rowids() if hasattr(store, "node_rowids") else None
        vectors = load_vectors(store, embedder, arrays.node_ids, cache_root) if embedder else None
    return _Rows(version, arrays, fields, aliases, rowids, vectors)


def _build(rows: _Rows, db_id: str, config: TextConfig, embedder: str | None,
           previous: Snapshot | None = None) -> Snapshot:
    ids = rows.arrays.node_ids
    docs = [rows.fields[nid] for nid in ids]
    aliases = [rows.aliases[nid] for nid in ids]
    names = [d[0] for d in docs]
    parts = {"text": [config.key(), _digest(chain.from_iterable(docs))],
             "names": [config.key(), _digest(chain(names, map(str, map(len, aliases)), chain.from_iterable(aliases)))],
             "graph": _graph_fingerprint(rows.arrays)}
    old = previous.parts if previous is not None else {}
    text = previous.text if _same(old, parts, "text") else TextIndex.build(docs, config)  # type: ignore[union-attr]
    snap = Snapshot(db_id=db_id, version=rows.version, node_ids=ids, names=names, text=text,
                    graph=_graph(rows.arrays, previous if _same(old, parts, "graph") else None, previous),
                    rowids=rows.rowids, parts=parts)
    snap.name_index = (previous.name_index if _same(old, parts, "names")  # type: ignore[union-attr]
                       else NameIndex.build(names, aliases, text.analyzer))
    return _with_vectors(snap, rows.vectors, embedder)


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


def _graph(arrays: GraphArrays, unchanged: Snapshot | None, previous: Snapshot | None) -> GraphIndex:
    """The previous version's index when the graph is unchanged; else a new one whose communities
    start from the previous version's (Leiden refining a partition: ~4x faster than from scratch,
    same modularity on a random 100k/1M graph), so one added edge does not cost a full detection."""
    if unchanged is not None:
        return unchanged.graph
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
    _prune(folder.parent, keep=folder)


def _write(snap: Snapshot, tmp: Path, with_vectors: bool) -> None:
    np.save(tmp / "node_ids.npy", np.array(snap.node_ids, dtype=object), allow_pickle=True)
    np.save(tmp / "names.npy", np.array(snap.names, dtype=object), allow_pickle=True)
    if snap.rowids is not None:
        np.save(tmp / "rowids.npy", snap.rowids)
    if with_vectors and snap.vectors is not None and snap.embedder:
        np.save(_vectors_file(tmp, snap.embedder), snap.vectors)
    snap.text.save(tmp)
    if snap.name_index is not None:
        snap.name_index.save(tmp / "names")
    snap.graph.save(tmp / "graph")
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
    sizes = {len(snap.names), snap.text.matrix.shape[0], snap.graph.n, snap.name_index.n, len(rowids) if rowids is not None else snap.n}
    if sizes != {snap.n}:
        raise IndexDamaged(f"the arrays in {folder} do not fit together (a damaged cache; it is rebuilt)")
    return snap
