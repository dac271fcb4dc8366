"""Readers in other processes while one process writes (issue 12, point 2).

The end-to-end test runs 8 reader processes and 1 writer process on one KG (tests/concurrency_workload.py)
and asserts that no read fails and every write is visible afterwards. The unit tests pin down each
cause it had: a snapshot read in several statements (a write landing between them), cache folders
shared between builders and deleted under a reader, and arrays of one version paired with another's.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import concurrency_workload as workload
import numpy as np
import pytest

import kgos
from kgos.index import snapshot as snapshots
from kgos.index.graph import GraphIndex
from kgos.index.text import TextIndex
from kgos.store.foreign import ForeignStore
from kgos.store.native import NativeStore


# -- 8 readers + 1 writer, each in a process of its own --------------------------------------------
def _assert_clean(outcome: workload.Outcome) -> None:
    assert outcome.failed == 0, outcome.errors
    assert len(outcome.reads) == 8 and all(outcome.reads), outcome.reads  # every reader really read
    assert outcome.written, "the writer wrote nothing"
    assert outcome.missing == [] and outcome.unsearched == []


@pytest.mark.parametrize(("kind", "seconds"), [("native", 5), ("foreign", 3)])  # short: the 60 s run is slow
def test_eight_reader_processes_and_a_writer_never_fail_a_read(tmp_path: Path, kind: str, seconds: int) -> None:
    workload.seed(tmp_path / "home", kind)
    _assert_clean(workload.run(tmp_path / "home", readers=8, seconds=seconds))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["native", "foreign"])
def test_eight_reader_processes_and_a_writer_for_a_minute(tmp_path: Path, kind: str) -> None:
    workload.seed(tmp_path / "home", kind)
    _assert_clean(workload.run(tmp_path / "home", readers=8, seconds=60))


# -- fixtures ---------------------------------------------------------------------------------------
@pytest.fixture
def kg(ws: kgos.Workspace) -> kgos.KG:
    kg = ws.create("t")
    for i in range(12):
        kg.add_node(f"Topic {i}", type="feature", description=f"caching and latency {i}", id=f"n{i}")
    for i in range(1, 12):
        kg.add_edge(f"n{i // 2}", f"n{i}", "enables")
    kg.embed("hash")
    return kg


def _build(kg: kgos.KG, cache: bool = True) -> snapshots.Snapshot:
    return snapshots.build(kg.store, kg.engine.text, kg.engine.query_embedder().name,
                           kg.workspace.cache_dir if cache else None)


def _folders(kg: kgos.KG) -> list[str]:
    return sorted(p.name for p in (kg.workspace.cache_dir / "t" / "snapshots").iterdir())


def _published(kg: kgos.KG) -> Path:
    return snapshots._folder(kg.workspace.cache_dir, "t", kg.store.version(), kg.engine.text)


def _assert_whole(snap: snapshots.Snapshot) -> None:
    sizes = {len(snap.names), snap.graph.n, snap.text.matrix.shape[0], len(snap.rowids), snap.vectors.shape[0]}
    assert sizes == {snap.n}


# -- one read transaction ---------------------------------------------------------------------------
def test_a_write_landing_mid_build_is_wholly_out_of_the_snapshot(kg: kgos.KG, monkeypatch) -> None:
    other = NativeStore(kg.store.path, "t")  # another process's connection
    version, real = kg.store.version(), kg.store.node_rowids

    def write_then_read():  # the write commits after the nodes and edges were read, before rowids and vectors
        other.add_node("Late node", id="late")
        other.add_edge("n1", "late", "enables")
        return real()

    monkeypatch.setattr(kg.store, "node_rowids", write_then_read)
    snap = _build(kg, cache=False)
    _assert_whole(snap)
    assert snap.version == version and "late" not in snap.index
    monkeypatch.undo()
    fresh = _build(kg, cache=False)
    assert fresh.version != version and "late" in fresh.index
    _assert_whole(fresh)
    other.close()


def test_native_reads_hold_still_inside_a_read_transaction(kg: kgos.KG) -> None:
    store, other = kg.store, NativeStore(kg.store.path, "t")
    with store.read_transaction():
        version, arrays = store.version(), store.graph_arrays()
        other.add_node("Late node", id="late")
        other.add_edge("n1", "late", "enables")
        again = store.graph_arrays()
        assert store.version() == version and store.node_count() == arrays.n_nodes
        assert again.node_ids == arrays.node_ids and again.n_edges == arrays.n_edges
    assert store.version() != version and store.graph_arrays().n_nodes == arrays.n_nodes + 1
    other.close()


def test_foreign_reads_hold_still_inside_a_read_transaction(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(workload.FOREIGN_DDL)
        conn.executemany("INSERT INTO nodes (id, name) VALUES (?, ?)", [("a", "A"), ("b", "B")])
        conn.execute("INSERT INTO edges (source, target, type) VALUES ('a', 'b', 'enables')")
    conn.close()
    store, other = ForeignStore(path, "f"), ForeignStore(path, "f", read_only=False)
    with store.read_transaction():
        arrays = store.graph_arrays()
        other.add_node("C", id="c")
        other.add_edge("b", "c", "enables")
        again = store.graph_arrays()
        assert again.node_ids == arrays.node_ids == ("a", "b") and again.n_edges == arrays.n_edges == 1
    assert store.graph_arrays().node_ids == ("a", "b", "c")
    store.close()
    other.close()


# -- the cache folder -------------------------------------------------------------------------------
def test_two_builders_of_one_version_do_not_trip_over_each_other(kg: kgos.KG, monkeypatch) -> None:
    shutil.rmtree(kg.workspace.cache_dir / "t")  # kg.embed published this version's snapshot: build anew
    real_save, raced = TextIndex.save, []

    def save_while_another_publishes(self, folder):
        if not raced:  # another process builds and publishes the same version meanwhile
            raced.append(True)
            _build(kg)
        real_save(self, folder)

    monkeypatch.setattr(TextIndex, "save", save_while_another_publishes)
    snap = _build(kg)
    _assert_whole(snap)
    assert raced and _folders(kg) == [_published(kg).name]  # one folder, no temp folder left behind
    monkeypatch.undo()
    monkeypatch.setattr(snapshots, "_read", lambda *a: pytest.fail("rebuilt instead of loaded"))
    loaded = _build(kg)  # the folder the other builder published
    assert loaded.node_ids == snap.node_ids
    _assert_whole(loaded)


@pytest.mark.parametrize("loader", ["text", "graph", "vectors"])
def test_a_folder_pruned_while_being_loaded_is_rebuilt_not_an_error(kg: kgos.KG, monkeypatch, loader) -> None:
    _build(kg)
    folder = _published(kg)

    def pruned(real):
        def load(*args, **kwargs):
            shutil.rmtree(folder, ignore_errors=True)  # another process prunes it under our feet
            return real(*args, **kwargs)
        return load

    target = {"text": (TextIndex, "load"), "graph": (GraphIndex, "load"), "vectors": (np, "load")}[loader]
    if loader == "vectors":  # np.load also reads the id arrays: prune only at the vectors file
        real_np_load = np.load
        monkeypatch.setattr(np, "load", lambda path, *a, **k: (
            pruned(real_np_load) if "vectors-" in str(path) else real_np_load)(path, *a, **k))
    else:
        monkeypatch.setattr(*target, pruned(getattr(*target)))
    snap = _build(kg)
    monkeypatch.undo()
    _assert_whole(snap)
    assert set(snap.node_ids) == {f"n{i}" for i in range(12)} and snap.embedder
    assert (folder / "meta.json").exists()  # rebuilt and published again


def test_a_folder_whose_arrays_disagree_is_rebuilt(kg: kgos.KG) -> None:
    _build(kg)
    folder = _published(kg)
    np.save(folder / "names.npy", np.array(["only one"], dtype=object), allow_pickle=True)
    snap = _build(kg)
    _assert_whole(snap)
    assert snap.names[0] == "Topic 0"


def test_a_temp_folder_is_never_loaded_and_kept_while_fresh(kg: kgos.KG) -> None:
    _build(kg)
    parent = _published(kg).parent
    old_version = _published(kg)
    fresh_tmp = parent / f".{old_version.name}.other-builder.tmp"  # another process writing now
    stale_tmp = parent / f".{old_version.name}.dead-builder.tmp"  # a build that died long ago
    for tmp in (fresh_tmp, stale_tmp):
        shutil.copytree(old_version, tmp)
        np.save(tmp / "node_ids.npy", np.array(["bogus"] * 12, dtype=object), allow_pickle=True)
    long_ago = time.time() - 2 * snapshots.TMP_MAX_AGE_SECONDS
    os.utime(stale_tmp, (long_ago, long_ago))
    os.utime(old_version, (long_ago, long_ago))
    kg.add_node("New node", id="new")
    snap = _build(kg)
    assert "bogus" not in snap.index and "new" in snap.index
    assert _folders(kg) == sorted([fresh_tmp.name, _published(kg).name])


def test_a_recent_older_version_stays_for_processes_still_loading_it(kg: kgos.KG) -> None:
    _build(kg)
    before, version = _published(kg), kg.store.version()
    kg.add_node("New node", id="new")
    _build(kg)
    assert (before / "meta.json").exists()  # pruned only after the grace period
    loaded = snapshots._load(before, kg.store, kg.engine.text, version)
    assert "new" not in loaded.index


# -- a replace import while another process has the KG open -----------------------------------------
def test_a_replace_import_reaches_a_process_that_has_the_kg_open(ws: kgos.Workspace, tmp_path: Path) -> None:
    first = [{"id": f"n{i}", "name": f"Node {i}"} for i in range(5)]
    second = [{"id": "n0", "name": "Node 0"}, {"id": "new", "name": "Brand new"}]
    for name, nodes in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps({"format": "kgos-node-link/1", "nodes": nodes, "edges": []}))
    ws.import_file("k", tmp_path / "a.json")
    kg = ws.kg("k")
    assert kg.node_count() == 5 and kg.search("node").results  # open, with a snapshot in memory
    script = ("import sys, kgos; ws = kgos.Workspace(sys.argv[1]); "
              "print(ws.import_file('k', sys.argv[2], mode='replace').nodes)")
    done = subprocess.run([sys.executable, "-c", script, str(ws.home), str(tmp_path / "b.json")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr  # was: sqlite3.OperationalError: database is locked
    assert kg.node_count() == 2 and kg.get_node("new") is not None
    assert [h.node.id for h in kg.search("brand new").results][:1] == ["new"]
