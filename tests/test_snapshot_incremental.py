"""The snapshot after a write is built incrementally (only changed nodes analysed, the cache saved in
the background) and equals a full build: same text and name index contents, same search scores."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import write_nodelink

import kgos
from kgos.index import names as name_indexes
from kgos.index import snapshot as snapshots
from kgos.index import text as texts

NODES = [{"id": f"n{i}", "name": f"Node {i} {['otter', 'heron', 'lynx'][i % 3]}", "type": "thing",
          "description": f"word{i} shared text about {['rivers', 'marshes', 'forests'][i % 3]}",
          **({"properties": {"aliases": [f"alias{i}", "common alias"]}} if i % 4 == 0 else {})}
         for i in range(24)]
EDGES = [{"source": f"n{i}", "target": f"n{i + 1}", "type": "links"} for i in range(6)]  # < 10: no communities
QUERIES = ("otter rivers", "word5", "heron", "alias8", "common alias", "zebra crossing", "Renamed lynx",
           "brand new beaver", "Node 3 lynx")


@pytest.fixture
def kg(ws: kgos.Workspace, tmp_path: Path) -> kgos.KG:
    ws.import_file("t", write_nodelink(tmp_path / "kg.json", NODES, EDGES))
    kg = ws.kg("t")
    kg.embed("hash")  # writes embed the nodes they change: vectors are part of what the build reuses
    kg.search("otter")  # the snapshot of the imported version is in memory: the next build has a previous
    assert snapshots.wait_for_saves(30)
    return kg


def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the Analyzer is asked for from now on."""
    seen: list[str] = []
    real = texts.Analyzer.terms

    def terms(self: texts.Analyzer, text: str) -> list[str]:
        seen.append(text)
        return real(self, text)

    monkeypatch.setattr(texts.Analyzer, "terms", terms)
    return seen


def fresh_snapshot(kg: kgos.KG) -> snapshots.Snapshot:
    """No cache, no previous: everything from the store."""
    return snapshots.build(kg.store, kg.engine.text, kg.engine._vector_model())


def assert_same_indexes(patched: snapshots.Snapshot, fresh: snapshots.Snapshot, vectors: bool = True) -> None:
    assert patched.node_ids == fresh.node_ids and patched.names == fresh.names
    if vectors:
        assert fresh.vectors is not None and np.array_equal(patched.vectors, fresh.vectors)
    assert patched.text.vocab == fresh.text.vocab
    a, b = patched.text.matrix.tocsc(), fresh.text.matrix.tocsc()
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.allclose(a.data, b.data, rtol=0, atol=1e-6)
    assert (patched.text.tf != fresh.text.tf).nnz == 0
    for part in ("exact", "sets"):
        mine, theirs = getattr(patched.name_index, part), getattr(fresh.name_index, part)
        assert mine.keys == theirs.keys, part
        for name, array in theirs.arrays().items():
            assert np.array_equal(mine.arrays()[name], array), (part, name)
    for name, array in fresh.graph.to_arrays().items():
        if name != "communities":  # refined from the previous partition: a valid labelling, maybe another
            assert np.array_equal(patched.graph.to_arrays()[name], array), name


def assert_same_search(kg: kgos.KG, ws: kgos.Workspace) -> None:
    """Search results of the patched snapshot equal those of a new process that builds from scratch."""
    mine = {q: [(h.node.id, h.score) for h in kg.search(q, k=8).results] for q in QUERIES}
    assert snapshots.wait_for_saves(30)
    shutil.rmtree(ws.cache_dir / "t")  # nothing to load or lend: a full build
    with kgos.Workspace(ws.home) as again:
        other = again.kg("t")
        assert other.engine.snapshot().build_seconds > 0  # built, not loaded
        for q in QUERIES:
            theirs = [(h.node.id, h.score) for h in other.search(q, k=8).results]
            assert [i for i, _ in mine[q]] == [i for i, _ in theirs], q
            assert np.allclose([s for _, s in mine[q]], [s for _, s in theirs], rtol=0, atol=1e-6), q


WRITES: dict[str, Callable[[kgos.KG], object]] = {
    "changed description": lambda kg: kg.update_node("n3", description="zebra crossing near rivers"),
    "added node": lambda kg: kg.add_node("Brand new beaver", "thing", "a beaver by the rivers", id="new"),
    "deleted node": lambda kg: kg.delete_node("n5"),
    "added edge": lambda kg: kg.add_edge("n10", "n11", "links"),
    "removed edge": lambda kg: kg.delete_edge("n0", "n1", "links"),
    "renamed node": lambda kg: kg.update_node("n7", name="Renamed lynx"),
    "alias change": lambda kg: kg.update_node("n8", properties={"aliases": ["alias8", "fresh alias"]}),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_after_a_write_the_snapshot_equals_a_full_build(kg: kgos.KG, ws: kgos.Workspace, write: str) -> None:
    before = kg.engine.snapshot()
    WRITES[write](kg)
    patched = kg.engine.snapshot()
    assert patched.version != before.version
    assert_same_indexes(patched, fresh_snapshot(kg))
    assert_same_search(kg, ws)


def test_only_the_changed_node_is_analysed(kg: kgos.KG, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = analysed(monkeypatch)
    kg.update_node("n3", description="zebra crossing")
    kg.engine.snapshot()
    assert seen and all(t in ("Node 3 otter", "thing", "zebra crossing") for t in seen), seen
    assert [h.node.id for h in kg.search("zebra", k=1).results] == ["n3"]


def test_scores_follow_the_new_corpus_statistics(kg: kgos.KG) -> None:
    """One added document moves N, df and avgdl: every unchanged document's score moves with them."""
    before = kg.engine.snapshot()
    col = before.text.vocab["river"]
    kg.add_node("Another", "thing", "river river river", id="more")
    after = kg.engine.snapshot()
    old = before.text.matrix[:, col].toarray().ravel()
    new = after.text.matrix[:, after.text.vocab["river"]].toarray().ravel()[:before.n]
    assert (old > 0).any() and not np.allclose(old[old > 0], new[old > 0])
    assert np.allclose(new, fresh_snapshot(kg).text.matrix[:, after.text.vocab["river"]].toarray().ravel()[:before.n])


def test_a_new_process_builds_from_the_newest_saved_snapshot(kg: kgos.KG, ws: kgos.Workspace,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process wrote; this one (a CLI, a second server) starts from the saved older version."""
    kg.update_node("n2", description="quokka island")
    with kgos.Workspace(ws.home) as again:
        seen = analysed(monkeypatch)
        other = again.kg("t")
        assert [h.node.id for h in other.search("quokka", k=1).results] == ["n2"]
        assert len(seen) <= 6, seen  # the changed node's fields (and the query), not all 24 nodes
        assert_same_indexes(other.engine.snapshot(), fresh_snapshot(other))


def test_the_save_after_a_write_runs_in_the_background(kg: kgos.KG, ws: kgos.Workspace,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    release, started = threading.Event(), threading.Event()
    real = snapshots._write

    def slow_write(*args: object) -> None:
        if threading.current_thread().name == "kgos-snapshot-save":  # the reader's own save is not held
            started.set()
            assert release.wait(30)
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshots, "_write", slow_write)
    kg.update_node("n1", description="heron nests")
    assert [h.node.id for h in kg.search("nests", k=1).results] == ["n1"]  # answered while the save waits
    assert started.wait(30)
    folder = snapshots._folder(ws.cache_dir, "t", kg.store.version(), kg.engine.text)
    assert not folder.exists()
    with kgos.Workspace(ws.home) as reader:  # a reader meanwhile: builds its own, never a half folder
        assert [h.node.id for h in reader.kg("t").search("nests", k=1).results] == ["n1"]
    release.set()
    assert snapshots.wait_for_saves(30)
    assert (folder / "meta.json").exists()
    monkeypatch.setattr(snapshots, "_build", lambda *a, **k: pytest.fail("built, not loaded"))
    with kgos.Workspace(ws.home) as again:
        assert [h.node.id for h in again.kg("t").search("nests", k=1).results] == ["n1"]


def test_a_failed_background_save_leaves_the_old_cache_usable(kg: kgos.KG, ws: kgos.Workspace,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    old_folder = snapshots._folder(ws.cache_dir, "t", kg.store.version(), kg.engine.text)
    assert (old_folder / "meta.json").exists()

    def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    folders = sorted(p.name for p in old_folder.parent.iterdir())
    monkeypatch.setattr(snapshots, "_write", broken)
    failures = snapshots._SAVES.failures
    kg.update_node("n1", description="heron nests")
    assert [h.node.id for h in kg.search("nests", k=1).results] == ["n1"]
    assert snapshots.wait_for_saves(30) and snapshots._SAVES.failures == failures + 1
    assert sorted(p.name for p in old_folder.parent.iterdir()) == folders  # no half folder left behind
    monkeypatch.undo()
    with kgos.Workspace(ws.home) as again:  # loads the old version's folder and builds the new one from it
        other = again.kg("t")
        assert [h.node.id for h in other.search("nests", k=1).results] == ["n1"]
        assert_same_indexes(other.engine.snapshot(), fresh_snapshot(other))


def test_name_index_merge_equals_a_build() -> None:
    analyzer = texts.Analyzer(texts.TextConfig())
    names = ["Git stash", "Git commit", "Mitochondrion", "T-cell"]
    aliases = [["stash"], [], ["mito", "powerhouse"], ["t cell"]]
    old = name_indexes.NameIndex.build(names, aliases, analyzer)
    new_names, new_aliases = ["Git commit", "Mitochondria", "T-cell", "Git stash pop"], [[], ["mito"], ["t cell"], []]
    reuse = np.array([1, -1, 3, -1])
    merged = name_indexes.NameIndex.build(new_names, [None, ["mito"], None, []], analyzer, old, reuse)
    full = name_indexes.NameIndex.build(new_names, new_aliases, analyzer)
    for part in ("exact", "sets"):
        assert getattr(merged, part).keys == getattr(full, part).keys
        for name, array in getattr(full, part).arrays().items():
            assert np.array_equal(getattr(merged, part).arrays()[name], array)
    assert np.array_equal(merged.scores("mito"), full.scores("mito"))


@pytest.mark.parametrize("seed", range(5))
def test_random_edits_merge_to_the_index_a_build_gives(seed: int) -> None:
    """Random names over a small vocabulary (shared keys, keys that vanish, keys that are new), random
    kept / changed / deleted / added rows: the merged name and text indexes equal fresh builds."""
    rng = np.random.default_rng(seed)
    words = ["git", "stash", "cell", "t", "mito", "pop", "commit", "branch", "zeta", "omega"]

    def name() -> str:
        return " ".join(rng.choice(words, rng.integers(1, 4)))

    analyzer, config = texts.Analyzer(texts.TextConfig()), texts.TextConfig()
    old_names = [name() for _ in range(40)]
    old_aliases = [[name() for _ in range(rng.integers(0, 3))] for _ in old_names]
    old_docs = [(n, " ; ".join(a), "thing", name()) for n, a in zip(old_names, old_aliases)]
    old_index = name_indexes.NameIndex.build(old_names, old_aliases, analyzer)
    old_text = texts.TextIndex.build(old_docs, config)
    survivors = sorted(rng.choice(40, 30, replace=False).tolist())
    reuse = np.array(survivors + [-1] * 8)
    changed = rng.random(len(reuse)) < 0.2
    reuse[changed] = -1
    names = [old_names[j] if j >= 0 else name() for j in reuse.tolist()]
    aliases = [old_aliases[j] if j >= 0 else [name()] for j in reuse.tolist()]
    docs = [old_docs[j] if j >= 0 else (n, " ; ".join(a), "thing", name()) for j, n, a in zip(reuse.tolist(), names, aliases)]
    merged = name_indexes.NameIndex.build(names, [None if j >= 0 else a for j, a in zip(reuse.tolist(), aliases)],
                                          analyzer, old_index, reuse)
    full = name_indexes.NameIndex.build(names, aliases, analyzer)
    for part in ("exact", "sets"):
        assert getattr(merged, part).keys == getattr(full, part).keys
        for key, array in getattr(full, part).arrays().items():
            assert np.array_equal(getattr(merged, part).arrays()[key], array), (part, key)
    text = texts.TextIndex.build([None if j >= 0 else d for j, d in zip(reuse.tolist(), docs)], config, old_text, reuse)
    fresh = texts.TextIndex.build(docs, config)
    assert text.vocab == fresh.vocab and (text.tf != fresh.tf).nnz == 0
    assert np.allclose(text.matrix.toarray(), fresh.matrix.toarray(), rtol=0, atol=1e-6)


def test_an_attached_kg_written_by_another_program_updates_incrementally(ws: kgos.Workspace, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A foreign SQLite KG is read through iter_nodes (digests of the parsed fields, not stored columns)."""
    import sqlite3

    path = tmp_path / "f.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE nodes (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT, description TEXT, "
                     "properties TEXT)")
        conn.execute("CREATE TABLE edges (source TEXT NOT NULL, target TEXT NOT NULL, type TEXT NOT NULL, "
                     "weight REAL, properties TEXT, UNIQUE (source, target, type))")
        conn.executemany("INSERT INTO nodes VALUES (?, ?, 'thing', ?, ?)",
                         [(n["id"], n["name"], n["description"], '{"aliases": ["a%d"]}' % i)
                          for i, n in enumerate(NODES)])
    conn.close()
    kg = ws.attach("f", path)
    assert [h.node.id for h in kg.search("word4", k=1).results] == ["n4"]
    with sqlite3.connect(path) as conn:  # another program writes
        conn.execute("UPDATE nodes SET description = 'pelican harbour' WHERE id = 'n6'")
        conn.execute("INSERT INTO nodes VALUES ('x', 'Extra node', 'thing', 'pelican', '{}')")
    conn.close()
    seen = analysed(monkeypatch)
    assert [h.node.id for h in kg.search("pelican harbour", k=2).results] == ["n6", "x"]
    assert len(seen) <= 12, seen  # the two written nodes' fields and the query, not all 25 nodes
    fresh = snapshots.build(kg.store, kg.engine.text, None, ws.cache_dir / "fresh")
    assert_same_indexes(kg.engine.snapshot(), fresh, vectors=False)
