"""One KG's search engine: its current snapshot, a query cache and the query embedder.

Freshness (spec/001 1.9): every query compares the KG's version with the snapshot's; any write
bumps the version, so the next query rebuilds (or loads) the snapshot and drops the cached results.
Results are cached for 300 s keyed by query, k, mode, intent and weights.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from ..index import snapshot as snapshots
from ..index.snapshot import Snapshot
from ..index.text import TextConfig
from ..store.base import GraphStore
from . import hybrid
from .hybrid import SearchOptions
from .results import SearchResult

CACHE_TTL_SECONDS = 300.0
CACHE_SIZE = 1024


class QueryCache:
    """A small TTL + LRU map; ``clear()`` on every version change."""

    def __init__(self, ttl: float = CACHE_TTL_SECONDS, size: int = CACHE_SIZE) -> None:
        self.ttl, self.size = ttl, size
        self._items: OrderedDict[Any, tuple[float, Any]] = OrderedDict()

    def get(self, key: Any) -> Any:
        item = self._items.get(key)
        if item is None or item[0] < time.monotonic():
            self._items.pop(key, None)
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, key: Any, value: Any) -> None:
        self._items[key] = (time.monotonic() + self.ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class SearchEngine:
    def __init__(self, store: GraphStore, cache_root: Path | None = None, text: TextConfig = TextConfig(),
                 options: SearchOptions = SearchOptions(), embedder: str | None = None) -> None:
        self.store = store
        self.cache_root = cache_root
        self.text = text
        self.options = options
        self.embedder_spec = embedder
        self.tuned: str | None = None  # attached KGs keep their tuned profile in the workspace
        self.cache = QueryCache()
        self._snapshot: Snapshot | None = None
        self._embedder: Any = None
        self._lock = threading.Lock()

    def snapshot(self) -> Snapshot:
        """The snapshot of the KG's current version (built, or loaded from the cache folder)."""
        version = self.store.version()
        with self._lock:
            if self._snapshot is None or self._snapshot.version != version:
                self.cache.clear()
                self._snapshot = snapshots.build(self.store, self.text, self._vector_model(), self.cache_root)
            return self._snapshot

    def invalidate(self) -> None:
        with self._lock:
            self._snapshot = None
            self.cache.clear()

    def tuned_profile(self) -> dict[str, Any] | None:
        """Weights saved by ``kgos tune --save`` (per intent and ``_default``), if any."""
        raw = self.store.meta().get("weight_profiles") or self.tuned
        if not raw:
            return None
        try:
            profile = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return None
        return profile if isinstance(profile, dict) else None

    def _spec(self) -> str | None:
        return self.embedder_spec or self.store.meta().get("embedder")

    def _vector_model(self) -> str | None:
        spec = self._spec()
        return self.query_embedder().name if spec else None

    def query_embedder(self) -> Any:
        if self._embedder is None and self._spec():
            from ..embed import get_embedder
            self._embedder = get_embedder(self._spec())  # type: ignore[arg-type]
        return self._embedder

    def embed_query(self, text: str) -> np.ndarray | None:
        embedder = self.query_embedder()
        return embedder.embed_query(text) if embedder is not None else None

    def search(self, query: str, k: int = 10, weights: Any = None, intent: str | None = None,
               mode: str = "hybrid") -> SearchResult:
        snap = self.snapshot()
        key = (query, k, mode, intent, tuple(weights) if isinstance(weights, (list, tuple)) else str(weights))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        result = hybrid.search(snap, self.store, query, k, weights, intent, mode, self.options,
                               embed_query=self.embed_query, tuned=self.tuned_profile())
        self.cache.put(key, result)
        return result
