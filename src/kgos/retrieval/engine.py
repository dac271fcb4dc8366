"""One KG's search engine: its current snapshot, a query cache and the query embedder.

Freshness (spec/001 1.9): every query compares the KG's version with the snapshot's; any write
bumps the version, so the next query updates the snapshot by the KG's change feed (index.delta: the
rows written since, whoever wrote them), else rebuilds (or loads) it, and drops the cached results.
Results are cached for 300 s keyed by query, k, mode, intent and weights.
"""

from __future__ import annotations

import json
import math
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import KGOSError
from ..index import nearest
from ..index import snapshot as snapshots
from ..index.snapshot import Snapshot
from ..index.text import TextConfig
from ..index.vectors import load_vectors
from ..store.base import GraphStore
from . import hybrid
from .hybrid import SearchOptions
from .results import SearchResult

CACHE_TTL_SECONDS = 300.0
CACHE_SIZE = 1024
QUERY_VECTOR_CACHE_SIZE = 1024  # query vectors depend only on (model, text): kept across KG versions
FITTED_ON = "_fitted_on"  # key of a tuned profile: the vector model it was fitted with (None: no vectors)


@dataclass(frozen=True)
class Prefilter:
    """Rows a search may consider (spec/000 section 8 dimension filters): ``rows`` gives the bool mask
    of one snapshot; ``key`` names the filter in the query cache."""

    key: str
    rows: Callable[[Snapshot], np.ndarray]


class QueryCache:
    """A small TTL + LRU map; ``clear()`` on every version change. Searches of several threads share it
    (the server runs reads in parallel), so each operation holds a lock: an LRU reorder racing an
    eviction would raise KeyError."""

    def __init__(self, ttl: float = CACHE_TTL_SECONDS, size: int = CACHE_SIZE) -> None:
        self.ttl, self.size = ttl, size
        self._items: OrderedDict[Any, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] < time.monotonic():
                self._items.pop(key, None)
                return None
            self._items.move_to_end(key)
            return item[1]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = (time.monotonic() + self.ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def query_text_key(text: str) -> str:
    """A query as the vector cache keys it: Unicode NFC, runs of whitespace as one space, trimmed
    (what no tokenizer tells apart; case is kept, as cased models embed it differently)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


@dataclass(frozen=True)
class VectorCarry:
    """A replaced KG's embedder (spec and model name) and its vectors by content hash."""

    spec: str
    model: str
    vectors: dict[str, tuple[bytes, int]]


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
        self.vector_cache = QueryCache(ttl=math.inf, size=QUERY_VECTOR_CACHE_SIZE)
        self._snapshot: Snapshot | None = None
        self._previous: Snapshot | None = None  # the snapshot dropped by invalidate(), for its parts
        self._embedder: Any = None
        self._embedder_of: str | None = None  # the spec _embedder was built from
        self.embed_error: str | None = None  # the last failure of embedding on write, until one succeeds
        self._masks: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()  # (version, filter) -> rows
        self._lock = threading.Lock()

    def snapshot(self) -> Snapshot:
        """The snapshot of the KG's current version (built, or loaded from the cache folder)."""
        version = self.store.version()
        with self._lock:
            if self._snapshot is None or self._snapshot.version != version:
                self.cache.clear()
                self._snapshot = snapshots.build(self.store, self.text, self._vector_model(), self.cache_root,
                                                 previous=self._snapshot or self._previous)
                self._previous = None
            return self._snapshot

    def invalidate(self) -> None:
        """Rebuild (or load) the snapshot at the next query. The old one still lends the parts whose
        content is unchanged (``snapshots.build`` compares fingerprints, never versions)."""
        with self._lock:
            self._previous = self._snapshot or self._previous
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

    def profile_json(self, profiles: dict[str, Any]) -> str:
        """Tuned weights as saved: scoped to the vector model of the snapshot they were fitted on."""
        return json.dumps({**{str(k): list(v) for k, v in profiles.items()}, FITTED_ON: self.snapshot().embedder})

    def usable_profile(self, snap: Snapshot) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
        """The tuned profile if it was fitted on this snapshot's vector state, else (None, a warning):
        weights fitted without vectors (alpha 0 everywhere) must not outlive ``kgos embed``."""
        profile = self.tuned_profile()
        if profile is None:
            return None, ()
        weights = {k: v for k, v in profile.items() if k != FITTED_ON}
        if FITTED_ON in profile:
            fitted = profile[FITTED_ON]
        else:  # saved before profiles were scoped: all-zero alpha can only come from a KG without vectors
            fitted = None if all(float(v[0]) == 0 for v in weights.values()) else snap.embedder
        if fitted == snap.embedder:
            return weights, ()
        state = f"vectors of {fitted}" if fitted else "no vectors"
        now = f"vectors of {snap.embedder}" if snap.embedder else "no vectors"
        warning = (f"the tuned weight profile of '{self.store.db_id}' was fitted with {state} and the KG now has "
                   f"{now}: ignored (default profiles used); re-run `kgos tune {self.store.db_id} PROBES --save`")
        return None, (warning,)

    def _spec(self) -> str | None:
        return self.embedder_spec or self.store.meta().get("embedder")

    def _vector_model(self) -> str | None:
        spec = self._spec()
        return self.query_embedder().name if spec else None

    def query_embedder(self) -> Any:
        spec = self._spec()
        # another process (a fill-in, `kgos embed`) may have switched the KG's model since: follow it
        if spec and (self._embedder is None or self._embedder_of != spec):
            from ..embed import get_embedder
            self._embedder, self._embedder_of = get_embedder(spec), spec
        return self._embedder

    def use_embedder(self, spec: str) -> None:
        """Search with ``spec``'s vectors from now on (after ``kg.embed`` or a fast-tier switch): the
        query embedder and the snapshot's vectors change together, never one without the other."""
        with self._lock:
            self.embedder_spec, self._embedder = spec, None
        self.invalidate()
        self.snapshot()  # saved with the new vectors: the next process loads it instead of building

    def embed_changed(self, carried: VectorCarry | None = None) -> int:
        """After a bulk write (an import): embed every node whose text changed, by content hash, with
        this KG's embedder (or ``carried``'s, the embedder of the KG an import replaced, whose vectors
        of unchanged text are reused). Failures degrade as on write (``kg.written``). Returns how many."""
        from ..embed.nodes import carry_vectors, embed_store
        if carried is not None and not self._spec() and hasattr(self.store, "set_meta"):
            self.store.set_meta(embedder=carried.spec)
            self.embedder_spec, self._embedder = carried.spec, None
        if not self._spec() or self.store.read_only:
            return 0
        try:
            embedder = self.query_embedder()
            if carried is not None and carried.model == embedder.name:
                carry_vectors(self.store, embedder.name, carried.vectors, self.cache_root)
            done = embed_store(self.store, embedder, self.cache_root).embedded
        except (KGOSError, OSError) as e:  # degrade to vectorless scoring; reported by every search
            self.embed_error = f"embedding after import failed ({type(e).__name__}: {e})"
            return 0
        self.embed_error = None
        return done

    def vector_carry(self) -> VectorCarry | None:
        """This KG's embedder and stored vectors, for an import that is about to replace the KG."""
        if not self._spec():
            return None
        from ..embed.nodes import stored_vectors
        spec: str = self._spec()  # type: ignore[assignment]
        try:
            name = self.query_embedder().name
        except (KGOSError, OSError):  # the replacement still remembers its embedder; embedding reports it
            return VectorCarry(spec, "", {})
        return VectorCarry(spec, name, stored_vectors(self.store, name, self.cache_root))

    def embed_query(self, text: str) -> np.ndarray | None:
        """The query's vector, from the query-vector cache when this model embedded the same text
        before (the encoder is most of a warm query's time; a repeated query skips it)."""
        embedder = self.query_embedder()
        if embedder is None:
            return None
        key = (self._spec(), embedder.name, query_text_key(text))
        vector = self.vector_cache.get(key)
        if vector is None:
            vector = np.asarray(embedder.embed_query(text), np.float32)
            vector.flags.writeable = False  # shared by every later hit: nobody may change it in place
            self.vector_cache.put(key, vector)
        # the KG's query adapter of this model (`kgos embed KG --adapt`), read once per KG version
        from ..embed.adapter import adapt, load_adapter
        version = self.store.version()
        cached = getattr(self, "_adapter", None)
        if cached is None or cached[:2] != (version, embedder.name):
            cached = self._adapter = (version, embedder.name, load_adapter(self.store.meta(), embedder.name))
        return adapt(cached[2], vector)

    def search(self, query: str, k: int = 10, weights: Any = None, intent: str | None = None,
               mode: str = "hybrid", prefilter: Prefilter | None = None) -> SearchResult:
        snap = self.snapshot()
        # the version too: a search of the old snapshot, still running on another thread when a write's
        # rebuild clears the cache, must not leave its answer for the new version's queries
        key = (snap.version, query, k, mode, intent,
               tuple(weights) if isinstance(weights, (list, tuple)) else str(weights),
               prefilter.key if prefilter is not None else None)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        tuned, warnings = self.usable_profile(snap)
        nearest.attach_ann(snap, self.cache_root)
        result = hybrid.search(snap, self.store, query, k, weights, intent, mode, self.options,
                               embed_query=self.embed_query, tuned=tuned, mask=self._mask(snap, prefilter))
        if weights is not None:
            warnings = ()  # explicit weights win over any tuned profile, usable or not
        if self.embed_error and result.warnings:
            warnings += (self.embed_error,)
        if warnings:
            result = replace(result, warnings=result.warnings + warnings)
        note = nearest.ann_note(snap)
        if note:
            result = replace(result, notes=(*result.notes, note))
        self.cache.put(key, result)
        return result

    def _mask(self, snap: Snapshot, prefilter: Prefilter | None) -> np.ndarray | None:
        """The pre-filter's rows for this snapshot, remembered for the few filters in use."""
        if prefilter is None:
            return None
        key = (snap.version, prefilter.key)
        mask = self._masks.get(key)
        if mask is None:
            mask = prefilter.rows(snap)
            with self._lock:  # other threads search meanwhile: the eviction and the insert as one
                self._masks[key] = mask
                while len(self._masks) > 32:
                    self._masks.popitem(last=False)
        return mask


class ModelEngine(SearchEngine):
    """Search with another stored embedding model's vectors (``kg.search(..., model=...)``) over the
    snapshot of a KG's own engine: the text, graph and name indexes are shared, only the vector matrix
    (read by node id for each version) and the query embedder differ."""

    def __init__(self, base: SearchEngine, spec: str) -> None:
        super().__init__(base.store, base.cache_root, base.text, base.options, embedder=spec)
        self.base = base
        self.tuned = base.tuned  # scoped to the model it was fitted with: ignored here, with a warning

    def snapshot(self) -> Snapshot:
        main = self.base.snapshot()
        with self._lock:
            if self._snapshot is None or self._snapshot.version != main.version:
                self.cache.clear()
                name = self.query_embedder().name
                vectors = load_vectors(self.store, name, main.node_ids, self.cache_root)
                self._snapshot = replace(main, vectors=vectors, embedder=name if vectors is not None else None,
                                         ann=None, quantised=None, scans=0)
            return self._snapshot

    def search(self, query: str, k: int = 10, weights: Any = None, intent: str | None = None,
               mode: str = "hybrid", prefilter: Prefilter | None = None) -> SearchResult:
        result = super().search(query, k, weights, intent, mode, prefilter)
        # the vectorless-nodes warning names the command that embeds the search model; here it is this one
        db_id = self.store.db_id
        embed, add = f"`kgos embed {db_id}`", f"`kgos embed add {db_id} --model {self.embedder_spec}`"
        if any(embed in w for w in result.warnings):
            result = replace(result, warnings=tuple(w.replace(embed, add) for w in result.warnings))
        return result
