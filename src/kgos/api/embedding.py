"""The server's embedding worker and its routes: an uploaded KG is embedded behind the answer.

``POST /api/kg/{db_id}/import`` returns once the rows are committed; the embedding (the fast tier,
distilled first in a home without one, then the default model's fill-in) runs here, as a job of the
shared registry (``kgos.api.jobs``): ``GET /api/jobs/{job_id}`` shows its phase, progress and ETA,
``POST /api/jobs/{job_id}/cancel`` stops it, ``GET /api/kg/{db_id}/embedding`` shows the KG's vectors
with its latest embedding job, ``POST /api/kg/{db_id}/embedding`` queues one (a pending fill-in).

One thread (at nice 10) runs one embedding job at a time per server: on 2 cores a second model run in
parallel would only halve both and slow every query. A queued job for a KG that already has one
queued is the same job. A KG without vectors goes first: a running fill-in pauses at its next batch
(``JobPaused``) and is queued again. Each job opens its own ``Workspace`` on the server's folder, so its SQLite connections are
its own and routes are not held up; search meanwhile uses the vectors the KG's ``embedder`` setting
names (one model per scan) and follows the switch when the fill-in ends. A stop (cancel, shutdown)
takes effect at the next batch's progress call and never mid-transaction: the chunks committed stay,
``embed_target`` stays pending, and the next job or ``kgos serve`` start resumes there.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path as FilePath
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, Path, Request
from pydantic import AfterValidator, Field

from ..embed.nodes import EmbedStatus
from ..kg import Workspace, check_db_id
from ..kg.embedding import FILL_PHASE, build_fast_tier, embed_tiers, fast_tier_unbuilt, pending_fill_ins
from .errors import RESPONSES
from .jobs import JobOut, JobPaused, JobRegistry, JobStatus, ProgressFn, registry_of
from .runtime import Runtime, runtime
from .schemas import response_model

log = logging.getLogger("kgos.api")
KIND = "embed"
IDLE_SECONDS = 30.0  # an idle worker thread ends; the next job starts another
STOP_SECONDS = 30.0  # a batch of the default model takes ~1 s
# distilling the fast tier stops between two batches of its token pass (~0.3 s each on 2 idle cores)
# with nothing written, so a shutdown waits for it briefly: a process that exited while onnxruntime
# ran in that thread aborted ("terminate called without an active exception"); the next start builds
# it again
BUILD_STOP_SECONDS = 5.0
BUILD_PHASE = "distilling the fast tier"
# texts per model batch: a stop or pause waits at most one batch (under 1 s with 16 at load 7, about
# 4 s with 64), at no cost in texts per CPU second (22.8-23.0 with 16, 18.1-19.2 with 64 on cli-man)
FILL_BATCH = 16
NICE = 10  # the worker's scheduling priority: below the routes'
SHUTDOWN = "the server stopped; the fill-in resumes where it stopped at the next `kgos serve` (or `kgos embed`)"


class EmbedWorker:
    """One background thread running the server's embedding jobs in order."""

    def __init__(self, registry: JobRegistry, home: FilePath, database_url: str | None = None) -> None:
        self.registry = registry
        self.home, self.database_url = home, database_url
        self._queue: deque[tuple[str, str | None, bool]] = deque()  # (job id, db_id, urgent)
        self._running: tuple[str, str | None, bool] | None = None
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def submit(self, db_id: str | None, urgent: bool = False) -> JobStatus:
        """Queue embedding ``db_id`` (the job already queued for it, if any; None: build the fast tier).
        ``urgent``: the KG has no vectors yet, so its job runs before the fill-ins (a running one
        pauses for it)."""
        with self._cond:
            for i, (job_id, queued_db, was_urgent) in enumerate(self._queue):
                if queued_db == db_id and self.registry.get(job_id).status == "queued":
                    self._queue[i] = (job_id, db_id, was_urgent or urgent)
                    return self.registry.get(job_id)
            job = self.registry.create(KIND, subject=db_id, cancellable=True)
            if self._stopping:
                return self.registry.cancel(job.job_id, SHUTDOWN)
            self._queue.append((job.job_id, db_id, urgent))
            self._start()
            self._cond.notify()
        return job

    def stop_running(self, db_id: str, reason: str) -> None:
        """Stop the job embedding ``db_id`` now, if one runs (its KG was just replaced)."""
        with self._cond:
            running = self._running
        if running is not None and running[1] == db_id:
            self.registry.cancel(running[0], reason)

    def stop(self, timeout: float = STOP_SECONDS) -> bool:
        """Cancel the queued jobs, stop the running one between commits and wait for the thread;
        False if it is still busy after ``timeout`` (a daemon thread: it dies with the process)."""
        with self._cond:
            self._stopping = True
            queued, self._queue = list(self._queue), deque()
            running, thread = self._running, self._thread
            self._cond.notify_all()
        for job_id, *_ in [*queued, *([running] if running else [])]:
            self._cancel_quietly(job_id)
        if thread is None:
            return True
        building = running is not None and running[1] is None
        thread.join(min(timeout, BUILD_STOP_SECONDS) if building else timeout)
        return not thread.is_alive()

    def _cancel_quietly(self, job_id: str) -> None:
        if self.registry.get(job_id).finished is None:
            self.registry.cancel(job_id, SHUTDOWN)

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="kgos-embed-worker", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        _lower_priority()
        while True:
            with self._cond:
                if not self._queue and not self._stopping:
                    self._cond.wait(IDLE_SECONDS)
                if self._stopping or not self._queue:  # idle: the next submit starts a new thread
                    self._thread = None if self._thread is threading.current_thread() else self._thread
                    left, self._queue = list(self._queue), deque()
                    break
                self._running = job_id, db_id, _ = self._next()
            status = "failed"
            try:
                status = self.registry.run(job_id, partial(self._embed, db_id))
            finally:
                with self._cond:
                    self._running = None
                    if status == "queued":  # paused for an urgent job: first among the fill-ins again
                        self._queue.appendleft((job_id, db_id, False))
        for job_id, *_ in left:  # only when stopping: a job paused while stop() cancelled the queue
            self._cancel_quietly(job_id)

    def _next(self) -> tuple[str, str | None, bool]:
        """The first urgent job (a KG without vectors), else the oldest (called holding the lock)."""
        i = next((i for i, item in enumerate(self._queue) if item[2]), 0)
        item = self._queue[i]
        del self._queue[i]
        return item

    def _embed(self, db_id: str | None, progress: ProgressFn) -> dict[str, Any]:
        if db_id is None:  # no KG: build the fast tier ahead of the first upload
            progress(BUILD_PHASE, 0, 0)
            return {"fast_tier": build_fast_tier(lambda done, total: progress(BUILD_PHASE, done, total))}

        def progress_or_pause(phase: str, done: int, total: int) -> None:
            progress(phase, done, total)
            if phase == FILL_PHASE and self._urgent_waiting():  # the chunk in progress is not written
                raise JobPaused("a KG without vectors gets its fast tier first")
        with Workspace(self.home, self.database_url) as ws:
            return embed_tiers(ws.kg(db_id), progress=progress_or_pause, batch_size=FILL_BATCH).to_dict()

    def _urgent_waiting(self) -> bool:
        with self._cond:
            return any(urgent for _, _, urgent in self._queue)


def _lower_priority() -> None:
    """Run this thread (and the model's thread pool, which inherits it when made here) at nice
    ``NICE``, so queries win the cores from a fill-in."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)  # Linux: this thread only
    except (AttributeError, OSError):  # not on this platform, or not allowed: full priority
        pass


def embed_worker(request: Request) -> EmbedWorker:
    """The app's embedding worker (made on first use, its thread on the first job)."""
    return worker_of(request.app.state)


def worker_of(state: Any) -> EmbedWorker:
    """The embedding worker kept in an app's ``state`` (made on first use)."""
    with _CREATE:
        if getattr(state, "embed_worker", None) is None:
            ws = state.runtime.workspace
            state.embed_worker = EmbedWorker(registry_of(state), ws.home, ws.database_url)
    worker: EmbedWorker = state.embed_worker
    return worker


@asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[None]:
    """The app's lifespan part: at start (``ServerSettings.fill_in``), queue the fast tier's build if
    missing and the pending fill-ins; at shutdown, stop the worker between two commits."""
    rt: Runtime = app.state.runtime
    if rt.settings.fill_in:
        await anyio.to_thread.run_sync(resume_pending, app)
    try:
        yield
    finally:
        worker = getattr(app.state, "embed_worker", None)
        if worker is not None and not await anyio.to_thread.run_sync(worker.stop):
            log.warning("the embedding worker is still busy (distilling the fast tier, or a batch over %.0f s); "
                        "it stops with the process", STOP_SECONDS)


def resume_pending(app: FastAPI) -> list[JobStatus]:
    """Queue the fast tier's build if this home has none (so the first upload does not wait for it),
    then a job for every KG whose fill-in was left pending (a stopped server, a Ctrl-C'd import)."""
    rt: Runtime = app.state.runtime
    with rt.lock:
        pending = pending_fill_ins(rt.workspace)
    worker = worker_of(app.state)
    started = [worker.submit(None)] if fast_tier_unbuilt() else []
    started += [worker.submit(db_id) for db_id in pending]
    if started:
        log.info("embedding in the background: %s", ", ".join(j.subject or "the fast tier's build" for j in started))
    return started


def latest_job(registry: JobRegistry, db_id: str) -> JobStatus | None:
    """The newest embedding job of ``db_id`` this server knows of."""
    return next((j for j in registry.list() if j.kind == KIND and j.subject == db_id), None)


_CREATE = threading.Lock()
EmbeddingOut = response_model(EmbedStatus, "EmbeddingOut", job=(JobOut | None, Field(
    None, description="The newest embedding job of this KG on this server (null: none since it started)")))
router = APIRouter(prefix="/api", responses=RESPONSES, tags=["embedding"])
Rt = Annotated[Runtime, Depends(runtime)]
Worker = Annotated[EmbedWorker, Depends(embed_worker)]
DbId = Annotated[str, Path(description="The KG's db_id", examples=["demo"]), AfterValidator(check_db_id)]


@router.get("/kg/{db_id}/embedding", response_model=EmbeddingOut)
def embedding_status(db_id: DbId, rt: Rt, worker: Worker) -> Any:
    """Which vectors search uses (``search_model``), the fill-in's target and how many nodes it covers,
    and the KG's newest embedding job with its progress and ETA."""
    with rt.lock:
        status = rt.workspace.kg(db_id).embed_status()
    job = latest_job(worker.registry, db_id)
    return {**status.to_dict(), "job": job.to_dict() if job else None}


@router.post("/kg/{db_id}/embedding", response_model=JobOut, status_code=202)
def start_embedding(db_id: DbId, rt: Rt, worker: Worker) -> Any:
    """Queue embedding the KG in the background: the fast tier if it has no vectors, then the fill-in
    towards its pending target (default: the default model); poll the returned job."""
    with rt.lock:
        status = rt.workspace.kg(db_id).embed_status()  # 404 for an unknown KG before a job is made
    return worker.submit(db_id, urgent=status.search_model is None).to_dict()


@router.get("/kg/{db_id}/embedding/models")
def embedding_models(db_id: DbId, rt: Rt) -> dict[str, Any]:
    """The models with vectors stored in the KG and how many nodes each covers, and the one search
    uses (what `kgos embed models` prints); POST .../search with ``model`` searches with any of them."""
    with rt.lock:
        kg = rt.workspace.kg(db_id)
        counts, status = kg.embedding_models(), kg.embed_status()
    return {"db_id": db_id, "search_model": status.search_model, "nodes": status.nodes, "models": counts,
            "specs": {name: spec_of(name) for name in counts}}


def spec_of(name: str) -> str | None:
    """The embedder spec whose vectors are stored under ``name`` (what search's ``model`` takes):
    a backend's default name, or ``hash-<dims>`` -> ``hash:<dims>``; None when it cannot be told."""
    from ..embed.registry import available_embedders
    for info in available_embedders():
        if info.name == name:
            return info.spec
    kind, _, dims = name.rpartition("-")
    return f"{kind}:{dims}" if kind == "hash" and dims.isdigit() else None
