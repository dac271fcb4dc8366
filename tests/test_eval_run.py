"""kgos eval: the JSON contract, breakdowns, ablation rows and configs, on a tiny KG."""

from __future__ import annotations

import gzip
import json

import pytest
from click.testing import CliRunner

from kgos.cli import cli
from kgos.eval.ablation import ABLATION, ablation, evaluate_config
from kgos.eval.probes import load_probes
from kgos.errors import InvalidArgument

PROBES = [
    {"id": "p1", "query": "prompt caching", "relevant": ["caching"], "lenient": [], "level": "literal"},
    {"id": "p2", "query": "spend less money", "relevant": ["cost"], "lenient": ["batch"], "level": "goal"},
    {"id": "p3", "query": "half price asynchronous", "relevant": ["batch"], "lenient": [], "level": "benefit"},
    {"id": "p4", "query": "zebra unicorn", "relevant": ["caching"], "lenient": [], "level": "goal"},
]


@pytest.fixture
def setup(ws, tmp_path):
    kg = ws.create("t")
    kg.add_node("Prompt caching", "feature", "Reuse a cached prompt prefix.", id="caching")
    kg.add_node("Batch API", "feature", "Asynchronous requests at half price.", id="batch")
    kg.add_node("Cost reduction", "goal", "Spend less money on model calls.", id="cost")
    kg.add_edge("caching", "cost", "enables")
    kg.add_edge("batch", "cost", "optimizes")
    path = tmp_path / "probes.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(p) for p in PROBES))
    return kg, path


def test_eval_json_contract(setup, ws):
    kg, path = setup
    result = CliRunner().invoke(cli, ["--home", str(ws.home), "eval", "t", str(path), "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert d["n"] == 4
    for kind in ("strict", "lenient"):
        assert set(d[kind]) == {"recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"}
        assert all(0.0 <= v <= 1.0 for v in d[kind].values())
    assert set(d["by_level"]) == {"literal", "goal", "benefit"} and d["by_level"]["goal"]["n"] == 2
    assert set(d["latency_ms"]) >= {"p50", "p99"}
    # p1, p2 and p3 are answerable; p4 is not; lenient can only be >= strict
    assert d["strict"]["recall@10"] == pytest.approx(0.75)
    assert d["lenient"]["recall@1"] >= d["strict"]["recall@1"]


def test_per_probe_output_names_the_top_hits(setup):
    kg, path = setup
    report = evaluate_config(kg, load_probes(path), {"mode": "bm25"})
    first = report.to_dict(per_probe=True)["per_probe"][0]
    assert first["id"] == "p1" and first["top"][0] == "caching" and first["strict"]["mrr@10"] == 1.0


def test_ablation_runs_every_configuration(setup):
    kg, path = setup
    reports = ablation(kg, load_probes(path))
    assert [r.label for r in reports] == [label for label, _ in ABLATION]
    assert all(r.n == 4 for r in reports)
    graph_only = reports[[label for label, _ in ABLATION].index("graph only")]
    bm25_only = reports[[label for label, _ in ABLATION].index("BM25 only")]
    assert bm25_only.strict["recall@1"] >= graph_only.strict["recall@1"]


def test_config_changes_text_analysis_and_rejects_unknown_keys(setup):
    kg, path = setup
    probes = load_probes(path)
    none = evaluate_config(kg, probes, {"mode": "bm25", "text": {"stemmer": "none"}})
    assert none.n == 4
    with pytest.raises(InvalidArgument, match="unknown text setting"):
        evaluate_config(kg, probes, {"text": {"stemmer": "porter", "colour": "blue"}})
    with pytest.raises(InvalidArgument, match="unknown stemmer"):
        evaluate_config(kg, probes, {"text": {"stemmer": "klingon"}})
