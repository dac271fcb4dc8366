"""spec/002 snapshots (export/import, merge), malformed files, and rebuild (equivalence, dry run,
interrupted halfway)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

import kgos
from kgos import ImportFailed
from kgos.memory import MemoryConfig, MemoryService
from kgos.memory import service as service_mod

NOTES = ["I'm working on meshalyzer using Python and Docker.", "I prefer dark mode.",
         "We decided to use SQLite for the KG because it is simple.", "deploying with Docker",
         "Building the Milton project with FastAPI at ./milton/app.py", "I always use Vim."]


@pytest.fixture
def mem(ws):
    m = MemoryService(ws, config=MemoryConfig())
    for note in NOTES:
        m.add(note)
    return m


def graph(mem: MemoryService) -> tuple[set, set]:
    """Entities and edges of the memory KG, comparable across files (ids, names, evidence ids)."""
    kg = mem.kg()
    nodes = {(n.id, n.type, n.name) for n in kg.nodes()}
    edges = {(e.source, e.type, e.target, e.weight,
              tuple(x["memory_id"] for x in _evidence(e.properties))) for e in kg.edges()}
    return nodes, edges


def _evidence(props: dict) -> list:
    ev = props.get("evidence", [])
    return ev if isinstance(ev, list) else [ev]


def test_export_is_spec_002_format(mem, tmp_path):
    report = mem.export(tmp_path / "kg.json")
    data = json.loads((tmp_path / "kg.json").read_text())
    assert data["version"] == "1.0" and data["exported_at"].endswith("Z")
    assert (report.entities, report.edges) == (len(data["entities"]), len(data["edges"]))
    e = next(x for x in data["entities"] if x["name"] == "Meshalyzer")
    assert set(e) == {"id", "type", "name", "normalized_name", "metadata", "created_ts", "updated_ts"}
    assert e["normalized_name"] == "meshalyzer" and e["id"].startswith("entity:")
    edge = next(x for x in data["edges"] if x["predicate"] == "works_on")
    assert set(edge) == {"id", "subject_id", "predicate", "object_id", "weight", "evidence", "created_ts"}
    assert edge["id"].startswith("edge:") and edge["subject_id"] == "entity:user:primary"
    assert set(edge["evidence"]) == {"memory_id", "src", "timestamp", "pattern"}  # one entry: an object
    docker = next(x for x in data["edges"] if x["predicate"] == "uses" and x["evidence"] and
                  isinstance(x["evidence"], list))
    assert len(docker["evidence"]) == 2  # two entries: a list


@pytest.mark.parametrize("name", ["kg.json", "kg.json.gz"])
def test_round_trip_into_a_new_workspace(mem, tmp_path, name):
    mem.export(tmp_path / name)
    with kgos.Workspace(tmp_path / "other") as ws2:
        other = MemoryService(ws2, config=MemoryConfig())
        report = other.import_snapshot(tmp_path / name)
        assert report.mode == "replace"
        assert graph(other) == graph(mem)
        other.export(tmp_path / "again.json")
    if name.endswith(".gz"):
        with gzip.open(tmp_path / name) as f:
            first = json.loads(f.read())
    else:
        first = json.loads((tmp_path / name).read_text())
    again = json.loads((tmp_path / "again.json").read_text())
    assert first["entities"] == again["entities"] and first["edges"] == again["edges"]


def test_import_spec_example_and_merge_semantics(mem, tmp_path):
    before_nodes, _ = graph(mem)
    snapshot = {"version": "1.0", "exported_at": "2026-01-12T03:00:00Z",
                "entities": [{"id": "entity:abc123", "type": "project", "name": "MESHALYZER",
                              "normalized_name": "meshalyzer", "metadata": {"lang": "rust"},
                              "created_ts": "2026-01-10T10:00:00Z", "updated_ts": "2026-01-12T03:00:00Z"},
                             {"id": "entity:new1", "type": "tool", "name": "Zig", "metadata": {}}],
                "edges": [{"id": "edge:def456", "subject_id": "entity:user:primary", "predicate": "works_on",
                           "object_id": "entity:abc123", "weight": 1.0,
                           "evidence": {"memory_id": "mem_xyz", "src": "deterministic",
                                        "timestamp": "2026-01-10T10:00:00Z", "pattern": "works_on"},
                           "created_ts": "2026-01-10T10:00:00Z"},
                          {"subject_id": "entity:abc123", "predicate": "uses", "object_id": "entity:new1",
                           "weight": 0.7}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(snapshot))
    mem.import_snapshot(path, merge=True)
    kg = mem.kg()
    mesh = kg.find_nodes("meshalyzer", "project")
    assert len(mesh) == 1 and mesh[0].name == "Meshalyzer" and mesh[0].properties == {"lang": "rust"}
    e = kg.store.get_edge("entity:user:primary", mesh[0].id, "works_on")
    assert e.weight == 1.0  # max(0.9, 1.0)
    assert [x["memory_id"] for x in _evidence(e.properties)][-1] == "mem_xyz"  # evidence merged
    assert kg.find_nodes("zig", "tool")[0].id == "entity:new1"
    assert len(graph(mem)[0]) == len(before_nodes) + 1
    mem.import_snapshot(path, merge=True)  # merging twice changes nothing more
    assert len(_evidence(kg.store.get_edge("entity:user:primary", mesh[0].id, "works_on").properties)) == 2


MALFORMED = [
    ("not json", "not a readable JSON snapshot"),
    ("[1, 2]", "JSON object"),
    ('{"version": "2.0", "entities": [], "edges": []}', "unsupported snapshot version"),
    ('{"version": "1.0", "entities": {}, "edges": []}', "'entities' must be a list"),
    ('{"version": "1.0", "entities": [{"id": "e1", "type": "tool"}], "edges": []}', "entities[0]"),
    (('{"version": "1.0", "entities": [{"id": "e1", "name": "A", "type": "tool"}, '
      '{"id": "e2", "name": "a", "type": "tool"}], "edges": []}'), "duplicate entity"),
    (('{"version": "1.0", "entities": [{"id": "e1", "name": "A", "type": "tool"}], '
      '"edges": [{"subject_id": "e1", "predicate": "uses", "object_id": "nope"}]}'), "edges[0]"),
    (('{"version": "1.0", "entities": [{"id": "e1", "name": "A", "type": "tool"}], '
      '"edges": [{"subject_id": "e1", "predicate": "uses", "object_id": "e1", "weight": 7}]}'), "in [0, 1]"),
    (('{"version": "1.0", "entities": [{"id": "e1", "name": "A", "type": "tool"}], '
      '"edges": [{"subject_id": "e1", "predicate": "uses", "object_id": "e1", "evidence": "x"}]}'), "evidence"),
]


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("text,message", MALFORMED)
def test_malformed_snapshot_is_refused_and_nothing_changes(mem, tmp_path, text, message, merge):
    before = graph(mem)
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ImportFailed, match=re.escape(message)):
        mem.import_snapshot(path, merge=merge)
    assert graph(mem) == before


def test_truncated_gzip_is_refused(mem, tmp_path):
    path = tmp_path / "bad.json.gz"
    path.write_bytes(gzip.compress(b'{"version": "1.0", "entities": [')[:-6])
    before = graph(mem)
    with pytest.raises(ImportFailed):
        mem.import_snapshot(path)
    assert graph(mem) == before


# -- rebuild ------------------------------------------------------------------------------------------
def test_rebuild_reproduces_the_live_graph(mem):
    live = graph(mem)
    report = mem.rebuild()
    assert (report.memories, report.entities, report.edges) == (len(NOTES), len(live[0]), len(live[1]))
    assert graph(mem) == live  # same ids (uuid5), weights and evidence


def test_rebuild_dry_run_changes_nothing_and_delete_then_rebuild_forgets(mem):
    target = mem.recall("dark mode")[0].memory.id
    mem.delete(target)
    before = graph(mem)
    report = mem.rebuild(dry_run=True)
    assert report.dry_run and report.edges == report.edges_before - 1 and graph(mem) == before
    mem.rebuild()
    assert not mem.kg().find_nodes("dark mode", "concept")
    assert target not in json.dumps([e.properties for e in mem.kg().edges()])


@pytest.mark.parametrize("where", ["extraction", "swap"])
def test_rebuild_interrupted_halfway_leaves_the_kg_consistent(mem, monkeypatch, where):
    before = graph(mem)
    relations = mem.workspace.shared.execute("SELECT count(*) FROM memory_relations").fetchone()[0]
    calls = {"n": 0}
    real_extract = service_mod.extract

    def flaky_extract(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == len(NOTES) // 2:
            raise KeyboardInterrupt  # the user pressed Ctrl-C halfway
        return real_extract(*args, **kwargs)

    if where == "extraction":
        monkeypatch.setattr(service_mod, "extract", flaky_extract)
    else:
        for bulk_load in ("kgos.kg.workspace.bulk_load", "kgos.store.postgres_import.bulk_load"):  # either backend
            monkeypatch.setattr(bulk_load, lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises((KeyboardInterrupt, OSError)):
        mem.rebuild(batch=2)
    assert graph(mem) == before
    assert mem.workspace.shared.execute("SELECT count(*) FROM memory_relations").fetchone()[0] == relations
    assert not list(Path(mem.workspace.cache_dir).glob(".memory-rebuild-*"))
    assert not list(mem.workspace.kgs_dir.glob(".*importing*"))
    monkeypatch.undo()
    mem.rebuild()
    assert graph(mem) == before


def test_rebuild_applies_accepted_aliases(mem):
    mem.add("scripts run on python3")
    proposal = next(p for p in mem.propose_aliases() if p.alias_name == "Python3")
    mem.accept_alias(proposal.id)
    mem.rebuild()
    assert not mem.kg().find_nodes("python3", "tool")
