"""``kgos kg copy SRC DST``: one KG into another backend (SQLite file <-> PostgreSQL), losslessly.

The copy carries every node and edge with its id, timestamps and properties, the KG's name,
description and settings (embedder, tuned weights), and the stored vectors of every model, so the
copy searches exactly as the original. It is an import of the original as a ``Source``: the same
checks, the same all-or-nothing load (``COPY`` into PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..index.vectors import _table, models
from ..store.base import GraphStore
from ..store.formats import Record, Source

# Metadata the copy brings along; format, created_at and version belong to the new KG.
SETTINGS = ("embedder", "embed_target", "weight_profiles")


def store_source(store: GraphStore) -> Source:
    """A KG read as an import ``Source``: records with ids and timestamps, in storage order."""
    meta = store.meta()

    def nodes() -> Iterator[Record]:
        return ((f"nodes[{i}]", n.to_dict(timestamps=True)) for i, n in enumerate(store.iter_nodes()))

    def edges() -> Iterator[Record]:
        return ((f"edges[{i}]", e.to_dict(timestamps=True)) for i, e in enumerate(store.iter_edges()))

    return Source("kgos", {"name": meta.get("name", store.db_id), "description": meta.get("description", "")},
                  nodes, edges)


def settings_of(store: GraphStore, workspace_setting: Any) -> dict[str, str]:
    """The KG's settings: in its own metadata (native schema) or the workspace's (attached KGs)."""
    meta = store.meta() if store.native_schema else {}
    values = {k: meta.get(k) or workspace_setting(store.db_id, k) or "" for k in SETTINGS}
    return {k: v for k, v in values.items() if v}


def copy_vectors(source: GraphStore, target: GraphStore, cache_root: Path) -> int:
    """Every stored vector of ``source`` into ``target`` (by node id); returns how many."""
    count = 0
    for model in models(source):
        rows = _table(source, cache_root).rows(model, with_vectors=True)
        by_dims: dict[int, list[tuple[str, str, bytes]]] = {}
        for node_id, (digest, blob, dims) in rows.items():
            by_dims.setdefault(dims, []).append((node_id, digest, bytes(blob)))
        table = _table(target, cache_root)
        for dims, items in by_dims.items():
            with target.transaction(bump=False):  # type: ignore[attr-defined]
                table.write(model, dims, items)
            count += len(items)
    return count
