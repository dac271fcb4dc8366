"""``kg.embedding``: one KG's vectors: embedding its nodes (resumable, the fast tier then the fill-in),
models side by side, the query adapter and name vectors (docs/embedders.md). ``KG`` keeps same-named
methods that call these (``kg.embed(...)`` is ``kg.embedding.embed(...)``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..embed import get_embedder, resolve_spec
from ..embed.nodes import (
    EmbedReport,
    EmbedStatus,
    NamesStatus,
    disable_kg_names,
    drop_vectors,
    embed_store,
    enable_kg_names,
    names_status,
    vector_count,
)
from ..embed.registry import embedder_name, fast_spec
from ..index.vectors import models as vector_models

if TYPE_CHECKING:
    from ..embed.adapter import AdapterReport, AdapterStatus
    from .facade import KG


def model_name(spec: str | None) -> str | None:
    """The vector name ``spec`` stores, or None if it cannot be built here (its vectors are then not
    the ones being written)."""
    from ..errors import KGOSError
    try:
        return embedder_name(spec) if spec else None  # a name: never waits on a model build
    except KGOSError:
        return None


class Embedding:
    """The vectors of one KG and the models behind them."""

    def __init__(self, kg: KG) -> None:
        self.kg = kg

    def embed_side(self, model: str, batch_size: int = 64, progress: Callable[[int], None] | None = None,
                   total: Callable[[int], None] | None = None) -> EmbedReport:
        """Embed the nodes (those whose text changed) with ``model`` beside the search model's vectors:
        search keeps its model, and ``search(..., model=model)`` uses these. Nodes written later get
        vectors of the search model only; rerun this to refresh the side model."""
        embedder = get_embedder(model)
        if model_name(self.kg._setting("embedder")) in (None, embedder.name):
            return self.embed(model, batch_size, progress, total)  # no search model yet, or this one
        return embed_store(self.kg.store, embedder, self.kg.workspace.cache_dir, batch_size, progress, total)

    def embedding_models(self) -> dict[str, int]:
        """The models with vectors stored in this KG (its own table) and how many nodes each covers."""
        return vector_models(self.kg.store)

    def embed(self, model: str | None = None, batch_size: int = 64,
              progress: Callable[[int], None] | None = None,
              total: Callable[[int], None] | None = None) -> EmbedReport:
        """Embed the nodes whose text changed since the last run, then search with that model.

        ``model`` defaults to the one a fill-in is heading for (see :meth:`embed_fast`), else
        ``default``. Resumable: vectors are committed 1,024-4,096 nodes at a time and a rerun embeds
        only what is missing or changed, so an interrupted run continues where it stopped. Search keeps
        the previous vectors until this model covers every node, then switches whole (one model's vectors
        per scan); a fast tier it replaces is dropped. ``total`` learns how many nodes will be embedded,
        before the first ``progress`` increment."""
        target, previous = self.kg._setting("embed_target"), self.kg._setting("embedder")
        embedder = get_embedder(model or target or "default")
        cache = self.kg.workspace.cache_dir
        in_use = previous is not None and model_name(previous) == embedder.name  # else: a silent fill-in
        report = embed_store(self.kg.store, embedder, cache, batch_size, progress, total, bump=in_use)
        caught_up = embed_store(self.kg.store, embedder, cache, batch_size, bump=in_use)  # nodes written meanwhile
        report = replace(report, embedded=report.embedded + caught_up.embedded, removed=report.removed + caught_up.removed)
        self.kg._set_settings(embedder=embedder.spec, embed_target="")
        stood_in = model_name(previous) if target and previous and previous != embedder.spec else None
        if stood_in:  # the fast tier stood in for this model
            drop_vectors(self.kg.store, stood_in, cache)
        self.kg.engine.use_embedder(embedder.spec)
        return report

    def embed_fast(self, model: str | None = None, batch_size: int = 1024,
                   progress: Callable[[int], None] | None = None,
                   total: Callable[[int], None] | None = None) -> EmbedReport:
        """Make the KG searchable by meaning at once: embed it with the fast tier (a static model
        distilled from the default one: seconds for 40K nodes), search with that, and remember ``model``
        (default ``default``) as the target :meth:`embed` fills in behind it. A cheap ``model`` (hash,
        static) is embedded directly instead."""
        target = resolve_spec(model or "default")
        fast = fast_spec(target)
        if fast is None:
            return self.embed(target, batch_size, progress, total)
        in_use = self.kg._setting("embedder") == fast  # else readers see these vectors at the switch below
        report = embed_store(self.kg.store, get_embedder(fast), self.kg.workspace.cache_dir, batch_size, progress, total,
                             bump=in_use)
        self.kg._set_settings(embedder=fast, embed_target=target)
        self.kg.engine.use_embedder(fast)
        return report

    def embed_status(self) -> EmbedStatus:
        """Which vectors search uses and how far a fill-in has come."""
        spec, target = self.kg._setting("embedder"), self.kg._setting("embed_target")
        done = vector_count(self.kg.store, get_embedder(target).name, self.kg.workspace.cache_dir) if target else 0
        return EmbedStatus(self.kg.db_id, spec, target, self.kg.store.node_count(), done)

    # -- adapting search to this KG (issue 13, levers 1 and 3; docs/embedders.md) -------------------
    def adapt(self, curriculum: str = "names",
              progress: Callable[[str, int, int], None] | None = None) -> AdapterReport:
        """Fit the query adapter of the search model on this KG, no labels (``names``: names and aliases
        as pseudo-queries; ``names+sentences`` adds a description sentence per node); stored, and used by
        every later search, only if it beats the model alone on held-out pairs. ``AdapterNeedsData``
        (nothing changed) for a KG that cannot teach one. ``progress(phase, done, total)`` is called per
        embedding batch and per epoch; an exception it raises stops the fit with nothing stored.
        E.g. ``kg.adapt().val_mrr_after`` -> 0.769."""
        from ..embed.adapter import adapt_kg, curriculum_config
        config = curriculum_config(curriculum)
        self.kg.store.require_writable()
        return adapt_kg(self.kg.store, self.kg.workspace.cache_dir, config, progress)

    def drop_adapter(self) -> bool:
        """Remove the search model's query adapter (search uses the model's own query vectors again);
        False when there was none. E.g. ``kg.drop_adapter()`` -> True."""
        from ..embed.adapter import drop_kg_adapter
        self.kg.store.require_writable()
        return drop_kg_adapter(self.kg.store)

    def adapter_status(self) -> AdapterStatus:
        """Whether the search model has a query adapter stored, with its curriculum, training pairs and
        held-out MRR. E.g. ``kg.adapter_status().present`` -> False."""
        from ..embed.adapter import adapter_status
        return adapter_status(self.kg.store, model_name(self.kg._setting("embedder")))

    def embed_names(self, batch_size: int = 64, progress: Callable[[int], None] | None = None) -> int:
        """Keep a vector of each node's name and first aliases beside its full-text vector from now on
        (search scores both); returns how many nodes were embedded. E.g. ``kg.embed_names()`` -> 45."""
        self.kg.store.require_writable()
        return enable_kg_names(self.kg.store, self.kg.workspace.cache_dir, batch_size, progress)

    def drop_names(self) -> bool:
        """Stop keeping name vectors and remove them; False when the KG kept none."""
        self.kg.store.require_writable()
        return disable_kg_names(self.kg.store, self.kg.workspace.cache_dir)

    def names_status(self) -> NamesStatus:
        """Whether name vectors of the search model are kept and how many nodes have one."""
        return names_status(self.kg.store, model_name(self.kg._setting("embedder")), self.kg.workspace.cache_dir)
