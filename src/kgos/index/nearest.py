"""Query-time cosine against a snapshot's unit vectors: the exact scan, with BLAS held to one thread.

A query's matrix-vector product is small work spread over a pool that OpenBLAS sizes to the machine:
on cores shared with other processes its threads wait for each other, and a 0.05 ms product took
30-70 ms (issue 14). So every query-time product runs with one BLAS thread, through threadpoolctl's
controller, and the thread count is put back afterwards (the caller's own numpy work is left as it was;
no environment variable is changed).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from . import ann, quantised

# Name vectors (issue 13, lever 3): how a node's full-text cosine and its best name/alias cosine make
# its embedding score: "max" of the two, "blend" = NAME_BLEND x name + (1 - NAME_BLEND) x full, "off".
# blend 0.2: cli-man +1.5%, demo -0.4%, go +-0 of the hybrid's MRR@10; max: -3%, +0.6%, -0.2% (docs/embedders.md)
NAME_SCORING = "blend"
NAME_BLEND = 0.2
FILL_ROWS = 5_000  # approximate path: at most this many rows outside the candidates get an exact cosine
_controller: Any = None
_controller_lock = threading.Lock()


def _blas() -> Any:
    """One threadpoolctl controller per process, made at the first query, over the BLAS libraries of
    numpy and scipy (scipy.linalg brings its own; it is loaded first, so a controller made before
    anything imported it still holds both); None when threadpoolctl is not installed."""
    global _controller
    with _controller_lock:
        if _controller is None:
            import scipy.linalg  # noqa: F401  (loads scipy's OpenBLAS before the controller lists libraries)
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # pragma: no cover - a core dependency; degrade to the caller's threads
                _controller = False
            else:
                _controller = ThreadpoolController()
    return _controller or None


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """Run the block with one BLAS thread (about 20 microseconds to enter and leave)."""
    controller = _blas()
    if controller is None:
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


def cosine_all(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of ``query`` with every row of ``vectors`` (unit rows, so a dot product): float32."""
    q = np.asarray(query, dtype=vectors.dtype if vectors.dtype == np.float32 else np.float32)
    with single_thread_blas():
        return np.asarray(vectors @ q, dtype=np.float32)


def cosine_rows(vectors: np.ndarray, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Cosine of ``query`` with the given rows only (a gather, then a small product); ``rows``
    ascending, so a memory-mapped matrix is read front to back."""
    if rows.size == 0:
        return np.zeros(0, np.float32)
    with single_thread_blas():
        return np.asarray(np.asarray(vectors[rows], np.float32) @ np.asarray(query, np.float32), np.float32)


# -- the approximate path (index.ann) for large KGs -------------------------------------------------
def attach_ann(snap: Any, cache_root: Path | None, wait: bool = False) -> None:
    """Give a large snapshot its approximate index: the saved one of exactly its version and model, else
    a build is started (and waited for with ``wait``); until then queries use the exact scan."""
    if quantised.fresh(snap.ann, snap) or snap.vectors is None or snap.n < ann.MIN_ROWS or cache_root is None:
        return
    if not ann.available():
        return
    path = ann.index_file(cache_root, snap.db_id, snap.embedder)
    found = ann.load(path, snap.version, snap.embedder, snap.n)
    if found is None:
        vectors, version, model = snap.vectors, snap.version, snap.embedder
        thread = ann.BUILDS.start(path, lambda: ann.save(ann.build(vectors, version, model), path), f"kgos-ann-{path.stem}")
        if not wait:
            return
        thread.join()
        found = ann.load(path, snap.version, snap.embedder, snap.n)
    snap.ann = found


def approximate(snap: Any, exact: bool = False) -> bool:
    """Does a search of this snapshot take its embedding candidates from the approximate index?"""
    return not exact and snap.vectors is not None and quantised.fresh(snap.ann, snap)


def fill_in(snap: Any, query: np.ndarray, signal: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The embedding signal of the approximate path (normalised, exact on the index's candidates),
    completed with exact cosines for ``rows`` (those the other signals rank high): a node found by
    its text keeps the embedding score the exact scan would give it, so the fused ranking is kept."""
    rows = np.unique(rows)
    rows = rows[signal[rows] == 0]
    best = int(np.argmax(signal)) if signal.size else 0
    if rows.size == 0 or signal[best] <= 0:
        return signal
    scale = float(cosine_rows(snap.vectors, query, np.array([best]))[0])  # the maximum it was divided by
    out = signal.copy()
    out[rows] = np.maximum(cosine_rows(snap.vectors, query, rows), 0) / scale
    top = float(out.max())
    return out / top if top > 1 else out  # a filled row above every candidate: normalise as exact would


def ann_note(snap: Any) -> str | None:
    """What a large KG's search says when faiss is missing and every query scans all vectors."""
    if snap.vectors is None or snap.n < ann.MIN_ROWS:
        return None
    try:  # one import attempt per query (available() then _faiss() tried it twice)
        ann._faiss()
    except ann.MissingDependency as e:
        return f"{snap.n:,} vectors scanned exactly (no approximate index): {e}"
    return None


def similarities(snap: Any, query: np.ndarray, exact: bool = False) -> np.ndarray:
    """Cosine of the query with every row: exact; or (a snapshot with a fresh approximate index, and
    not ``exact``) exact for the index's best ``ann.CANDIDATES`` rows and 0 elsewhere; or (a
    mid-sized snapshot whose int8 copy is ready, not ``exact``) the int8 scan, exact on its best
    ``quantised.RESCORE`` rows."""
    index = snap.ann
    if not exact and quantised.fresh(index, snap):
        rows = index.search(query)
        out = np.zeros(snap.n, np.float32)
        out[rows] = cosine_rows(snap.vectors, query, rows)
        return with_names(snap, out, query)
    if not exact and quantised.wanted(snap, ann.MIN_ROWS):
        quantised.attach(snap)
        if quantised.fresh(snap.quantised, snap):
            return with_names(snap, rescored(snap, query), query)
    return with_names(snap, cosine_all(snap.vectors, query), query)


def rescored(snap: Any, query: np.ndarray) -> np.ndarray:
    """The int8 scan with its best ``quantised.RESCORE`` rows replaced by their exact cosines."""
    out = quantised.scan(snap.quantised, query)
    k = min(quantised.RESCORE, out.size)
    rows = np.sort(np.argpartition(-out, k - 1)[:k])
    out[rows] = cosine_rows(snap.vectors, query, rows)
    return out


def name_similarities(names: Any, query: np.ndarray) -> np.ndarray:
    """For each node in ``names.nodes``: the best cosine of the query with its name and alias vectors
    (a max over each node's run of rows, ``np.maximum.reduceat``)."""
    return np.maximum.reduceat(cosine_all(names.matrix, query), names.starts)


def with_names(snap: Any, full: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The full-text cosines ``full`` combined with the name-vector cosines (``NAME_SCORING``) for the
    nodes that have name vectors of the snapshot's model; the others keep their full-text cosine."""
    names = getattr(snap, "name_vectors", None)
    if NAME_SCORING == "off" or names is None or names.model != snap.embedder or names.nodes.size == 0:
        return full
    best = name_similarities(names, query)
    out = full.copy()
    rows = names.nodes
    if NAME_SCORING == "blend":
        out[rows] = NAME_BLEND * best + (1 - NAME_BLEND) * full[rows]
    else:
        out[rows] = np.maximum(full[rows], best)
    return out
