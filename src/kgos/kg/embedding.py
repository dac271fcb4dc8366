"""Embedding a KG right after an import: the decisions the CLI and the HTTP upload share.

An imported KG is embedded with the fast tier (searchable by meaning within seconds) unless the
caller opted out or the import kept it embedded; then the default model fills in behind it. The CLI
runs the two steps in the command (:func:`embed_after_import`, then :meth:`KG.embed`); the server runs
both in its background worker (:func:`embed_tiers`), which also resumes the fill-ins left pending
(:func:`pending_fill_ins`). An embedder that cannot run never undoes the import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..embed.nodes import EmbedReport
from ..embed.registry import BACKENDS, fast_spec
from ..errors import KGOSError
from .facade import KG
from .workspace import Workspace

PhaseProgress = Callable[[str, int, int], None]  # (phase, done, total)
FAST_PHASE, FILL_PHASE = "fast tier", "fill-in"


@dataclass(frozen=True)
class ImportEmbedding:
    """What :func:`embed_after_import` or :func:`embed_tiers` did: the fast tier's report, the model a
    fill-in is heading for (``fill_in``, None when nothing is pending) and, once it ran, its report
    (``full``), or why nothing was embedded (``skipped``: ``disabled``, ``kept`` for a KG the import left
    embedded, ``failed`` with the embedder's ``error``); ``job_id``: the server's background job that
    embeds an upload (``GET /api/jobs/{job_id}``)."""

    db_id: str
    fast: EmbedReport | None = None
    fill_in: str | None = None
    skipped: str | None = None
    error: str | None = None
    note: str = ""  # what a reader of the report does next, in one sentence
    full: EmbedReport | None = None
    job_id: str | None = None

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


def embedding_work(kg: KG) -> str | None:
    """What :func:`embed_tiers` would do to ``kg``: ``fast`` (no vectors search uses: the fast tier
    first), ``fill-in`` (a pending target) or None (nothing)."""
    status = kg.embed_status()
    return "fast" if status.search_model is None else "fill-in" if status.target else None


def embed_tiers(kg: KG, model: str = "default", progress: PhaseProgress | None = None,
                batch_size: int = 64) -> ImportEmbedding:
    """Embed ``kg`` the whole way: the fast tier towards ``model`` first if search has no vectors yet
    (distilled first in a home without it; a cheap ``model`` is embedded directly), then the fill-in
    towards the pending target, if any. Resumable: a
    rerun after a stop embeds only what is missing. ``progress(phase, done, total)`` is called per
    batch; an exception it raises stops the work between the fill-in's commits. Embedder errors
    propagate (the KG keeps what was committed and stays searchable by text)."""
    fast = full = None
    if kg.embed_status().search_model is None:
        fast = _run_counted(kg.embed_fast, model, FAST_PHASE, progress, 1024)
    target = kg.embed_status().target
    if target:
        full = _run_counted(kg.embed, target, FILL_PHASE, progress, batch_size)
    search = kg.embed_status().search_model
    return ImportEmbedding(kg.db_id, fast=fast, full=full, note=f"Searchable by meaning with {search}.")


def _run_counted(step: Callable[..., EmbedReport], model: str | None, phase: str, progress: PhaseProgress | None,
                 batch_size: int) -> EmbedReport:
    """``step(model, batch_size, progress, total)`` with its increments summed into ``progress(phase, ...)``."""
    tick, total = _counter(phase, progress)
    if progress is not None:
        progress(phase, 0, 0)  # the phase shows (and a stop is honoured) before its model loads
    return step(model, batch_size, tick, total)


def _counter(phase: str, progress: PhaseProgress | None) -> tuple[Callable[[int], None] | None,
                                                                   Callable[[int], None] | None]:
    if progress is None:
        return None, None
    seen = {"done": 0, "total": 0}

    def total(n: int) -> None:
        seen["total"] = n
        progress(phase, 0, n)

    def tick(n: int) -> None:
        seen["done"] += n
        progress(phase, seen["done"], seen["total"])
    return tick, total


def pending_fill_ins(ws: Workspace) -> list[str]:
    """The KGs of ``ws`` whose metadata names a fill-in target not reached yet (a stopped fill-in);
    KGs that cannot be opened now (a PostgreSQL server down) are left out."""
    pending = []
    for db_id in ws.db_ids():
        try:
            if ws.kg(db_id)._setting("embed_target"):  # not embed_status(): it counts the target's vectors
                pending.append(db_id)
        except KGOSError:
            continue
    return pending


def fast_tier_unbuilt(model: str = "default") -> bool:
    """Whether the first embedding here would distill the fast tier first: ``model``'s fast tier is
    the distilled one, its packages are installed, the install does not ship it prebuilt and this
    KGOS_HOME holds no build of it yet."""
    if fast_spec(model) != "fast" or BACKENDS["fast"].missing():
        return False
    from ..embed.static import fast_static_folder
    return fast_static_folder() is None


def build_fast_tier(progress: Callable[[int, int], None] | None = None) -> str:
    """The fast tier's folder: the packaged one, else distilled into this KGOS_HOME now if not there
    yet (about 91 s, once). ``progress(tokens done, total)`` per batch; what it raises stops the build
    with nothing written."""
    from ..embed.static import ensure_fast_static
    return str(ensure_fast_static(progress=progress))
