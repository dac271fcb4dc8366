"""/api/eval: run an evaluation (or the ablation of spec/000 appendix C) over a KG as a background
job, and poll its progress and result; what the studio's evaluation view charts.

A job runs in a worker thread and holds the workspace lock one configuration at a time, so other
requests get through between configurations. Progress counts probes ranked (probes x
configurations). Jobs live in the server's memory: the last ``MAX_JOBS`` are kept, a restart
forgets them. Probes come inline (``probes_jsonl``, JSON Lines as ``kgos eval`` reads) or as
``"demo"``, the demo probe set shipped with the package; no server path is read.
"""

from __future__ import annotations

import itertools
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path as PathParam, Request
from pydantic import BaseModel, ConfigDict, Field

from ..data import demo_file
from ..errors import InvalidArgument, JobNotFound, KGOSError
from ..eval.ablation import ABLATION, evaluate_config
from ..eval.probes import Probe, load_probes
from ..kg import check_db_id
from .errors import RESPONSES
from .runtime import Runtime, runtime

router = APIRouter(prefix="/api/eval", tags=["evaluation"], responses=RESPONSES)
MAX_JOBS = 20
FAILING_SHOWN = 50


class EvalJobIn(BaseModel):
    """An evaluation to run: the KG, the probes (inline JSON Lines or ``"demo"``), one configuration
    (the default search) or the whole ablation table, and the cut-off ``k``."""

    model_config = ConfigDict(extra="forbid")
    db_id: str = Field(min_length=1, max_length=64)
    probes: Literal["demo", "inline"] = "demo"
    probes_jsonl: str | None = Field(None, max_length=900_000, description="JSON Lines probes when probes='inline'")
    ablation: bool = False
    k: int = Field(10, ge=10, le=100)
    limit: int | None = Field(None, ge=1, le=100_000, description="Use only the first N probes")


@dataclass
class Job:
    """One evaluation run; ``done``/``total`` count probes ranked."""

    id: str
    db_id: str
    total: int
    status: str = "running"  # running | done | failed
    done: int = 0
    started: float = field(default_factory=time.time)
    finished: float | None = None
    reports: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "db_id": self.db_id, "status": self.status, "done": self.done, "total": self.total,
                "progress": round(self.done / self.total, 4) if self.total else 1.0,
                "seconds": round((self.finished or time.time()) - self.started, 3), "reports": self.reports,
                "error": self.error}


class Counted(Sequence[Probe]):
    """The probes, counting each one ``evaluate`` takes into ``job.done`` (its progress)."""

    def __init__(self, probes: list[Probe], job: Job) -> None:
        self.probes, self.job = probes, job

    def __len__(self) -> int:
        return len(self.probes)

    def __getitem__(self, i: Any) -> Any:
        return self.probes[i]

    def __iter__(self) -> Iterator[Probe]:
        for probe in self.probes:
            yield probe
            self.job.done += 1


class Jobs:
    """The server's evaluation jobs (newest ``MAX_JOBS``)."""

    def __init__(self) -> None:
        self.items: OrderedDict[str, Job] = OrderedDict()
        self.ids = itertools.count(1)

    def add(self, job: Job) -> None:
        self.items[job.id] = job
        while len(self.items) > MAX_JOBS:
            self.items.popitem(last=False)

    def get(self, job_id: str) -> Job:
        job = self.items.get(job_id)
        if job is None:
            raise JobNotFound(f"no evaluation job '{job_id}' on this server (jobs are kept in memory: "
                              "a restart forgets them); start one with POST /api/eval/jobs")
        return job


def jobs(request: Request) -> Jobs:
    state = request.app.state
    if not hasattr(state, "eval_jobs"):
        state.eval_jobs = Jobs()
    return state.eval_jobs  # type: ignore[no-any-return]


def read_probes(body: EvalJobIn) -> list[Probe]:
    if body.probes == "demo":
        probes = load_probes(demo_file("probes.jsonl"))
    elif not body.probes_jsonl or not body.probes_jsonl.strip():
        raise InvalidArgument("probes='inline' needs probes_jsonl: one JSON probe per line")
    else:
        with tempfile.TemporaryDirectory(prefix="kgos-probes-") as folder:
            path = Path(folder) / "probes.jsonl"
            path.write_text(body.probes_jsonl, encoding="utf-8")
            try:
                probes = load_probes(path)
            except InvalidArgument as exc:  # name the field, not the server's temporary file
                raise InvalidArgument(str(exc).replace(str(path), "probes_jsonl").replace(path.name, "probes_jsonl")) from None
    return probes[:body.limit] if body.limit else probes


def failing(report: Any, probes: list[Probe]) -> list[dict[str, Any]]:
    """Probes whose answers are not in the top 10 (strict), with their query, for the trace links."""
    queries = {p.id: p.query for p in probes}
    rows = [r for r in report.per_probe if r["strict"]["recall@10"] == 0]
    return [{"id": r["id"], "query": queries.get(r["id"], ""), "level": r["level"], "intent": r["intent"],
             "top": r["top"][:3]} for r in rows[:FAILING_SHOWN]]


def run_job(rt: Runtime, job: Job, probes: list[Probe], configs: list[tuple[str, dict[str, Any]]], k: int) -> None:
    try:
        counted = Counted(probes, job)
        for label, config in configs:
            with rt.lock:
                report = evaluate_config(rt.workspace.kg(job.db_id), counted, config, k, label)
            job.reports.append({**report.to_dict(), "failing": failing(report, probes),
                                "failing_total": sum(1 for r in report.per_probe if r["strict"]["recall@10"] == 0)})
        job.status = "done"
    except (KGOSError, OSError, ValueError) as exc:
        job.status, job.error = "failed", str(exc)
    finally:
        job.finished = time.time()


@router.post("/jobs", status_code=202)
def start_job(body: EvalJobIn, rt: Annotated[Runtime, Depends(runtime)], all_jobs: Annotated[Jobs, Depends(jobs)]) -> dict[str, Any]:
    """Start an evaluation (``ablation``: every configuration of spec/000 appendix C) and answer the
    job at once; poll ``GET /api/eval/jobs/{id}`` for progress and the reports (R@1/5/10, MRR@10,
    nDCG@10 overall and per level, latency, the failing probes)."""
    check_db_id(body.db_id)
    with rt.lock:
        rt.workspace.kg(body.db_id)  # 404 now rather than a failed job
    probes = read_probes(body)
    configs = ABLATION if body.ablation else [("default", {})]
    job = Job(id=f"eval-{next(all_jobs.ids)}", db_id=body.db_id, total=len(probes) * len(configs))
    all_jobs.add(job)
    threading.Thread(target=run_job, args=(rt, job, probes, list(configs), body.k), name=job.id, daemon=True).start()
    return job.to_dict()


@router.get("/jobs")
def list_jobs(all_jobs: Annotated[Jobs, Depends(jobs)]) -> list[dict[str, Any]]:
    """The server's evaluation jobs, newest first (without their reports)."""
    return [{**job.to_dict(), "reports": []} for job in reversed(all_jobs.items.values())]


@router.get("/jobs/{job_id}")
def get_job(job_id: Annotated[str, PathParam(pattern=r"^eval-\d{1,9}$")], all_jobs: Annotated[Jobs, Depends(jobs)]) -> dict[str, Any]:
    """A job's status, progress (probes ranked / probes x configurations) and, as they finish, its reports."""
    return all_jobs.get(job_id).to_dict()
