"""Adopting the vectors an attached foreign KG already has (spec/001 1.5's ``embeddings``,
``node_embeddings`` or ``vec_embeddings`` tables of float32 BLOBs) instead of embedding it again.

The file's vectors are written as the vectors of a KG-OS embedder (the model the file names when
KG-OS knows it, or the one the user names), each under the content hash of the node's current text:
``kg.embed(model)`` afterwards finds them current and embeds only the nodes the file had no vector
for. Vectors are stored as unit rows (search compares cosines), and must have the embedder's
dimensions, else nothing is written and the error says which.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument, KGOSError
from ..index.vectors import _table, embed_text
from ..store.base import GraphStore
from .base import content_hash
from .nodes import _write
from .registry import get_embedder

ADOPT_BATCH = 4096


@dataclass(frozen=True)
class AdoptReport:
    """What was read from the file: its model name, the KG-OS model the vectors were stored as, how many."""

    stored_model: str
    model: str
    dims: int
    adopted: int
    skipped: int  # vectors of ids that are not nodes of the KG

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def known_model(store: GraphStore) -> str | None:
    """The KG-OS embedder the file's vectors name, when the file has one model and KG-OS knows it."""
    tables: list[Any] = getattr(store, "vector_tables", list)()
    names = {m for t in tables for m in t.models if m}
    if len(names) != 1:
        return None
    try:
        return get_embedder(next(iter(names))).spec
    except KGOSError:
        return None


def adopt_vectors(store: GraphStore, model: str, stored_model: str | None = None,
                  cache_root: Path | None = None) -> AdoptReport:
    """Store the file's vectors (of ``stored_model``, or its only model) as ``model``'s vectors."""
    read = getattr(store, "stored_vectors", None)
    if read is None:
        raise InvalidArgument(f"KG '{store.db_id}' is not an attached file with vectors of its own")
    embedder = get_embedder(model)
    table = _table(store, cache_root)
    rows: list[tuple[str, str, bytes]] = []
    skipped = 0
    for ids, vectors in read(stored_model):
        if vectors.shape[1] != embedder.dims:
            raise InvalidArgument(f"the file's vectors have {vectors.shape[1]} dimensions and {embedder.name}'s "
                                  f"{embedder.dims}: they were not made with it; name the right model")
        nodes = store.get_nodes(ids)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        for nid, vec in zip(ids, unit):
            node = nodes.get(nid)
            if node is None:
                skipped += 1
                continue
            rows.append((nid, content_hash(embedder.name, embed_text(node)), vec.tobytes()))
    # one write: a file whose vectors fail half way leaves the KG's vectors as they were
    _write(store, table, embedder.name, embedder.dims, rows, bump=False)
    return AdoptReport(stored_model or "", embedder.spec, embedder.dims, len(rows), skipped)
