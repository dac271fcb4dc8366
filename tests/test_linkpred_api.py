"""Link prediction and the review queue over HTTP (ASGI client, real SQLite), and the CLI commands."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from api_helpers import attach_readonly, client, error
from click.testing import CliRunner
from test_linkpred import FAST, family, family_kg

import kgos
from kgos.linkpred import link_predictor
from kgos.cli import cli
from kgos.llm.base import ChatProvider, Message

PARAMS = {"predictor": "ensemble", "params": {k: v for k, v in FAST.items() if k != "predictor"}}


class Scripted(ChatProvider):
    """Answers every question with the next scripted text."""

    name = "scripted"

    def __init__(self, answers: list[str]) -> None:
        self.answers, self.asked = list(answers), []  # type: list[str], list[str]

    def stream(self, messages: Sequence[Message], **kw: Any) -> Iterator[str]:
        self.asked.append(messages[-1].content)
        yield self.answers.pop(0)


def test_http_round_trip(ws: kgos.Workspace) -> None:
    family_kg(ws)
    c = client(ws)
    found = c.post("/api/kg/fam/predictions/discover", json={"node": "g0", "relations": ["grandparent"], "side": "out",
                                                           "k": 3, **PARAMS}).json()
    top = found["predictions"][0]
    assert (top["source"], top["target"], top["type"]) == ("g0", "c0b", "grandparent")
    assert top["evidence"]["rules"][0]["path"] == ["parent", "parent"]
    run = c.post("/api/kg/fam/predictions/run", json={"k": 4, "per_node": 2, **PARAMS}).json()
    assert len(run["queued"]["added"]) == 4
    assert run["calibration"]["withheld"] >= 1 and 0 <= run["calibration"]["ece"] <= 1
    assert all(0 < p["confidence"] < 1 and "priority" in p["scores"] for p in run["predictions"])
    plain = c.post("/api/kg/fam/predictions/run", json={"k": 4, "per_node": 2, "queue": False, "calibrated": False,
                                                        **PARAMS}).json()
    assert plain["calibration"] is None and all(p["confidence"] is None for p in plain["predictions"])
    page = c.get("/api/kg/fam/predictions", params={"limit": 2}).json()
    assert page["total"] == 4 and page["counts"]["pending"] == 4 and len(page["proposals"]) == 2
    pid = page["proposals"][0]["id"]
    accepted = c.post(f"/api/kg/fam/predictions/{pid}/accept", json={"reviewer": "ana"}).json()
    assert accepted["status"] == "accepted" and accepted["reviewer"] == "ana"
    error(c.post(f"/api/kg/fam/predictions/{pid}/accept", json={}), 409, "ProposalConflict")
    edge = ws.kg("fam").store.get_edge(accepted["source"], accepted["target"], accepted["type"])
    assert edge.properties["prediction_id"] == pid
    assert c.post(f"/api/kg/fam/predictions/{pid}/undo", json={}).json()["status"] == "pending"
    batch = c.post("/api/kg/fam/predictions/review", json={"decision": "reject", "origin": "ensemble"}).json()
    assert len(batch) == 4 and all(p["status"] == "rejected" for p in batch)
    error(c.get("/api/kg/fam/predictions/999"), 404, "ProposalNotFound")
    error(c.post("/api/kg/fam/predictions/discover", json={"node": "g0", "relations": ["sibling"], "side": "out",
                                                          **PARAMS}), 400, "InvalidArgument")
    error(c.post("/api/kg/fam/predictions/discover", json={"node": "g0", "k": 0}), 422)
    error(c.post("/api/kg/fam/predictions/run", json={"per_node": 101}), 422)  # bounds a request's work
    m = c.post("/api/kg/fam/predictions/eval", json={"predictor": "metapath", "holdout": 0.2,
                                                     "params": {"max_length": 2}}).json()
    assert {"mrr", "hits@1", "hits@3", "hits@10", "n", "predictor"} <= set(m) and m["n"] > 0


def test_a_run_trains_in_a_worker_process_without_the_workspace_lock(ws: kgos.Workspace) -> None:
    """The run's training and staging happen in a worker process on a workspace of its own: it completes
    while the workspace lock is held (before, it waited for it), and the server sees the staged rows;
    an unknown KG is still a 404 and a bad node a 404 carried back from the worker."""
    family_kg(ws)
    c = client(ws)
    answers: list[Any] = []
    with ws.lock:  # a long import or expert call holding the workspace
        runner = threading.Thread(target=lambda: answers.append(
            c.post("/api/kg/fam/predictions/run", json={"k": 3, "per_node": 2, **PARAMS})), daemon=True)
        runner.start()
        runner.join(120)
        assert answers, "the run waited for the workspace lock"
    run = answers[0].json()
    assert answers[0].status_code == 200 and len(run["queued"]["added"]) == 3, run
    assert c.get("/api/kg/fam/predictions").json()["counts"]["pending"] == 3
    error(c.post("/api/kg/nope/predictions/run", json={}), 404, "KGNotFound")
    error(c.post("/api/kg/fam/predictions/run", json={"nodes": ["no-such-node"], **PARAMS}), 404, "NodeNotFound")


def test_spec_explore_routes(ws: kgos.Workspace) -> None:
    family_kg(ws)
    c = client(ws)
    saved = c.post("/api/explore/predictions/save", json={
        "db_id": "fam", "source_node_id": "g1", "target_node_id": "p2", "predicted_relation": "parent",
        "ultra_score": 0.42})
    assert saved.status_code == 201
    pid = saved.json()["added"][0]
    listed = c.get("/api/explore/predictions", params={"db_id": "fam", "status": "pending"}).json()
    assert [p["id"] for p in listed["proposals"]] == [pid] and listed["proposals"][0]["score"] == 0.42
    reviewed = c.post("/api/explore/predictions/review", json={"db_id": "fam", "prediction_id": pid,
                                                               "action": "accept"}).json()
    assert reviewed["status"] == "accepted"
    assert ws.kg("fam").store.get_edge("g1", "p2", "parent").properties["confidence"] == 0.42
    error(c.post("/api/explore/predictions/review", json={"db_id": "fam", "prediction_id": pid, "action": "maybe"}),
          422)


def test_read_only_kg_over_http(ws: kgos.Workspace, tmp_path: Path) -> None:
    attach_readonly(ws, tmp_path)
    c = client(ws)
    pid = c.post("/api/kg/mem/predictions", json={"source": "b", "target": "a", "type": "uses"}).json()["added"][0]
    body = error(c.post(f"/api/kg/mem/predictions/{pid}/accept", json={}), 409, "ReadOnlyKG")
    assert "writable" in body["detail"]


def test_llm_validation_stores_the_verdict_and_never_blocks(ws: kgos.Workspace) -> None:
    kg = family_kg(ws)
    import kgos.linkpred  # noqa: F401
    q = kg.proposals
    a = q.propose_edge("g1", "c1a", "parent", origin="test", score=0.5).added[0]
    b = q.propose_edge("g2", "c2a", "parent", origin="test", score=0.5).added[0]
    provider = Scripted(['{"valid": true, "confidence": 0.9, "reasoning": "g1 is a grandparent of c1a."}',
                         "I think so, yes."])
    v = link_predictor(kg).validate(a, provider)
    assert (v.valid, v.confidence, v.accepted) == (True, 0.7, False)  # (0.5 + 0.9) / 2, no policy: not accepted
    assert "g1" in provider.asked[0] and "p1" in provider.asked[0]  # the neighbourhoods were shown
    stored = q.get(a)
    assert stored.llm_verdict is True and stored.confidence == 0.7 and stored.status == "pending"
    bad = link_predictor(kg).validate(b, provider)
    assert bad.valid is None and "JSON" in bad.error and q.get(b).llm_reasoning.startswith("validation failed")
    auto = link_predictor(kg).validate(b, Scripted(['{"valid": true, "confidence": 1.0, "reasoning": "ok"}']), auto_accept=0.7)
    assert auto.accepted and q.get(b).status == "accepted"


@pytest.fixture
def run_cli(tmp_path: Path) -> Any:
    runner = CliRunner()

    def invoke(*args: str, code: int = 0) -> Any:
        result = runner.invoke(cli, ["--home", str(tmp_path / "home"), *args])
        assert result.exit_code == code, result.output
        return result
    return invoke


def test_cli(run_cli: Any, tmp_path: Path) -> None:
    ws = kgos.Workspace(tmp_path / "home")
    family_kg(ws)
    ws.close()
    fast = ["--param", 'members=["metapath", "adamic_adar"]', "--param", 'params={"metapath": {"max_length": 2}}']
    r = run_cli("predict", "discover", "fam", "g0", "--relation", "grandparent", "--side", "out", "--json", *fast)
    assert json.loads(r.output)["predictions"][0]["target"] == "c0b"
    r = run_cli("predict", "run", "fam", "-k", "3", "--per-node", "2", "--plain", *fast)
    assert len(r.stdout.strip().splitlines()) == 3  # progress and ETA lines go to stderr
    listed = json.loads(run_cli("predict", "list", "fam", "--json").output)
    assert listed["total"] == 3
    run_cli("predict", "accept", "fam", "1", "--reviewer", "ana")
    assert "already accepted" in run_cli("predict", "accept", "fam", "1", code=1).output
    run_cli("predict", "reject", "fam", "--origin", "ensemble")
    assert json.loads(run_cli("predict", "undo", "fam", "1", "--json").output)["status"] == "pending"
    m = json.loads(run_cli("predict", "eval", "fam", "--holdout", "0.2", "--predictor", "metapath", "--param",
                           "max_length=2", "--json").output)
    assert set(m) >= {"mrr", "hits@1", "hits@3", "hits@10", "n", "predictor"}
    split = tmp_path / "split"
    split.mkdir()
    rows = [f"{h}\t{r}\t{t}" for h, r, t in family()]
    for name, part in (("train", rows[4:]), ("valid", rows[:2]), ("test", rows[2:4])):
        (split / f"{name}.tsv").write_text("\n".join(part) + "\n")
    m = json.loads(run_cli("predict", "eval", "--split", str(split), "--predictor", "adamic_adar", "--json").output)
    assert m["n"] == 4 and m["predictor"] == "adamic_adar"
    assert "Error: give a KG" in run_cli("predict", "eval", code=1).output
    assert "unknown predictor" in run_cli("predict", "discover", "fam", "g0", "--predictor", "ultra", code=1).output


def test_validate_over_http(ws: kgos.Workspace) -> None:
    from api_helpers import BASE_URL
    from fastapi.testclient import TestClient

    from kgos.api.app import create_app
    family_kg(ws)
    answers = ['{"valid": false, "confidence": 0.9, "reasoning": "g1 is no parent of p2."}']
    c = TestClient(create_app(ws, provider_factory=lambda name, model: Scripted(answers)), base_url=BASE_URL)
    pid = c.post("/api/kg/fam/predictions", json={"source": "g1", "target": "p2", "type": "parent",
                                                 "score": 0.3}).json()["added"][0]
    v = c.post(f"/api/kg/fam/predictions/{pid}/validate", json={"auto_accept": 0.5}).json()
    assert (v["valid"], v["confidence"], v["accepted"]) == (False, 0.2, False)  # (0.3 + (1 - 0.9)) / 2
    p = c.get(f"/api/kg/fam/predictions/{pid}").json()
    assert p["llm_verdict"] is False and p["llm_model"] == "scripted" and p["status"] == "pending"
