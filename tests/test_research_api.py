"""``/api/research``: runs in the background, the debugger's JSON (manifest, decisions, stage snapshots),
SSE events, controls, answers, hot reload, replay and diff, and clear 4xx on bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from api_helpers import client, error
from research_helpers import corpus  # noqa: F401  (the shared corpus fixture)

import kgos


@pytest.fixture(autouse=True)
def _roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server may read the test's folder (KGOS_INGEST_ROOTS), nothing else."""
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(tmp_path))


def wait_for(c, run_id: str, status: set[str], timeout: float = 30) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        m = c.get(f"/api/research/runs/{run_id}").json()
        if m["status"] in status and not m["live"]:
            return m
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not reach {status}")


def test_run_inspect_replay_diff(ws: kgos.Workspace, corpus: Path) -> None:
    c = client(ws)
    r = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus), "max_iterations": 1,
                                           "wait": True})
    assert r.status_code == 200, r.text
    res = r.json()
    assert {"run_id", "answer", "citations", "iterations", "stopped_by", "output_sha256"} <= set(res)
    run_id = res["run_id"]
    m = c.get(f"/api/research/runs/{run_id}").json()
    assert m["sealed"] and m["iterations"][0]["stages"][0]["module"] == "query.intent"
    assert m["answer"]["answer"] == res["answer"]
    decisions = c.get(f"/api/research/runs/{run_id}/decisions").json()
    assert decisions[-1]["action"] == "stop" and decisions[-1]["rationale"]
    snap = c.get(f"/api/research/runs/{run_id}/iterations/1/stages/merge").json()
    assert snap["module_id"] == "merge.graph" and "knowledge" in snap["output"]
    assert snap["manifest_entry"]["output_hash"] == snap["output_sha256"]
    out = c.get(f"/api/research/runs/{run_id}/iterations/0/stages/output").json()
    assert out["output"]["answer"] == res["answer"]
    rep = c.post(f"/api/research/runs/{run_id}/replay", json={"from_iteration": 1}).json()
    assert rep["identical"] and rep["output_sha256"] == res["output_sha256"]
    other = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus), "max_iterations": 1,
                                               "configs": {"search": {"k": 3}}, "wait": True}).json()
    d = c.get("/api/research/diff", params={"a": run_id, "b": other["run_id"]}).json()
    assert d["first_difference"]["stage"] == "search" and not d["first_difference"]["same"]["config_hash"]
    listed = c.get("/api/research/runs").json()
    assert {x["run_id"] for x in listed} == {run_id, other["run_id"]}
    mods = c.get("/api/research/modules", params={"category": "search"}).json()
    assert mods["modules"][0]["id"] == "search.multi"
    assert "reciprocal_rank_fusion" in json.dumps(mods["modules"][0]["config_schema"])


def test_live_run_breakpoint_step_events_and_hot_reload(ws: kgos.Workspace, corpus: Path) -> None:
    c = client(ws)
    run_id = c.post("/api/research/runs", json={"question": "What is the difference between tar and zip?",
                                                "corpus": str(corpus), "max_iterations": 1,
                                                "breakpoints": ["search"]}).json()["run_id"]
    end = time.monotonic() + 20
    while not c.get(f"/api/research/runs/{run_id}").json().get("control", {}).get("paused"):
        assert time.monotonic() < end  # paused at the breakpoint before search
        time.sleep(0.05)
    m = c.get(f"/api/research/runs/{run_id}").json()
    assert [e["stage"] for e in m["iterations"][0]["stages"]] == ["query"]
    states = m["module_states"]
    assert states["query"]["status"] == "complete" and states["query"]["calls"] == 1
    assert states["search"]["status"] == "idle"
    bad = c.put(f"/api/research/runs/{run_id}/modules/search", json={"config": {"k": 0}})
    assert error(bad, 422, "InvalidConfig")["errors"] if "errors" in bad.json() else bad.status_code == 422
    ok = c.put(f"/api/research/runs/{run_id}/modules/search", json={"config": {"k": 2}}).json()
    assert ok["config"]["k"] == 2
    swapped = c.put(f"/api/research/runs/{run_id}/modules/merge", json={"module": "merge.graph",
                                                                         "config": {"entity_similarity": 0.9}})
    assert swapped.json()["config"]["entity_similarity"] == 0.9
    error(c.put(f"/api/research/runs/{run_id}/modules/merge", json={"module": "merge.nope"}), 404, "ModuleNotFound")
    assert c.put(f"/api/research/runs/{run_id}/breakpoints", json={"stages": []}).json()["breakpoints"] == []
    assert c.post(f"/api/research/runs/{run_id}/control", json={"action": "resume"}).json()["paused"] is False
    wait_for(c, run_id, {"completed"})
    snap = c.get(f"/api/research/runs/{run_id}/iterations/1/stages/search").json()
    assert len(snap["output"]["hits"]) == 2  # the hot-reloaded k
    with c.stream("GET", f"/api/research/runs/{run_id}/events") as s:
        body = "".join(s.iter_text())
    kinds = [json.loads(line[6:])["event"] for line in body.splitlines() if line.startswith("data: ")]
    assert kinds[0] == "run_started" and "breakpoint" in kinds and "decision" in kinds
    assert kinds[-1] == "run_finished" and kinds.count("stage_completed") == 8


def test_ask_answer_and_stop(ws: kgos.Workspace, corpus: Path) -> None:
    c = client(ws)
    waiting = c.post("/api/research/runs", json={"question": "zip", "corpus": str(corpus), "wait": True})
    assert waiting.status_code == 200 and waiting.json()["status"] == "waiting"  # wait ends at an ask
    assert c.post(f"/api/research/runs/{waiting.json()['run_id']}/control", json={"action": "stop"}).status_code == 200
    c.app.state.research_runs.answer_wait = 0.2  # nobody answers: the thread ends, the run stays waiting
    idle = c.post("/api/research/runs", json={"question": "gzip", "corpus": str(corpus), "wait": True}).json()
    m = wait_for(c, idle["run_id"], {"waiting"})
    assert not m["live"] and m["pending_question"]
    assert c.post(f"/api/research/runs/{idle['run_id']}/answer", json={"text": "what it is"}).status_code == 200
    assert wait_for(c, idle["run_id"], {"completed"})["answers"][0]["text"] == "what it is"
    run_id = c.post("/api/research/runs", json={"question": "tar", "corpus": str(corpus)}).json()["run_id"]
    end = time.monotonic() + 20
    while c.get(f"/api/research/runs/{run_id}").json()["status"] != "waiting":
        assert time.monotonic() < end
        time.sleep(0.05)
    assert "tar" in c.get(f"/api/research/runs/{run_id}").json()["pending_question"]
    assert c.post(f"/api/research/runs/{run_id}/answer", json={"text": "what it is"}).json()["status"] == "running"
    m = wait_for(c, run_id, {"completed"})
    assert [d["action"] for d in m["decisions"]][:2] == ["ask", "answer"]
    error(c.post(f"/api/research/runs/{run_id}/answer", json={"text": "more"}), 409, "RunStateConflict")
    stop_id = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus),
                                                 "breakpoints": ["query"]}).json()["run_id"]
    c.post(f"/api/research/runs/{stop_id}/control", json={"action": "stop"})
    m = wait_for(c, stop_id, {"stopped"})
    assert m["final_state"]["convergence_reason"] == "user_interrupt"


def test_bad_input_is_4xx(ws: kgos.Workspace, corpus: str, tmp_path: Path) -> None:
    c = client(ws)
    error(c.post("/api/research/runs", json={"question": " "}), 422)
    error(c.post("/api/research/runs", json={"question": "x", "kgs": ["nope"]}), 404, "KGNotFound")
    error(c.post("/api/research/runs", json={"question": "x", "corpus": str(tmp_path / "no")}), 400)
    error(c.post("/api/research/runs", json={"question": "x", "corpus": "/"}), 403, "IngestPathRefused")
    error(c.post("/api/research/runs", json={"question": "x", "reasoner": "reason.nope"}), 404, "ModuleNotFound")
    error(c.post("/api/research/runs", json={"question": "x", "configs": {"search": {"strategy": "llm"}}}), 422,
          "InvalidConfig")
    error(c.post("/api/research/runs", json={"question": "x", "configs": {"bogus": {}}}), 422)
    error(c.get("/api/research/runs/r_2020-01-01_001"), 404, "RunNotFound")
    error(c.get("/api/research/runs/not-a-run"), 422)
    error(c.post("/api/research/runs/r_2020-01-01_001/control", json={"action": "pause"}), 404)
    error(c.get("/api/research/runs/r_2020-01-01_001/iterations/1/stages/bogus"), 422)
    run_id = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus), "max_iterations": 1,
                                                "wait": True}).json()["run_id"]
    folder = ws.home / "research" / run_id
    m = json.loads((folder / "manifest.json").read_text())
    m["status"] = "edited"
    (folder / "manifest.json").write_text(json.dumps(m))
    body = error(c.post(f"/api/research/runs/{run_id}/replay", json={}), 409, "SnapshotMismatch")
    assert "manifest_sha256" in body["detail"]


def test_a_process_with_a_run_waiting_for_an_answer_still_exits(tmp_path: Path) -> None:
    """A live run blocked on a person's answer must not keep the server process alive at exit."""
    import subprocess
    import sys
    code = ("import sys; from kgos.research.live import LiveRuns; from kgos.research import ResearchRequest; "
            f"runs = LiveRuns({str(tmp_path / 'home')!r}); r = runs.start(ResearchRequest('zip')); "
            "runs.join(r.run_id, 30); print(r.manifest['status'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "KGOS_EMBEDDER": "hash"})
    assert done.returncode == 0 and done.stdout.strip() == "waiting", done.stderr


def test_restart_iteration_of_a_run_that_is_not_running_runs_it_again(ws: kgos.Workspace, corpus: Path) -> None:
    c = client(ws)
    res = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus), "max_iterations": 1,
                                             "wait": True}).json()
    run_id = res["run_id"]
    before = wait_for(c, run_id, {"completed"})
    first = c.get(f"/api/research/runs/{run_id}/iterations/1/stages/query").json()
    error(c.post(f"/api/research/runs/{run_id}/control", json={"action": "pause"}), 409, "RunStateConflict")
    r = c.post(f"/api/research/runs/{run_id}/control", json={"action": "restart_iteration"})
    assert r.status_code == 200 and r.json()["status"] == "running" and r.json()["restarted_iteration"] == 1
    after = wait_for(c, run_id, {"completed"})
    assert len(after["iterations"]) == 1  # iteration 1 ran again in place of the old one
    actions = [(d["action"], d["by"]) for d in after["decisions"]]
    assert actions.count(("restart_iteration", "user")) == 1 and actions[-1][0] == "stop"
    assert len(after["decisions"]) > len(before["decisions"])
    again = c.get(f"/api/research/runs/{run_id}/iterations/1/stages/query").json()
    assert again["output_sha256"] == first["output_sha256"]  # same input, same module: the same plan
    assert c.get(f"/api/research/runs/{run_id}").json()["answer"]["answer"] == res["answer"]
    kinds = [e["event"] for e in c.app.state.research_runs.get(run_id).control.events]
    assert kinds.count("stage_completed") == 8 and kinds[-1] == "run_finished"  # the restart's own run


def test_restart_of_an_unknown_run_or_one_with_no_iteration_is_a_clear_4xx(ws: kgos.Workspace, corpus: Path) -> None:
    c = client(ws)
    error(c.post("/api/research/runs/r_2020-01-01_001/control", json={"action": "restart_iteration"}), 404, "RunNotFound")
