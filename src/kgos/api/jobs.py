"""Background jobs of the HTTP API: long work (an ingest) runs in a worker thread while the client
polls ``GET /api/jobs/{job_id}`` for its progress and, at the end, its result or error.

A job's function gets a ``progress(phase, done, total)`` callback and returns a JSON-shaped result;
a ``KGOSError`` it raises becomes the job's ``error`` (with the error's kind), anything else too, but
logged as the bug it is. The registry is in-process and bounded: the ``KEEP`` most recent finished
jobs are kept, older ones forgotten. Any router can submit work through ``jobs(request)``.

A job's ETA (``eta_seconds``) is its phase's rate so far applied to what is left. A job
created ``cancellable`` can be stopped (``POST /api/jobs/{job_id}/cancel``): a queued one at once, a
running one at its next ``progress`` call, which raises ``JobCancelled`` inside the work, so work that
commits between progress calls (the embedding fill-in: one transaction per chunk) stops between commits.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request

from ..errors import JobCancelled, JobNotCancellable, JobNotFound, KGOSError
from .errors import RESPONSES
from .schemas import list_of, response_model

log = logging.getLogger("kgos.api")
KEEP = 100
ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class JobStatus:
    """One background job: ``status`` queued | running | complete | failed | cancelled; ``progress``
    the current phase with ``done`` of ``total`` (0 when unknown); ``result`` the finished job's
    document; ``error`` / ``error_kind`` why it failed or stopped; times in seconds since the epoch;
    ``subject`` what it works on (a db_id); ``cancellable`` whether ``POST /api/jobs/{job_id}/cancel``
    can stop it; ``phase_seconds`` spent in the current phase and ``eta_seconds`` left in it (None
    until a rate is known)."""

    job_id: str
    kind: str
    status: str
    progress: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None
    error_kind: str | None = None
    created: float = 0.0
    finished: float | None = None
    subject: str | None = None
    cancellable: bool = False
    phase_seconds: float | None = None
    eta_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class JobPaused(Exception):  # control flow, not an error
    """Raised by a job's work to give its worker back: the job is queued again (a resumable job)."""


class JobRegistry:
    def __init__(self) -> None:
        self._jobs: OrderedDict[str, JobStatus] = OrderedDict()
        self._lock = threading.Lock()
        self._cancel: dict[str, str] = {}  # job id -> why it was asked to stop
        self._phase: dict[str, tuple[str, float]] = {}  # job id -> (phase, when it began)

    def submit(self, kind: str, work: Callable[[ProgressFn], dict[str, Any]], subject: str | None = None,
               cancellable: bool = False) -> JobStatus:
        """Run ``work`` in a thread of its own (``subject``: what it works on, a db_id; ``cancellable``:
        its progress calls raise ``JobCancelled`` once a cancel was requested)."""
        job = self.create(kind, subject, cancellable)
        threading.Thread(target=self.run, args=(job.job_id, work), name=f"job-{kind}-{job.job_id}", daemon=True).start()
        return job

    def create(self, kind: str, subject: str | None = None, cancellable: bool = False) -> JobStatus:
        """A queued job whose work a worker runs later with :meth:`run`."""
        job = JobStatus(uuid.uuid4().hex[:16], kind, "queued", created=time.time(), subject=subject,
                        cancellable=cancellable)
        self._put(job)
        return job

    def get(self, job_id: str) -> JobStatus:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFound(f"no job '{job_id}' (finished jobs are kept until {KEEP} newer ones finish)")
        return job

    def list(self) -> list[JobStatus]:
        with self._lock:
            return list(reversed(self._jobs.values()))

    def cancel(self, job_id: str, reason: str = "cancelled by a request") -> JobStatus:
        """Stop a cancellable job: a queued one now, a running one at its next progress call."""
        job = self.get(job_id)
        if not job.cancellable:
            raise JobNotCancellable(f"job '{job_id}' ({job.kind}) cannot be cancelled; it runs to its end")
        if job.finished is not None:
            raise JobNotCancellable(f"job '{job_id}' has already ended ({job.status})")
        with self._lock:
            self._cancel[job_id] = reason
        if job.status == "queued":
            self._finish(job_id, "cancelled", error=reason, error_kind=JobCancelled.__name__)
        return self.get(job_id)

    def stop_requested(self, job_id: str) -> str | None:
        """Why a running job was asked to stop (None: it was not); it stops at its next progress call."""
        with self._lock:
            return self._cancel.get(job_id)

    def _put(self, job: JobStatus) -> None:
        with self._lock:
            self._jobs[job.job_id] = job
            while len(self._jobs) > KEEP:
                oldest = next((k for k, j in self._jobs.items() if j.finished is not None), None)
                if oldest is None:
                    break
                del self._jobs[oldest]

    def _update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            self._jobs[job_id] = replace(self._jobs[job_id], **changes)

    def _finish(self, job_id: str, status: str, **changes: Any) -> None:
        with self._lock:
            self._jobs[job_id] = replace(self._jobs[job_id], status=status, finished=time.time(), **changes)
            self._cancel.pop(job_id, None)
            self._phase.pop(job_id, None)

    def _progress(self, job_id: str, phase: str, done: int, total: int) -> None:
        """Record progress with its ETA; raise ``JobCancelled`` if the job was asked to stop."""
        now = time.monotonic()
        with self._lock:
            reason = self._cancel.get(job_id)
            began = self._phase.get(job_id)
            if began is None or began[0] != phase:
                began = self._phase[job_id] = (phase, now)
        if reason is not None:
            raise JobCancelled(reason)
        elapsed = now - began[1]
        eta = (total - done) * elapsed / done if 0 < done <= total and elapsed > 0 else None
        self._update(job_id, progress={"phase": phase, "done": done, "total": total},
                     phase_seconds=round(elapsed, 1), eta_seconds=None if eta is None else round(eta, 1))

    def run(self, job_id: str, work: Callable[[ProgressFn], dict[str, Any]]) -> str:
        """Run a job's work in this thread (unless it was cancelled while queued) and record how it
        ended; returns its status (``queued`` again if the work raised ``JobPaused``)."""
        if self.get(job_id).status != "queued":
            return self.get(job_id).status
        self._update(job_id, status="running")
        try:
            result = work(lambda phase, done, total: self._progress(job_id, phase, done, total))
        except JobPaused:
            with self._lock:
                self._phase.pop(job_id, None)  # the ETA's clock restarts with the work
            self._update(job_id, status="queued")
        except JobCancelled as exc:
            self._finish(job_id, "cancelled", error=str(exc), error_kind=type(exc).__name__)
        except KGOSError as exc:
            self._finish(job_id, "failed", error=str(exc), error_kind=type(exc).__name__)
        except Exception as exc:  # a bug: the job reports it instead of dying silently
            log.exception("job %s failed", job_id)
            self._finish(job_id, "failed", error=f"{type(exc).__name__}: {exc}", error_kind="InternalError")
        else:
            self._finish(job_id, "complete", result=result)
        return self.get(job_id).status


def jobs(request: Request) -> JobRegistry:
    """The app's job registry (made on first use)."""
    return registry_of(request.app.state)


def registry_of(state: Any) -> JobRegistry:
    """The job registry kept in an app's ``state`` (made on first use)."""
    if getattr(state, "jobs", None) is None:
        with _CREATE:
            if getattr(state, "jobs", None) is None:
                state.jobs = JobRegistry()
    registry: JobRegistry = state.jobs
    return registry


_CREATE = threading.Lock()
JobOut = response_model(JobStatus)
Jobs = Annotated[JobRegistry, Depends(jobs)]
router = APIRouter(prefix="/api", responses=RESPONSES, tags=["jobs"])


@router.get("/jobs", response_model=list_of(JobOut))
def list_jobs(registry: Jobs) -> Any:
    """Background jobs of this server, newest first."""
    return [j.to_dict() for j in registry.list()]


@router.get("/jobs/{job_id}", response_model=JobOut)
def get_job(registry: Jobs, job_id: Annotated[str, Path(max_length=64)]) -> Any:
    """A job's status, progress and, once finished, its result or error."""
    return registry.get(job_id).to_dict()


@router.post("/jobs/{job_id}/cancel", response_model=JobOut)
def cancel_job(registry: Jobs, job_id: Annotated[str, Path(max_length=64)]) -> Any:
    """Stop a cancellable job (an embedding, a query adapter, name vectors): a queued one at once, a
    running one at its next progress call (between commits); 409 for a job that cannot be cancelled or
    has ended."""
    return registry.cancel(job_id).to_dict()
