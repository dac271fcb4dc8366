"""A read-only, versioned view of one KG for queries: ids, text index, graph index, vectors.

Built once per KG version (DESIGN.md section 8) and saved under the workspace cache keyed by that
version, so a new process loads arrays instead of re-tokenising and re-scanning the graph.
"""

from __future__ import annotations

import functools
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Node
from ..store.base import GraphStore
from ..store.native import NativeStore
from .graph import GraphIndex
from .text import TextConfig, TextIndex
from .vectors import load_vectors

TEXT_PROPERTIES = ("aliases", "keywords", "tags", "synonyms")
FORMAT = "snapshot/1"


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
    build_seconds: float = 0.0
    index: dict[str, int] = field(default_factory=dict)

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
        return np.asarray(np.any(self.vectors != 0, axis=1))


def build(store: GraphStore, config: TextConfig, embedder: str | None = None,
          cache_root: Path | None = None) -> Snapshot:
    """Load the snapshot of the store's current version from the cache, or build (and save) it."""
    version = store.version()
    folder = _folder(cache_root, store.db_id, version, config) if cache_root else None
    if folder is not None and (folder / "meta.json").exists():
        try:
            snap = _load(folder, store, config, version)
            return _with_vectors(snap, store, embedder, cache_root)
        except (OSError, ValueError, KeyError):
            shutil.rmtree(folder, ignore_errors=True)  # a damaged cache is rebuilt, never trusted
    t0 = time.perf_counter()
    snap = _build(store, config, version)
    snap.build_seconds = time.perf_counter() - t0
    if folder is not None:
        _save(snap, folder, cache_root / store.db_id)  # type: ignore[operator]
    return _with_vectors(snap, store, embedder, cache_root)


def _with_vectors(snap: Snapshot, store: GraphStore, embedder: str | None, cache_root: Path | None) -> Snapshot:
    """Attach the node vectors: memory-mapped from the snapshot folder when cached (vectors are written
    through the store, so a new vector bumps the version and lands in a new folder), else from SQLite."""
    if not embedder:
        return snap
    # Only native KGs: an attached KG's vectors live in a sidecar whose writes leave its version alone.
    folder = (_folder(cache_root, store.db_id, snap.version, snap.text.config)
              if cache_root and isinstance(store, NativeStore) else None)
    cached = folder / f"vectors-{_safe(embedder)}.npy" if folder is not None else None
    if cached is not None and cached.exists():
        snap.vectors = np.load(cached, mmap_mode="r")
    else:
        snap.vectors = load_vectors(store, embedder, snap.node_ids, cache_root)
        if cached is not None and snap.vectors is not None and folder.exists():  # type: ignore[union-attr]
            tmp = cached.with_suffix(".tmp.npy")
            np.save(tmp, snap.vectors)
            tmp.rename(cached)
    snap.embedder = embedder if snap.vectors is not None else None
    return snap


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


def _build(store: GraphStore, config: TextConfig, version: str) -> Snapshot:
    arrays = store.graph_arrays()
    fields = {n.id: node_fields(n) for n in store.iter_nodes()}
    docs = [fields[nid] for nid in arrays.node_ids]
    rowids = store.node_rowids() if hasattr(store, "node_rowids") else None
    return Snapshot(db_id=store.db_id, version=version, node_ids=arrays.node_ids,
                    names=[d[0] for d in docs], text=TextIndex.build(docs, config),
                    graph=GraphIndex.build(arrays).precompute(), rowids=rowids)


def _folder(root: Path, db_id: str, version: str, config: TextConfig) -> Path:
    return root / db_id / "snapshots" / _safe(f"{version}-{config.key()}")


def _save(snap: Snapshot, folder: Path, kg_cache: Path) -> None:
    # Older versions of this KG are dead weight once a newer one is built.
    shutil.rmtree(kg_cache / "snapshots", ignore_errors=True)
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    np.save(tmp / "node_ids.npy", np.array(snap.node_ids, dtype=object), allow_pickle=True)
    np.save(tmp / "names.npy", np.array(snap.names, dtype=object), allow_pickle=True)
    if snap.rowids is not None:
        np.save(tmp / "rowids.npy", snap.rowids)
    snap.text.save(tmp)
    snap.graph.save(tmp / "graph")
    (tmp / "meta.json").write_text(json.dumps({"format": FORMAT, "version": snap.version}))
    tmp.rename(folder)


def _load(folder: Path, store: GraphStore, config: TextConfig, version: str) -> Snapshot:
    meta = json.loads((folder / "meta.json").read_text())
    if meta.get("format") != FORMAT or meta.get("version") != version:
        raise ValueError("stale snapshot")
    rowids = np.load(folder / "rowids.npy") if (folder / "rowids.npy").exists() else None
    return Snapshot(db_id=store.db_id, version=version,
                    node_ids=tuple(np.load(folder / "node_ids.npy", allow_pickle=True).tolist()),
                    names=np.load(folder / "names.npy", allow_pickle=True).tolist(),
                    text=TextIndex.load(folder, config), graph=GraphIndex.load(folder / "graph"),
                    rowids=rowids)
