"""Embedding on write: the one post-commit hook that makes every write searchable by meaning at once.

Every writer of a KG (the facade's CRUD, review-queue promotion, memory, ingestion, research deltas)
goes through the store's unit of work (``store.writing()``). When the outermost unit commits, the store
calls its commit hooks with what it wrote (``Written``); the KG registers :class:`WriteEmbedding`, which
embeds those nodes with the KG's search model, by content hash (a node whose text did not change keeps
its vector). So a node is found by meaning when the write returns, whoever wrote it.

Bulk units (imports, ingestion) are left to the fill-in that follows them (``embed_changed``, with
progress). A failed unit reports nothing, so nothing of it is embedded. An embedder that fails (an API
offline, model files missing) never undoes the write: the nodes stay without a vector, search scores
them on their other signals and says so (``engine.embed_error``), and ``kgos embed`` catches up.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import KGOSError
from ..store.writing import Written

if TYPE_CHECKING:
    from .facade import KG


class WriteEmbedding:
    """The commit hook of one KG. ``deferred()`` collects the written ids and embeds them in one batch
    when the block ends (``kg.batch()``)."""

    def __init__(self, kg: KG) -> None:
        self.kg = kg
        # per thread: a batch of one thread (a job's ingestion) must not swallow, or drop, the nodes of
        # another thread's write (an API write to the same KG runs in parallel with it)
        self._local = threading.local()

    @property
    def _deferred(self) -> list[str] | None:
        return getattr(self._local, "ids", None)

    @_deferred.setter
    def _deferred(self, ids: list[str] | None) -> None:
        self._local.ids = ids

    def __call__(self, store: Any, written: Written) -> None:
        if written.bulk or not written.node_ids:
            return
        self.embed(written.node_ids)

    def embed(self, node_ids: Iterable[str]) -> int:
        """Embed these nodes now (or at the end of a ``deferred`` block); how many were embedded."""
        engine = self.kg.engine
        if not engine._spec() or self.kg.store.read_only:
            return 0
        if self._deferred is not None:
            self._deferred.extend(node_ids)
            return 0
        from ..embed import nodes
        try:
            done = nodes.embed_nodes(self.kg.store, engine.query_embedder(), node_ids, engine.cache_root)
        except (KGOSError, OSError) as e:  # degrade to vectorless scoring; reported by every search
            engine.embed_error = f"embedding on write failed ({type(e).__name__}: {e})"
            return 0
        engine.embed_error = None
        return done

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Collect the nodes written inside and embed them in one batch at the end."""
        if self._deferred is not None:  # nested: the outer block embeds
            yield
            return
        self._deferred = []
        try:
            yield
        finally:
            ids, self._deferred = list(dict.fromkeys(self._deferred)), None
            if ids:
                self.embed(ids)
