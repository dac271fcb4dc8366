"""``/api/research``: the two-loop research pipeline of spec/004 over HTTP (docs/research.md).

Runs execute in background threads (``kgos.research.live``), each on its own Workspace connection; the
routes start them, steer them (pause / resume / stop / step / restart an iteration / breakpoints /
answer an ask / hot-reload a module's config), stream their events as SSE, and serve what the studio's
debugger shows as JSON: the manifest (iterations, stages with hashes, decisions with rationale), one
stage's snapshot (config, input, output), replays and diffs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..errors import RunStateConflict
from ..research import DEFAULT_MODULES, ReplayReport, ResearchRequest, ResearchResult
from ..research.live import LiveRuns
from .errors import RESPONSES
from .ingest import check_roots
from .models import MAX_INT64
from .runtime import Runtime, runtime
from .schemas import response_model
from .streams import bounded

router = APIRouter(tags=["research"])
RT = Annotated[Runtime, Depends(runtime)]
RunId = Annotated[str, Path(pattern=r"^r_\d{4}-\d{2}-\d{2}_\d{3,}$", description="run id, e.g. r_2026-01-09_001")]
StageName = Literal["query", "search", "ingest", "extract", "merge", "store", "reason", "output"]
ResultModel = response_model(ResearchResult, "ResearchRunResult")
ReplayModel = response_model(ReplayReport, "ResearchReplay")


MAX_BUDGET_SECONDS = 7 * 86_400  # a week
MAX_BUDGET_TOKENS = 10**12
MAX_BUDGET_COST = 1_000_000.0


class RunRequest(BaseModel):
    """What to research. ``configs``: per stage module settings (e.g. ``{"search": {"k": 20}}``);
    ``modules``: per stage module id; ``wait``: answer when the run ends (a run that asks a person then
    comes back ``waiting``) instead of at once with its id."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=2000, pattern=r"\S")
    corpus: str | None = Field(None, max_length=4096, description="a folder on the server, below one of "
                                                                  "KGOS_INGEST_ROOTS (else 403)")
    kgs: list[str] = Field(default_factory=list, max_length=20)
    into: str | None = None
    max_iterations: int | None = Field(None, ge=1, le=100)
    # bounded so that no number makes a 500 (10**30 tokens did: "Integer exceeds 64-bit range")
    budget_seconds: float | None = Field(None, ge=0, le=MAX_BUDGET_SECONDS, allow_inf_nan=False)
    budget_tokens: int | None = Field(None, ge=0, le=MAX_BUDGET_TOKENS)
    budget_cost: float | None = Field(None, ge=0, le=MAX_BUDGET_COST, allow_inf_nan=False)
    reasoner: str = Field("reason.default", max_length=200)
    modules: dict[StageName, str] = Field(default_factory=dict)
    configs: dict[StageName, dict[str, Any]] = Field(default_factory=dict)
    store_mode: Literal["auto", "apply", "propose", "none"] = "auto"
    provider: str = Field("", max_length=200)
    embedder: str = Field("default", max_length=200)
    on_failure: Literal["stop", "skip"] = "stop"
    breakpoints: list[StageName] = Field(default_factory=list)
    wait: bool = False


class Started(BaseModel):
    run_id: str
    status: str


class Control(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["pause", "resume", "stop", "step", "restart_iteration"]


class Breakpoints(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stages: list[StageName] = Field(max_length=8)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=2000, pattern=r"\S")


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_iteration: int = Field(1, ge=1, le=1000)


class ModuleConfig(BaseModel):
    """``config``: the module's new settings; ``module``: another registered module id for the stage."""

    model_config = ConfigDict(extra="forbid")
    config: dict[str, Any] | None = None
    module: str | None = Field(None, max_length=200)


def live(request: Request) -> LiveRuns:
    """The app's background runs (made on first use)."""
    state = request.app.state
    if getattr(state, "research_runs", None) is None:
        ws = state.runtime.workspace
        state.research_runs = LiveRuns(ws.home, ws.database_url)
    return state.research_runs  # type: ignore[no-any-return]


Live = Annotated[LiveRuns, Depends(live)]


def _request(body: RunRequest) -> ResearchRequest:
    d = body.model_dump(exclude={"wait"})
    return ResearchRequest(**{**d, "kgs": tuple(d["kgs"]), "breakpoints": tuple(d["breakpoints"])})


@router.post("/api/research/runs", status_code=202,
             responses={**RESPONSES, 200: {"model": ResultModel, "description": "the finished run (wait: true)"}},
             response_model=Started | ResultModel,  # type: ignore[valid-type]
             summary="Start a research run (202 with its id; with wait: true, 200 with its result)")
def start_run(body: RunRequest, rt: RT, runs: Live) -> Any:
    if body.corpus is not None:
        check_roots([body.corpus])  # the server reads only below KGOS_INGEST_ROOTS, as for ingest
    runner = runs.start(_request(body), provider=None)
    if not body.wait:
        return Started(run_id=runner.run_id, status="running")
    runs.join(runner.run_id)
    from fastapi.responses import JSONResponse
    return JSONResponse(_result(rt, runner.run_id).to_dict(), status_code=200)


def _result(rt: Runtime, run_id: str) -> ResearchResult:
    from ..research.service import result
    with rt.lock:
        return result(rt.workspace, run_id)


@router.get("/api/research/runs", responses=RESPONSES, summary="The workspace's runs, newest first")
def list_runs(rt: RT, runs: Live, limit: Annotated[int, Query(ge=1, le=500)] = 50) -> list[dict[str, Any]]:
    from ..research import runs as saved
    with rt.lock:
        rows = saved(rt.workspace, limit)
    return [{**r, "live": runs.running(r["run_id"])} for r in rows]


@router.get("/api/research/runs/{run_id}", responses=RESPONSES,
            summary="A run's manifest: iterations, stages (module, hashes, status, seconds), reasoning and "
                    "decisions with rationale, final state, answer")
def get_run(run_id: RunId, rt: RT, runs: Live) -> dict[str, Any]:
    from ..research import run_manifest
    with rt.lock:
        m = run_manifest(rt.workspace, run_id)
    m["live"] = runs.running(run_id)
    if m["live"]:
        runner = runs.get(run_id)
        c = runner.control
        m["control"] = {"paused": c.paused, "stopped": c.stopped, "breakpoints": sorted(c.breakpoints),
                        "events": len(c.events)}
        # spec/004 "Observable": each module's state (status, calls, errors, last hashes and duration)
        m["module_states"] = {stage: mod.get_state().to_dict() for stage, mod in runner.modules.items()}
    return m


@router.get("/api/research/runs/{run_id}/result", response_model=ResultModel, responses=RESPONSES,
            summary="A run's answer, citations, iterations, stopped_by and output_sha256")
def get_result(run_id: RunId, rt: RT) -> dict[str, Any]:
    return _result(rt, run_id).to_dict()


@router.get("/api/research/runs/{run_id}/decisions", responses=RESPONSES,
            summary="Every decision of a run (stop / loop / ask / answer) with its rationale")
def get_decisions(run_id: RunId, rt: RT) -> list[dict[str, Any]]:
    return get_run_manifest(rt, run_id).get("decisions", [])


def get_run_manifest(rt: Runtime, run_id: str) -> dict[str, Any]:
    from ..research import run_manifest
    with rt.lock:
        return run_manifest(rt.workspace, run_id)


@router.get("/api/research/runs/{run_id}/iterations/{iteration}/stages/{stage}", responses=RESPONSES,
            summary="One stage call: config, input, output, outside responses and their sha256 (iteration 0: "
                    "the output stage)")
def get_stage(run_id: RunId, iteration: Annotated[int, Path(ge=0, le=1000)], stage: StageName,
              rt: RT) -> dict[str, Any]:
    from ..research import stage_snapshot
    with rt.lock:
        return stage_snapshot(rt.workspace, run_id, iteration, stage)


@router.get("/api/research/runs/{run_id}/events", responses={**RESPONSES, 200: {"content": {"text/event-stream": {}}}},
            summary="Server-sent events of a live run (stage_started, stage_completed, decision, ask, ...); "
                    "after: the last seq seen")
async def events(run_id: RunId, runs: Live, after: Annotated[int, Query(ge=0, le=MAX_INT64)] = 0) -> StreamingResponse:
    runner = runs.get(run_id)
    return StreamingResponse(bounded(_stream(runs, runner, run_id, after)), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


async def _stream(runs: LiveRuns, runner: Any, run_id: str, seq: int) -> AsyncIterator[str]:
    while True:
        batch = await asyncio.to_thread(runner.control.events_after, seq, 10.0)
        for e in batch:
            seq = e["seq"]
            yield f"id: {seq}\nevent: {e['event']}\ndata: {json.dumps(e, ensure_ascii=False, default=str)}\n\n"
        if not batch:
            yield ": keep-alive\n\n"
        if not runs.running(run_id) and len(runner.control.events) <= seq:
            return


@router.post("/api/research/runs/{run_id}/control", responses=RESPONSES,
             summary="Pause, resume, stop, step one stage or restart the current iteration of a live run")
def control(run_id: RunId, body: Control, runs: Live) -> dict[str, Any]:
    if not runs.running(run_id):
        # A run that is not running: restart really runs its last iteration again; the other
        # controls have nothing to act on (they were a silent 200 before).
        if body.action != "restart_iteration":
            runs.get(run_id)  # 404 for a run this server does not know
            raise RunStateConflict(f"run {run_id} is not running: '{body.action}' acts on a live run "
                                   f"(POST /api/research/runs/{run_id}/resume continues a stopped one)")
        _, restarted = runs.restart(run_id)
        return {"run_id": run_id, "action": body.action, "paused": False, "stopped": False, "status": "running",
                "restarted_iteration": restarted}
    runner = runs.get(run_id)
    getattr(runner.control, body.action)()
    return {"run_id": run_id, "action": body.action, "paused": runner.control.paused,
            "stopped": runner.control.stopped}


@router.put("/api/research/runs/{run_id}/breakpoints", responses=RESPONSES,
            summary="Set the stages a live run pauses before")
def breakpoints(run_id: RunId, body: Breakpoints, runs: Live) -> dict[str, Any]:
    runner = runs.get(run_id)
    runner.control.set_breakpoints(body.stages)
    return {"run_id": run_id, "breakpoints": sorted(runner.control.breakpoints)}


@router.post("/api/research/runs/{run_id}/answer", responses=RESPONSES,
             summary="Answer the question a run asked: a live run goes on, a saved waiting run resumes")
def answer(run_id: RunId, body: Answer, rt: RT, runs: Live) -> dict[str, Any]:
    if runs.running(run_id):
        runner = runs.get(run_id)
        if runner.manifest.get("status") != "waiting":
            raise RunStateConflict(f"run {run_id} asks nothing now")
        runner.control.answer(body.text)
        return {"run_id": run_id, "status": "running"}
    runner = runs.resume(run_id, body.text)
    return {"run_id": runner.run_id, "status": "running"}


@router.post("/api/research/runs/{run_id}/resume", responses=RESPONSES,
             summary="Continue a stopped or interrupted run in the background")
def resume_run(run_id: RunId, runs: Live) -> dict[str, Any]:
    if runs.running(run_id):
        raise RunStateConflict(f"run {run_id} is running")
    runs.resume(run_id)
    return {"run_id": run_id, "status": "running"}


@router.put("/api/research/runs/{run_id}/modules/{stage}", responses=RESPONSES,
            summary="Hot-swap a live run's module or reload its config (validated against its JSON Schema; "
                    "the stage's next call uses it)")
def configure_module(run_id: RunId, stage: StageName, body: ModuleConfig, runs: Live) -> dict[str, Any]:
    module = runs.get(run_id).swap_module(stage, body.module, body.config)
    return {"run_id": run_id, "stage": stage, "module": module.id, "version": module.version,
            "config": module.get_config()}


@router.post("/api/research/runs/{run_id}/replay", response_model=ReplayModel, responses=RESPONSES,
             summary="Re-execute a run offline from its manifest and compare every output hash")
def replay_run(run_id: RunId, rt: RT, body: ReplayRequest | None = None) -> dict[str, Any]:
    from ..research import replay
    with rt.lock:
        return replay(rt.workspace, run_id, (body or ReplayRequest()).from_iteration).to_dict()


@router.get("/api/research/diff", responses=RESPONSES, summary="Two runs compared stage by stage")
def diff(a: Annotated[str, Query(pattern=r"^r_\d{4}-\d{2}-\d{2}_\d{3,}$")],
         b: Annotated[str, Query(pattern=r"^r_\d{4}-\d{2}-\d{2}_\d{3,}$")], rt: RT) -> dict[str, Any]:
    from ..research import diff_runs
    with rt.lock:
        return diff_runs(rt.workspace, a, b)


@router.get("/api/research/modules", responses=RESPONSES,
            summary="Registered pipeline modules and reasoners with their config JSON Schema (for forms)")
def modules(category: Annotated[str | None, Query(max_length=40)] = None) -> dict[str, Any]:
    from ..pipeline import REGISTRY
    return {"stages": DEFAULT_MODULES, "modules": REGISTRY.describe(category), "errors": REGISTRY.errors}


__all__ = ["router"]
