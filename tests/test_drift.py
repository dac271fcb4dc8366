"""Dimension auto-extraction at import and drift alerts (issue 35, goal 5): an imported KG gets dimension
values (word rules only where the KG speaks the catalogue's language), and use that contradicts a
value (a filter excluded a node people used; a user says the opposite) is reported with evidence."""

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
from kgos.experts import ExpertService
from kgos.experts.drift import drift
from kgos.experts.feedback import FeedbackService
from kgos.llm import get_provider
from kgos.methods.autodims import speaks_catalogue
from kgos.methods.dimensions import INFERRED_KEY


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_home(tmp_path_factory.mktemp("drift"), "hash")


@pytest.fixture
def demo(home: Path, tmp_path: Path) -> kgos.Workspace:
    w = workspace_copy(home, tmp_path / "h")
    yield w
    w.close()


def _ask(ws: kgos.Workspace, question: str, expert: str = "demo") -> object:
    return ask(ws, get_provider("offline"), expert, question)


# -- at import --------------------------------------------------------------------------------------------
def _write(path: Path, nodes: list[tuple[str, str]], edges: list[tuple[str, str]]) -> Path:
    doc = {"nodes": [{"id": i, "name": i.title(), "type": "thing", "description": d} for i, d in nodes],
           "edges": [{"source": s, "target": t, "type": "part_of"} for s, t in edges]}
    path.write_text(json.dumps(doc))
    return path


def test_an_import_infers_structure_everywhere_and_words_only_in_the_catalogue_language(tmp_path: Path) -> None:
    ws = kgos.Workspace(tmp_path / "home")
    bio = [("fission", "Mitochondrial fission: the division of a mitochondrion into two"),
           ("translation", "Protein translation from messenger RNA at the ribosome, a steady state process"),
           ("cell", "The basic unit of an organism"), ("nucleus", "The organelle holding the chromosomes"),
           ("ribosome", "A complex of RNA and proteins")]
    r = ws.import_file("bio", _write(tmp_path / "bio.json", bio, [("fission", "cell"), ("translation", "cell")]))
    assert r.dimensions["word_rules"] is False and r.dimensions["nodes_written"] == 5
    props = ws.kg("bio").node("translation").properties
    assert props["relationship_richness"] > 0 and props[INFERRED_KEY]["relationship_richness"] == "degree"
    assert "multilingual_support" not in props and "state_management" not in props  # "translation", "state"
    tools = [("cache", "Cache responses and stream them in real time to the chat"),
             ("batch", "Batch API: submit thousands of requests as one asynchronous job at half price"),
             ("keys", "Rotate API keys and keep credentials secret; retry on rate limit errors")]
    r = ws.import_file("tools", _write(tmp_path / "tools.json", tools, [("cache", "batch")]))
    assert r.dimensions["word_rules"] is True
    batch = ws.kg("tools").node("batch").properties
    assert batch["batch_suitability"] == 0.85 and batch["pricing_tier"] == 0.15
    assert batch["real_time_requirement"] == 0.1 and ws.kg("tools").node("keys").properties["data_sensitivity_level"] == 0.9
    r = ws.import_file("plain", tmp_path / "tools.json", dimensions=False)
    assert r.dimensions is None and INFERRED_KEY not in ws.kg("plain").node("batch").properties
    conn, kg = ws.kg("tools").store.conn, ws.kg("tools")
    conn.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('integrity-check', 1)")  # index = rows
    kg.update_node("batch", properties={"aliases": ["quokka lane"], "pricing_tier": 0.2})  # text and not
    conn.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('integrity-check', 1)")
    assert kg.search("quokka lane", k=1).results[0].node.id == "batch"
    ws.close()


def test_the_word_rules_need_two_values_on_a_quarter_of_the_nodes() -> None:
    two = {"batch_suitability": 0.85, "pricing_tier": 0.15}
    assert speaks_catalogue([two, {}, {}, {}]) and not speaks_catalogue([two, {}, {}, {}, {}])
    assert not speaks_catalogue([]) and not speaks_catalogue([{"relationship_richness": 0.5}] * 4)


def test_kg_import_cli_reports_the_inferred_values_and_no_dims_skips_them(tmp_path: Path) -> None:
    src = _write(tmp_path / "t.json", [("a", "Stream a cached answer"), ("b", "Batch job")], [("a", "b")])
    run = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "kg", "import", "t", str(src), "--no-embed"])
    assert run.exit_code == 0 and "Inferred" in run.output and "dimension values" in run.output, run.output
    run = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "kg", "import", "u", str(src), "--no-embed",
                                   "--no-dims", "--json"])
    assert run.exit_code == 0 and json.loads(run.output)["dimensions"] is None, run.output


# -- drift ----------------------------------------------------------------------------------------------------
def test_a_statement_against_a_value_is_an_alert_and_a_negated_one_is_not(demo: kgos.Workspace) -> None:
    kg = demo.kg("demo")
    assert kg.node("feature:batch_api").properties["real_time_requirement"] == 0.0  # set by a person
    said = _ask(demo, "The Batch API is real-time now. How do I use the Batch API?")
    _ask(demo, "The Batch API is not real-time. What does it cost?")
    report = drift(demo, "demo")
    alert = next(a for a in report.alerts if a.node == "feature:batch_api" and a.dimension == "real_time_requirement")
    assert alert.kind == "contradicted" and alert.value == 0.0 and alert.set_by == "person"
    assert [(e.kind, e.ref, e.value) for e in alert.evidence] == [("statement", said.turn_id, 0.85)]
    assert "real-time now" in alert.evidence[0].text and report.turns_read == 2
    assert kg.node("feature:batch_api").properties["real_time_requirement"] == 0.0  # nothing written


def test_a_filter_that_excludes_a_node_people_used_is_an_alert(demo: kgos.Workspace) -> None:
    turn = _ask(demo, "How do I reduce API costs?")
    cited = sorted(k.split(":", 1)[1] for k in turn.citations["valid"] if k.startswith("demo:"))
    assert cited, turn.answer
    used = demo.kg("demo").node(cited[0])
    bound = {"max": round(used.properties["relationship_richness"] - 0.01, 2)}
    ExpertService(demo).create({"name": "Lean", "kg_db_id": "demo",
                                "dimension_filters": {"relationship_richness": bound}}, id="lean")
    assert not [a for a in drift(demo, "demo").alerts if a.kind == "excluded_but_used"]  # not rated: not used
    FeedbackService(demo).give(turn.turn_id, "up")
    p = demo.kg("demo").proposals.propose_edge(cited[0], "goal:reliability", "relates_to").added[0]
    demo.kg("demo").proposals.accept(p, reviewer="me")
    alerts = [a for a in drift(demo, "demo").alerts if a.kind == "excluded_but_used" and a.node == cited[0]]
    assert len(alerts) == 1 and alerts[0].expert == "lean" and alerts[0].bound == bound
    assert alerts[0].dimension == "relationship_richness" and alerts[0].set_by == "degree"
    assert {e.kind for e in alerts[0].evidence} == {"turn", "proposal"}
    assert not [a for a in drift(demo, "demo").alerts
                if a.kind == "excluded_but_used" and a.node not in (cited[0], "goal:reliability")
                and a.node not in {k.split(":", 1)[1] for k in turn.citations["valid"]}]


def test_drift_from_cli_and_http(demo: kgos.Workspace) -> None:
    _ask(demo, "The Batch API is real-time now.")
    run = CliRunner().invoke(cli, ["--home", str(demo.home), "dims", "drift", "demo", "--json"])
    assert run.exit_code == 0, run.output
    assert any(a["node"] == "feature:batch_api" for a in json.loads(run.output)["alerts"])
    run = CliRunner().invoke(cli, ["--home", str(demo.home), "dims", "drift", "demo"])
    assert run.exit_code == 0 and "contradicted" in run.output and "real-time now" in run.output
    assert CliRunner().invoke(cli, ["--home", str(demo.home), "dims", "drift", "demo", "--days", "0"]).exit_code == 2
    c = TestClient(create_app(demo, ServerSettings()), base_url="http://127.0.0.1:8765")
    body = c.get("/api/drift/demo").json()
    assert any(a["dimension"] == "real_time_requirement" for a in body["alerts"])
    assert c.get("/api/drift/demo?days=0").status_code == 422
    assert c.get("/api/drift/nope").status_code == 404
