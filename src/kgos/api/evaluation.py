"""/api/eval/jobs: run an evaluation (or the ablation of spec/000 appendix C) over a KG as a
background job of the app's job registry (``jobs.py``); poll ``GET /api/jobs/{job_id}`` for its
progress (the configuration being run, probe rankings done of probes x configurations) and, at the
end, its reports. What the studio's evaluation view charts.

The job holds the workspace lock one configuration at a time, so other requests get through
between configurations. Probes come inline (``probes_jsonl``, JSON Lines as ``kgos eval`` reads) or
as ``"demo"``, the demo probe set shipped with the package; no server path is read.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ..data import demo_file
from ..errors import InvalidArgument
from ..eval.ablation import ABLATION, evaluate_config
from ..eval.probes import Probe, load_probes
from ..kg import check_db_id
from .errors import RESPONSES
from .jobs import JobOut, Jobs, ProgressFn
from .kg import Rt
from .runtime import Runtime

router = APIRouter(prefix="/api/eval", tags=["evaluation"], responses=RESPONSES)
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


class Counted(Sequence[Probe]):
    """The probes, reporting each one ``evaluate`` takes as progress (``done`` counts across
    configurations, so the bar moves once from 0 to probes x configurations)."""

    def __init__(self, probes: list[Probe], progress: ProgressFn, total: int) -> None:
        self.probes, self.progress, self.total = probes, progress, total
        self.done, self.phase = 0, ""

    def __len__(self) -> int:
        return len(self.probes)

    def __getitem__(self, i: Any) -> Any:
        return self.probes[i]

    def __iter__(self) -> Iterator[Probe]:
        for probe in self.probes:
            yield probe
            self.done += 1
            self.progress(self.phase, self.done, self.total)


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


def run_configs(rt: Runtime, db_id: str, probes: list[Probe], configs: list[tuple[str, dict[str, Any]]], k: int,
                progress: ProgressFn) -> dict[str, Any]:
    """Every configuration on the probes: the job's result, ``{"db_id", "reports": [...]}``."""
    counted = Counted(probes, progress, len(probes) * len(configs))
    reports = []
    for label, config in configs:
        counted.phase = label
        with rt.lock:
            report = evaluate_config(rt.workspace.kg(db_id), counted, config, k, label)
        reports.append({**report.to_dict(), "failing": failing(report, probes),
                        "failing_total": sum(1 for r in report.per_probe if r["strict"]["recall@10"] == 0)})
    return {"db_id": db_id, "reports": reports}


@router.post("/jobs", status_code=202, response_model=JobOut)
def start_job(body: EvalJobIn, rt: Rt, registry: Jobs) -> Any:
    """Start an evaluation (``ablation``: every configuration of spec/000 appendix C) and answer the
    job at once; ``GET /api/jobs/{job_id}`` gives its progress and, when complete, ``result.reports``:
    per configuration R@1/5/10, MRR@10 and nDCG@10 (strict and lenient) overall and per level,
    latency and the failing probes (strict R@10 = 0) with their queries."""
    check_db_id(body.db_id)
    with rt.lock:
        rt.workspace.kg(body.db_id)  # 404 now rather than a failed job
    probes = read_probes(body)
    configs = list(ABLATION) if body.ablation else [("default", {})]
    return registry.submit("eval", lambda progress: run_configs(rt, body.db_id, probes, configs, body.k, progress)).to_dict()
