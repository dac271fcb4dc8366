"""The one write path: ``store.writing()`` on every backend (native SQLite, a foreign schema attached
writable, PostgreSQL), its nesting and failure rules, the commit hook that embeds what was written,
and each source's writes (facade, memory, review queue, research delta) found by meaning at once."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from test_store_contract import backend_ws  # noqa: F401  (the per-backend workspace fixture)

import kgos
from kgos.errors import InvalidArgument, NodeNotFound, ProposalStale
from kgos.store.writing import Written


def _nodes(store) -> set[str]:
    return {n.id for n in store.iter_nodes()}


def test_a_unit_lands_whole_or_not_at_all(backend_ws):  # noqa: F811
    _, ws, db_id = backend_ws
    store = ws.kg(db_id).store
    with store.writing() as w:
        a = w.upsert_entity("Alpha", "thing", {"k": 1})
        b = w.add_node("Beta", "thing", id="thing:beta")
        w.add_edge(a.id, b.id, "relates_to", 0.4, {"evidence": ["m1"]})
    assert _nodes(store) == {a.id, "thing:beta"}
    before = (store.version(), _nodes(store), store.get_edge(a.id, b.id, "relates_to"))
    with pytest.raises(InvalidArgument, match="properties of node 'thing:delta' are not JSON"):
        with store.writing() as w:
            w.add_node("Gamma", "thing", id="thing:gamma")
            w.add_edge(a.id, b.id, "relates_to", 0.9)
            w.add_node("Delta", "thing", properties={"bad": {1, 2}})  # not JSON: the unit fails
    assert (store.version(), _nodes(store), store.get_edge(a.id, b.id, "relates_to")) == before


def test_nested_units_fail_alone_and_the_outer_decides(backend_ws):  # noqa: F811
    _, ws, db_id = backend_ws
    store = ws.kg(db_id).store
    with store.writing() as w:
        w.add_node("Outer", "thing", id="thing:outer")
        with pytest.raises(NodeNotFound):
            with store.writing() as inner:
                inner.add_node("Inner", "thing", id="thing:inner")
                inner.add_edge("thing:inner", "thing:missing", "relates_to")
        w.add_node("After", "thing", id="thing:after")
    assert _nodes(store) == {"thing:outer", "thing:after"}  # the failed inner unit alone was taken back
    with pytest.raises(RuntimeError):
        with store.writing() as w:
            with store.writing() as inner:
                inner.add_node("Committed inside", "thing", id="thing:nested")
            raise RuntimeError("the outer unit fails after its inner one committed")
    assert "thing:nested" not in _nodes(store)


def test_spec002_upsert_rules_once_for_every_backend(backend_ws):  # noqa: F811
    _, ws, db_id = backend_ws
    store = ws.kg(db_id).store
    with store.writing() as w:
        first = w.upsert_entity("Docker", "tool", {"a": 1}, at="2026-01-02T00:00:00Z")
        w.upsert_entity("docker ", "tool", {"b": 2}, at="2026-01-01T00:00:00Z")  # late: updated_at stays
        w.add_node("User", "user", id="user")
        w.add_edge("user", first.id, "uses", 0.9, {"evidence": [{"memory_id": "m1"}]})
        w.add_edge("user", first.id, "uses", 0.3, {"evidence": [{"memory_id": "m2"}]})
    node = store.get_node(first.id)
    assert (node.name, node.properties) == ("Docker", {"a": 1, "b": 2})
    assert node.updated_at in (None, "2026-01-02T00:00:00Z")  # None: the foreign table keeps no time
    edge = store.get_edge("user", first.id, "uses")
    assert edge.weight == 0.9 and edge.properties["evidence"] == [{"memory_id": "m1"}, {"memory_id": "m2"}]


def test_commit_hooks_learn_what_committed_and_nothing_of_a_failure(backend_ws):  # noqa: F811
    _, ws, db_id = backend_ws
    store = ws.kg(db_id).store
    seen: list[Written] = []
    store.on_commit(lambda s, written: seen.append(written))
    with store.writing() as w:
        w.add_node("One", "thing", id="thing:one")
        with store.writing() as inner:
            inner.add_node("Two", "thing", id="thing:two")
    assert [x.node_ids for x in seen] == [("thing:one", "thing:two")]  # once, at the outermost commit
    with pytest.raises(InvalidArgument):
        with store.writing() as w:
            w.add_node("Three", "thing", id="thing:three")
            w.add_node("One again", "thing", id="thing:one")
    assert len(seen) == 1


def test_two_writers_on_one_node_both_land(backend_ws):  # noqa: F811
    backend, ws, db_id = backend_ws
    store = ws.kg(db_id).store
    store.add_node("Shared", "thing", id="thing:shared")
    errors: list[BaseException] = []

    def merge(i: int) -> None:
        try:
            for j in range(10):
                store.upsert_node("thing:shared", "Shared", "thing", properties={f"w{i}_{j}": j})
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=merge, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store.get_node("thing:shared").properties) == 20  # no lost update


# -- every source's write is searchable by meaning when it returns ------------------------------------------
@pytest.fixture
def embedded(ws: kgos.Workspace) -> kgos.KG:
    kg = ws.create("k")
    kg.add_node("placeholder", "thing", "Nothing to see.")
    kg.embed("hash")
    return kg


def _top(kg: kgos.KG, text: str) -> str:
    return kg.search(text, k=1, mode="embedding").results[0].node.id


def test_facade_and_unit_of_work_writes_are_found_by_meaning(embedded):
    node = embedded.add_node("quokka pouch marsupial", "animal", "A small wallaby.")
    assert _top(embedded, "quokka pouch marsupial") == node.id
    with embedded.writing() as w:
        other = w.upsert_entity("numbat termite eater", "animal")
    assert _top(embedded, "numbat termite eater") == other.id


def test_a_failed_unit_embeds_nothing(embedded):
    vectors = embedded.embedding_models()
    with pytest.raises(InvalidArgument):
        with embedded.writing() as w:
            w.add_node("wombat burrow", "animal", id="animal:wombat")
            w.add_node("again", "animal", id="animal:wombat")
    assert embedded.embedding_models() == vectors and embedded.get_node("animal:wombat") is None


def test_memory_entities_are_found_by_meaning_at_once(ws: kgos.Workspace):
    from kgos.memory.service import MemoryService
    mem = MemoryService(ws)
    mem.add("I use Python every day")
    mem.kg().embed("hash")
    mem.add("deploying with Kubernetes tomorrow")
    kg = ws.kg(mem.db_id)
    hit = kg.search("Kubernetes", k=1, mode="embedding").results[0].node
    assert hit.name == "Kubernetes"


def test_an_accepted_proposal_is_found_by_meaning_at_once(embedded):
    pid = embedded.proposals.propose_node("animal:bilby", "bilby desert bandicoot", "animal", origin="research",
                                          score=0.7).added[0]
    embedded.proposals.accept(pid)
    assert _top(embedded, "bilby desert bandicoot") == "animal:bilby"
    embedded.proposals.undo(pid)
    assert embedded.get_node("animal:bilby") is None


def test_a_proposal_whose_node_was_deleted_is_not_accepted(embedded):
    a = embedded.add_node("kiwi bird", "animal")
    b = embedded.add_node("kakapo parrot", "animal")
    pid = embedded.proposals.propose_edge(a.id, b.id, "lives_with", origin="adamic_adar", score=0.4).added[0]
    embedded.delete_node(b.id)
    version = embedded.store.version()
    with pytest.raises(ProposalStale, match=b.id):
        embedded.proposals.accept(pid)
    assert embedded.store.version() == version and embedded.proposals.get(pid).status == "pending"


def test_a_research_delta_is_written_without_a_file_and_found_by_meaning(ws: kgos.Workspace, tmp_path):
    from kgos.research.stages import apply_delta
    kg = ws.create("notes")
    kg.add_node("seed", "thing")
    kg.embed("hash")
    delta = {"nodes": [{"id": "research:entity:echidna", "name": "echidna spiny anteater", "type": "term",
                        "description": "", "properties": {"run_id": "r"}}], "edges": []}
    report = apply_delta(ws, "notes", delta, "r")
    assert report["applied"] and _top(ws.kg("notes"), "echidna spiny anteater") == "research:entity:echidna"
    assert not list(tmp_path.glob("**/delta.json"))


# -- capabilities, not class checks --------------------------------------------------------------------------
SRC = Path(kgos.__file__).parent
BACKEND_CLASSES = re.compile(r"\b(NativeStore|ForeignStore|PostgresStore)\b")


def test_no_backend_class_outside_the_store_and_the_workspace():
    """Callers ask the store (writable, node_table, vector_table, proposal_store, row_reader, sql_dialect);
    only the store package and the workspace that opens stores name the backend classes."""
    allowed = {SRC / "kg" / "workspace.py"}
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.is_relative_to(SRC / "store") or path in allowed:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if BACKEND_CLASSES.search(code) and ("import" in code or "isinstance" in code or ":" in code
                                                 or "(" in code):
                offenders.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_methods_layer_builds_no_sql_on_a_connection():
    offenders = [f"{p.relative_to(SRC)}:{n}" for p in (SRC / "methods").rglob("*.py")
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if re.search(r"\.conn\b|\bsqlite3\b", line.split("#", 1)[0])]
    assert not offenders, offenders


def test_capabilities_say_what_each_backend_offers(backend_ws):  # noqa: F811
    backend, ws, db_id = backend_ws
    store = ws.kg(db_id).store
    assert store.writable and store.supports_writes
    assert (store.node_table() is not None) == (backend in ("native", "foreign"))
    assert (store.vector_table() is not None) == (backend in ("native", "postgres", "pushdown"))
    assert (store.proposal_store() is not None) == (backend in ("native", "postgres", "pushdown"))
    assert store.sql_dialect == ("postgresql" if backend in ("postgres", "pushdown") else "sqlite")


def test_a_constraint_violation_is_a_clear_error_and_changes_nothing(backend_ws):  # noqa: F811
    backend, ws, db_id = backend_ws
    store = ws.kg(db_id).store
    store.add_node("A", "thing", id="a")
    store.add_node("B", "thing", id="b")
    version = store.version()
    with pytest.raises(InvalidArgument):
        with store.writing() as w:
            w.add_node("C", "thing", id="c")
            w.ops.insert_node(kgos.model.Node("a", "A again", "thing"))  # the primitive, past the checks
    assert _nodes(store) == {"a", "b"} and store.version() == version


def test_an_ingest_is_found_by_meaning_when_it_returns(ws: kgos.Workspace, tmp_path):
    from ingest_helpers import write_tree

    from kgos.ingest import IngestOptions, ingest
    kg = ws.create("code")
    kg.add_node("seed", "thing")
    kg.embed("hash")
    root = write_tree(tmp_path / "proj", {"lib/platypus.py": '"""Platypus venom spur parser."""\n'
                                                             "def parse_spur():\n    return 1\n"})
    ingest(ws, "code", [str(root / "lib")], IngestOptions(tiers=(1,), dimensions=False, validate=False))
    hit = ws.kg("code").search("Platypus venom spur parser", k=1, mode="embedding").results[0].node
    assert "platypus" in hit.id


def test_a_process_killed_inside_a_unit_leaves_nothing(ws: kgos.Workspace, tmp_path):
    import subprocess
    import sys
    kg = ws.create("killed")
    kg.add_node("Before", "thing", id="before")
    script = (
        "import os, sys, kgos\n"
        "ws = kgos.Workspace(sys.argv[1])\n"
        "store = ws.kg('killed').store\n"
        "with store.writing() as w:\n"
        "    for i in range(50):\n"
        "        w.add_node(f'N{i}', 'thing', id=f'n{i}')\n"
        "    w.add_edge('before', 'n0', 'relates_to')\n"
        "    os._exit(9)  # killed half way: no commit, no rollback\n")
    done = subprocess.run([sys.executable, "-c", script, str(ws.home)], capture_output=True, timeout=120)
    assert done.returncode == 9, done.stderr.decode()
    assert _nodes(ws.kg("killed").store) == {"before"} and ws.kg("killed").store.edge_count() == 0
    ws.kg("killed").add_node("After", "thing", id="after")  # the file is not left locked
    assert _nodes(ws.kg("killed").store) == {"before", "after"}


def test_written_nodes_are_found_by_meaning_on_every_backend(backend_ws):  # noqa: F811
    _, ws, db_id = backend_ws
    kg = ws.kg(db_id)
    kg.add_node("placeholder", "thing", "Nothing to see.", id="thing:placeholder")
    kg.embed("hash")
    kg.add_node("quokka pouch marsupial", "animal", id="animal:quokka")
    with kg.writing() as w:
        w.upsert_node("animal:numbat", "numbat termite eater", "animal")
        w.add_edge("animal:numbat", "animal:quokka", "relates_to")
    assert _top(kg, "quokka pouch marsupial") == "animal:quokka"
    assert _top(kg, "numbat termite eater") == "animal:numbat"
