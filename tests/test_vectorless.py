"""Fresh results: nodes are embedded as they are written (Python, HTTP and import), a node still
without a vector is not punished for it, a KG without vectors says so, and tuned weights are only
used on the vector state they were fitted on."""

from __future__ import annotations

import json

import pytest
from api_helpers import client
from click.testing import CliRunner
from conftest import GREEK, word_chain_kg, write_nodelink

from kgos.cli import cli
from kgos.errors import EmbeddingServiceError
from kgos.eval.ablation import evaluate_config
from kgos.eval.probes import Probe
from kgos.retrieval.engine import FITTED_ON

WORDS = GREEK[:18]


@pytest.fixture
def kg(ws):
    """An embedded KG of 18 nodes whose names share words, so a new exact name has rivals."""
    return word_chain_kg(ws, WORDS)


def rank_of(result, node_id: str) -> int | None:
    return next((h.rank for h in result.results if h.node.id == node_id), None)


def test_a_new_node_is_embedded_on_write_and_found_at_once(kg):
    kg.add_node("Zanzibar quokka", "animal", id="zq")
    res = kg.search("zanzibar quokka", k=5)
    assert rank_of(res, "zq") == 1
    hit = res.results[0]
    assert hit.components.embedding == pytest.approx(1.0) and hit.missing_signals == () and res.warnings == ()
    kg.update_node("zq", description="A small marsupial of the island of Zanzibar.")
    assert kg.engine.snapshot().vector_rows.all()  # the changed text was embedded again on write
    assert kg.embed("hash").embedded == 0  # nothing left for `kgos embed`


def test_a_node_without_a_vector_is_scored_on_the_signals_it_has(kg, monkeypatch):
    from kgos.embed import nodes

    def offline(*args, **kwargs):
        raise EmbeddingServiceError("embedding service unreachable")
    monkeypatch.setattr(nodes, "embed_nodes", offline)
    kg.add_node("Zanzibar quokka", "animal", id="zq")  # the write stands without its vector
    res = kg.search("zanzibar quokka", k=5)
    assert rank_of(res, "zq") == 1  # before: rank 32 on the demo KG (alpha 0.65 of nothing)
    hit = res.results[0]
    w = res.weights
    rest = w.text + w.graph + w.intent
    c = hit.components
    assert hit.missing_signals == ("embedding",) and c.embedding == 0
    raw = (w.text * c.text + w.graph * c.graph + w.intent * c.intent) / rest + c.name  # + the name signal (x1)
    assert hit.score == pytest.approx(raw + hit.diversity_bonus, rel=1e-5)
    assert hit.to_dict()["missing_signals"] == ["embedding"]
    assert any("1 of 19 nodes" in m and "no vector yet" in m for m in res.warnings)
    assert any("unreachable" in m for m in res.warnings)
    monkeypatch.undo()
    assert kg.embed("hash").embedded == 1
    assert kg.search("zanzibar quokka", k=5).warnings == ()


def test_api_writes_embed_too(kg, ws):
    with client(ws) as api:
        made = api.post("/api/kg/t/nodes", json={"name": "Zanzibar quokka", "type": "animal"})
        assert made.status_code in (200, 201), made.text
    snap = kg.engine.snapshot()
    assert snap.vector_rows[snap.index[made.json()["id"]]]


def test_merge_import_embeds_new_and_changed_nodes_only(kg, ws, tmp_path):
    path = write_nodelink(tmp_path / "more.json", [
        {"id": "zq", "name": "Zanzibar quokka", "type": "animal"},
        {"id": "n0", "name": "alpha beta widget", "type": "thing", "description": "Rewritten text."}], [])
    ws.import_file("t", path, mode="merge")
    snap = ws.kg("t").engine.snapshot()
    assert snap.vector_rows.all()
    assert ws.kg("t").embed("hash").embedded == 0


def test_replace_import_keeps_the_kg_embedded(kg, ws, tmp_path):
    path = write_nodelink(tmp_path / "new.json", [{"id": "zq", "name": "Zanzibar quokka", "type": "animal"},
                                                  {"id": "x", "name": "Quokka keeper", "type": "person"}], [])
    ws.import_file("t", path, mode="replace")
    res = ws.kg("t").search("zanzibar quokka", k=2)
    assert res.warnings == () and res.results[0].components.embedding == pytest.approx(1.0)


def test_a_kg_without_vectors_warns_in_search_and_eval(ws, tmp_path):
    g = ws.create("bare")
    g.add_node("Prompt caching", "feature", id="caching")
    g.add_node("Batch API", "feature", id="batch")
    res = g.search("prompt caching")
    assert any("no node vectors" in w and "kgos embed bare" in w for w in res.warnings)
    probes = [Probe(id="1", query="prompt caching", relevant=frozenset({"caching"}), lenient=frozenset())]
    report = evaluate_config(g, probes, {})
    assert any("no node vectors" in w for w in report.warnings) and len(report.warnings) == 1
    assert report.to_dict()["warnings"] == list(report.warnings)
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "1", "query": "prompt caching", "relevant": ["caching"]}) + "\n")
    run = CliRunner().invoke(cli, ["--home", str(ws.home), "eval", "bare", str(path), "--json"])
    assert run.exit_code == 0 and json.loads(run.stdout)["warnings"] and "warning: no node vectors" in run.stderr
    run = CliRunner().invoke(cli, ["--home", str(ws.home), "search", "bare", "prompt caching", "--json"])
    assert run.exit_code == 0 and json.loads(run.stdout)["warnings"] and "warning: no node vectors" in run.stderr


def test_weights_tuned_without_vectors_are_not_used_once_the_kg_is_embedded(ws):
    g = ws.create("u")
    g.add_node("Prompt caching", "feature", id="caching")
    g.add_node("Batch API", "feature", id="batch")
    g.save_weight_profiles({"_default": (0.0, 0.6, 0.4, 0.0)})
    saved = json.loads(g.meta()["weight_profiles"])
    assert saved[FITTED_ON] is None  # the profile says what it was fitted on
    first = g.search("prompt caching")
    assert first.weights.source.startswith("tuned:_default") and not any("tuned" in w for w in first.warnings)
    g.embed("hash")
    after = g.search("prompt caching")
    assert not after.weights.source.startswith("tuned") and after.weights.embedding > 0
    assert any("fitted with no vectors" in w and "kgos tune u" in w for w in after.warnings)


def test_legacy_unscoped_profile_with_zero_alpha_is_ignored_after_embedding(ws):
    g = ws.create("v")
    g.add_node("Prompt caching", "feature", id="caching")
    g.store.set_meta(weight_profiles=json.dumps({"_default": [0.0, 0.7, 0.3, 0.0]}))  # saved before scoping
    g.engine.invalidate()
    assert g.search("prompt caching").weights.source.startswith("tuned")
    g.embed("hash")
    res = g.search("prompt caching")
    assert not res.weights.source.startswith("tuned") and any("fitted with no vectors" in w for w in res.warnings)
