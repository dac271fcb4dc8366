"""Name vectors (issue 13, lever 3): a node's name and first aliases embedded apart from its full text,
kept current by content hash, scored by the embedding signal beside the full-text cosine."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import kgos
from kgos.cli import cli
from kgos.embed import get_embedder
from kgos.embed.nodes import disable_kg_names, enable_kg_names
from kgos.index import nearest
from kgos.index import vectors as V
from kgos.model import Node


def _kg(ws: kgos.Workspace) -> kgos.KG:
    g = ws.create("n")
    g.add_node("Prompt caching", "feature", "Reuse a cached prompt prefix across requests.", id="a",
               properties={"aliases": ["context caching", "prefix cache", "PROMPT CACHING"]})
    g.add_node("Batch API", "feature", "Send many requests at half the price.", id="b")
    g.add_node("tar", "command", "", id="c")  # no description, no alias: its full vector is its name's
    g.add_edge("a", "b", "relates_to")
    g.embed("hash")
    return g


def _rows(kg: kgos.KG, model: str) -> dict[str, int]:
    return {nid: len(blob) for nid, blob in kg.store.conn.execute(
        "SELECT n.id, e.vector FROM node_embeddings e JOIN nodes n ON n.rowid = e.node WHERE e.model = ?", (model,))}


def test_name_texts_are_the_name_then_distinct_aliases_capped() -> None:
    node = Node(id="x", name="Prompt caching", type="t", description="d",
                properties={"aliases": ["prompt CACHING", *(f"alias {i}" for i in range(50))]})
    assert V.name_texts(node) == ["Prompt caching", "alias 0", "alias 1", "alias 2"]
    assert V.name_texts(Node(id="y", name="tar", type="t", description="")) == []  # = its full text
    assert V.name_texts(Node(id="z", name="tar", type="t", description="", properties={"aliases": ["gtar"]})) == ["tar", "gtar"]


def test_kgs_keep_no_name_vectors_unless_asked(ws: kgos.Workspace) -> None:
    kg = _kg(ws)
    assert _rows(kg, "hash-512#names") == {}
    assert kg.engine.snapshot().name_vectors is None


def test_enabled_name_vectors_are_stored_loaded_and_kept_current(ws: kgos.Workspace) -> None:
    kg = _kg(ws)
    assert enable_kg_names(kg.store, ws.cache_dir) == 2
    rows = _rows(kg, "hash-512#names")
    assert rows == {"a": 3 * 512 * 4, "b": 512 * 4}  # name + 2 distinct aliases; tar has none
    assert "hash-512#names" not in kg.embedding_models()  # name vectors belong to their model
    assert enable_kg_names(kg.store, ws.cache_dir) == 0  # unchanged names are not embedded again
    names = kg.engine.snapshot().name_vectors
    assert names.model == "hash-512" and names.matrix.shape == (4, 512)
    assert list(names.owner) == [kg.engine.snapshot().index[i] for i in ("a", "a", "a", "b")]
    kg.add_node("Files API", "feature", "Upload a file once.", id="d", properties={"aliases": ["uploads"]})
    kg.update_node("b", name="Message batches")
    assert _rows(kg, "hash-512#names")["d"] == 2 * 512 * 4  # the write path embeds names too
    b = np.frombuffer(kg.store.conn.execute(
        "SELECT e.vector FROM node_embeddings e JOIN nodes n ON n.rowid = e.node WHERE n.id = 'b' AND e.model = ?",
        ("hash-512#names",)).fetchone()[0], np.float32)
    assert np.allclose(b, get_embedder("hash").embed(["Message batches"])[0])


def test_a_progress_that_raises_stops_the_name_pass_of_an_embedding_and_a_rerun_finishes_it(ws: kgos.Workspace) -> None:
    """A server's stop reaches the name-vector pass too: its batches call progress with 0 (outside the
    meter's total), so a job's cancel raises there; what was not written is embedded by the next run."""
    from kgos.embed.nodes import embed_store
    kg = _kg(ws)
    assert enable_kg_names(kg.store, ws.cache_dir) == 2
    with kg.store.conn:  # as if a names job had been stopped before writing them
        kg.store.conn.execute("DELETE FROM node_embeddings WHERE model = 'hash-512#names'")
    calls: list[int] = []

    class Stop(Exception):
        pass

    def stop_in_name_pass(n: int) -> None:
        calls.append(n)
        raise Stop
    with pytest.raises(Stop):
        embed_store(kg.store, get_embedder("hash"), ws.cache_dir, progress=stop_in_name_pass)
    assert calls == [0] and _rows(kg, "hash-512#names") == {}  # full texts unchanged: the name pass's call
    calls.clear()
    report = embed_store(kg.store, get_embedder("hash"), ws.cache_dir, progress=calls.append)
    assert report.names_embedded == 2 and sum(calls) == 0 and set(_rows(kg, "hash-512#names")) == {"a", "b"}


def test_an_alias_query_scores_its_node_by_the_alias_vector(ws: kgos.Workspace, monkeypatch) -> None:
    kg = _kg(ws)
    query = get_embedder("hash").embed_query("context caching")
    monkeypatch.setattr(nearest, "NAME_SCORING", "max")
    before = nearest.similarities(kg.engine.snapshot(), query)
    enable_kg_names(kg.store, ws.cache_dir)
    snap = kg.engine.snapshot()
    after = nearest.similarities(snap, query)
    a, c = (snap.index[i] for i in "ac")
    assert after[a] == pytest.approx(1.0, abs=1e-5) and before[a] < 0.9  # the alias itself
    assert after[c] == before[c]  # no name vectors: its full-text cosine
    monkeypatch.setattr(nearest, "NAME_SCORING", "blend")
    monkeypatch.setattr(nearest, "NAME_BLEND", 0.5)
    blended = nearest.similarities(snap, query)
    assert blended[a] == pytest.approx(0.5 * 1.0 + 0.5 * before[a], abs=1e-5)
    monkeypatch.setattr(nearest, "NAME_SCORING", "off")
    assert np.array_equal(nearest.similarities(snap, query), before)


def test_another_models_snapshot_ignores_these_name_vectors(ws: kgos.Workspace, monkeypatch) -> None:
    kg = _kg(ws)
    enable_kg_names(kg.store, ws.cache_dir)
    monkeypatch.setattr(nearest, "NAME_SCORING", "max")
    snap = kg.engine.snapshot()
    other = type(snap)(**{**snap.__dict__, "embedder": "hash-64"})
    query = get_embedder("hash").embed_query("context caching")
    assert np.array_equal(nearest.similarities(other, query), nearest.cosine_all(snap.vectors, query))


def test_dropping_name_vectors_removes_them_and_stops_keeping_them(ws: kgos.Workspace) -> None:
    kg = _kg(ws)
    enable_kg_names(kg.store, ws.cache_dir)
    assert disable_kg_names(kg.store, ws.cache_dir) is True
    assert _rows(kg, "hash-512#names") == {}
    kg.add_node("Files API", "feature", "Upload a file once.", id="d")
    assert _rows(kg, "hash-512#names") == {} and kg.engine.snapshot().name_vectors is None
    assert disable_kg_names(kg.store, ws.cache_dir) is False


def test_cli_names_flag_and_drop(tmp_path) -> None:
    home = tmp_path / "home"
    w = kgos.Workspace(home)
    _kg(w)
    w.close()
    runner = CliRunner()
    done = runner.invoke(cli, ["--home", str(home), "embed", "n", "--names", "--json"])
    assert done.exit_code == 0, done.output
    assert '"embedded": 2' in done.output
    dropped = runner.invoke(cli, ["--home", str(home), "embed", "n", "--drop-names"])
    assert dropped.exit_code == 0 and "name vectors removed" in dropped.output
    never = runner.invoke(cli, ["--home", str(home), "embed", "names", "nosuchkg"])
    assert never.exit_code != 0 and "Traceback" not in never.output
