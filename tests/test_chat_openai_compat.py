"""The issue's "done when" with a model: set an OpenAI-compatible base URL and the demo expert answers
through it — over the HTTP API and the CLI — against a fake server on loopback speaking that API's
streaming protocol over real HTTP, including a tool call the model makes into the KG."""

from __future__ import annotations

import json

import pytest
from api_helpers import BASE_URL
from click.testing import CliRunner
from expert_helpers import parse_sse
from fastapi.testclient import TestClient
from llm_fake_servers import FakeServer, sse

import kgos
from kgos.api.app import create_app
from kgos.cli import cli
from kgos.data import load_demo

ANSWER = ["Use the batch API ", "[Source: demo:feature:batch_api]", "; streaming has limits ",
          "[Source: demo:limitation:mid_stream_errors]."]


def _chunk(delta: dict, finish: str | None = None) -> bytes:
    return sse({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                            "finish_reason": finish}]})


def _script(reply, req) -> None:
    reply.start(200)
    if not any(m["role"] == "tool" for m in req.body["messages"]):  # round 1: the model calls a KG tool
        reply.send(_chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                                "function": {"name": "can_it", "arguments": ""}}]}))
        reply.send(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"capability": "stream responses"}'}}]}))
        reply.send(_chunk({}, "tool_calls"))
    else:
        for piece in ANSWER:
            reply.send(_chunk({"content": piece}))
        reply.send(_chunk({}, "stop"))
    reply.send(b"data: [DONE]\n\n")
    reply.end()


@pytest.fixture
def fake_openai(monkeypatch):
    server = FakeServer().start()
    server.script = _script
    for var in ("KGOS_LLM_PROVIDER", "KGOS_LLM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KGOS_OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("KGOS_LLM_MODEL", "local-model")
    yield server
    server.stop()


def test_api_chat_goes_through_the_openai_compatible_server(ws: kgos.Workspace, fake_openai):
    load_demo(ws, embedder="hash")
    api = TestClient(create_app(ws), base_url=BASE_URL)
    events = parse_sse(api.post("/api/experts/demo/chat", json={"query": "How do I reduce my API costs?"}).text)
    assert "".join(e["content"] for e in events if e["type"] == "token") == "".join(ANSWER)
    done = events[-1]
    assert done["type"] == "done" and done["citations"]["ok"] and done["citations"]["count"] == 2
    first, second = (r.body for r in fake_openai.requests)
    assert fake_openai.requests[0].path == "/v1/chat/completions" and first["model"] == "local-model" and first["stream"]
    system = first["messages"][0]
    assert system["role"] == "system" and "[Knowledge Graph Context]" in system["content"]
    assert "[Source: demo:feature:batch_api]" in system["content"] and "You are Cookbook" in system["content"]
    assert {t["function"]["name"] for t in first["tools"]} >= {"search_kg", "can_it", "compose_for"}
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_1"
    assert json.loads(tool_msg["content"])["status"] == "yes_with_limitations"
    cid = events[0]["conversation_id"]
    meta = api.get(f"/api/experts/demo/conversations/{cid}").json()["messages"][1]["metadata"]
    assert meta["provider"] == "openai:local-model" and meta["tool_calls"][0]["name"] == "can_it"


def test_cli_chat_goes_through_the_openai_compatible_server(tmp_path, fake_openai):
    home = str(tmp_path / "home")
    assert CliRunner().invoke(cli, ["--home", home, "demo", "--embedder", "hash", "--plain"]).exit_code == 0
    r = CliRunner().invoke(cli, ["--home", home, "--json", "expert", "chat", "demo", "How do I reduce my API costs?"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["answer"] == "".join(ANSWER) and doc["citations"]["ok"] and doc["error"] is None
