"""Background jobs of the HTTP API: long work (an ingest) runs in a worker thread while the client
polls ``GET /api/jobs/{job_id}`` for its progress and, at the end, its result or error.

A job's function gets a ``progress(phase, done, total)`` callback and returns a JSON-shaped result;
a ``KGOSError`` it raises becomes the job's ``error`` (with the error's kind), anything else too, but
logged as the bug it is. The registry is in-process and bounded: the ``KEEP`` most recent finished
jobs are kept, older ones forgotten. Any router can submit work through ``jobs(request)``.
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

from ..errors import JobNotFound, KGOSError
from .errors import RESPONSES
from .schemas import list_of, response_model

log = logging.getLogger("kgos.api")
KEEP = 100
ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class JobStatus:
    """One background job: ``status`` queued | running | complete | failed; ``progress`` the current
    phase with ``done`` of ``total`` (0 when unknown); ``result`` the finished job's document;
    ``error`` / ``error_kind`` why it failed; times in seconds since the epoch."""

    job_id: str
    kind: str
    status: str
    progress: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None
    error_kind: str | None = None
    created: float = 0.0
    finished: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class JobRegistry:
    def __init__(self) -> None:
        self._jobs: OrderedDict[str, JobStatus] = OrderedDict()
        self._lock = threading.Lock()

    def submit(self, kind: str, work: Callable[[ProgressFn], dict[str, Any]]) -> JobStatus:
        job = JobStatus(uuid.uuid4().hex[:16], kind, "queued", created=time.time())
        self._put(job)
        threading.Thread(target=self._run, args=(job.job_id, work), name=f"job-{kind}-{job.job_id}", daemon=True).start()
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

    def _run(self, job_id: str, work: Callable[[ProgressFn], dict[str, Any]]) -> None:
        self._update(job_id, status="running")

        def progress(phase: str, done: int, total: int) -> None:
            self._update(job_id, progress={"phase": phase, "done": done, "total": total})
        try:
            result = work(progress)
        except KGOSError as exc:
            self._update(job_id, status="failed", error=str(exc), error_kind=type(exc).__name__, finished=time.time())
        except Exception as exc:  # a bug: the job reports it instead of dying silently
            log.exception("job %s failed", job_id)
            self._update(job_id, status="failed", error=f"{type(exc).__name__}: {exc}", error_kind="InternalError",
                         finished=time.time())
        else:
            self._update(job_id, status="complete", result=result, finished=time.time())


def jobs(request: Request) -> JobRegistry:
    """The app's job registry (made on first use)."""
    state = request.app.state
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
