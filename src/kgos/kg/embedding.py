"""Embedding a KG right after an import: the one decision the CLI and the HTTP upload share.

An imported KG is embedded with the fast tier (searchable by meaning within seconds) unless the
caller opted out or the import kept it embedded; the default model's fill-in is left to the caller
(``kgos embed DB_ID`` or :meth:`KG.embed`). An embedder that cannot run never undoes the import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..embed.nodes import EmbedReport
from ..errors import KGOSError
from .facade import KG


@dataclass(frozen=True)
class ImportEmbedding:
    """What :func:`embed_after_import` did: the fast tier's report, the model a fill-in is heading for
    (``fill_in``, None when nothing is pending), or why nothing was embedded (``skipped``: ``disabled``,
    ``kept`` for a KG the import left embedded, ``failed`` with the embedder's ``error``)."""

    db_id: str
    fast: EmbedReport | None = None
    fill_in: str | None = None
    skipped: str | None = None
    error: str | None = None
    note: str = ""  # what a reader of the report does next, in one sentence

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def embed_after_import(kg: KG, model: str = "default", enabled: bool = True,
                       progress: Callable[[int], None] | None = None,
                       total: Callable[[int], None] | None = None) -> ImportEmbedding:
    """Embed a just-imported ``kg`` with the fast tier towards ``model``, unless ``enabled`` is False
    or it already has vectors search uses (a merge into an embedded KG keeps them). ``progress`` and
    ``total`` are passed to :meth:`KG.embed_fast` (a progress bar with ETA)."""
    later = f"`kgos embed {kg.db_id}` embeds it with the default model"
    if not enabled:
        return ImportEmbedding(kg.db_id, skipped="disabled", note=f"Not embedded: search uses text and graph until {later}.")
    if kg.embed_status().search_model:
        return ImportEmbedding(kg.db_id, skipped="kept", note="Kept the KG's vectors: search by meaning as before.")
    try:
        fast = kg.embed_fast(model, progress=progress, total=total)
    except KGOSError as exc:  # the import stands; search runs on text and graph until `kgos embed`
        return ImportEmbedding(kg.db_id, skipped="failed", error=str(exc),
                               note=f"Imported, but not embedded: search uses text and graph until {later}.")
    target = kg.embed_status().target
    note = f"Searchable by meaning with {fast.model}; {later} ({target})." if target else \
        f"Searchable by meaning with {fast.model}."
    return ImportEmbedding(kg.db_id, fast=fast, fill_in=target, note=note)
