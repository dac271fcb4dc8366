"""Memory items and KG enrichment: add/get/recall/delete, filters, time ranges, upsert and evidence
rules (spec/002), never-failing writes, and bad input."""

from __future__ import annotations

import doctest
import importlib
from datetime import UTC, datetime, timedelta

import pytest

from kgos import InvalidArgument
from kgos.memory import MemoryConfig, MemoryNotFound, MemoryService
from kgos.memory import graph as graph_mod
from kgos.memory.extract import USER_ID


@pytest.fixture
def mem(ws):
    return MemoryService(ws, config=MemoryConfig())


def edge(mem, source_name: str, predicate: str, target_name: str):
    kg = mem.kg()
    s = USER_ID if source_name == "user" else kg.resolve(source_name).id
    return kg.store.get_edge(s, kg.resolve(target_name).id, predicate)


@pytest.mark.parametrize("name", ["kgos.memory", "kgos.memory.service"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- items ------------------------------------------------------------------------------------------
def test_add_get_delete_and_metadata(mem):
    r = mem.add("I prefer Python.", ["Work", "work", "notes"], expert_id="py-expert", conversation_id="c1",
                metadata={"source": "cli"})
    m = mem.get(r.id)
    assert m.id.startswith("mem_") and m.content == "I prefer Python."
    assert m.tags == ("work", "notes") and m.kg_status == "ok"
    assert m.metadata == {"source": "cli", "expert_id": "py-expert", "conversation_id": "c1"}
    assert m.created_at.endswith("Z") and m.to_dict()["expert_id"] == "py-expert"
    assert mem.delete(r.id) and not mem.delete(r.id)
    with pytest.raises(MemoryNotFound):
        mem.get(r.id)


def test_recall_fts_with_filters(mem):
    a = mem.add("Deploying the parser with Docker", ["ops"], expert_id="ops")
    b = mem.add("Docker compose file for the db", ["ops", "db"], expert_id="data", metadata={"priority": 2})
    mem.add("Lunch with the team", ["life"])
    assert {h.memory.id for h in mem.recall("docker")} == {a.id, b.id}
    assert [h.memory.id for h in mem.recall("docker", expert_id="ops")] == [a.id]
    assert [h.memory.id for h in mem.recall("docker", filter_metadata={"expert_id": "data"})] == [b.id]
    assert [h.memory.id for h in mem.recall("docker", tags=["ops", "db"])] == [b.id]
    assert [h.memory.id for h in mem.recall("docker", filter_metadata={"priority": 2})] == [b.id]
    # FTS syntax in the query is harmless; stemming matches "deploy"
    assert [h.memory.id for h in mem.recall('deploy AND "(NEAR* ^')] == [a.id]
    assert len(mem.recall("", limit=2)) == 2
    with pytest.raises(InvalidArgument):
        mem.recall("x", filter_metadata={"a'b": 1})
    with pytest.raises(InvalidArgument):
        mem.recall("x", limit=0)


def test_recent_by_time_range(mem):
    now = datetime(2026, 3, 18, 12, tzinfo=UTC)  # a Wednesday
    old = mem.add("Working on Atlas.", created_at=now - timedelta(days=9))
    new = mem.add("Working on Borealis.", created_at=now - timedelta(days=1))
    assert [m.id for m in mem.recent("yesterday", now=now)] == [new.id]
    assert [m.id for m in mem.recent("last week", now=now)] == [old.id]
    assert [m.id for m in mem.recent("since 2026-03-01", now=now)] == [new.id, old.id]


def test_remember_turn_only_user_turns_add_user_edges(mem):
    u = mem.remember_turn("conv-1", "user", "I prefer FastAPI.", expert_id="py",
                          metadata={"kg_db_id": "docs", "intent": "howto"})
    a = mem.remember_turn("conv-1", "assistant", "I prefer Django for this.", expert_id="py")
    assert [r.predicate for r in u.relations] == ["prefers"]
    assert not any(r.subject.type == "user" for r in a.relations)
    assert a.memory.tags == ("chat", "assistant") and a.memory.metadata["role"] == "assistant"
    assert mem.kg().find_nodes("Django", "tool")  # the entity is still known
    assert [h.memory.id for h in mem.recall("prefer", conversation_id="conv-1", tags=["user"])] == [u.id]
    with pytest.raises(InvalidArgument):
        mem.remember_turn("c", "robot", "hi")


# -- upsert and evidence (spec/002) -----------------------------------------------------------------
def test_entities_unique_by_normalised_name_and_type(mem):
    mem.add("I'm working on meshalyzer.")
    mem.add("Still working on MESHALYZER today.")
    kg = mem.kg()
    nodes = kg.find_nodes("meshalyzer", "project")
    assert len(nodes) == 1 and nodes[0].name == "Meshalyzer"  # first spelling kept
    assert nodes[0].id.startswith("entity:") and len(nodes[0].id) == len("entity:") + 32
    assert kg.get_node(USER_ID).type == "user"


def test_edge_upsert_weight_max_evidence_merged_created_kept(mem):
    first = mem.add("deploying with Docker")            # uses, 0.8
    e1 = edge(mem, "user", "uses", "Docker")
    second = mem.add("I always use Docker.")            # uses, 0.9 (strong)
    e2 = edge(mem, "user", "uses", "Docker")
    assert (e1.weight, e2.weight) == (0.8, 0.9)
    assert e2.created_at == e1.created_at
    ev = e2.properties["evidence"]
    assert [x["memory_id"] for x in ev] == [first.id, second.id]
    assert ev[0] == {"memory_id": first.id, "src": "deterministic", "timestamp": first.memory.created_at,
                     "pattern": "with_x"}
    assert e2.properties["evidence_count"] == 2
    mem.add("deploying with Docker again")              # lower weight: max stays 0.9
    assert edge(mem, "user", "uses", "Docker").weight == 0.9


def test_evidence_is_capped_first_and_newest_kept(ws):
    mem = MemoryService(ws, config=MemoryConfig(evidence_cap=3))
    ids = [mem.add(f"note {i}: deploying with Docker").id for i in range(6)]
    e = edge(mem, "user", "uses", "Docker")
    assert [x["memory_id"] for x in e.properties["evidence"]] == [ids[0], ids[4], ids[5]]
    assert e.properties["evidence_count"] == 6
    from kgos.store.writing import capped_evidence
    items, added = capped_evidence([{"memory_id": "a"}], [{"memory_id": "a"}, {"memory_id": "b"}], 5)
    assert (len(items), added) == (2, 1)


def test_memory_kg_is_an_ordinary_kg(mem):
    mem.add("I'm working on meshalyzer using Python.")
    kg = mem.workspace.kg("memory")
    assert {n.node.name for n in kg.neighbors(USER_ID)} == {"Meshalyzer", "Python"}
    assert kg.search("meshalyzer", k=3).results[0].node.name == "Meshalyzer"
    assert mem.workspace.info("memory").nodes == 3


# -- writes never fail because of enrichment ----------------------------------------------------------
def test_enrichment_failure_is_logged_counted_and_the_memory_kept(mem, monkeypatch, caplog):
    def boom(self, items):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr(graph_mod.GraphWriter, "write", boom)
    r = mem.add("I prefer Python.")
    assert r.memory.kg_status == "failed" and "disk on fire" in r.memory.kg_error
    assert mem.get(r.id).content == "I prefer Python."
    assert mem.stats().counters["kg_failures"] == 1
    assert "KG enrichment failed" in caplog.text
    monkeypatch.undo()
    mem.rebuild()  # the KG catches up from the stored memories
    assert mem.get(r.id).kg_status == "ok" and edge(mem, "user", "prefers", "Python").weight == 1.0


# -- bad input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("content,message", [
    ("", "empty"), ("   \n\t ", "empty"), (None, "must be text"), (42, "must be text"),
    (b"\xff\xfe\x00\x81binary", "binary"), ("\x00\x01\x02\x03\x04\x05 junk \x06\x07\x08", "binary"),
])
def test_bad_content_is_refused_clearly(mem, content, message):
    with pytest.raises(InvalidArgument, match=message):
        mem.add(content)
    assert mem.items.count() == 0


def test_huge_memory_is_refused_with_the_limit_named(ws):
    mem = MemoryService(ws, config=MemoryConfig(max_chars=1000))
    with pytest.raises(InvalidArgument, match="limit is 1,000"):
        mem.add("x" * 1001)
    assert mem.add("I prefer Python. " * 58).memory.kg_status == "ok"  # just under the cap


def test_a_largest_memory_is_stored_and_extracted(mem):
    text = ("I'm working on Atlas using Python at ./atlas/main.py. " * 2000)[:100_000]
    r = mem.add(text)
    assert r.memory.kg_status == "ok" and len(r.memory.content) <= 100_000


def test_control_characters_are_stripped_and_bytes_decoded(mem):
    r = mem.add("I prefer\x00 Python\x07.\r\nNext line\x1b")
    assert r.memory.content == "I prefer Python.\nNext line"
    assert [x.object.name for x in r.relations] == ["Python"]
    assert mem.add(b"I like Rust").relations[0].object.name == "Rust"
    assert mem.add("lone surrogate \udc80 ok").memory.content == "lone surrogate ? ok"


@pytest.mark.parametrize("kwargs", [{"tags": [""]}, {"tags": ["x" * 65]}, {"tags": [f"t{i}" for i in range(40)]},
                                    {"metadata": {"a": object()}}, {"metadata": ["no"]}, {"expert_id": ""},
                                    {"metadata": {"x": float("nan")}}])
def test_bad_tags_and_metadata(mem, kwargs):
    with pytest.raises(InvalidArgument):
        mem.add("fine text", **kwargs)


def test_config_from_env_and_errors(monkeypatch):
    env = {"KGOS_MEMORY_LLM_ENRICH": "true", "KGOS_MEMORY_CONTEXT_MAX_EDGES": "7",
           "KGOS_MEMORY_CONTEXT_MAX_CHARS": "900", "KGOS_MEMORY_DECAY_HALF_LIFE_DAYS": "30"}
    cfg = MemoryConfig.from_env(env)
    assert (cfg.llm_enrich, cfg.context_max_edges, cfg.context_max_chars, cfg.decay_half_life_days) == \
        (True, 7, 900, 30.0)
    assert MemoryConfig.from_env(env, context_max_edges=3).context_max_edges == 3
    with pytest.raises(InvalidArgument, match="KGOS_MEMORY_CONTEXT_MAX_EDGES"):
        MemoryConfig.from_env({"KGOS_MEMORY_CONTEXT_MAX_EDGES": "many"})
    with pytest.raises(InvalidArgument):
        MemoryConfig(context_max_chars=0)
