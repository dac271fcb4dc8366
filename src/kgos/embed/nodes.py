"""Embedding a KG's nodes: the vectors ``kg.embed`` writes and the index layer loads.

Only nodes whose text changed since they were last embedded with the same model are embedded again
(the content hash of ``embed_text(node)`` sits next to each vector); vectors of deleted nodes go.
Where the vectors live (the KG's own table, or a sidecar for attached KGs) is the index layer's
business (``kgos.index.vectors``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..index import vectors as V
from ..index.vectors import _table, _VectorTable, embed_text, name_texts, names_model
from ..store.base import GraphStore
from .base import Embedder, content_hash

WRITE_CHUNK = 4096  # nodes embedded and written per transaction: an interrupted run keeps its work
FILL_CHUNK = 1024  # the same for a silent fill-in: its commits cost readers nothing, so lose less on Ctrl-C


@dataclass(frozen=True)
class EmbedReport:
    db_id: str
    model: str
    dims: int
    nodes: int
    embedded: int
    unchanged: int
    removed: int
    seconds: float
    names_embedded: int = 0  # nodes whose name vectors were (re)made (issue 13 lever 3)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EmbedStatus:
    """Which vectors search uses (``search_model``, a spec) and how far the fill-in towards ``target``
    has come (``target_vectors`` of ``nodes``); ``target`` is None when nothing is pending."""

    db_id: str
    search_model: str | None
    target: str | None
    nodes: int
    target_vectors: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NamesStatus:
    """Whether the KG keeps name vectors of its search model (``model``, a vector name; None: no
    vectors yet) and how many nodes have them (``kgos embed KG --names``)."""

    db_id: str
    model: str | None
    kept: bool
    nodes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def embed_store(store: GraphStore, embedder: Embedder, cache_root: Path | None = None, batch_size: int = 64,
                progress: Callable[[int], None] | None = None,
                total: Callable[[int], None] | None = None, bump: bool = True) -> EmbedReport:
    """Embed every node whose text changed since it was last embedded with this model. ``total`` is
    told how many that is before the first ``progress`` increment (for a percentage and an ETA).
    ``bump=False`` when search does not use this model yet (a fill-in): its chunks then leave the KG's
    version alone, so readers keep their snapshot instead of rebuilding it after every chunk."""
    t0 = time.perf_counter()
    table = _table(store, cache_root)
    known = table.rows(embedder.name)
    todo = [(n.id, t, content_hash(embedder.name, t)) for n in store.iter_nodes() for t in [embed_text(n)]]
    changed = [(nid, t, h) for nid, t, h in todo if known.get(nid) != h]
    stale = set(known) - {nid for nid, _, _ in todo}
    if total is not None:
        total(len(changed))
    size = WRITE_CHUNK if bump else FILL_CHUNK
    for start in range(0, len(changed), size):
        chunk = changed[start:start + size]
        dims, items = _embedded(embedder, chunk, batch_size, progress)
        _write(store, table, embedder.name, dims, items, bump=bump)
    if stale:
        _write(store, table, embedder.name, 0, [], remove=stale, bump=bump)
    # outside the meter's total: its batches advance it by 0, which still lets a job's progress stop it
    named = embed_names(store, embedder, cache_root, batch_size, (lambda n: progress(0)) if progress else None, bump=bump)
    return EmbedReport(store.db_id, embedder.name, embedder.dims, len(todo), len(changed),
                       len(todo) - len(changed), len(stale), time.perf_counter() - t0, named)


def embed_names(store: GraphStore, embedder: Embedder, cache_root: Path | None = None, batch_size: int = 64,
                progress: Callable[[int], None] | None = None, node_ids: Iterable[str] | None = None,
                bump: bool = True) -> int:
    """Embed the name and first aliases (``name_texts``) of every node (or of ``node_ids``) whose names
    changed since, by content hash; remove those of nodes that no longer need them. Only KGs that keep
    name vectors (``names_wanted``) in a SQLite vector table get them. Returns how many nodes."""
    if not V.names_wanted(store, embedder.name):
        return 0
    table = _table(store, cache_root)
    if not isinstance(table, _VectorTable):
        return 0
    model = names_model(embedder.name)
    if node_ids is None:
        nodes, known = list(store.iter_nodes()), table.rows(model)
    else:
        ids = list(dict.fromkeys(node_ids))
        nodes, known = list(store.get_nodes(ids).values()), table.hashes(model, ids)
    todo = [(n.id, texts, content_hash(embedder.name, "\n".join(texts))) for n in nodes for texts in [name_texts(n)]]
    stale = {nid for nid, texts, _ in todo if not texts and nid in known}
    if node_ids is None:
        stale |= set(known) - {n.id for n in nodes}
    changed = [t for t in todo if t[1] and known.get(t[0]) != t[2]]
    for start in range(0, len(changed), WRITE_CHUNK):
        chunk = changed[start:start + WRITE_CHUNK]
        flat = [text for _, texts, _ in chunk for text in texts]
        vectors = embedder.embed(flat, batch_size=batch_size, progress=progress).astype(np.float32)
        ends = np.cumsum([len(texts) for _, texts, _ in chunk])
        items = [(nid, h, vectors[end - len(texts):end].tobytes()) for (nid, texts, h), end in zip(chunk, ends)]
        _write(store, table, model, vectors.shape[1], items, bump=bump)
    if stale:
        _write(store, table, model, 0, [], remove=stale, bump=bump)
    return len(changed)


def embed_nodes(store: GraphStore, embedder: Embedder, node_ids: Iterable[str], cache_root: Path | None = None,
                batch_size: int = 64) -> int:
    """Embed the given nodes whose text changed (the write path: a node is searchable by meaning as
    soon as it is written); one batch, one transaction. Returns how many were embedded."""
    ids = list(dict.fromkeys(node_ids))
    if not ids:
        return 0
    table = _table(store, cache_root)
    known = table.hashes(embedder.name, ids)
    nodes = store.get_nodes(ids)
    todo = [(nid, t, h) for nid, node in nodes.items() for t in [embed_text(node)]
            for h in [content_hash(embedder.name, t)] if known.get(nid) != h]
    if todo:
        dims, items = _embedded(embedder, todo, batch_size)
        _write(store, table, embedder.name, dims, items)
    embed_names(store, embedder, cache_root, batch_size, node_ids=ids)
    return len(todo)


def enable_names(store: GraphStore, embedder: Embedder, cache_root: Path | None = None, batch_size: int = 64,
                 progress: Callable[[int], None] | None = None) -> int:
    """Keep name vectors of ``embedder`` in this KG from now on (``kg.embed`` and writes keep them
    current) and make the missing ones. Returns how many nodes were embedded."""
    if store.read_only or not hasattr(store, "set_meta"):
        raise InvalidArgument(f"'{store.db_id}' is read-only: name vectors are recorded in the KG itself")
    if not isinstance(_table(store, cache_root), _VectorTable):
        raise InvalidArgument(f"'{store.db_id}' keeps its vectors in its own database: name vectors need a SQLite KG")
    store.set_meta(**{V.NAMES_META + embedder.name: "1"})  # type: ignore[attr-defined]
    return embed_names(store, embedder, cache_root, batch_size, progress)


def drop_names(store: GraphStore, model: str, cache_root: Path | None = None) -> bool:
    """Stop keeping name vectors of ``model`` and remove them. Returns whether there were any."""
    had = store.meta().get(V.NAMES_META + model) == "1"
    if hasattr(store, "set_meta") and had:
        store.set_meta(**{V.NAMES_META + model: ""})  # type: ignore[attr-defined]
    table = _table(store, cache_root)
    if isinstance(table, _VectorTable):
        _write(store, table, names_model(model), 0, [], remove=set(table.rows(names_model(model))))
    return had


def enable_kg_names(store: GraphStore, cache_root: Path | None = None, batch_size: int = 64,
                    progress: Callable[[int], None] | None = None) -> int:
    """``kgos embed KG --names``: name vectors of the KG's search model, kept from now on."""
    from .registry import get_embedder
    spec = store.meta().get("embedder")
    if not spec:
        raise InvalidArgument(f"'{store.db_id}' has no vectors yet: run `kgos embed {store.db_id}` first")
    return enable_names(store, get_embedder(spec), cache_root, batch_size, progress)


def disable_kg_names(store: GraphStore, cache_root: Path | None = None) -> bool:
    """``kgos embed KG --drop-names``: stop keeping the search model's name vectors, remove them."""
    from .registry import embedder_name
    spec = store.meta().get("embedder")
    return drop_names(store, embedder_name(spec), cache_root) if spec else False


def names_status(store: GraphStore, model: str | None, cache_root: Path | None = None) -> NamesStatus:
    """Whether ``store`` keeps name vectors of ``model`` and how many nodes have one."""
    if model is None:
        return NamesStatus(store.db_id, None, False, 0)
    return NamesStatus(store.db_id, model, V.names_wanted(store, model), vector_count(store, names_model(model), cache_root))


def stored_vectors(store: GraphStore, model: str, cache_root: Path | None = None) -> dict[str, tuple[bytes, int]]:
    """Every vector stored for ``model``, keyed by the content hash of the text it was made from."""
    return {h: (blob, dims) for h, blob, dims in _table(store, cache_root).rows(model, with_vectors=True).values()}


def carry_vectors(store: GraphStore, model: str, vectors: dict[str, tuple[bytes, int]],
                  cache_root: Path | None = None) -> int:
    """Give each node whose text hashes to a known vector that vector (a KG replaced by an import
    keeps the vectors of its unchanged nodes instead of embedding them again). Returns how many."""
    if not vectors:
        return 0
    items = [(n.id, h, vectors[h][0]) for n in store.iter_nodes()
             for h in [content_hash(model, embed_text(n))] if h in vectors]
    dims = next(iter(vectors.values()))[1]
    items = [i for i in items if vectors[i[1]][1] == dims]
    if items:
        _write(store, _table(store, cache_root), model, dims, items)
    return len(items)


def drop_vectors(store: GraphStore, model: str, cache_root: Path | None = None) -> None:
    """Remove every vector of ``model`` (the fast tier's, once the model it stood in for covers the KG;
    search no longer reads them, so the version stays)."""
    table = _table(store, cache_root)
    if table.native:  # the KG's own table (SQLite or PostgreSQL): one of its transactions
        with store.transaction(bump=False):  # type: ignore[attr-defined]
            table.drop(model)
            table.drop(names_model(model))
    else:
        table.drop(model)
        table.drop(names_model(model))


def vector_count(store: GraphStore, model: str, cache_root: Path | None = None) -> int:
    """How many nodes have a vector of ``model`` (current or not: progress, not validity)."""
    table = _table(store, cache_root)
    return len(table.rows(model))


def _embedded(embedder: Embedder, todo: list[tuple[str, str, str]], batch_size: int,
              progress: Callable[[int], None] | None = None) -> tuple[int, list[tuple[str, str, bytes]]]:
    """Embed the texts of ``todo`` ((id, text, hash) triples): their dims and the rows to write."""
    vectors = embedder.embed([t for _, t, _ in todo], batch_size=batch_size, progress=progress)
    return vectors.shape[1], [(nid, h, vectors[i].astype(np.float32).tobytes()) for i, (nid, _, h) in enumerate(todo)]


def _write(store: GraphStore, table: _VectorTable, model: str, dims: int, items: list[tuple[str, str, bytes]],
           remove: set[str] | None = None, bump: bool = True) -> None:
    if table.native:  # the KG's own table (SQLite or PostgreSQL): one of its transactions
        with store.transaction(bump):  # type: ignore[attr-defined]
            table.write(model, dims, items)
            table.remove(model, remove or ())
    else:
        table.conn.execute("BEGIN")
        table.write(model, dims, items)
        table.remove(model, remove or ())
        table.conn.execute("COMMIT")
