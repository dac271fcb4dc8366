"""Fitting search to one KG over HTTP: the query adapter and name vectors (docs/embedders.md).

``/api/kg/{db_id}/adapter``: GET whether one is stored, POST fits one as a background job (202 with
the job; its ``result`` is the ``AdapterReport``), DELETE removes it. ``/api/kg/{db_id}/names``: the
same for name vectors (POST embeds them as a job; ``result`` ``{db_id, embedded}``). Each is one call
of the ``KG`` facade, as ``kgos embed KG --adapt / --names`` is.

A job opens its own ``Workspace`` on the server's folder (as an ingest does), so the other routes are
not held up; the server's searches use the new adapter (or name vectors) from their next query, since
storing them moves the KG's version. Checked when the request comes: an unknown KG (404), a read-only
one (409), an unknown curriculum (422). A KG that cannot teach an adapter (no vectors, fewer than 20
named nodes, no edges) is the job's error (``error_kind`` ``AdapterNeedsData``), with nothing changed.
While a KG has a job of the same kind queued or running, a POST returns that job instead of starting
a second one.

Both jobs are cancellable (``POST /api/jobs/{job_id}/cancel``): they stop at their next progress call
(an embedding batch, an epoch). A stopped adapter job stores nothing (the adapter is written after the
last epoch only). A stopped names job keeps the KG's "keeps name vectors" setting (written first) and
the name vectors of the chunks already committed; they are content-hashed, so the next POST (or
``kgos embed KG``) embeds only the rest. Its error kind is ``JobCancelled``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path
from pydantic import AfterValidator, BaseModel, Field

from ..embed.adapter import NAMES_PHASE, AdapterStatus, phase_progress
from ..embed.nodes import NamesStatus
from ..kg import KG, Workspace, check_db_id
from .errors import RESPONSES
from .jobs import JobOut, JobRegistry, JobStatus, ProgressFn, jobs
from .models import Strict
from .runtime import Runtime, runtime
from .schemas import response_model

ADAPT_KIND, NAMES_KIND = "adapter", "names"
router = APIRouter(prefix="/api", responses=RESPONSES, tags=["embedding"])
Rt = Annotated[Runtime, Depends(runtime)]
Jobs = Annotated[JobRegistry, Depends(jobs)]
DbId = Annotated[str, Path(description="The KG's db_id", examples=["demo"]), AfterValidator(check_db_id)]
JobField: Any = (JobOut | None, Field(None, description="This KG's newest job of this kind on this server (null: none)"))
AdapterStatusOut = response_model(AdapterStatus, "AdapterStatusOut", job=JobField)
NamesStatusOut = response_model(NamesStatus, "NamesStatusOut", job=JobField)


class AdaptIn(Strict):
    curriculum: Literal["names", "names+sentences"] = Field(
        default="names", description="names: names and aliases as pseudo-queries; names+sentences: also one description "
                             "sentence per node (goal-style queries; docs/embedders.md)")


class NamesIn(Strict):
    batch_size: int = Field(default=64, ge=1, le=1024, description="Texts per model batch")


class Dropped(BaseModel):
    db_id: str
    dropped: bool


def _latest(registry: JobRegistry, kind: str, db_id: str) -> JobStatus | None:
    return next((j for j in registry.list() if j.kind == kind and j.subject == db_id), None)


def _status(rt: Runtime, registry: JobRegistry, kind: str, db_id: str, read: Callable[[KG], Any]) -> dict[str, Any]:
    with rt.lock:
        status = read(rt.workspace.kg(db_id))
    job = _latest(registry, kind, db_id)
    return {**status.to_dict(), "job": job.to_dict() if job else None}


def _start(rt: Runtime, registry: JobRegistry, kind: str, db_id: str,
           work: Callable[[KG, ProgressFn], dict[str, Any]]) -> dict[str, Any]:
    """``work(kg, progress)`` as a job on the KG opened in a workspace of its own (its running job, if any)."""
    home, url = rt.workspace.home, rt.workspace.database_url
    with rt.lock:
        rt.workspace.kg(db_id).store.require_writable()  # 404 / 409 now, not as the job's error
        running = _latest(registry, kind, db_id)
        if running is not None and running.finished is None:
            return running.to_dict()

        def run(progress: ProgressFn) -> dict[str, Any]:
            with Workspace(home, url) as ws:
                return work(ws.kg(db_id), progress)
        return registry.submit(kind, run, subject=db_id, cancellable=True).to_dict()


def _drop(rt: Runtime, db_id: str, drop: Callable[[KG], bool]) -> dict[str, Any]:
    with rt.lock:
        return {"db_id": db_id, "dropped": drop(rt.workspace.kg(db_id))}


@router.get("/kg/{db_id}/adapter", response_model=AdapterStatusOut)
def adapter_status(db_id: DbId, rt: Rt, registry: Jobs) -> Any:
    """Whether the KG's search model has a query adapter stored (its curriculum, training pairs and
    held-out MRR), and the KG's newest adapter job on this server."""
    return _status(rt, registry, ADAPT_KIND, db_id, KG.adapter_status)


@router.post("/kg/{db_id}/adapter", response_model=JobOut, status_code=202)
def start_adapter(db_id: DbId, rt: Rt, registry: Jobs, body: AdaptIn | None = None) -> Any:
    """Fit the query adapter on the KG in the background (`kgos embed KG --adapt`); stored and used by
    search only if it beats the model alone on held-out pairs. Poll the job; its result is the report.
    Cancellable: it stops at its next embedding batch or epoch, with nothing stored."""
    curriculum = (body or AdaptIn()).curriculum

    def adapt(kg: KG, progress: ProgressFn) -> dict[str, Any]:
        progress(f"fitting the query adapter ({curriculum})", 0, 0)
        return kg.adapt(curriculum, progress).to_dict()
    return _start(rt, registry, ADAPT_KIND, db_id, adapt)


@router.delete("/kg/{db_id}/adapter", response_model=Dropped)
def drop_adapter(db_id: DbId, rt: Rt) -> Any:
    """Remove the query adapter (search uses the model's own query vectors); ``dropped`` false: none."""
    return _drop(rt, db_id, KG.drop_adapter)


@router.get("/kg/{db_id}/names", response_model=NamesStatusOut)
def names_status(db_id: DbId, rt: Rt, registry: Jobs) -> Any:
    """Whether the KG keeps name vectors of its search model, how many nodes have one, and its newest
    names job on this server."""
    return _status(rt, registry, NAMES_KIND, db_id, KG.names_status)


@router.post("/kg/{db_id}/names", response_model=JobOut, status_code=202)
def start_names(db_id: DbId, rt: Rt, registry: Jobs, body: NamesIn | None = None) -> Any:
    """Keep name vectors from now on and embed the missing ones in the background (`kgos embed KG
    --names`); the job's result is ``{db_id, embedded}`` (nodes embedded). Cancellable: it stops at its
    next batch, keeping the name vectors already committed (a new POST embeds only the rest)."""
    batch_size = (body or NamesIn()).batch_size

    def embed(kg: KG, progress: ProgressFn) -> dict[str, Any]:
        return {"db_id": kg.db_id, "embedded": kg.embed_names(batch_size, phase_progress(progress, NAMES_PHASE, 0))}
    return _start(rt, registry, NAMES_KIND, db_id, embed)


@router.delete("/kg/{db_id}/names", response_model=Dropped)
def drop_names(db_id: DbId, rt: Rt) -> Any:
    """Stop keeping name vectors and remove them; ``dropped`` false: the KG kept none."""
    return _drop(rt, db_id, KG.drop_names)
