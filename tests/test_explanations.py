"""Explanations that add up (issue 29, goal 4): every hit carries every signal that shaped its score,
the weight it was given for that hit and the named bonuses, and
``score == sum(weights[s] * components[s]) + sum(bonuses)`` to 1e-6, in the JSON of the library,
HTTP and MCP, on every hit of every dev-set query and in every mode."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from api_helpers import client
from mcp import Client

import kgos
from kgos.api.mcp import create_server
from kgos.data import load_demo
from kgos.errors import EmbeddingServiceError
from kgos.retrieval.hybrid import MODES
from kgos.retrieval.results import SIGNALS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import devsets  # noqa: E402

TOLERANCE = 1e-6
QUERIES = ("How do I reduce API costs?", "Batch API", "prompt caching limitations", "summarize long documents",
           "what does extended thinking require", "taxes")
SMALL_SETS = ("demo", "demo-extra")


def gap(hit: dict) -> float:
    """How far a hit's JSON score is from what its explanation adds up to."""
    weighted = sum(hit["weights"][s] * v for s, v in hit["components"].items())
    return abs(hit["score"] - weighted - sum(hit["bonuses"].values()))


def assert_adds_up(doc: dict) -> None:
    for hit in doc["results"]:
        assert list(hit["weights"]) == list(hit["components"]), "one weight per signal, same order"
        assert list(hit["components"])[:len(SIGNALS)] == list(SIGNALS)
        assert gap(hit) <= TOLERANCE, (hit["node"]["id"], hit["score"], gap(hit))


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    ws = kgos.Workspace(tmp_path_factory.mktemp("explain"))
    load_demo(ws, "hash")
    yield ws
    ws.close()


@pytest.mark.parametrize("name", [n if n in SMALL_SETS else pytest.param(n, marks=pytest.mark.slow)
                                  for n in devsets.NAMES])
def test_every_hit_of_every_dev_set_query_adds_up(tmp_path, name):
    if not devsets.kg_file(name).exists():
        pytest.skip(f"{name} is not on this machine")
    ws = kgos.Workspace(tmp_path / "ws")
    kg = devsets.open_kg(ws, name, "hash")
    checked = 0
    for probe in devsets.probes(name):
        doc = kg.search(probe.query, k=10).to_dict()
        assert_adds_up(doc)
        checked += len(doc["results"])
    assert checked > 0
    ws.close()


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_explains_its_score(demo, mode):
    kg = demo.kg("demo")
    for q in QUERIES:
        doc = kg.search(q, k=10, mode=mode).to_dict()
        assert_adds_up(doc)
        if mode == "rrf" and doc["results"]:  # the fused ranks are the whole score: said so, weight 1
            assert doc["results"][0]["weights"]["rrf"] == 1.0 and "rrf" in doc["results"][0]["components"]
        else:
            assert all("rrf" not in h["components"] for h in doc["results"])


def test_the_default_hybrid_names_the_weights_the_four_did_not_show(demo):
    """Before: "Batch API" scored 0.983 with 0.329 explained by nothing shown (name, solution hop,
    propagation weights and the diversity bonus were missing)."""
    res = demo.kg("demo").search("Batch API", k=10)
    top = res.results[0]
    assert top.node.name == "Batch API"
    assert top.weights["name"] == 1.0 and top.components.name == 1.0
    assert top.weights["propagation"] == pytest.approx(0.2) and top.weights["solution"] == pytest.approx(0.5)
    assert top.bonuses["diversity"] == pytest.approx(top.diversity_bonus) and top.diversity_bonus > 0
    assert top.score == pytest.approx(top.explained(), abs=1e-9)
    four = sum(getattr(res.weights, s) * getattr(top.components, s) for s in ("embedding", "text", "graph", "intent"))
    assert top.score - four > 0.3  # what only the new fields explain


def test_explicit_weights_filters_and_several_kgs_add_up(demo):
    kg = demo.kg("demo")
    assert_adds_up(kg.search("reduce costs", k=10, weights="0.1,0.6,0.2,0.1").to_dict())
    assert_adds_up(kg.search("reduce costs", k=10, filters={"cost_efficiency": {"min": 0.3}}).to_dict())
    merged = demo.search(["demo", "finance"], "reduce costs", k=10).to_dict()
    assert {h["source_kg"] for h in merged["results"]} == {"demo", "finance"}
    assert_adds_up(merged)


def test_a_node_without_a_vector_shows_its_scaled_weights(demo, monkeypatch):
    from kgos.embed import nodes

    def offline(*args, **kwargs):
        raise EmbeddingServiceError("embedding service unreachable")
    kg = demo.kg("finance")
    monkeypatch.setattr(nodes, "embed_nodes", offline)
    kg.add_node("Zanzibar quokka fund", "concept", id="zq")  # the write stands without its vector
    res = kg.search("zanzibar quokka fund", k=10)
    hit = next(h for h in res.results if h.node.id == "zq")
    other = next(h for h in res.results if h.node.id != "zq")
    assert hit.missing_signals == ("embedding",)
    rest = res.weights.text + res.weights.graph + res.weights.intent
    assert hit.weights["text"] == pytest.approx(res.weights.text * (rest + res.weights.embedding) / rest)
    assert other.weights["text"] == pytest.approx(res.weights.text)
    assert_adds_up(res.to_dict())


def test_http_search_returns_weights_and_bonuses_that_add_up(demo):
    with client(demo.home) as c:
        r = c.post("/api/kg/demo/search", json={"query": "reduce API costs", "k": 10, "explain": True})
        assert r.status_code == 200
        assert_adds_up(r.json())
        r = c.post("/api/search", json={"query": "reduce API costs", "db_ids": ["demo", "finance"], "k": 10,
                                        "mode": "rrf", "explain": True})
        assert r.status_code == 200
        assert_adds_up(r.json())
        schema = c.get("/openapi.json").json()["components"]["schemas"]
        hit = next(v for k, v in schema.items() if k.startswith("SearchHit"))
        assert {"weights", "bonuses", "components"} <= set(hit["properties"])


def test_mcp_search_returns_weights_and_bonuses_that_add_up(demo):
    server = create_server(kgos.Workspace(demo.home))

    async def main():
        async with Client(server) as c:
            return await c.call_tool("search", {"kg": "demo", "query": "reduce API costs", "k": 10})
    result = anyio.run(main)
    assert not result.is_error
    assert_adds_up(json.loads(result.content[0].text))


def test_cli_explain_prints_every_signal_and_bonus_in_order(demo):
    from click.testing import CliRunner

    from kgos.cli import cli
    out = CliRunner().invoke(cli, ["--home", str(demo.home), "search", "demo", "Batch API", "-k", "3", "--explain"])
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if "diversity bonus" in x)
    assert [t.split()[-1] for t in line.split("=")[0].split(" + ")] == [*SIGNALS, "bonus"]
    top = demo.kg("demo").search("Batch API", k=3).results[0]
    assert line.strip().endswith(f"= {top.score:.3f}")
