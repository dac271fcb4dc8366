"""Cross-KG edges (issue 35, goal 6): links between nodes of two KGs, stored in the workspace,
followed by `kgos trace KG_A:NODE KG_B:NODE`, /api/trace and multi-KG experts (with per-KG weights)."""

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
from kgos.errors import EdgeNotFound, InvalidArgument, KGNotFound, NodeNotFound
from kgos.experts import ExpertService
from kgos.kg.links import CrossLinks, parse_ref
from kgos.llm import get_provider

A, B = "demo:goal:cost_reduction", "finance:goal:lower_investment_costs"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_home(tmp_path_factory.mktemp("links-home"), embedder=None)


@pytest.fixture
def ws(home: Path, tmp_path: Path) -> kgos.Workspace:
    w = workspace_copy(home, tmp_path / "h")
    yield w
    w.close()


def test_refs_keep_colons_in_node_ids() -> None:
    assert (parse_ref(A).kg, parse_ref(A).node) == ("demo", "goal:cost_reduction")
    for bad in ("nocolon", "demo:", "Bad KG:x"):
        with pytest.raises((InvalidArgument, kgos.errors.InvalidName)):
            parse_ref(bad)


def test_add_is_an_upsert_and_checks_both_ends(ws: kgos.Workspace) -> None:
    links = CrossLinks(ws)
    links.add(A, "finance:Lower investment costs", "relates_to", weight=0.4)  # a name resolves
    again = links.add(A, B, "relates_to", weight=0.9, properties={"why": "both are about cost"})
    assert again.weight == 0.9 and again.properties == {"why": "both are about cost"}
    assert [str(e.target) for e in links.list("finance")] == [B] and links.list("nosuch") == []
    with pytest.raises(NodeNotFound):
        links.add("demo:goal:nope", B, "relates_to")
    with pytest.raises(KGNotFound):
        links.add("nosuch:x", B, "relates_to")
    with pytest.raises(InvalidArgument, match="both ends are in 'demo'"):
        links.add(A, "demo:feature:batch_api", "relates_to")
    with pytest.raises(InvalidArgument, match="edge type"):
        links.add(A, B, "drop table")
    links.delete(A, B, "relates_to")
    with pytest.raises(EdgeNotFound):
        links.delete(A, B, "relates_to")


def test_trace_crosses_the_link_and_only_with_it(ws: kgos.Workspace) -> None:
    links = CrossLinks(ws)
    before = links.trace("demo:feature:batch_api", B)
    assert not before.found
    links.add(A, B, "relates_to")
    r = links.trace("demo:feature:batch_api", B)
    assert r.found and r.length == 2 and r.to_dict()["kgs"] == ["demo", "finance"]
    assert [s.cross for s in r.path] == [False, False, True] and str(r.path[-1].ref) == B
    back = links.trace(B, "demo:feature:batch_api")  # edges are followed both ways
    assert back.found and back.path[1].direction == "backward"
    with pytest.raises(InvalidArgument, match="max_depth"):
        links.trace(A, B, max_depth=50)


def test_cli_link_and_trace(ws: kgos.Workspace) -> None:
    home, run = str(ws.home), CliRunner().invoke
    made = run(cli, ["--home", home, "kg", "link", A, B, "relates_to", "--json"])
    assert made.exit_code == 0, made.output
    traced = run(cli, ["--home", home, "trace", "demo:feature:batch_api", B, "--json"])
    assert traced.exit_code == 0 and json.loads(traced.stdout)["found"] is True
    same = run(cli, ["--home", home, "trace", "demo", "feature:batch_api", "goal:cost_reduction", "--json"])
    assert json.loads(same.stdout)["found"] is True  # the one-KG form still works
    listed = run(cli, ["--home", home, "kg", "links", "--plain"])
    assert listed.stdout.split("\t")[:3] == [A, "relates_to", B]
    bad = run(cli, ["--home", home, "kg", "link", A, "demo:feature:batch_api", "relates_to"])
    assert bad.exit_code == 1 and "both ends are in 'demo'" in bad.stderr


def test_http_links_and_trace(ws: kgos.Workspace) -> None:
    client = TestClient(create_app(ws, ServerSettings()), base_url="http://127.0.0.1:8765")
    made = client.post("/api/links", json={"source": A, "target": B, "type": "relates_to"})
    assert made.status_code == 201 and made.json()["target"] == B
    assert client.get("/api/links", params={"kg": "demo"}).json()["links"][0]["source"] == A
    r = client.get("/api/trace", params={"source": "demo:feature:batch_api", "target": B}).json()
    assert r["found"] and r["path"][-1]["edge"]["cross_kg"] is True
    assert client.post("/api/links", json={"source": A, "target": "demo:nope", "type": "x"}).status_code == 404
    assert client.get("/api/trace", params={"source": A, "target": B, "max_depth": 99}).status_code == 422
    gone = client.delete("/api/links", params={"source": A, "target": B, "type": "relates_to"})
    assert gone.status_code == 200 and client.get("/api/links").json()["links"] == []


def test_a_multi_kg_expert_follows_links_and_weighs_its_kgs(ws: kgos.Workspace) -> None:
    svc = ExpertService(ws)
    both = svc.create({"name": "Both", "kg_db_ids": ["demo", "finance"]})
    question = "How do I reduce my API costs?"
    without = {s["id"] for s in ask(ws, get_provider("offline"), both.id, question).sources}
    CrossLinks(ws).add(A, "finance:goal:retirement_income", "relates_to")
    linked = ask(ws, get_provider("offline"), both.id, question).sources
    follow = next(s for s in linked if s["id"] == "goal:retirement_income")
    assert "goal:retirement_income" not in without
    assert follow["source_kg"] == "finance" and follow["method"] == "cross-kg"
    muted = svc.create({"name": "Muted", "kg_db_ids": ["demo", "finance"], "kg_weights": {"finance": 0.0}})
    taxes = "How can I lower my taxes?"
    loud = ask(ws, get_provider("offline"), both.id, taxes).sources
    assert any(s["score"] > 0 for s in loud if s["source_kg"] == "finance")
    quiet = ask(ws, get_provider("offline"), muted.id, taxes).sources
    assert all(s["score"] == 0.0 for s in quiet if s["source_kg"] == "finance")
    with pytest.raises(kgos.errors.InvalidConfig):
        svc.create({"name": "Bad", "kg_db_ids": ["demo"], "kg_weights": {"demo": -1}})
