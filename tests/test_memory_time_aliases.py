"""Beyond spec/002 (its "future extensions"): alias review and merging, temporal queries, decay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kgos import InvalidArgument
from kgos.memory import (
    MemoryConfig,
    MemoryService,
    alias_key,
    decayed_weight,
    parse_question,
    parse_time_range,
)
from kgos.memory.aliases import AliasNotFound

NOW = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)  # a Wednesday


@pytest.fixture
def mem(ws):
    return MemoryService(ws, config=MemoryConfig())


# -- aliases ------------------------------------------------------------------------------------------
def test_alias_key():
    assert alias_key("Python3") == alias_key("python") == alias_key("Python 3.11") == "python"
    assert alias_key("Node.js") == alias_key("nodejs")
    assert alias_key("Postgres") == alias_key("PostgreSQL")
    assert alias_key("C++") != alias_key("C")


def test_propose_accept_merges_edges_and_keeps_evidence(mem):
    a = mem.add("I'm working on Atlas using Python.")
    b = mem.add("I prefer python3 for scripts.")
    c = mem.add("deploying with python3")
    proposals = mem.propose_aliases()
    assert [(p.alias_name, p.canonical_name, p.status) for p in proposals] == [("Python3", "Python", "proposed")]
    kg = mem.kg()
    assert kg.find_nodes("python3", "tool")            # nothing changes before review
    accepted = mem.accept_alias(proposals[0].id)
    assert accepted.status == "accepted" and accepted.decided_at
    assert not kg.find_nodes("python3", "tool")
    python = kg.find_nodes("python", "tool")[0]
    assert python.properties["aliases"] == ["Python3"]
    uses = kg.store.get_edge("entity:user:primary", python.id, "uses")
    assert [e["memory_id"] for e in uses.properties["evidence"]] == [a.id, c.id]   # merged, both kept
    assert kg.store.get_edge("entity:user:primary", python.id, "prefers").properties["evidence"][0]["memory_id"] == b.id
    assert {n.node.name for n in kg.neighbors(python.id)} == {"Primary User", "Atlas"}
    # later mentions go to the canonical entity, and "python3" finds it
    mem.add("I always use python3.")
    assert not kg.find_nodes("python3", "tool")
    assert mem.search("python3")[0][0].name == "Python"
    assert "[tool] Python (Score: 1.0)" in mem.context("python3").text


def test_reject_is_remembered_and_not_proposed_again(mem):
    mem.add("I use Meshalyzer daily. I also use Meshalyser sometimes.")
    mem.add("I'm working on Atlas using Meshalyzer.")  # the better connected spelling is canonical
    (p,) = mem.propose_aliases()
    assert (p.alias_name, p.canonical_name, p.reason) == ("Meshalyser", "Meshalyzer", "similar spelling")
    mem.reject_alias(p.id)
    assert mem.propose_aliases() == [] and mem.aliases("rejected")[0].id == p.id
    assert len(mem.kg().find_nodes("meshalyser", "tool")) == 1
    with pytest.raises(AliasNotFound):
        mem.accept_alias(999)


def test_manual_alias_and_timeline_follow_the_merge(mem):
    mem.add("I'm working on KG-OS.", created_at=NOW - timedelta(days=1))
    mem.add("I'm working on kgos core.", created_at=NOW - timedelta(days=1))
    p = mem.add_alias("kgos core", "KG-OS", "project")
    mem.accept_alias(p.id)
    (item,) = mem.timeline("yesterday", "works_on", now=NOW).items
    assert (item.name, item.mentions) == ("KG-OS", 2)
    with pytest.raises(InvalidArgument):
        mem.add_alias("x", "X", "tool")


# -- time ranges --------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,start,end", [
    ("today", "2026-03-18", "2026-03-19"), ("yesterday", "2026-03-17", "2026-03-18"),
    ("this week", "2026-03-16", "2026-03-23"), ("last week", "2026-03-09", "2026-03-16"),
    ("this month", "2026-03-01", "2026-04-01"), ("last month", "2026-02-01", "2026-03-01"),
    ("Since 2026-01-05", "2026-01-05", None), ("2026-02-10", "2026-02-10", "2026-02-11"),
    ("2026-02-10..2026-02-12", "2026-02-10", "2026-02-13"), ("last year", "2025-01-01", "2026-01-01"),
])
def test_parse_time_range(text, start, end):
    r = parse_time_range(text, NOW)
    assert r.start.date().isoformat() == start
    assert (r.end.date().isoformat() if r.end else None) == end


def test_rolling_ranges_and_errors():
    r = parse_time_range("last 3 days", NOW)
    assert r.start == NOW - timedelta(days=3) and r.end is None
    assert r.since == "2026-03-15T15:30:00.000000Z"
    assert parse_time_range("past 2 weeks", NOW).start == NOW - timedelta(weeks=2)
    for bad in ("someday", "since 2026-13-01", "2026-03-10..2026-03-01", ""):
        with pytest.raises(InvalidArgument):
            parse_time_range(bad, NOW)


def test_ranges_use_the_local_day_of_now():
    tokyo = timezone(timedelta(hours=9))
    r = parse_time_range("today", datetime(2026, 3, 18, 1, 0, tzinfo=tokyo))
    assert r.since == "2026-03-17T15:00:00.000000Z"  # local midnight, in UTC


def test_parse_question():
    span, predicate = parse_question("What was I working on last week?", NOW)
    assert (span.label, predicate) == ("last week", "works_on")
    assert parse_question("which tools did I use yesterday", NOW)[1] == "uses"
    assert parse_question("what happened today", NOW)[1] is None
    with pytest.raises(InvalidArgument):
        parse_question("what was I working on?", NOW)


def test_what_was_i_working_on_last_week(mem):
    mem.add("I'm working on Atlas.", created_at=NOW - timedelta(days=8))
    mem.add("Still working on Atlas, building the Borealis service too.", created_at=NOW - timedelta(days=6))
    mem.add("I'm working on Cygnus.", created_at=NOW - timedelta(days=1))
    mem.add("I prefer Rust.", created_at=NOW - timedelta(days=7), expert_id="rust")
    answer = mem.ask("what was I working on last week?", now=NOW)
    assert [(i.name, i.mentions) for i in answer.items] == [("Atlas", 2), ("Borealis Service", 1)]
    assert answer.memories == 3 and answer.predicate == "works_on"
    everything = mem.timeline("last week", now=NOW)
    assert ("prefers", "Rust") in {(i.predicate, i.name) for i in everything.items}
    assert [i.name for i in mem.timeline("last week", expert_id="rust", now=NOW).items] == ["Rust"]


# -- decay --------------------------------------------------------------------------------------------
def test_decayed_weight():
    assert decayed_weight(1.0, "2026-03-18T15:30:00Z", 30, NOW) == 1.0
    assert decayed_weight(0.8, NOW - timedelta(days=30), 30, NOW) == pytest.approx(0.4)
    assert decayed_weight(0.8, NOW - timedelta(days=60), 30, NOW) == pytest.approx(0.2)
    assert decayed_weight(0.8, None, 30, NOW) == 0.8              # no evidence: no decay
    assert decayed_weight(0.8, NOW + timedelta(days=5), 30, NOW) == 0.8
    with pytest.raises(InvalidArgument):
        decayed_weight(1.0, NOW, 0, NOW)


def test_decay_reports_and_writes_without_compounding(mem):
    mem.add("I prefer Perl.", created_at=NOW - timedelta(days=60))
    kg = mem.kg()
    perl = kg.resolve("Perl").id
    report = mem.decay(30, now=NOW)
    assert (report.changed, report.written) == (1, False)
    assert kg.store.get_edge("entity:user:primary", perl, "prefers").weight == 1.0    # report only
    mem.decay(30, write=True, now=NOW)
    mem.decay(30, write=True, now=NOW)                                                # idempotent
    e = kg.store.get_edge("entity:user:primary", perl, "prefers")
    assert e.weight == pytest.approx(0.25) and e.properties["base_weight"] == 1.0
    mem.add("I prefer Perl.")                                                         # fresh evidence
    assert kg.store.get_edge("entity:user:primary", perl, "prefers").weight == 1.0
