"""The MCP server through the official SDK's client: every tool in-process (in-memory transport), bad
input as MCP errors, resources and prompts, one stdio round trip with a real ``kgos mcp`` subprocess
(the README's Claude Desktop entry, as written) and one over HTTP on ``kgos serve``'s /mcp."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastapi.testclient import TestClient
from live_server import free_port, live_server
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import kgos
from kgos.api.app import create_app
from kgos.api.mcp import create_server
from kgos.api.runtime import ServerSettings
from kgos.data import load_demo

README = Path(__file__).resolve().parents[1] / "README.md"
READ_TOOLS = {"list_kgs", "search", "intent_search", "want_to", "can_it", "compose_for", "similar_to",
              "alternatives", "why_not", "impact_analysis", "trace_path", "explore_smart", "keyword_match",
              "edge_type_boost", "dimension_filter", "get_node", "neighbors", "proposals", "memory_context",
              "ask_expert", "feedback", "job_status"}
WRITE_TOOLS = {"add_node", "add_edge", "proposal_accept", "proposal_reject", "ingest", "memory_add"}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the demo KGs and experts (no vectors: text + graph search) and one proposal."""
    path = tmp_path_factory.mktemp("mcp-home")
    ws = kgos.Workspace(path)
    load_demo(ws, embedder=None)
    ws.kg("demo").proposals.propose_edge("feature:batch_api", "goal:cost_reduction", "solves", score=0.9)
    ws.kg("demo").proposals.propose_edge("feature:prompt_caching", "goal:cost_reduction", "solves", score=0.8)
    ws.close()
    return path


def run(server: Any, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await body(client)
    return anyio.run(main)


def call(server: Any, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, the JSON result or the error text) of one tool call."""
    result = run(server, lambda c: c.call_tool(name, args))
    text = result.content[0].text
    return result.is_error, (text if result.is_error else json.loads(text))


@pytest.fixture(scope="module")
def server(home: Path) -> Any:
    return create_server(kgos.Workspace(home), allow_writes=True)


def test_tools_are_listed_with_schemas_and_honest_read_only_hints(home: Path) -> None:
    read_only = {t.name: t for t in run(create_server(kgos.Workspace(home)), lambda c: c.list_tools()).tools}
    assert set(read_only) == READ_TOOLS  # no write tool unless writes are allowed
    writable = {t.name: t for t in run(create_server(kgos.Workspace(home), allow_writes=True),
                                       lambda c: c.list_tools()).tools}
    assert set(writable) == READ_TOOLS | WRITE_TOOLS
    for name, tool in writable.items():
        assert tool.description and len(tool.description) > 30, name
        assert tool.annotations.read_only_hint is (name in READ_TOOLS - {"ask_expert", "feedback"}), name
    search = writable["search"].input_schema
    assert search["required"] == ["kg", "query"]
    assert search["properties"]["k"] == {**search["properties"]["k"], "type": "integer", "minimum": 1,
                                         "maximum": 1000, "default": 10}
    assert writable["impact_analysis"].input_schema["properties"]["direction"]["enum"] == ["forward", "backward",
                                                                                         "both"]


def test_search_takes_the_python_api_names(server: Any) -> None:
    error, res = call(server, "search", {"kg": "demo", "query": "I want to reduce my API costs", "k": 3})
    assert not error
    assert len(res["results"]) == 3 and res["results"][0]["node"]["id"] == "goal:cost_reduction"
    assert set(res["results"][0]["components"]) >= {"text", "graph", "intent"}


@pytest.mark.parametrize("name, args, check", [
    ("list_kgs", {}, lambda r: {k["db_id"] for k in r["kgs"]} >= {"demo", "finance"}),
    ("intent_search", {"kg": "demo", "query": "how do I cut costs"}, lambda r: r["nodes"] and r["routes"]),
    ("want_to", {"kg": "demo", "goal": "reduce API costs", "k": 5}, lambda r: r["results"]),
    ("can_it", {"kg": "demo", "capability": "prompt caching"},
     lambda r: r["status"] in {"yes", "yes_with_limitations", "no", "unknown"}),
    ("compose_for", {"kg": "demo", "goal": "reduce API costs", "max_tools": 3}, lambda r: "steps" in r),
    ("similar_to", {"kg": "demo", "node": "feature:batch_api", "k": 3}, lambda r: 0 < len(r["results"]) <= 3),
    ("impact_analysis", {"kg": "demo", "node": "feature:batch_api", "direction": "forward", "max_depth": 2},
     lambda r: r["total_impacted"] > 0 and set(r["counts_by_depth"]) <= {"1", "2"}),
    ("trace_path", {"kg": "demo", "node_a": "feature:batch_api", "node_b": "goal:cost_reduction"},
     lambda r: r["found"] is True),
    ("explore_smart", {"kg": "demo", "node": "goal:cost_reduction", "depth": 1}, lambda r: r["levels"]),
    ("dimension_filter", {"kg": "demo", "filters": {"cost": {"max": 1.0}}, "limit": 5}, lambda r: "results" in r),
    ("get_node", {"kg": "demo", "node": "Batch API"}, lambda r: r["id"] == "feature:batch_api"),
    ("neighbors", {"kg": "demo", "node": "feature:batch_api", "direction": "outgoing", "limit": 3},
     lambda r: 0 < len(r["neighbors"]) <= 3),
    ("proposals", {"kg": "demo"}, lambda r: r["total"] >= 1 and r["proposals"][0]["id"]),
])
def test_every_read_tool_answers(server: Any, name: str, args: dict[str, Any], check: Any) -> None:
    error, res = call(server, name, args)
    assert not error, res
    assert check(res), res


def test_ask_expert_gives_a_cited_answer_and_continues_the_conversation(server: Any) -> None:
    error, res = call(server, "ask_expert", {"expert": "demo", "question": "How do I reduce my API costs?"})
    assert not error
    assert "[Source: demo:" in res["answer"] and res["citations"]["ok"] and res["citations"]["valid"]
    assert {s["id"] for s in res["sources"]} >= {"goal:cost_reduction"}
    _, again = call(server, "ask_expert", {"expert": "demo", "question": "And batching?",
                                           "conversation_id": res["conversation_id"]})
    assert again["conversation_id"] == res["conversation_id"]


def test_feedback_on_an_ask_expert_turn(server: Any) -> None:
    _, res = call(server, "ask_expert", {"expert": "demo", "question": "How do I stream tokens?"})
    error, fb = call(server, "feedback", {"turn_id": res["turn_id"], "rating": "down", "comment": "too vague"})
    assert not error and fb["rating"] == "down" and fb["conversation_id"] == res["conversation_id"]
    assert fb["retrieval"]["kg_nodes_used"] == [s["id"] for s in res["sources"]]
    error, msg = call(server, "feedback", {"turn_id": "turn_00000000", "rating": "up"})
    assert error and "no conversation holds turn" in str(msg)


def test_memory_add_needs_writes_enabled(home: Path) -> None:
    """Row 9 of issue 33: a default server (no --allow-writes / KGOS_MCP_WRITES) has no memory_add."""
    before = kgos.Workspace(home)
    from kgos.memory import MemoryService
    count = MemoryService(before).stats().to_dict()["memories"]
    error, said = call(create_server(kgos.Workspace(home)), "memory_add", {"content": "I use tea."})
    assert error and "memory_add" in str(said)
    assert MemoryService(kgos.Workspace(home)).stats().to_dict()["memories"] == count


def test_memory_add_then_context(server: Any) -> None:
    error, added = call(server, "memory_add", {"content": "I use the Batch API for nightly reports.",
                                                "tags": ["work"]})
    assert not error and added["memory"]["id"]
    _, ctx = call(server, "memory_context", {"query": "Batch API"})
    assert "Batch API" in json.dumps(ctx)


def test_write_tools_add_nodes_edges_and_review_proposals(server: Any) -> None:
    error, node = call(server, "add_node", {"kg": "finance", "name": "MCP test node", "type": "concept"})
    assert not error
    error, edge = call(server, "add_edge", {"kg": "finance", "source": node["id"], "target": node["id"],
                                            "type": "relates_to"})
    assert not error and edge["source"] == node["id"]
    assert call(server, "get_node", {"kg": "finance", "node": "MCP test node"})[1]["id"] == node["id"]
    pending = call(server, "proposals", {"kg": "demo"})[1]["proposals"]
    error, accepted = call(server, "proposal_accept", {"kg": "demo", "proposal_id": pending[0]["id"]})
    assert not error and accepted["status"] == "accepted"
    error, rejected = call(server, "proposal_reject", {"kg": "demo", "proposal_id": pending[1]["id"]})
    assert not error and rejected["status"] == "rejected"
    assert call(server, "neighbors", {"kg": "demo", "node": pending[0]["source"], "direction": "outgoing",
                                      "limit": 1000})[1]["neighbors"]


def test_ingest_runs_as_a_job_below_the_allowed_roots(server: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "shop.py").write_text("class Basket:\n    def total(self):\n        return 0\n")
    error, text = call(server, "ingest", {"kg": "shop", "paths": [str(tmp_path / "pkg")], "embed": False})
    assert error and "KGOS_INGEST_ROOTS" in text  # off until folders are allowed
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(tmp_path))
    error, job = call(server, "ingest", {"kg": "shop", "paths": [str(tmp_path / "pkg")], "embed": False})
    assert not error and job["kind"] == "ingest"
    deadline = time.monotonic() + 60
    while (status := call(server, "job_status", {"job_id": job["job_id"]})[1])["status"] in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert status["status"] == "complete", status
    assert call(server, "search", {"kg": "shop", "query": "Basket total"})[1]["results"]
    assert "JobNotFound" in call(server, "job_status", {"job_id": "nope"})[1]


@pytest.mark.parametrize("name, args, message", [
    ("search", {"kg": "demo", "query": "x", "k": "ten"}, "valid integer"),
    ("search", {"kg": "demo", "query": "x", "k": 10**9}, "less than or equal to 1000"),
    ("search", {"kg": "demo"}, "query"),
    ("search", {"kg": "nope", "query": "x"}, "KGNotFound: no KG named 'nope'"),
    ("get_node", {"kg": "demo", "node": "warp drive"}, "NodeNotFound"),
    ("impact_analysis", {"kg": "demo", "node": "feature:batch_api", "direction": "sideways"}, "direction"),
    ("trace_path", {"kg": "demo", "node_a": "feature:batch_api", "node_b": "nowhere"}, "NodeNotFound"),
    ("ask_expert", {"expert": "nobody", "question": "hi"}, "ExpertNotFound"),
    ("proposal_accept", {"kg": "demo", "proposal_id": 999_999}, "ProposalNotFound"),
    ("no_such_tool", {}, "no_such_tool"),
])
def test_bad_input_is_an_mcp_tool_error_and_the_server_keeps_serving(server: Any, name: str,
                                                                     args: dict[str, Any], message: str) -> None:
    error, text = call(server, name, args)
    assert error and message in text
    assert not call(server, "list_kgs", {})[0]


def test_resources_show_kgs_and_nodes(server: Any) -> None:
    listed = run(server, lambda c: c.list_resources()).resources
    assert {str(r.uri) for r in listed} >= {"kgos://kg/demo", "kgos://kg/finance"}
    kg = json.loads(run(server, lambda c: c.read_resource("kgos://kg/demo")).contents[0].text)
    assert kg["kg"]["db_id"] == "demo" and kg["stats"]["nodes"] > 300
    node = json.loads(run(server, lambda c: c.read_resource("kgos://kg/demo/node/feature:batch_api")).contents[0].text)
    assert node["node"]["name"] == "Batch API" and node["neighbors"]

    async def unknown(c: Client) -> str:
        try:
            await c.read_resource("kgos://kg/nope")
        except MCPError as exc:  # the server's JSON-RPC error, raised by the SDK
            return str(exc)
        return "no error"
    assert "no KG named 'nope'" in run(server, unknown)


def test_one_prompt_per_expert_with_persona_and_context(server: Any) -> None:
    prompts = {p.name for p in run(server, lambda c: c.list_prompts()).prompts}
    assert prompts >= {"demo", "finance"}
    got = run(server, lambda c: c.get_prompt("demo", {"question": "How do I reduce my API costs?"}))
    text = got.messages[0].content.text
    assert "Cookbook" in text and "demo:goal:cost_reduction" in text and text.endswith("reduce my API costs?")


# -- transports -------------------------------------------------------------------------------------------
def readme_mcp_entry() -> dict[str, Any]:
    """The Claude Desktop entry of the README's MCP section, as written."""
    blocks = re.findall(r"```json\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    config = next(json.loads(b) for b in blocks if '"mcpServers"' in b)
    return config["mcpServers"]["kgos"]


@pytest.mark.slow  # a kgos subprocess per test: seconds each on a busy machine
def test_stdio_round_trip_with_the_readme_entry(home: Path) -> None:
    entry = readme_mcp_entry()
    command = shutil.which(entry["command"]) or pytest.fail(f"{entry['command']} is not on PATH")
    env = {**os.environ, **entry.get("env", {}), "KGOS_HOME": str(home)}

    async def main() -> Any:
        async with Client(StdioServerParameters(command=command, args=entry["args"], env=env)) as c:
            tools = await c.list_tools()
            found = await c.call_tool("search", {"kg": "demo", "query": "reduce API costs", "k": 2})
            return tools, found
    tools, found = anyio.run(main)
    assert {t.name for t in tools.tools} == READ_TOOLS
    assert json.loads(found.content[0].text)["results"][0]["node"]["id"] == "goal:cost_reduction"


@pytest.mark.slow  # a kgos subprocess per test: seconds each on a busy machine
def test_stdio_stdout_carries_only_protocol(home: Path) -> None:
    """Every stdout line is a JSON-RPC message, also when a tool fails and when the library logs."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {
            "kg": "demo", "query": "reduce API costs", "k": 2}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_node", "arguments": {
            "kg": "nope", "node": "x"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "ask_expert", "arguments": {
            "expert": "demo", "question": "Can I cache prompts?"}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "kgos", "--home", str(home), "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        messages: list[dict[str, Any]] = []
        while {m.get("id") for m in messages} < {1, 2, 3, 4} and (line := proc.stdout.readline()):
            messages.append(json.loads(line))  # any stray print on stdout would fail here
        proc.stdin.close()
        messages += [json.loads(line) for line in proc.stdout.read().splitlines() if line.strip()]
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert set(by_id) == {1, 2, 3, 4}
    assert by_id[2]["result"]["isError"] is False and by_id[3]["result"]["isError"] is True
    assert "[Source: demo:" in by_id[4]["result"]["content"][0]["text"]


def readme_mcp_url() -> str:
    """The URL of the README's streamable-HTTP entry, as written."""
    entry = re.search(r'`(\{"mcpServers": \{"kgos": \{"type": "http".*?\}\}\})`', README.read_text(encoding="utf-8"))
    assert entry, "the README's HTTP MCP entry"
    return str(json.loads(entry.group(1))["mcpServers"]["kgos"]["url"])


def test_http_round_trip_on_serve_with_the_token(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGOS_MCP_WRITES", "1")
    url = readme_mcp_url()
    assert url == "http://127.0.0.1:8765/mcp"  # kgos serve's default address, and the mount
    port = free_port()
    app = create_app(home, ServerSettings(port=port, token="s3cret-token"))
    with live_server(app, port) as base:
        async def main(token: str) -> Any:
            async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                        Client(streamable_http_client(url.replace(":8765", f":{port}"), http_client=http)) as c):
                tools = await c.list_tools()
                return tools, await c.call_tool("get_node", {"kg": "demo", "node": "feature:batch_api"})
        tools, node = anyio.run(main, "s3cret-token")
        assert {t.name for t in tools.tools} == READ_TOOLS | WRITE_TOOLS
        assert json.loads(node.content[0].text)["name"] == "Batch API"
        assert httpx2.post(f"{base}/mcp", json={}).status_code == 401  # no token


def test_http_mount_keeps_the_host_and_origin_checks(home: Path) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    with TestClient(create_app(home), base_url="http://127.0.0.1:8765") as client:
        ok = client.post("/mcp", json=init, headers=headers)
        assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "kgos"
        rebound = client.post("/mcp", json=init, headers={**headers, "Host": "evil.example"})
        assert rebound.status_code == 400 and rebound.json()["error"] == "HostNotAllowed"
        foreign = client.post("/mcp", json=init, headers={**headers, "Origin": "http://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["error"] == "OriginNotAllowed"
