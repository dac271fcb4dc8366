"""The research pipeline's Python API: run, resume, replay, diff and inspect runs of a workspace.

Replay (spec/004 "Replay: Load manifest, restore configs, re-execute from any iteration") checks the
manifest's seal, then for every stage from the chosen iteration on checks the snapshot against the
manifest's hashes, re-creates the module by id from the registry, re-executes it with the stored config,
input and outside responses (offline: no LLM, HTTP or search backend is called) and compares the output
hash. A run whose every hash is reproduced is ``identical``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ReplayMiss, RunStateConflict, SnapshotMismatch
from ..pipeline import REGISTRY, ProcessContext
from .control import RunControl
from .manifest import RunStore, run_store, summary, verify_seal
from .runner import ResearchRequest, ResearchResult, ResearchRunner, failed_output, result_of

if TYPE_CHECKING:  # types only: a research run is handed these, it never builds them
    from ..kg import Workspace
    from ..llm.base import ChatProvider

__all__ = ["ReplayReport", "diff_runs", "prepare_resume", "replay", "research", "result", "resume", "run_manifest",
           "runs", "stage_snapshot"]


def research(ws: Workspace, question: str, *, on_ask: Callable[[str], str | None] | None = None,
             provider: Any = None, control: RunControl | None = None, **options: Any) -> ResearchResult:
    """Run the two-loop pipeline on ``question``; ``options`` are ``ResearchRequest`` fields
    (corpus, kgs, into, max_iterations, budget_seconds, reasoner, configs, store_mode, ...).
    ``control`` steers it from another thread or a signal handler (``control.stop()``: user interrupt)."""
    if "kgs" in options:
        options["kgs"] = tuple(options["kgs"] or ())
    request = ResearchRequest(question=question, **options)
    return ResearchRunner(ws, request, on_ask=on_ask, provider=provider, control=control).run()


def resume(ws: Workspace, run_id: str, answer: str | None = None, *,
           on_ask: Callable[[str], str | None] | None = None, provider: Any = None) -> ResearchResult:
    """Continue a run that waits for an answer (give ``answer``), was stopped by the user, or whose
    process died; a completed or failed run cannot be resumed."""
    return prepare_resume(ws, run_id, answer, on_ask=on_ask, provider=provider).run()


def prepare_resume(ws: Workspace, run_id: str, answer: str | None = None, *,
                   on_ask: Callable[[str], str | None] | None = None, provider: Any = None,
                   wait_for_answers: bool = False, control: RunControl | None = None,
                   answer_timeout: float | None = None, restart: bool = False) -> ResearchRunner:
    """The runner of a saved run with its loop state restored and the answer accepted, ready to run.
    ``restart``: its last completed iteration runs again (any saved run that is not running)."""
    m = run_store(ws).manifest(run_id)
    status = m.get("status")
    if restart:
        return _restarted(ws, run_id, m, provider, wait_for_answers, control, answer_timeout, on_ask)
    stopped_by_user = status == "stopped" and (m.get("final_state") or {}).get("convergence_reason") == "user_interrupt"
    if status not in ("waiting", "running") and not stopped_by_user:
        raise RunStateConflict(f"run {run_id} is {status}: only a waiting, stopped or interrupted run resumes")
    if status == "waiting" and not (answer and answer.strip()) and on_ask is None:
        raise RunStateConflict(f"run {run_id} waits for an answer to: {m.get('pending_question')} "
                               f"(kgos research ask {run_id} \"...\")")
    if status != "waiting" and answer:
        raise RunStateConflict(f"run {run_id} is {status} and asks nothing")
    runner = ResearchRunner(ws, ResearchRequest.from_dict(m["request"]), on_ask=on_ask, provider=provider,
                            run_id=run_id, wait_for_answers=wait_for_answers, control=control,
                            answer_timeout=answer_timeout)
    runner.restore()
    if stopped_by_user:  # the stop decision is history; the loop goes on
        runner.manifest["final_state"] = None
    if answer and answer.strip():
        runner.accept_answer(answer.strip())
    elif status == "waiting":
        got = on_ask(m.get("pending_question") or "") if on_ask else None
        if not got or not got.strip():
            raise RunStateConflict(f"run {run_id} still waits for an answer")
        runner.accept_answer(got.strip())
    return runner


def _restarted(ws: Workspace, run_id: str, m: dict[str, Any], provider: ChatProvider | None, wait_for_answers: bool,
               control: RunControl | None, answer_timeout: float | None,
               on_ask: Callable[[str], str | None] | None) -> ResearchRunner:
    if not any(it.get("reasoning") for it in m.get("iterations", [])):
        raise RunStateConflict(f"run {run_id} has no completed iteration to restart")
    runner = ResearchRunner(ws, ResearchRequest.from_dict(m["request"]), on_ask=on_ask, provider=provider,
                            run_id=run_id, wait_for_answers=wait_for_answers, control=control,
                            answer_timeout=answer_timeout)
    runner.manifest["final_state"] = None  # the run's end is history: the loop goes on from the restart
    runner.manifest.pop("pending_question", None)
    runner.restore(restart_last=True)
    return runner


@dataclass(frozen=True)
class ReplayReport:
    """Stage-by-stage outcome of a replay; ``identical`` when every output hash was reproduced."""

    run_id: str
    identical: bool
    from_iteration: int
    stages: tuple[dict[str, Any], ...]
    answer: str
    citations: tuple[dict[str, Any], ...]
    iterations: int
    stopped_by: str | None
    output_sha256: str | None
    recorded_output_sha256: str | None

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["stages"], d["citations"] = list(self.stages), list(self.citations)
        return d


def replay(ws: Workspace, run_id: str, from_iteration: int = 1) -> ReplayReport:
    """Re-execute a run's stages from ``from_iteration`` offline and compare every output hash.
    Raises ``SnapshotMismatch`` naming the hash when the manifest or a snapshot was edited."""
    return asyncio.run(_replay(ws, run_id, from_iteration))


async def _replay(ws: Workspace, run_id: str, from_iteration: int) -> ReplayReport:
    store = run_store(ws)
    m = store.manifest(run_id)
    verify_seal(m)
    entries = [(it["iteration"], e) for it in m["iterations"] if it["iteration"] >= from_iteration
               for e in it["stages"]]
    if m.get("output"):
        entries.append((0, m["output"]))
    rows, final = [], None
    for iteration, entry in entries:
        row, out = await _replay_stage(ws, store, run_id, iteration, entry)
        rows.append(row)
        if iteration == 0:
            final = out
    data = dict(final.data) if final is not None else {}
    final_state = m.get("final_state") or {}
    return ReplayReport(run_id, all(r["same"] for r in rows), from_iteration, tuple(rows), data.get("answer", ""),
                        tuple(data.get("citations", [])), len(m["iterations"]), final_state.get("convergence_reason"),
                        final.sha256 if final is not None else None, m.get("output_sha256"))


async def _replay_stage(ws: Workspace, store: RunStore, run_id: str, iteration: int,
                        entry: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    snap = store.snapshot(run_id, entry["snapshot"])
    where = f"iteration {iteration}" if iteration else "output"
    for name, mine in (("config_hash", snap.config_sha256), ("input_hash", snap.input_sha256),
                       ("output_hash", snap.output_sha256)):
        if entry[name] != mine:
            raise SnapshotMismatch(f"run {run_id}, {where}, stage {entry['stage']}: the manifest's {name} "
                                   f"{entry[name]} differs from the snapshot's {mine}",
                                   field=f"{where}.{entry['stage']}.{name}", expected=entry[name], actual=mine)
    module = REGISTRY.create(snap.module_id)
    ctx = ProcessContext(run_id, iteration, entry["stage"], services={"workspace": ws})
    note = None
    try:
        out = await module.replay(snap, ctx)
    except (SnapshotMismatch, ReplayMiss):
        raise
    except Exception as exc:  # the recorded run may have failed here too: compare the failure
        out = failed_output(exc)
    if module.version != snap.module_version:
        note = f"module version {module.version} replays a snapshot of {snap.module_version}"
    row = {"iteration": iteration, "stage": entry["stage"], "module": snap.module_id,
           "recorded": entry["output_hash"], "replayed": out.sha256, "same": out.sha256 == entry["output_hash"]}
    if note:
        row["note"] = note
    return row, out


def diff_runs(ws: Workspace, run_a: str, run_b: str) -> dict[str, Any]:
    """Two runs side by side, stage by stage: which module, config, input and output hashes differ,
    the decisions of each iteration and the final states."""
    store = run_store(ws)
    a, b = store.manifest(run_a), store.manifest(run_b)
    stages = []
    for i in range(1, max(len(a["iterations"]), len(b["iterations"])) + 1):
        sa, sb = _stages_of(a, i), _stages_of(b, i)
        for stage in dict.fromkeys([*sa, *sb]):
            ea, eb = sa.get(stage), sb.get(stage)
            same = {k: bool(ea and eb and ea[k] == eb[k]) for k in ("module", "config_hash", "input_hash",
                                                                   "output_hash")}
            stages.append({"iteration": i, "stage": stage, "a": _brief(ea), "b": _brief(eb), "same": same})
    return {"a": run_a, "b": run_b, "same_output": a.get("output_sha256") == b.get("output_sha256"),
            "output_sha256": {"a": a.get("output_sha256"), "b": b.get("output_sha256")},
            "first_difference": next((s for s in stages if not all(s["same"].values())), None),
            "stages": stages,
            "decisions": {"a": a.get("decisions", []), "b": b.get("decisions", [])},
            "final_state": {"a": a.get("final_state"), "b": b.get("final_state")}}


def _stages_of(m: Mapping[str, Any], i: int) -> dict[str, dict[str, Any]]:
    it = next((it for it in m["iterations"] if it["iteration"] == i), None)
    return {e["stage"]: e for e in it["stages"]} if it else {}


def _brief(e: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {k: e[k] for k in ("module", "version", "config_hash", "input_hash", "output_hash", "status")}


def runs(ws: Workspace, limit: int = 50) -> list[dict[str, Any]]:
    """The workspace's runs, newest first (run_id, question, status, iterations, stopped_by, ...)."""
    return run_store(ws).summaries(limit)


def run_manifest(ws: Workspace, run_id: str) -> dict[str, Any]:
    """A run's manifest, plus ``sealed`` (its hash checks out) and, when finished, its answer."""
    store = run_store(ws)
    m = store.manifest(run_id)
    try:
        verify_seal(m)
        sealed = True
    except SnapshotMismatch:
        sealed = False
    out = dict(m)
    out["sealed"] = sealed
    out["summary"] = summary(m)
    if m.get("artifacts", {}).get("answer"):
        out["answer"] = store.read_json(run_id, m["artifacts"]["answer"])
    return out


def stage_snapshot(ws: Workspace, run_id: str, iteration: int, stage: str) -> dict[str, Any]:
    """One stage call of a run (config, input, output, outside responses): the debugger's inspector."""
    store = run_store(ws)
    m = store.manifest(run_id)
    entries = [m["output"]] if iteration == 0 and m.get("output") else \
        [e for it in m["iterations"] if it["iteration"] == iteration for e in it["stages"]]
    entry = next((e for e in entries if e and e["stage"] == stage), None)
    if entry is None:
        from ..errors import RunNotFound
        raise RunNotFound(f"run {run_id} has no stage {stage!r} in iteration {iteration}")
    return {**store.snapshot(run_id, entry["snapshot"]).to_dict(), "manifest_entry": entry}


def result(ws: Workspace, run_id: str) -> ResearchResult:
    """The ResearchResult of a saved run."""
    store = run_store(ws)
    m = store.manifest(run_id)
    out = store.read_json(run_id, m["artifacts"]["answer"]) if m.get("artifacts", {}).get("answer") else None
    return result_of(m, out, str(store.root / run_id))
