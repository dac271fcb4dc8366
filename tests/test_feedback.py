"""Feedback on expert turns (issue 35, goal 1): one vote per turn with the turn's retrieval snapshot,
from Python, the CLI and HTTP; unknown turns, bad ratings and floods are refused and write nothing."""

from __future__ import annotations

import json
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
from kgos.errors import InvalidArgument, RateLimited, TurnNotFound
from kgos.experts import feedback as fbmod
from kgos.experts.feedback import FeedbackService
from kgos.llm import get_provider


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_home(tmp_path_factory.mktemp("fb-home"), embedder=None)


@pytest.fixture
def demo_ws(home: Path, tmp_path: Path) -> kgos.Workspace:
    """A private copy of the demo home, so votes of one test do not count in another."""
    w = workspace_copy(home, tmp_path / "h")
    yield w
    w.close()


def _ask(ws: kgos.Workspace, question: str = "How do I reduce my API costs?", **kw: str) -> object:
    return ask(ws, get_provider("offline"), "demo", question, **kw)


def test_vote_keeps_the_turns_retrieval_and_a_second_vote_replaces_the_first(demo_ws: kgos.Workspace) -> None:
    a = _ask(demo_ws)
    svc = FeedbackService(demo_ws)
    first = svc.give(a.turn_id, "up")
    assert first.rating == "up" and first.revisions == 1 and first.query == "How do I reduce my API costs?"
    assert first.nodes_used == [s["id"] for s in a.sources] and first.intent == a.intent
    assert set(first.retrieval["retrieval_scores"]) == set(first.nodes_used)
    second = svc.give(a.turn_id, "down", comment="the batch API came too late")
    assert (second.rating, second.revisions, second.created_at) == ("down", 2, first.created_at)
    assert [f.turn_id for f in svc.list()] == [a.turn_id]
    assert svc.summary("demo").to_dict() == {"expert_id": "demo", "up": 0, "down": 1, "total": 1,
                                             "with_comment": 1, "positive_rate": 0.0}


def test_the_turn_id_names_both_messages_of_the_turn(demo_ws: kgos.Workspace) -> None:
    a = _ask(demo_ws)
    conv = kgos.experts.ExpertService(demo_ws).conversation("demo", a.conversation_id)
    assert [(m.role, m.turn_id) for m in conv.messages] == [("user", a.turn_id), ("assistant", a.turn_id)]
    b = _ask(demo_ws, "And batching?", conversation_id=a.conversation_id)
    assert b.turn_id != a.turn_id and b.conversation_id == a.conversation_id


def test_bad_votes_are_refused_and_write_nothing(demo_ws: kgos.Workspace) -> None:
    a = _ask(demo_ws)
    svc = FeedbackService(demo_ws)
    with pytest.raises(TurnNotFound, match="no conversation holds turn"):
        svc.give("turn_0123456789abcdef", "up")
    with pytest.raises(InvalidArgument, match="not a turn id"):
        svc.give("42; DROP TABLE feedback", "up")
    with pytest.raises(InvalidArgument, match="rating must be 'up' or 'down'"):
        svc.give(a.turn_id, "sideways")
    with pytest.raises(InvalidArgument, match="the limit is 2,000"):
        svc.give(a.turn_id, "up", comment="x" * 2001)
    assert svc.list() == []


def test_secrets_in_a_comment_are_not_kept(demo_ws: kgos.Workspace) -> None:
    a = _ask(demo_ws)
    FeedbackService(demo_ws).give(a.turn_id, "down", comment="it leaked ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    raw = demo_ws.shared.execute("SELECT comment FROM feedback").fetchone()[0]  # as stored (SQLite or PostgreSQL)
    assert "ghp_" not in raw and "redacted" in raw


def test_a_flood_on_one_conversation_is_rate_limited(demo_ws: kgos.Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fbmod, "PER_CONVERSATION_PER_MINUTE", 2)
    monkeypatch.setattr(fbmod, "MAX_REVISIONS", 3)
    a = _ask(demo_ws)
    b = _ask(demo_ws, "And batching?", conversation_id=a.conversation_id)
    c = _ask(demo_ws, "And caching?", conversation_id=a.conversation_id)
    svc = FeedbackService(demo_ws)
    svc.give(a.turn_id, "up")
    svc.give(b.turn_id, "up")
    with pytest.raises(RateLimited, match="in the last minute"):
        svc.give(c.turn_id, "down")
    assert {f.turn_id for f in svc.list()} == {a.turn_id, b.turn_id}
    monkeypatch.setattr(fbmod, "PER_CONVERSATION_PER_MINUTE", 100)
    svc.give(a.turn_id, "down")
    svc.give(a.turn_id, "up")
    with pytest.raises(RateLimited, match="cannot be changed again"):
        svc.give(a.turn_id, "down")
    assert svc.get(a.turn_id).rating == "up"


def test_cli_chat_json_gives_the_turn_id_and_feedback_records_it(demo_ws: kgos.Workspace) -> None:
    home = str(demo_ws.home)
    run = CliRunner().invoke
    chat = run(cli, ["--home", home, "expert", "chat", "demo", "Can I cache prompts?", "--json", "--no-memory"])
    assert chat.exit_code == 0, chat.output
    turn_id = json.loads(chat.stdout)["turn_id"]
    voted = run(cli, ["--home", home, "feedback", turn_id, "down", "--comment", "no price given", "--json"])
    assert voted.exit_code == 0, voted.output
    assert json.loads(voted.stdout)["rating"] == "down"
    listed = json.loads(run(cli, ["--home", home, "feedback", "--list", "--rating", "down", "--json"]).stdout)
    assert [f["turn_id"] for f in listed["feedback"]] == [turn_id] and listed["summary"]["down"] == 1
    missing = run(cli, ["--home", home, "feedback", "turn_0123456789", "up"])
    assert missing.exit_code == 1 and "no conversation holds turn" in missing.stderr


def test_http_feedback_routes(demo_ws: kgos.Workspace) -> None:
    client = TestClient(create_app(demo_ws, ServerSettings(), provider_factory=lambda p, m: get_provider("offline")),
                        base_url="http://127.0.0.1:8765")
    r = client.post("/api/experts/demo/chat", json={"query": "How do I stream tokens?", "stream": False})
    turn_id = r.json()["turn_id"]
    created = client.post("/api/feedback", json={"turn_id": turn_id, "rating": "up"})
    assert created.status_code == 201 and created.json()["expert_id"] == "demo"
    listing = client.get("/api/feedback", params={"expert_id": "demo"}).json()
    assert listing["summary"]["up"] == 1 and listing["feedback"][0]["turn_id"] == turn_id
    assert client.get(f"/api/feedback/{turn_id}").json()["rating"] == "up"
    assert client.post("/api/feedback", json={"turn_id": turn_id, "rating": "maybe"}).status_code == 422
    assert client.post("/api/feedback", json={"turn_id": "turn_0123456789", "rating": "up"}).status_code == 404
    assert client.get("/api/feedback/not-a-turn").status_code == 422
    cross = client.post("/api/feedback", json={"turn_id": turn_id, "rating": "down"},
                        headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403 and client.get(f"/api/feedback/{turn_id}").json()["rating"] == "up"
