"""Node embeddings at rest: float32 BLOBs with a content hash, embedded only when the text changed.

Native KGs keep them in their own ``node_embeddings`` table; attached (foreign) KGs, which KG-OS
does not write to, keep them in a sidecar SQLite file in the workspace cache.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..model import Node
from ..store.base import GraphStore
from ..store.vector_tables import SQLiteVectorTable as _VectorTable
from .names import alias_strings

EMBED_TEXT_CHARS = 1000
# Name vectors (issue 13, lever 3): a node's name and first aliases embedded apart from its full text,
# all in one row of the vector table under the model ``<model>#names`` (a BLOB of k vectors).
NAMES_SUFFIX = "#names"
NAME_VECTORS = False  # every KG gets them; off: only KGs that asked (kg_meta, ``names_wanted``), measured in docs/embedders.md
NAMES_META = "name_vectors:"  # kg_meta key + model: "1" once `kgos embed KG --names` asked for them
NAME_VECTORS_MAX = 4  # the name + 3 aliases: a node with 10,000 aliases costs 4 short texts
NAME_TEXT_CHARS = 120
# A rowid table, as in the native file (migration 002): 1.5 KB rows fit two to a page (a WITHOUT ROWID
# table spilled each to overflow pages, 3x the vectors' size). Sidecars made before keep their layout.
SIDECAR_SCHEMA = ("""CREATE TABLE IF NOT EXISTS node_embeddings (
  node_id TEXT NOT NULL, model TEXT NOT NULL, dims INTEGER NOT NULL, content_hash TEXT NOT NULL,
  vector BLOB NOT NULL)""", "CREATE UNIQUE INDEX IF NOT EXISTS node_embeddings_key ON node_embeddings(model, node_id)")


def embed_text(node: Node) -> str:
    """What a node's vector is made from: its name and description (capped)."""
    text = f"{node.name}. {node.description}" if node.description else node.name
    return text[:EMBED_TEXT_CHARS]


def name_texts(node: Node) -> list[str]:
    """What a node's name vectors are made from: its name, then its first aliases (distinct, case
    folded), capped; empty when that is only the full text again (a node with no description and
    no aliases: its full vector already is its name's)."""
    seen: dict[str, str] = {}
    for text in (node.name, *alias_strings(node.properties)):
        text = " ".join(text.split())[:NAME_TEXT_CHARS]
        if text and text.casefold() not in seen:
            seen[text.casefold()] = text
        if len(seen) >= NAME_VECTORS_MAX:
            break
    texts = list(seen.values())
    return [] if texts == [embed_text(node)] else texts


def names_wanted(store: GraphStore, model: str) -> bool:
    """Does this KG keep name vectors of ``model`` (all KGs with ``NAME_VECTORS``, else those that asked)?"""
    return NAME_VECTORS or store.meta().get(NAMES_META + model) == "1"


def names_model(model: str) -> str:
    """The vector-table model under which ``model``'s name vectors are kept."""
    return model + NAMES_SUFFIX


@dataclass(frozen=True)
class NameVectors:
    """The name vectors of one snapshot: unit rows ``matrix`` (m, dims), ``owner[i]`` the node row of
    matrix row i (ascending), ``starts`` the first matrix row of each node in ``nodes``."""

    model: str
    matrix: np.ndarray
    owner: np.ndarray
    nodes: np.ndarray
    starts: np.ndarray


def _table(store: GraphStore, cache_root: Path | None) -> Any:
    own = store.vector_table() if not store.read_only else None  # the KG's own table (native file, PostgreSQL)
    if own is not None:
        return own
    if cache_root is None:
        raise InvalidArgument("a read-only KG keeps its vectors in the workspace cache: open it through a "
                              "Workspace (or pass cache_root)")
    folder = cache_root / store.db_id
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "vectors.db", isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")  # readers in other processes never wait for an embedding run
    for statement in SIDECAR_SCHEMA:
        conn.execute(statement)
    return _VectorTable(conn, native=False)


def load_vectors(store: GraphStore, model: str, node_ids: tuple[str, ...],
                 cache_root: Path | None = None) -> np.ndarray | None:
    """The (n, dims) matrix aligned with ``node_ids`` (zero rows for nodes without a vector), or None."""
    try:
        table = _table(store, cache_root)
    except InvalidArgument:  # a read-only KG without a cache folder has no vectors to load
        return None
    try:
        rows = table.rows(model, with_vectors=True)
    finally:
        if not table.native:
            table.conn.close()  # the sidecar connection was opened for this read only
    if not rows:
        return None
    dims = next(iter(rows.values()))[2]
    index = {nid: i for i, nid in enumerate(node_ids)}
    hits = [(index[nid], blob) for nid, (_, blob, d) in rows.items() if d == dims and nid in index]
    matrix = np.zeros((len(node_ids), dims), np.float32)
    if hits:  # one bulk copy instead of a per-node loop
        positions = np.fromiter((i for i, _ in hits), np.int64, len(hits))
        matrix[positions] = np.frombuffer(b"".join(b for _, b in hits), np.float32).reshape(len(hits), dims)
    return matrix


def load_name_vectors(store: GraphStore, model: str | None, node_ids: tuple[str, ...],
                      cache_root: Path | None = None) -> NameVectors | None:
    """The name vectors of ``model`` for the nodes of ``node_ids`` (None when there are none). Only the
    SQLite tables (native or sidecar) keep them."""
    if not model or not names_wanted(store, model):  # a kg_meta read: no scan of the vector table
        return None
    try:
        table = _table(store, cache_root)
    except InvalidArgument:
        return None
    if not isinstance(table, _VectorTable):
        return None
    try:
        rows = table.rows(names_model(model), with_vectors=True)
    finally:
        if not table.native:
            table.conn.close()
    index = {nid: i for i, nid in enumerate(node_ids)}
    hits = sorted((index[nid], blob, dims) for nid, (_, blob, dims) in rows.items() if nid in index)
    if not hits:
        return None
    dims = hits[0][2]
    hits = [(i, b) for i, b, d in hits if d == dims and len(b) % (4 * dims) == 0]
    counts = np.fromiter((len(b) // (4 * dims) for _, b in hits), np.int64, len(hits))
    matrix = np.frombuffer(b"".join(b for _, b in hits), np.float32).reshape(-1, dims)
    nodes = np.fromiter((i for i, _ in hits), np.int64, len(hits))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    return NameVectors(model, matrix, np.repeat(nodes, counts), nodes, starts)


def models(store: GraphStore) -> dict[str, int]:
    """Embedding models with stored vectors in a native KG, and how many nodes each covers."""
    rows = store.vector_models()
    return {m: n for m, n in rows.items() if not m.endswith(NAMES_SUFFIX)}  # name vectors belong to their model
