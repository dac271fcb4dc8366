"""Dimension filters are pre-filters (spec/000 method 1 and section 8: "only nodes matching ALL
constraints are considered"): search, intent_search and expert retrieval score only matching nodes,
so a filter narrows the answer instead of emptying it."""

from __future__ import annotations

import numpy as np
import pytest

import kgos
from kgos.methods.dimensions import INFERRED_KEY
from kgos.data import load_demo
from kgos.errors import InvalidArgument
from kgos.experts import ExpertService
from kgos.experts.context import retrieve
from kgos.methods import dimensions

BATCH = {"batch_suitability": {"min": 0.7}}
STREAM = "how do I stream tokens to the user"


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory):
    ws = kgos.Workspace(tmp_path_factory.mktemp("prefilter") / "home")
    load_demo(ws, embedder="hash")
    yield ws
    ws.close()


@pytest.fixture(scope="module")
def demo(demo_ws):
    return demo_ws.kg("demo")


def matching(kg, filters) -> set[str]:
    return {m.node.id for m in kg.dimension_filter(filters, limit=1000).results}


def test_filter_mask_marks_exactly_the_matching_rows(demo):
    snap = demo.engine.snapshot()
    mask = dimensions.filter_mask(demo.store, snap, dimensions.check_filters(BATCH))
    assert mask.dtype == bool and mask.shape == (snap.n,)
    assert {snap.node_ids[i] for i in np.flatnonzero(mask)} == matching(demo, BATCH)
    found = [demo.node(i).properties for i in matching(demo, BATCH)]
    assert sum(INFERRED_KEY not in p or "batch_suitability" not in p[INFERRED_KEY] for p in found) == 13  # a person's
    assert len(found) == 18  # and 5 the import inferred ("batch", "bulk", "offline" in their text)


def test_intent_search_with_a_filter_answers_from_the_matching_nodes(demo):
    res = demo.intent_search(STREAM, {"dimension_filters": BATCH})
    assert len(res.nodes) >= 5  # was []: the filter ran after ranking, over the top 30 only
    assert {h.node.id for h in res.nodes} <= matching(demo, BATCH)
    scores = [h.score for h in res.nodes]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_search_takes_filters_too(demo):
    res = demo.search(STREAM, k=20, filters=BATCH)
    assert res.results and {h.node.id for h in res.results} <= matching(demo, BATCH)
    assert max(h.components.text for h in res.results) == pytest.approx(1.0)  # normalised over what is kept
    two = {"batch_suitability": {"min": 0.7}, "implementation_complexity": {"max": 0.3}}
    both = demo.search(STREAM, k=20, filters=two)
    assert {h.node.id for h in both.results} <= matching(demo, two) < matching(demo, BATCH)
    assert demo.search(STREAM, k=20, filters=BATCH) is res  # cached per filter
    assert demo.search(STREAM, k=20).results != res.results


def test_filters_are_checked(demo):
    with pytest.raises(InvalidArgument):
        demo.search("x", filters={"pricing_tier": {"above": 0.3}})
    with pytest.raises(kgos.errors.InvalidName):
        demo.search("x", filters={"x'; DROP TABLE nodes; --": {"min": 0.5}})
    assert demo.search("anything", filters={"pricing_tier": {"min": 1.0, "max": 1.0}}).results == ()


def test_expert_with_a_filter_finds_matching_context(demo_ws):
    svc = ExpertService(demo_ws)
    cfg = svc.update("demo", {"dimension_filters": BATCH}).config
    ctx = retrieve(demo_ws, cfg, STREAM)
    assert ctx.nodes and {n.id for n in ctx.nodes} <= matching(demo_ws.kg("demo"), BATCH)


def test_http_search_takes_filters_and_says_why_results_may_be_weak(demo_ws):
    from api_helpers import client
    with client(demo_ws) as api:
        res = api.post("/api/kg/demo/search", json={"query": STREAM, "k": 20, "filters": BATCH})
        assert res.status_code == 200, res.text
        body = res.json()
        assert body["results"] and {h["node"]["id"] for h in body["results"]} <= matching(demo_ws.kg("demo"), BATCH)
        assert body["warnings"] == [] and all("diversity_bonus" in h for h in body["results"])
        scores = [h["score"] for h in body["results"]]
        assert scores == sorted(scores, reverse=True)
        bad = api.post("/api/kg/demo/search", json={"query": STREAM, "filters": {"pricing_tier": {"above": 1}}})
        assert bad.status_code == 422
        hits = api.post("/api/kg/demo/intent-search", json={"query": STREAM, "config": {"dimension_filters": BATCH}})
        assert hits.status_code == 200 and hits.json()["nodes"]


def test_cli_search_filter_option(demo_ws):
    import json

    from click.testing import CliRunner

    from kgos.cli import cli
    run = CliRunner().invoke(cli, ["--home", str(demo_ws.home), "search", "demo", STREAM, "-k", "20",
                                   "--filter", "batch_suitability>=0.7", "--json"])
    assert run.exit_code == 0, run.output
    ids = {h["node"]["id"] for h in json.loads(run.stdout)["results"]}
    assert ids and ids <= matching(demo_ws.kg("demo"), BATCH)
    bad = CliRunner().invoke(cli, ["--home", str(demo_ws.home), "search", "demo", STREAM, "--filter", "Bad<1"])
    assert bad.exit_code != 0 and "invalid dimension name" in bad.output


def test_cli_intent_filter_option(demo_ws):
    import json

    from click.testing import CliRunner

    from kgos.cli import cli
    run = CliRunner().invoke(cli, ["--home", str(demo_ws.home), "intent", STREAM, "--kg", "demo",
                                   "--filter", "batch_suitability>=0.7", "--json"])
    assert run.exit_code == 0, run.output
    ids = {h["node"]["id"] for h in json.loads(run.stdout)["nodes"]}
    assert ids and ids <= matching(demo_ws.kg("demo"), BATCH)
