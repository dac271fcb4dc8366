"""/api/experts over real HTTP semantics (ASGI test client; a real uvicorn for disconnects): CRUD
shapes of spec/000 section 10, the SSE chat parsed event by event, conversations, errors."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
import uvicorn
from api_helpers import BASE_URL
from expert_helpers import ScriptedProvider, parse_sse
from fastapi.testclient import TestClient

import kgos
from kgos.api.app import create_app
from kgos.data import load_demo
from kgos.llm.base import ProviderError, ProviderTimeout

SPEC_EVENTS = {"conversation_start", "injection_meta", "sources", "token", "error", "done"}


@pytest.fixture
def demo_ws(ws: kgos.Workspace) -> kgos.Workspace:
    load_demo(ws, embedder="hash")
    return ws


def make_client(ws, provider=None) -> TestClient:
    factory = (lambda name, model: provider) if provider is not None else None
    return TestClient(create_app(ws, provider_factory=factory), base_url=BASE_URL)


@pytest.fixture
def api(demo_ws) -> TestClient:
    return make_client(demo_ws)


NEW = {"name": "Python Expert", "description": "Deep Python", "kg_db_id": "demo",
       "persona": {"name": "PyGuru", "instructions": "You are a senior Python developer.", "style": "professional",
                   "greeting": "Hello!"},
       "retrieval": {"methods": ["hybrid", "intent"], "alpha": 0.35, "beta": 0.40, "gamma": 0.15, "delta": 0.10, "limit": 10},
       "dimension_filters": {"implementation_complexity": {"max": 0.9}},
       "playbook_skills": ["reliability"],
       "custom_goal_mappings": {"debug": {"boost_types": ["has_limitation", "has_workaround"],
                                          "dimension_boosts": ["error_handling_need"]}}}


def test_crud_shapes_follow_the_spec(api):
    r = api.post("/api/experts", json=NEW)
    assert r.status_code == 201 and set(r.json()) == {"id", "name", "created_at"}
    eid = r.json()["id"]
    assert eid == "expert_python_expert"
    full = api.get(f"/api/experts/{eid}").json()
    assert full["persona"]["name"] == "PyGuru" and full["dimension_filters"] == NEW["dimension_filters"]
    assert {"id", "created_at", "updated_at", "schema_version"} <= set(full)
    listing = {e["id"]: e for e in api.get("/api/experts").json()}
    assert listing[eid]["persona"] == {"name": "PyGuru", "style": "professional"}
    assert listing[eid]["conversation_count"] == 0 and listing[eid]["last_active"] is None
    up = api.put(f"/api/experts/{eid}", json={"retrieval": {"alpha": 0.30, "delta": 0.20},
                                              "dimension_filters": {"implementation_complexity": {"max": 0.8}}})
    assert up.status_code == 200 and up.json()["retrieval"]["alpha"] == 0.30 and up.json()["retrieval"]["beta"] == 0.40
    dup = api.post(f"/api/experts/{eid}/duplicate", json={"new_name": "Python Expert (High Intent)",
                                                          "overrides": {"retrieval": {"delta": 0.30}}})
    assert dup.status_code == 201 and dup.json()["id"] == f"{eid}_copy_1"
    assert api.get(f"/api/experts/{eid}_copy_1").json()["retrieval"]["delta"] == 0.30
    doc = api.get(f"/api/experts/{eid}/export").json()
    imported = api.post("/api/experts/import", json={"document": doc, "id": "from_export"})
    assert imported.status_code == 201 and api.get("/api/experts/from_export").json()["name"] == "Python Expert"
    assert api.delete(f"/api/experts/{eid}?delete_conversations=true").json() == {"deleted": True, "conversations_deleted": 0}
    assert api.get(f"/api/experts/{eid}").status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({**NEW, "retrieval": {"alpha": -1}}, "alpha"),
    ({**NEW, "kg_db_id": "nope"}, "kg_db_id"),
    ({**NEW, "kg_db_id": "Bad Name"}, "kg_db_id"),
    ({**NEW, "unknown_field": 1}, "unknown_field"),
    ({**NEW, "dimension_filters": {"bad name!": {"min": 0.1}}}, "dimension_filters"),
    ({k: v for k, v in NEW.items() if k != "name"}, "name"),
])
def test_invalid_configs_are_422_naming_the_field(api, body, field):
    r = api.post("/api/experts", json=body)
    assert r.status_code == 422 and field in r.text
    assert api.put("/api/experts/demo", json={"retrieval": {"beta": -2}}).status_code == 422
    assert api.get("/api/experts/demo").json()["retrieval"]["beta"] == 0.40


def test_unknown_ids_are_404_with_a_message(api):
    for method, path in [("get", "/api/experts/nope"), ("put", "/api/experts/nope"), ("delete", "/api/experts/nope"),
                         ("get", "/api/experts/nope/conversations"), ("get", "/api/experts/demo/conversations/nope"),
                         ("delete", "/api/experts/demo/conversations/nope"), ("get", "/api/playbooks/nope")]:
        r = api.request(method, path, json={} if method == "put" else None)
        assert r.status_code == 404, (method, path, r.text)
        assert "nope" in r.json()["detail"]
    r = api.post("/api/experts/nope/chat", json={"query": "hi"})
    assert r.status_code == 404 and "known experts" in r.json()["detail"]
    assert api.get("/api/experts/bad%20id").status_code == 422


def test_chat_streams_spec_events_and_keeps_the_conversation(api):
    r = api.post("/api/experts/demo/chat", json={"query": "How do I reduce my API costs?"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    kinds = [e["type"] for e in events]
    assert set(kinds) <= SPEC_EVENTS and kinds[:3] == ["conversation_start", "injection_meta", "sources"]
    assert kinds[-1] == "done" and "token" in kinds and "error" not in kinds
    assert set(events[1]) == {"type", "memories", "skills", "kg_nodes"} and events[1]["skills"] is True
    assert events[1]["kg_nodes"] == len(events[2]["nodes"])
    answer = "".join(e["content"] for e in events if e["type"] == "token")
    assert "[Source: demo:feature:batch_api]" in answer and events[-1]["citations"]["ok"]
    cid = events[0]["conversation_id"]
    follow = parse_sse(api.post("/api/experts/demo/chat", json={"query": "and with streaming?", "conversation_id": cid}).text)
    assert follow[0]["conversation_id"] == cid
    conv = api.get(f"/api/experts/demo/conversations/{cid}").json()
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant", "user", "assistant"]
    assert conv["messages"][1]["content"] == answer and conv["expert_id"] == "demo"
    meta = conv["messages"][1]["metadata"]
    assert meta["kg_nodes_used"] and meta["intent"] == "cost_optimization" and meta["retrieval_scores"]
    page = api.get("/api/experts/demo/conversations?limit=20&offset=0").json()
    assert page["total"] == 1 and page["conversations"][0]["message_count"] == 4 and page["limit"] == 20
    listing = {e["id"]: e for e in api.get("/api/experts").json()}
    assert listing["demo"]["conversation_count"] == 1 and listing["demo"]["last_active"]
    assert api.delete(f"/api/experts/demo/conversations/{cid}").json() == {"deleted": True}
    assert api.get(f"/api/experts/demo/conversations/{cid}").status_code == 404


def test_chat_non_streaming_json(api):
    r = api.post("/api/experts/demo/chat", json={"query": "Can it stream responses?", "stream": False})
    body = r.json()
    assert r.status_code == 200 and body["answer"].startswith("Yes, with limitations")
    assert body["sources"] and body["citations"]["ok"] and body["conversation_id"].startswith("conv_")


@pytest.mark.parametrize("body", [{"query": ""}, {"query": "   "}, {}, {"query": "x" * 8001},
                                  {"query": "ok", "history": [{"role": "wizard", "content": "x"}]},
                                  {"query": "ok", "conversation_id": "../../x"}, {"query": "ok", "extra": 1}])
def test_bad_chat_requests_are_422(api, body):
    r = api.post("/api/experts/demo/chat", json=body)
    assert r.status_code == 422, r.text


def test_provider_failure_is_an_sse_error_event_then_done(demo_ws):
    api = make_client(demo_ws, ScriptedProvider(["partial "], error=ProviderError("upstream said 500"), error_after=1))
    events = parse_sse(api.post("/api/experts/demo/chat", json={"query": "reduce costs"}).text)
    assert [e["type"] for e in events][-3:] == ["token", "error", "done"]
    assert "upstream said 500" in events[-2]["content"]
    r = make_client(demo_ws, ScriptedProvider(["x"], error=ProviderError("down"), error_after=0)).post(
        "/api/experts/demo/chat", json={"query": "reduce costs", "stream": False})
    assert r.status_code == 502 and "down" in r.json()["detail"] and r.json()["conversation_id"]
    r = make_client(demo_ws, ScriptedProvider(["x"], error=ProviderTimeout("no answer in 1 s"), error_after=0)).post(
        "/api/experts/demo/chat", json={"query": "reduce costs", "stream": False})
    assert r.status_code == 504 and "no answer in 1 s" in r.json()["detail"]


def test_unconfigured_provider_is_a_clean_error(demo_ws, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    r = make_client(demo_ws).post("/api/experts/demo/chat", json={"query": "hi", "provider": "anthropic"})
    assert 400 <= r.status_code < 600 and r.status_code != 500 and "ANTHROPIC_API_KEY" in r.json()["detail"]
    r = make_client(demo_ws).post("/api/experts/demo/chat", json={"query": "hi", "provider": "no-such-llm"})
    assert r.status_code == 400 and "no-such-llm" in r.json()["detail"]


def test_providers_endpoint_says_what_is_configured(api, monkeypatch):
    for var in ("KGOS_LLM_PROVIDER", "KGOS_OPENAI_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    rows = {p["name"]: p for p in api.get("/api/llm/providers").json()["providers"]}
    assert rows["offline"]["default"] and rows["offline"]["configured"] and not rows["anthropic"]["configured"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    rows = {p["name"]: p for p in api.get("/api/llm/providers").json()["providers"]}
    assert rows["anthropic"]["configured"] and "sk-test-secret" not in api.get("/api/llm/providers").text


def test_playbooks_endpoints(api):
    assert "cost-optimization" in api.get("/api/playbooks").json()["playbooks"]
    pb = api.get("/api/playbooks/reliability").json()
    assert pb["sections"][1]["heading"] == "Handle rate limits" and pb["text"].startswith("# Reliability")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_client_disconnect_stops_generation_and_saves_what_was_said(demo_ws):
    provider = ScriptedProvider([f"word{i} " for i in range(400)], delay=0.02)
    app = create_app(demo_ws, provider_factory=lambda name, model: provider)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.02)
        tokens, cid = 0, None
        with httpx.Client(timeout=10) as http, http.stream(
                "POST", f"http://127.0.0.1:{port}/api/experts/demo/chat", json={"query": "reduce costs"}) as r:
            for line in r.iter_lines():
                if line.startswith("data:") and '"conversation_start"' in line:
                    cid = line.split('"conversation_id": "')[1].split('"')[0]
                tokens += '"token"' in line
                if tokens == 5:
                    break  # hang up mid-answer
        # 30 s bounds: guards against hanging, not speed limits (each ends as soon as the event happens)
        assert provider.stopped.wait(30), "the provider kept generating after the client left"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            conv = httpx.get(f"http://127.0.0.1:{port}/api/experts/demo/conversations/{cid}").json()
            if conv.get("messages"):
                break
            time.sleep(0.05)
        answer = conv["messages"][1]
        assert answer["metadata"]["interrupted"] is True
        assert answer["content"].startswith("word0 word1 word2 word3 word4") and len(answer["content"].split()) < 400
    finally:
        server.should_exit = True
        thread.join(5)
