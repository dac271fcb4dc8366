"""Context injection (spec/002): 1.0/0.7/0.5 scoring, 1-hop expansion by weight, caps, exact format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kgos.memory import MemoryConfig, MemoryService, relevance
from kgos.memory.context import HEADER


@pytest.fixture
def mem(ws):
    return MemoryService(ws, config=MemoryConfig())


def test_relevance_scores():
    assert relevance("Meshalyzer", "meshalyzer") == 1.0
    assert relevance("what does meshalyzer use?", "Meshalyzer") == 0.7    # name inside the query
    assert relevance("mesh", "Mesh Analyzer") == 0.7                      # query inside the name
    assert relevance("python tooling", "Python Scripts") == 0.5           # a shared word
    assert relevance("the", "The Project") == 0.0                         # stopwords do not match
    assert relevance("python3", "Python", aliases=["python3"]) == 1.0     # accepted alias


def test_exact_output_format(mem):
    a = mem.add("I'm working on meshalyzer using Python.")
    b = mem.add("I prefer Python.")
    ctx = mem.context("meshalyzer")
    assert ctx.text == "\n".join([
        HEADER,
        "",
        "Entities (1/1):",
        "  [project] Meshalyzer (Score: 1.0)",
        "",
        "Relationships (2/2):",
        "  User --[works_on]--> [project] Meshalyzer (weight: 0.9)",
        "  [project] Meshalyzer --[uses]--> [tool] Python (weight: 0.8)",
        "",
        f"Evidence IDs: {a.id}",
    ])
    ctx = mem.context("python")
    assert ctx.text.splitlines()[3] == "  [tool] Python (Score: 1.0)"
    rel = ctx.text.split("Relationships")[1].splitlines()[1:4]
    assert rel == ["  User --[prefers]--> [tool] Python (weight: 1.0)",        # sorted by weight
                   "  [project] Meshalyzer --[uses]--> [tool] Python (weight: 0.8)",
                   "  User --[uses]--> [tool] Python (weight: 0.8)"]
    assert ctx.evidence_ids == (b.id, a.id)
    assert ctx.to_dict()["edges"][0]["source_id"] == "entity:user:primary"


def test_partial_and_word_matches_rank_below_exact(mem):
    mem.add("I'm working on the Mesh Analyzer project.")
    mem.add("I'm working on Meshalyzer.")
    mem.add("I prefer mesh networking.")
    ctx = mem.context("mesh")
    scores = [(e.name, e.score) for e in ctx.entities]
    assert scores[0] == ("Mesh Analyzer", 0.7) and ("Mesh Networking", 0.7) in scores
    assert ("Meshalyzer", 0.7) not in scores  # no word boundary, no match
    assert mem.context("mesh analyzer").entities[0].score == 1.0


def test_first_person_query_reaches_the_user(mem):
    mem.add("I prefer Rust.")
    ctx = mem.context("what do I prefer?")
    assert ctx.entities[0].id == "entity:user:primary"
    assert "User --[prefers]--> [tool] Rust (weight: 1.0)" in ctx.text


def test_edge_cap_and_counts(mem):
    for i in range(30):
        mem.add(f"I'm working on Atlas using Tool{i}x.")  # "ToolNx" are name-like, so they are tools
    ctx = mem.context("atlas", max_edges=5)
    assert len(ctx.edges) == 5 and ctx.edges_total == 31 and ctx.truncated
    assert "Relationships (5/31):" in ctx.text
    assert len(mem.context("atlas").edges) == 20  # the default cap


def test_char_cap_is_never_exceeded(mem):
    for i in range(30):
        mem.add(f"I'm working on Atlas using Tool{i}x at ./src/module_{i}/main.py.")
    for limit in (40, 120, 300, 700, 1500):
        ctx = mem.context("atlas", max_chars=limit)
        assert len(ctx.text) <= limit
        if ctx.text:
            shown = int(ctx.text.split("Relationships (")[1].split("/")[0])
            assert shown == len(ctx.edges)
            assert all(line.startswith(("  ", "===", "Entities", "Relationships", "Evidence")) or not line
                       for line in ctx.text.splitlines())
    assert mem.context("atlas", max_chars=40).text == ""  # too small even for the headers


def test_caps_from_environment(ws, monkeypatch):
    monkeypatch.setenv("KGOS_MEMORY_CONTEXT_MAX_EDGES", "2")
    monkeypatch.setenv("KGOS_MEMORY_CONTEXT_MAX_CHARS", "600")
    mem = MemoryService(ws)
    for i in range(5):
        mem.add(f"I'm working on Atlas using Tool{i}x.")
    ctx = mem.context("atlas")
    assert len(ctx.edges) == 2 and len(ctx.text) <= 600
    monkeypatch.setenv("KGOS_MEMORY_CONTEXT_ENABLED", "false")
    assert MemoryService(ws).context("atlas").empty


def test_expert_filter_keeps_only_that_experts_knowledge(mem):
    mem.add("I'm working on Atlas using Python.", expert_id="py")
    mem.add("I'm working on Atlas using Terraform.", expert_id="ops")
    py = mem.context("atlas", expert_id="py")
    assert "Python" in py.text and "Terraform" not in py.text
    assert "Python" not in mem.context("python", expert_id="ops").text
    assert mem.context("atlas", expert_id="nobody").empty


def test_decay_reorders_stale_edges_without_rewriting_them(mem):
    now = datetime(2026, 6, 1, tzinfo=UTC)
    mem.add("I prefer Perl.", created_at=now - timedelta(days=365))
    mem.add("deploying with Docker", created_at=now - timedelta(days=1))
    plain = mem.context("what do I use", now=now)
    assert [e.target_name for e in plain.edges] == ["Perl", "Docker"]          # 1.0 before 0.8
    decayed = mem.context("what do I use", half_life_days=30, now=now)
    assert [e.target_name for e in decayed.edges] == ["Docker", "Perl"]
    assert decayed.edges[1].weight == 1.0 and decayed.edges[1].effective_weight < 0.01
    assert "(weight: 0.0)" in decayed.text
    assert mem.kg().store.get_edge("entity:user:primary", mem.kg().resolve("Perl").id, "prefers").weight == 1.0


def test_no_match_missing_kg_and_broken_kg_give_empty_context(ws, mem, monkeypatch):
    assert mem.context("anything").empty                 # no memory KG yet
    assert not ws.exists("memory")                       # and asking did not create one
    mem.add("I prefer Rust.")
    assert mem.context("kubernetes").empty
    assert mem.context("   ").empty

    def broken(*a, **k):
        raise __import__("sqlite3").OperationalError("database disk image is malformed")
    monkeypatch.setattr(type(mem.kg().store), "find_nodes", broken)
    ctx = mem.context("rust")
    assert ctx.empty and "malformed" in ctx.to_dict()["error"]


def test_entity_search_with_type_and_totals(mem):
    mem.add("I'm working on Python Tools. I prefer Python.")
    found, total = mem.search("python")
    assert [(e.name, e.score) for e in found][:2] == [("Python", 1.0), ("Python Tools", 0.7)]
    assert total == 2
    assert [e.type for e in mem.search("python", type="project")[0]] == ["project"]
