"""An approximate nearest-neighbour index over a snapshot's vectors, for KGs above ``MIN_ROWS`` nodes.

At 1M nodes the exact cosine scan reads 1.5 GB (384-d float32) per query and was 78% of a 158 ms
search (issue 14). This index is faiss' inverted file with 8-bit scalar-quantised codes: a query
scans the ``nprobe`` lists nearest to it (about a tenth of the vectors, at a quarter of the bytes),
and its best ``CANDIDATES`` are re-scored exactly against the float32 snapshot rows, so the scores a
search shows are exact cosines. Chosen by measurement on 100K hash vectors (docs/performance.md):
build 1.9 s against 45-220 s for HNSW (hnswlib, faiss, usearch) at equal recall, and a build that
cheap can follow every new KG version.

The index is saved beside the snapshots, keyed by KG version and model: one of another version or
model is never used; it is rebuilt (in a background thread, the exact scan answering meanwhile).
faiss is the optional extra ``ann`` (``pip install -e '.[ann]'``); without it searches stay exact.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingDependency

MIN_ROWS = 200_000  # below it the exact scan is <= ~20 ms and exact
CANDIDATES = 200  # approximate hits re-scored exactly
PROBE_FRACTION = 0.12  # of the lists a query scans: recall@10 >= 0.98 on the synthetic 1M set
TRAIN_PER_LIST = 39  # faiss asks for at least 39 training points per list


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise MissingDependency("faiss-cpu", "ann") from None
    return faiss


def available() -> bool:
    try:
        _faiss()
    except MissingDependency:
        return False
    return True


@dataclass
class VectorIndex:
    """A built or loaded index of one (KG version, model)."""

    version: str
    model: str
    rows: int
    index: Any

    def search(self, query: np.ndarray, k: int | None = None) -> np.ndarray:
        """The rows of the approximately nearest ``k`` (default ``CANDIDATES``) vectors, ascending (for
        an ordered gather)."""
        faiss = _faiss()
        faiss.omp_set_num_threads(1)  # one query is small work; see index.nearest
        _, found = self.index.search(np.asarray(query, np.float32).reshape(1, -1), k or CANDIDATES)
        rows = found[0]
        return np.sort(rows[rows >= 0]).astype(np.int64)


def build(vectors: np.ndarray, version: str, model: str, seed: int = 0) -> VectorIndex:
    """Train the coarse quantiser on a sample, then add every row (row number = faiss id)."""
    faiss = _faiss()
    n, dims = vectors.shape
    nlist = max(1, int(2 * math.sqrt(n)))
    index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dims), dims, nlist, faiss.ScalarQuantizer.QT_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    sample = np.random.default_rng(seed).choice(n, min(n, TRAIN_PER_LIST * nlist), replace=False)
    index.train(np.ascontiguousarray(vectors[np.sort(sample)], np.float32))
    for start in range(0, n, 65_536):  # in blocks: a memory-mapped matrix is never copied whole
        index.add(np.ascontiguousarray(vectors[start:start + 65_536], np.float32))
    index.nprobe = max(1, math.ceil(nlist * PROBE_FRACTION))
    return VectorIndex(version, model, n, index)


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


def index_file(cache_root: Path, db_id: str, model: str) -> Path:
    return cache_root / db_id / "ann" / f"{_safe(model)}.faiss"


def save(ann: VectorIndex, path: Path) -> None:
    """Index and its key (version, model, rows) published together: temp files, then renames (meta
    last, so a reader that sees the new key also finds the new index)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}.{uuid.uuid4().hex}"
    tmp, meta_tmp = path.with_name(f".{path.name}.{tag}"), path.with_name(f".{path.name}.{tag}.json")
    try:
        _faiss().write_index(ann.index, str(tmp))
        meta_tmp.write_text(json.dumps({"version": ann.version, "model": ann.model, "rows": ann.rows}))
        path.with_suffix(".json").unlink(missing_ok=True)  # no moment where an old key names a new index
        os.replace(tmp, path)
        os.replace(meta_tmp, path.with_suffix(".json"))
    except OSError:  # caching only saves time
        tmp.unlink(missing_ok=True)
        meta_tmp.unlink(missing_ok=True)


def load(path: Path, version: str, model: str, rows: int) -> VectorIndex | None:
    """The saved index if it is of exactly this KG version, model and row count, else None (stale)."""
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
    if meta != {"version": version, "model": model, "rows": rows}:
        return None
    try:
        index = _faiss().read_index(str(path), _faiss().IO_FLAG_MMAP)
    except (OSError, RuntimeError):
        return None
    return VectorIndex(version, model, rows, index) if index.ntotal == rows else None


class Builds:
    """At most one background build per key in this process (an index file; a snapshot's int8 copy in
    ``index.quantised``); a key whose build ended may start another."""

    def __init__(self) -> None:
        self._running: dict[Hashable, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(self, key: Hashable, work: Callable[[], None], name: str) -> threading.Thread:
        with self._lock:
            for done in [k for k, t in self._running.items() if not t.is_alive()]:
                del self._running[done]
            thread = self._running.get(key)
            if thread is None:
                thread = threading.Thread(target=work, name=name, daemon=True)
                self._running[key] = thread
                thread.start()
            return thread

    def join(self, timeout: float) -> None:
        """Wait for the running builds, at most ``timeout`` seconds in all."""
        deadline = time.monotonic() + timeout
        with self._lock:
            threads = list(self._running.values())
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


BUILDS = Builds()
