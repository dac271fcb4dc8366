"""Workspace: naming, lifecycle, and node-link / snapshot import in every mode, with bad input."""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import kgos
from kgos.errors import ImportFailed, InvalidArgument, InvalidName, KGExists, KGNotFound
from kgos.methods.dimensions import INFERRED_KEY

from conftest import write_nodelink


def fingerprint(kg: kgos.KG) -> tuple:
    return (sorted(n.to_dict().__repr__() for n in kg.nodes()), sorted(e.to_dict().__repr__() for e in kg.edges()))


@pytest.mark.parametrize("bad", ["../x", "X", "", "a/b", "a b", "-x", "x" * 65, None, "a.db"])
def test_db_id_is_validated(ws, bad):
    with pytest.raises(InvalidName):
        ws.create(bad)
    with pytest.raises(InvalidName):
        ws.kg(bad)
    assert not list(ws.kgs_dir.iterdir())


def test_create_list_open_delete(ws):
    kg = ws.create("notes", name="My notes", description="d")
    kg.add_node("A")
    assert [(i.db_id, i.kind, i.nodes, i.name) for i in ws.list()] == [("notes", "native", 1, "My notes")]
    with pytest.raises(KGExists):
        ws.create("notes")
    assert ws.delete("notes") == "deleted"
    assert ws.list() == [] and not ws.native_path("notes").exists()
    with pytest.raises(KGNotFound, match="known KGs"):
        ws.kg("notes")


def test_home_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KGOS_HOME", str(tmp_path / "envhome"))
    with kgos.Workspace() as w:
        w.create("x")
    assert (tmp_path / "envhome" / "kgs" / "x.db").exists()


def test_import_nodelink_gz_roundtrip_is_lossless(ws, tmp_path, tiny_graph):
    nodes, edges = tiny_graph
    src = tmp_path / "g.json.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        json.dump({"format": "kgos-node-link/1", "name": "Tiny", "description": "tiny KG",
                   "nodes": nodes, "edges": edges}, f)
    report = ws.import_file("tiny", src)
    assert (report.nodes, report.edges, report.mode) == (3, 2, "create")
    kg = ws.kg("tiny")
    assert kg.meta()["name"] == "Tiny"
    assert as_given(kg.node("feature:prompt_caching").properties) == nodes[0]["properties"]
    assert kg.store.get_edge("benefit:token_savings", "goal:cost_reduction", "contributes_to").weight == 0.8
    ws.export("tiny", tmp_path / "out.json")
    ws.import_file("tiny2", tmp_path / "out.json")
    assert fingerprint(ws.kg("tiny2"))[0] == fingerprint(kg)[0]
    assert [e.to_dict() for e in ws.kg("tiny2").edges()] == [e.to_dict() for e in kg.edges()]


def as_given(properties: dict) -> dict:
    """The properties without the dimension values the import inferred (each marked as such)."""
    marks = properties.get(INFERRED_KEY, {})
    return {k: v for k, v in properties.items() if k != INFERRED_KEY and k not in marks}


def test_an_import_adds_only_marked_dimension_values(ws, tmp_path, tiny_graph):
    ws.import_file("t", write_nodelink(tmp_path / "g.json", *tiny_graph))
    props = ws.kg("t").node("feature:prompt_caching").properties
    assert props["pricing_tier"] == 0.2 and "pricing_tier" not in props[INFERRED_KEY]  # the file's value, kept
    assert props["relationship_richness"] == 0.63 and props[INFERRED_KEY]["relationship_richness"] == "degree"
    ws.import_file("u", write_nodelink(tmp_path / "g.json", *tiny_graph), dimensions=False)
    assert ws.kg("u").node("feature:prompt_caching").properties == tiny_graph[0][0]["properties"]


def test_import_networkx_style_nodelink(ws, tmp_path):
    data = {"directed": True, "nodes": [{"id": 1, "color": "red"}, {"id": 2}],
            "links": [{"source": 1, "target": 2, "weight": 2.5}]}
    (tmp_path / "nx.json").write_text(json.dumps(data))
    ws.import_file("nx", tmp_path / "nx.json")
    kg = ws.kg("nx")
    assert kg.node("1").name == "1" and as_given(kg.node("1").properties) == {"color": "red"}
    assert [(e.source, e.target, e.type, e.weight) for e in kg.edges()] == [("1", "2", "relates_to", 2.5)]


def test_import_memory_snapshot(ws, tmp_path):
    snap = {"version": "1.0", "entities": [
        {"id": "entity:user:primary", "type": "user", "name": "Primary User", "normalized_name": "primary user",
         "metadata": {}, "created_ts": "2026-01-10T10:00:00Z", "updated_ts": "2026-01-12T03:00:00Z"},
        {"id": "entity:abc", "type": "project", "name": "Meshalyzer", "metadata": {"lang": "py"},
         "created_ts": "2026-01-10T10:00:00Z", "updated_ts": "2026-01-10T10:00:00Z"}],
        "edges": [{"id": "edge:def", "subject_id": "entity:user:primary", "predicate": "works_on",
                   "object_id": "entity:abc", "weight": 0.9,
                   "evidence": {"memory_id": "mem_xyz", "src": "deterministic"},
                   "created_ts": "2026-01-10T10:00:00Z"}]}
    (tmp_path / "snap.json").write_text(json.dumps(snap))
    report = ws.import_file("mem", tmp_path / "snap.json")
    assert report.format == "snapshot"
    kg = ws.kg("mem")
    edge = next(kg.edges())
    assert (edge.source, edge.type, edge.target, edge.weight, edge.id) == (
        "entity:user:primary", "works_on", "entity:abc", 0.9, "edge:def")
    assert edge.properties["evidence"]["memory_id"] == "mem_xyz"
    assert kg.node("entity:abc").created_at == "2026-01-10T10:00:00Z"


def test_existing_kg_needs_merge_or_replace(ws, tmp_path, tiny_graph):
    src = write_nodelink(tmp_path / "g.json", *tiny_graph)
    ws.import_file("t", src)
    with pytest.raises(KGExists, match="--merge"):
        ws.import_file("t", src)
    extra = write_nodelink(tmp_path / "e.json", [{"id": "goal:cost_reduction", "name": "Cost reduction",
                                                  "type": "goal", "properties": {"tier": 1}},
                                                 {"id": "n:new", "name": "New"}],
                           [{"source": "n:new", "target": "goal:cost_reduction", "type": "enables"},
                            {"source": "benefit:token_savings", "target": "goal:cost_reduction",
                             "type": "contributes_to", "weight": 0.3, "properties": {"extra": True}}])
    report = ws.import_file("t", extra, mode="merge")
    kg = ws.kg("t")
    assert (report.mode, kg.node_count(), kg.edge_count()) == ("merge", 4, 3)
    assert kg.node("goal:cost_reduction").description == "Spend less on API calls."  # kept
    assert as_given(kg.node("goal:cost_reduction").properties) == {"tier": 1}
    e = kg.store.get_edge("benefit:token_savings", "goal:cost_reduction", "contributes_to")
    assert e.weight == 0.8 and e.properties == {"note": "main lever", "extra": True}
    ws.import_file("t", extra, mode="replace", skip_dangling=True)
    assert (ws.kg("t").node_count(), ws.kg("t").edge_count()) == (2, 1)


BAD_FILES = {
    "truncated": (b'{"nodes": [{"id": "a", "name": "A"}, {"id": "b", "na', "nodes[1]"),
    "not utf-8": (b'{"nodes": [{"id": "a", "name": "\xff\xfe"}], "edges": []}', "malformed"),
    "no nodes": (b'{"edges": []}', "no 'nodes'"),
    "top-level array": (b'[1, 2]', "array"),
    "missing id": (b'{"nodes": [{"name": "A"}], "edges": []}', "nodes[0]: 'id' is missing"),
    "duplicate id": (b'{"nodes": [{"id": "a", "name": "A"}, {"id": "a", "name": "B"}], "edges": []}',
                     "nodes[1]: duplicate node id 'a'"),
    "dangling edge": (b'{"nodes": [{"id": "a", "name": "A"}], "edges": [{"source": "a", "target": "zz", '
                      b'"type": "r"}]}', "edges[0]: target node 'zz' does not exist"),
    "wrong type": (b'{"nodes": [{"id": "a", "name": ["A"]}], "edges": []}', "'name' is a list"),
    "bad weight": (b'{"nodes": [{"id": "a", "name": "A"}], "edges": [{"source": "a", "target": "a", '
                   b'"type": "r", "weight": "heavy"}]}', "edges[0]: 'weight' must be a finite number"),
    "properties not object": (b'{"nodes": [{"id": "a", "name": "A", "properties": 3}], "edges": []}',
                              "'properties' must be an object"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
@pytest.mark.parametrize("mode", ["create", "merge", "replace"])
def test_bad_input_names_the_record_and_changes_nothing(ws, tmp_path, tiny_graph, case, mode):
    if mode != "create":
        ws.import_file("t", write_nodelink(tmp_path / "good.json", *tiny_graph))
    before = fingerprint(ws.kg("t")) if mode != "create" else None
    content, message = BAD_FILES[case]
    (tmp_path / "bad.json").write_bytes(content)
    with pytest.raises(ImportFailed, match=message.replace("[", r"\[").replace("]", r"\]")):
        ws.import_file("t", tmp_path / "bad.json", mode=mode)
    if mode == "create":
        assert not ws.exists("t")
    else:
        assert fingerprint(ws.kg("t")) == before
    assert [p.name for p in ws.kgs_dir.iterdir() if "importing" in p.name] == []


def test_dangling_edges_can_be_skipped_and_counted(ws, tmp_path):
    src = write_nodelink(tmp_path / "g.json", [{"id": "a", "name": "A"}],
                         [{"source": "a", "target": "x", "type": "r"}, {"source": "a", "target": "a", "type": "r"}])
    report = ws.import_file("t", src, skip_dangling=True)
    assert (report.edges, report.skipped_dangling) == (1, 1)


def test_duplicate_edges_in_one_file_collapse_to_max_weight(ws, tmp_path):
    src = write_nodelink(tmp_path / "g.json", [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}],
                         [{"source": "a", "target": "b", "type": "r", "weight": 0.2},
                          {"source": "a", "target": "b", "type": "r", "weight": 0.7}])
    report = ws.import_file("t", src)
    assert (report.edges, report.duplicate_edges) == (1, 1)
    assert next(ws.kg("t").edges()).weight == 0.7


def test_unknown_format_and_missing_file(ws, tmp_path):
    (tmp_path / "g.txt").write_text("x")
    with pytest.raises(InvalidArgument, match="cannot tell the format"):
        ws.import_file("t", tmp_path / "g.txt")
    with pytest.raises(InvalidArgument, match="no such file"):
        ws.import_file("t", tmp_path / "nope.json")
    with pytest.raises(InvalidArgument, match="mode"):
        ws.import_file("t", tmp_path / "g.txt", mode="upsert")


KILL_SCRIPT = textwrap.dedent("""
    import sys, time, kgos
    ws = kgos.Workspace(sys.argv[1])
    def progress(phase, count):
        print(phase, count, flush=True)
        time.sleep(0.2)
    ws.import_file("big", sys.argv[2], mode=sys.argv[3], progress=progress)
    print("finished", flush=True)
""")


@pytest.mark.parametrize("mode", ["merge", "replace"])
def test_import_killed_halfway_leaves_kg_unchanged_and_intact(ws, tmp_path, tiny_graph, mode):
    ws.import_file("big", write_nodelink(tmp_path / "small.json", *tiny_graph))
    before = fingerprint(ws.kg("big"))
    ws.close()
    n = 60_000
    nodes = [{"id": f"n{i}", "name": f"node {i}", "description": "x " * 20} for i in range(n)]
    edges = [{"source": f"n{i}", "target": f"n{(i * 7) % n}", "type": "r"} for i in range(n)]
    big = write_nodelink(tmp_path / "big.json", nodes, edges)
    script = tmp_path / "imp.py"
    script.write_text(KILL_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(ws.home), str(big), mode],
                            stdout=subprocess.PIPE, text=True)
    seen = [proc.stdout.readline() for _ in range(2)]  # two batches written, transaction open
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert all(line.startswith("nodes") for line in seen)
    conn = sqlite3.connect(ws.native_path("big"))
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    with kgos.Workspace(ws.home) as again:
        assert fingerprint(again.kg("big")) == before
        again.import_file("other", write_nodelink(tmp_path / "o.json", *tiny_graph))
        assert [p.name for p in again.kgs_dir.iterdir() if "importing" in p.name] == []
