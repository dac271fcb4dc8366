"""A/B tests of expert configs (issue 35, goal 4): deterministic weighted assignment per conversation,
the variant's config really serves the turn, per-variant figures, and a decision rule that picks a
known better variant and refuses to decide on too few votes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import demo_home, workspace_copy
from fastapi.testclient import TestClient

import kgos
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
from kgos.api.turns import ask
from kgos.cli import cli
from kgos.errors import ABTestConflict, ABTestNotFound, InvalidArgument, InvalidConfig
from kgos.experts.ab import ABService, two_proportion_p, wilson
from kgos.experts.feedback import FeedbackService
from kgos.llm import get_provider

TEXT = {"retrieval": {"alpha": 0.1, "beta": 0.8, "gamma": 0.1, "delta": 0.0, "limit": 4}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_home(tmp_path_factory.mktemp("ab-home"), embedder="hash")


@pytest.fixture
def ws(home: Path, tmp_path: Path) -> kgos.Workspace:
    w = workspace_copy(home, tmp_path / "h")
    yield w
    w.close()


def _variant_of(ws: kgos.Workspace, turn_id: str) -> dict:
    meta = ws.shared.execute("SELECT metadata FROM messages WHERE turn_id = ? AND role = 'assistant'", (turn_id,)).fetchone()
    return json.loads(meta[0])


def test_assignment_is_deterministic_and_follows_the_weights(ws: kgos.Workspace) -> None:
    ab = ABService(ws)
    test = ab.create("demo", [{"name": "a", "weight": 3}, {"name": "b", "overrides": TEXT, "weight": 1}])
    picks = [ab.assign(test, f"conv_{i:05d}").name for i in range(4000)]
    assert picks == [ab.assign(test, f"conv_{i:05d}").name for i in range(4000)]
    assert 0.72 < picks.count("a") / len(picks) < 0.78


def test_the_variant_serves_every_turn_of_its_conversation(ws: kgos.Workspace) -> None:
    test = ABService(ws).create("demo", [{"name": "control"}, {"name": "text", "overrides": TEXT}])
    seen = {}
    for i in range(12):
        a = ask(ws, get_provider("offline"), "demo", "How do I reduce my API costs?")
        meta = _variant_of(ws, a.turn_id)
        assert meta["ab"]["test"] == test.id and meta["latency_ms"] > 0
        seen[meta["ab"]["variant"]] = len(a.sources)
        again = ask(ws, get_provider("offline"), "demo", "And batching?", conversation_id=a.conversation_id)
        assert _variant_of(ws, again.turn_id)["ab"] == meta["ab"]  # the conversation keeps its variant
    assert seen == {"control": 8, "text": 4}  # text's retrieval limit of 4 really served its turns


def test_report_picks_the_known_better_variant_and_waits_for_votes(ws: kgos.Workspace) -> None:
    ab = ABService(ws)
    test = ab.create("demo", [{"name": "control"}, {"name": "text", "overrides": TEXT}], min_votes=20)
    rng, votes = random.Random(7), FeedbackService(ws)
    early = None
    for i in range(80):
        a = ask(ws, get_provider("offline"), "demo", "How do I reduce my API costs?")
        better = _variant_of(ws, a.turn_id)["ab"]["variant"] == "text"
        votes.give(a.turn_id, "up" if rng.random() < (0.85 if better else 0.35) else "down")
        if i == 10:
            early = ab.report(test.id)
    assert early.winner is None and early.decision.startswith("no decision yet")
    report = ab.report(test.id)
    assert report.winner == "text" and report.p_value < 0.05
    by = {v.name: v for v in report.variants}
    assert by["text"].positive_rate > by["control"].positive_rate and by["text"].feedback_rate == 1.0
    low, high = by["text"].interval
    assert low < by["text"].positive_rate < high


def test_lifecycle_and_bad_input(ws: kgos.Workspace) -> None:
    ab = ABService(ws)
    with pytest.raises(InvalidArgument, match="2 to 8 variants"):
        ab.create("demo", [{"name": "only"}])
    with pytest.raises(InvalidArgument, match="may not change kg_db_id"):
        ab.create("demo", [{"name": "a"}, {"name": "b", "overrides": {"kg_db_id": "finance"}}])
    with pytest.raises(InvalidConfig, match="variant 'b'"):
        ab.create("demo", [{"name": "a"}, {"name": "b", "overrides": {"retrieval": {"limit": -3}}}])
    assert ab.list() == []
    test = ab.create("demo", [{"name": "a"}, {"name": "b", "overrides": TEXT}])
    with pytest.raises(ABTestConflict, match="already has an active"):
        ab.create("demo", [{"name": "a"}, {"name": "c"}])
    assert ab.stop(test.id).status == "stopped" and ab.active("demo") is None
    with pytest.raises(ABTestConflict):
        ab.stop(test.id)
    with pytest.raises(ABTestNotFound):
        ab.report("ab_nope")
    a = ask(ws, get_provider("offline"), "demo", "How do I reduce my API costs?")
    assert "ab" not in _variant_of(ws, a.turn_id)  # stopped: the expert's own config again


def test_statistics_against_reference_values() -> None:
    low, high = wilson(81, 263)  # Wilson (1927) example reproduced in Newcombe (1998), method 3: 0.2553-0.3662
    assert round(low, 4) == 0.2553 and round(high, 4) == 0.3662
    assert two_proportion_p(30, 50, 30, 50) == 1.0
    assert abs(two_proportion_p(60, 100, 45, 100) - 0.0339) < 1e-3  # z = 2.12


def test_cli_and_http(ws: kgos.Workspace) -> None:
    home, run = str(ws.home), CliRunner().invoke
    made = run(cli, ["--home", home, "expert", "ab", "create", "demo", "--variant", "control", "--variant",
                     f"text={json.dumps(TEXT)}", "--split", "1,1", "--id", "ab_cli", "--json"])
    assert made.exit_code == 0, made.output
    bad = run(cli, ["--home", home, "expert", "ab", "create", "demo", "--variant", "a", "--variant", "b={oops"])
    assert bad.exit_code == 2 and "must be a JSON object" in bad.output
    client = TestClient(create_app(ws, ServerSettings(), provider_factory=lambda p, m: get_provider("offline")),
                        base_url="http://127.0.0.1:8765")
    client.post("/api/experts/demo/chat", json={"query": "How do I reduce my API costs?", "stream": False})
    report = client.get("/api/ab/ab_cli").json()
    assert sum(v["turns"] for v in report["variants"]) == 1 and report["winner"] is None
    assert client.get("/api/ab", params={"expert_id": "demo"}).json()["tests"][0]["id"] == "ab_cli"
    assert client.post("/api/experts/demo/ab", json={"variants": [{"name": "x"}]}).status_code == 422
    assert client.post("/api/ab/ab_cli/stop", headers={"X-KGOS-Client": "test"}).status_code == 200
    assert client.get("/api/ab/nope").status_code == 404
    text = run(cli, ["--home", home, "expert", "ab", "report", "ab_cli"])
    assert text.exit_code == 0 and "positive" in text.output
