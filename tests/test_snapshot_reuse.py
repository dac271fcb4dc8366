"""The search snapshot is built at import and saved, and a write rebuilds only the parts it changed
(DESIGN.md section 8; issue 14 goal 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import write_nodelink

import kgos
from kgos.index import snapshot as snapshots

NODES = [{"id": f"n{i}", "name": f"Node {i}", "type": "thing", "description": f"word{i} shared text"}
         for i in range(30)]
EDGES = [{"source": f"n{i}", "target": f"n{(i * 7 + 1) % 30}", "type": "links"} for i in range(30)]


@pytest.fixture
def kg(ws: kgos.Workspace, tmp_path: Path) -> kgos.KG:
    ws.import_file("t", write_nodelink(tmp_path / "kg.json", NODES, EDGES))
    return ws.kg("t")


def no_build(*args: object, **kwargs: object) -> None:
    raise AssertionError("the snapshot was built, not loaded")


def test_import_saves_the_snapshot_a_new_process_loads(ws: kgos.Workspace, kg: kgos.KG,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    folder = snapshots._folder(ws.cache_dir, "t", kg.store.version(), kg.engine.text)
    assert (folder / "meta.json").exists()
    monkeypatch.setattr(snapshots, "_build", no_build)
    with kgos.Workspace(ws.home) as again:
        assert [h.node.id for h in again.kg("t").search("word7", k=1).results] == ["n7"]


def test_a_text_write_rebuilds_the_text_index_and_keeps_the_graph(kg: kgos.KG) -> None:
    before = kg.engine.snapshot()
    kg.update_node("n3", description="zebra crossing")
    after = kg.engine.snapshot()
    assert after.graph is before.graph and after.name_index is before.name_index
    assert after.text is not before.text
    assert [h.node.id for h in kg.search("zebra", k=1).results] == ["n3"]
    assert "n3" not in [h.node.id for h in kg.search("word3", k=3).results]


def test_an_edge_write_rebuilds_the_graph_and_keeps_the_text_index(kg: kgos.KG) -> None:
    before = kg.engine.snapshot()
    kg.add_edge("n0", "n29", "links")
    after = kg.engine.snapshot()
    assert after.text is before.text and after.graph is not before.graph
    assert after.graph.n_edges == before.graph.n_edges + 1
    assert 29 in after.graph.neighbors_of([0], "outgoing").node.tolist()
    assert after.graph.communities().shape == (after.n,)


def test_reused_parts_equal_a_fresh_build(kg: kgos.KG) -> None:
    kg.engine.snapshot()
    new = kg.add_node("Late arrival", "thing", "word99 appears late")
    kg.add_edge(new.id, "n1", "links")
    patched = kg.engine.snapshot()
    fresh = snapshots.build(kg.store, kg.engine.text)
    assert patched.node_ids == fresh.node_ids
    assert (patched.text.matrix != fresh.text.matrix).nnz == 0 and patched.text.vocab == fresh.text.vocab
    for name, a in fresh.graph.to_arrays().items():
        if name != "communities":  # refined from the previous partition: a valid labelling, maybe another
            assert np.array_equal(patched.graph.to_arrays()[name], a), name
    labels = patched.graph.communities()
    assert labels.shape == (patched.n,) and labels.min() == 0
    assert [h.node.id for h in kg.search("word99", k=1).results] == [new.id]


def test_a_loaded_snapshot_lends_its_parts_too(ws: kgos.Workspace, kg: kgos.KG) -> None:
    """A server opens a KG (the snapshot is loaded from the cache), then a write comes in."""
    with kgos.Workspace(ws.home) as again:
        other = again.kg("t")
        loaded = other.engine.snapshot()
        assert loaded.build_seconds == 0.0 and loaded.parts  # loaded, with its parts' digests
        other.update_node("n5", description="quokka")
        after = other.engine.snapshot()
        assert after.graph is loaded.graph and after.text is not loaded.text
        assert [h.node.id for h in other.search("quokka", k=1).results] == ["n5"]
