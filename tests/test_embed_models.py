"""Several embedding models per KG side by side: vectors keyed by model, search with a chosen model
(Python, CLI, HTTP), the spec/003 3.6 benchmark over models and projections, and model comparison
on a probe set. Hash embedders of two widths stand in for two models (no model files needed)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from api_helpers import client, error
from click.testing import CliRunner
from conftest import GREEK, word_chain_kg

import kgos
from kgos.cli import cli
from kgos.embed.bench import bench
from kgos.errors import InvalidArgument
from kgos.eval.models import compare_models
from kgos.eval.probes import load_probes


@pytest.fixture
def kg(ws: kgos.Workspace) -> kgos.KG:
    g = word_chain_kg(ws, GREEK)  # searched with hash (512 dims)
    for i in range(0, len(GREEK), 3):
        g.update_node(f"n{i}", type="gadget")  # two node types for the type metrics
    return g


def probes_file(tmp_path: Path) -> Path:
    path = tmp_path / "probes.jsonl"
    rows = [{"id": f"p{i}", "query": f"{w} widget", "relevant": [f"n{i}"]} for i, w in enumerate(GREEK[:6])]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def schema(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("SELECT name, coalesce(sql, '') FROM sqlite_master"))
    finally:
        conn.close()


def test_a_second_model_sits_beside_the_search_model_and_search_can_choose_it(kg):
    report = kg.embed_side("hash:64")
    assert report.model == "hash-64" and report.embedded == len(GREEK)
    assert kg.embedding_models() == {"hash-512": len(GREEK), "hash-64": len(GREEK)}
    assert kg.embed_status().search_model == "hash:512"  # search kept its model
    default, chosen = kg.search("gamma widget", k=5), kg.search("gamma widget", k=5, model="hash:64")
    assert default.results[0].node.id == chosen.results[0].node.id == "n2"
    emb = lambda r: [round(h.components.embedding, 4) for h in r.results]
    assert emb(default) != emb(chosen)  # other vectors, other cosines
    assert kg.search("gamma widget", k=5, model="hash").to_dict() == default.to_dict()  # the search model itself
    assert kg.embed_side("hash:64").embedded == 0  # nothing changed: nothing embedded
    side, main = kg._search_engine("hash:64").snapshot(), kg.engine.snapshot()
    assert side.text is main.text and side.graph is main.graph  # one snapshot's indexes; only vectors differ
    assert side.vectors.shape == (len(GREEK), 64) and main.vectors.shape == (len(GREEK), 512)


def test_a_side_model_follows_writes_when_refreshed(kg):
    kg.embed_side("hash:64")
    kg.add_node("quokka pouch widget", "thing", "A pouch.", id="new")
    assert kg.embedding_models()["hash-64"] == len(GREEK)  # written nodes get the search model's vectors only
    hit = kg.search("quokka pouch", k=3, model="hash:64", mode="embedding")
    assert "new" not in [h.node.id for h in hit.results]
    assert any("1 of 19 nodes" in w and "`kgos embed add t --model hash:64`" in w for w in hit.warnings)
    assert kg.embed_side("hash:64").embedded == 1
    assert kg.search("quokka pouch", k=3, model="hash:64", mode="embedding").results[0].node.id == "new"


def test_searching_with_a_model_that_has_no_vectors_says_how_to_add_them(kg):
    with pytest.raises(InvalidArgument, match="no vectors of hash-32.*kgos embed add t --model hash:32"):
        kg.search("gamma", model="hash:32")
    with pytest.raises(InvalidArgument, match="unknown embedder"):
        kg.search("gamma", model="nonsense")


def test_a_kg_file_written_before_side_models_keeps_its_schema_and_gains_a_second_model(ws, tmp_path):
    """Vectors were already keyed by (model, node): no migration; an old file takes a second model."""
    word_chain_kg(ws, GREEK[:6])
    path = next((tmp_path / "home").rglob("t.db"), None) or next((tmp_path / "home").rglob("t*.sqlite"))
    before = schema(path)
    ws.close()
    again = kgos.Workspace(tmp_path / "home")
    try:
        g = again.kg("t")
        g.embed_side("hash:64")
        assert g.search("beta widget", k=1, model="hash:64").results[0].node.id == "n1"
        assert schema(path) == before
    finally:
        again.close()


def test_the_benchmark_scores_every_model_and_projection_and_writes_nothing(kg):
    version, models = kg.store.version(), kg.embedding_models()
    result = bench(kg.store, ["hash", "hash:64"], dims=8, negatives=5, epochs=2, cache_root=kg.workspace.cache_dir)
    configs = [r.config for r in result.rows]
    for spec in ("hash", "hash:64"):
        assert [c for c in configs if c.startswith(f"{spec}+") and c.count("+") == 1] == \
            [f"{spec}+none", f"{spec}+truncate", f"{spec}+pca", f"{spec}+learned"]
    assert configs[-3:] == ["hash+hash:64+split", "hash+hash:64+blend", "hash+hash:64+concat-pca"]
    assert all(0 < r.mrr <= 1 and r.separation == pytest.approx(r.intra - r.inter) for r in result.rows)
    assert {r.dims for r in result.rows if r.projection != "none"} == {8}
    assert all((r.explained is not None) == (r.projection in ("pca", "blend", "concat-pca")) for r in result.rows)
    assert [m.reused for m in result.models] == [len(GREEK), 0]  # the stored hash-512 vectors were reused
    assert result.types == 2 and result.train_edges + result.test_edges == len(GREEK) - 1
    assert kg.store.version() == version and kg.embedding_models() == models


def test_the_benchmark_refuses_a_kg_without_edges(ws):
    g = ws.create("bare")
    for w in GREEK[:5]:
        g.add_node(w, "thing")
    with pytest.raises(InvalidArgument, match="too small"):
        bench(g.store, ["hash"])


def test_compare_models_searches_the_probes_with_each_model(kg, tmp_path):
    result = compare_models(kg, load_probes(probes_file(tmp_path)), ["hash", "hash:64"])
    assert [(r.model, r.mode) for r in result.rows] == [("hash", "embedding"), ("hash", "hybrid"),
                                                       ("hash:64", "embedding"), ("hash:64", "hybrid")]
    assert [r.embedded for r in result.rows] == [0, 0, len(GREEK), len(GREEK)]
    assert all(r.report.n == 6 and r.report.strict["recall@10"] == 1.0 for r in result.rows)
    assert kg.embed_status().search_model == "hash:512"
    with pytest.raises(InvalidArgument, match="no vectors"):
        compare_models(kg, load_probes(probes_file(tmp_path)), ["hash:16"], embed=False)


@pytest.fixture
def run(tmp_path):
    def invoke(*args: str, code: int = 0):
        result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), *args])
        assert result.exit_code == code, (result.output, result.stderr, result.exception)
        return result
    return invoke


def test_cli_embed_subcommands_and_search_with_a_model(kg, run, tmp_path):
    assert run("--plain", "embed", "t", "--model", "hash").stdout == "t\thash-512\t0\n"  # `kgos embed KG` as before
    assert run("--plain", "embed", "add", "t", "--model", "hash:64").stdout == f"t\thash-64\t{len(GREEK)}\n"
    assert json.loads(run("--json", "embed", "models", "t").stdout)["models"] == {"hash-512": 18, "hash-64": 18}
    hits = json.loads(run("search", "t", "gamma widget", "--model", "hash:64", "--json").stdout)["results"]
    assert hits[0]["node"]["id"] == "n2"
    assert "no vectors of hash-32" in run("search", "t", "gamma", "--model", "hash:32", code=1).stderr
    doc = json.loads(run("embed", "bench", "t", "--models", "hash,hash:64", "--dims", "8", "--negatives", "5",
                         "--epochs", "1", "--json").stdout)
    assert len(doc["rows"]) == 11 and doc["models"][1]["name"] == "hash-64"
    lines = run("--plain", "embed", "compare", "t", str(probes_file(tmp_path)), "--models", "hash,hash:64",
                "--mode", "embedding").stdout.splitlines()
    assert [line.split("\t")[:3] for line in lines] == [["hash", "embedding", "6"], ["hash:64", "embedding", "6"]]


def test_http_search_with_a_model(kg, ws):
    kg.embed_side("hash:64")
    api = client(ws)
    url = "/api/kg/t/search"
    hits = api.post(url, json={"query": "gamma widget", "k": 3, "model": "hash:64"}).json()["results"]
    assert hits[0]["node"]["id"] == "n2"
    assert "no vectors of hash-32" in error(api.post(url, json={"query": "gamma", "model": "hash:32"}), 400)["detail"]
    error(api.post(url, json={"query": "gamma", "model": "static:/etc/passwd"}), 422)  # no paths over HTTP
    many = api.post("/api/search", json={"db_ids": ["t"], "query": "gamma widget", "model": "hash:64"})
    assert many.status_code == 200 and many.json()["results"][0]["node"]["id"] == "n2"


@pytest.mark.slow
def test_the_benchmark_with_the_default_model_reproduces_the_spec_findings_on_the_finance_demo(ws, monkeypatch):
    """MiniLM for real (seconds): PCA separates the node types, concat-PCA beats split (spec/003 3.6)."""
    monkeypatch.delenv("KGOS_EMBEDDER")
    ws.import_file("finance", Path(kgos.__file__).parent / "data" / "demo" / "finance.json")
    result = bench(ws.kg("finance").store, ["minilm", "hash"], cache_root=ws.cache_dir)
    row = {r.config: r for r in result.rows}
    assert result.models[0].name == "minilm-l6-int8" and result.models[0].reused == 0
    assert row["minilm+none"].mrr == pytest.approx(0.299, abs=0.02)  # docs/embedders.md's finance table
    assert row["minilm+pca"].separation > row["minilm+none"].separation + 0.02
    assert row["minilm+pca"].inter < 0 < row["minilm+none"].inter  # centring pulls other types apart
    assert row["minilm+hash+concat-pca"].mrr > row["minilm+hash+split"].mrr
