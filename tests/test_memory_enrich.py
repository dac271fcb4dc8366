"""Optional LLM enrichment (spec/002 phase 2) with a fake provider: validation, 0.5 threshold, edge cap,
PII filter, and the fall back to deterministic extraction on every kind of failure."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

import pytest

from kgos.llm.base import ChatProvider, Message, ProviderError
from kgos.memory import LLMEnricher, MemoryConfig, MemoryService, extract, parse_output


class FakeProvider(ChatProvider):
    """Answers with a fixed text, or raises; records what it was asked."""

    name = "fake"

    def __init__(self, answer: str | dict | None = None, error: Exception | None = None) -> None:
        self.answer = json.dumps(answer) if isinstance(answer, dict) else answer
        self.error = error
        self.calls: list[dict] = []

    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0) -> Iterator[str]:
        self.calls.append({"messages": list(messages), "system": system, "timeout": timeout})
        if self.error is not None:
            raise self.error
        yield from (self.answer[i:i + 7] for i in range(0, len(self.answer), 7))  # streamed in pieces


GOOD = {"entities": [{"name": "Meshalyzer", "type": "project"}, {"name": "Rust", "type": "tool"},
                     {"name": "Zero-copy parsing", "type": "concept"}],
        "edges": [{"subject": "Meshalyzer", "predicate": "uses", "object": "Rust", "weight": 0.8},
                  {"subject": "user", "predicate": "prefers", "object": "Zero-copy parsing", "weight": 0.9}]}
NOTE = "Meshalyzer now parses packets in Rust; zero-copy parsing is what I want."


def service(ws, provider, **cfg) -> MemoryService:
    return MemoryService(ws, config=MemoryConfig(llm_enrich=True, **cfg), provider=provider)


def test_good_json_adds_llm_edges_with_llm_evidence(ws):
    fake = FakeProvider(GOOD)
    mem = service(ws, fake, llm_timeout=3.0)
    r = mem.add(NOTE)
    assert r.llm == "ok"
    got = {(x.subject.name, x.predicate, x.object.name, x.src) for x in r.relations}
    assert ("Meshalyzer", "uses", "Rust", "llm") in got
    assert ("Primary User", "prefers", "Zero-copy parsing", "llm") in got
    kg = mem.kg()
    e = kg.store.get_edge(kg.resolve("Meshalyzer").id, kg.resolve("Rust").id, "uses")
    assert e.weight == 0.8 and e.properties["evidence"][0]["src"] == "llm" and "pattern" not in e.properties["evidence"][0]
    call = fake.calls[0]
    assert "do not hallucinate" in call["system"].lower() and "JSON" in call["system"] and call["timeout"] == 3.0
    assert NOTE in call["messages"][0].content and "Already extracted" in call["messages"][0].content
    assert mem.stats().counters == {"llm_calls": 1}


def test_fenced_json_is_accepted():
    out = parse_output("Sure!\n```json\n" + json.dumps(GOOD) + "\n```")
    assert len(out.edges) == 2


@pytest.mark.parametrize("answer,reason", [
    ("I could not find anything.", "no JSON object"),
    ('{"entities": [], "edges": [', "not valid JSON"),
    ({"entities": [{"name": "X", "type": "person"}], "edges": []}, "schema"),             # type not in enum
    ({"entities": [], "edges": [], "notes": "extra"}, "schema"),                           # unknown key
    ({"entities": [], "edges": [{"subject": "user", "predicate": "uses", "object": "Rust",
                                 "weight": "high"}]}, "schema"),                            # wrong type
    ({"entities": [], "edges": [{"subject": "user", "predicate": "uses", "object": "Rust",
                                 "weight": 1.5}]}, "schema"),                               # out of range
    ({"entities": [], "edges": [{"subject": "user", "predicate": "hates", "object": "Rust",
                                 "weight": 0.9}]}, "schema"),                               # unknown predicate
])
def test_bad_output_falls_back_to_deterministic(ws, answer, reason):
    mem = service(ws, FakeProvider(answer))
    r = mem.add("I prefer Python.")
    assert r.memory.kg_status == "ok" and r.llm.startswith("failed") and reason in r.llm
    assert [(x.predicate, x.object.name, x.src) for x in r.relations] == [("prefers", "Python", "deterministic")]
    assert mem.stats().counters["llm_fallbacks"] == 1


@pytest.mark.parametrize("error", [ProviderError("timed out after 20 s"), TimeoutError("read timeout"),
                                   ConnectionError("refused"), RuntimeError("SDK bug")])
def test_provider_failures_fall_back(ws, error, caplog):
    mem = service(ws, FakeProvider(error=error))
    r = mem.add("I prefer Python.")
    assert r.memory.kg_status == "ok" and r.llm.startswith("failed") and [x.object.name for x in r.relations] == ["Python"]
    assert "falling back" in caplog.text.lower() or "deterministic extraction only" in caplog.text


def test_weight_threshold_and_edge_cap():
    edges = [{"subject": "user", "predicate": "uses", "object": f"Tool{i}", "weight": round(0.3 + i * 0.05, 2)}
             for i in range(15)]
    answer = {"entities": [{"name": f"Tool{i}", "type": "tool"} for i in range(15)], "edges": edges}
    result = LLMEnricher(FakeProvider(answer), max_edges=10).enrich("text", extract(""))
    weights = [r.weight for r in result.extraction.relations]
    assert len(weights) == 10 and min(weights) >= 0.5 and weights == sorted(weights, reverse=True)
    assert result.rejected == {"low_weight": 4, "over_edge_cap": 1}
    assert len(LLMEnricher(FakeProvider(answer), max_edges=3).enrich("t", extract("")).extraction.relations) == 3


def test_cap_is_configurable_through_the_environment(ws, monkeypatch):
    monkeypatch.setenv("KGOS_MEMORY_LLM_ENRICH", "true")
    monkeypatch.setenv("KGOS_MEMORY_LLM_ENRICH_MAX_EDGES", "1")
    mem = MemoryService(ws, provider=FakeProvider(GOOD))
    r = mem.add("A plain note.")
    assert sum(x.src == "llm" for x in r.relations) == 1


def test_pii_entities_are_rejected_with_their_edges():
    answer = {"entities": [{"name": "john@example.com", "type": "concept"}, {"name": "Acme.com", "type": "tool"},
                           {"name": "Phone support", "type": "concept"}, {"name": "+1 555 123 4567", "type": "concept"},
                           {"name": "42 Elm Street", "type": "concept"}, {"name": "Email digest", "type": "tool"},
                           {"name": "Rust", "type": "tool"}],
              "edges": [{"subject": "user", "predicate": "prefers", "object": n, "weight": 0.9}
                        for n in ("john@example.com", "Acme.com", "Phone support", "+1 555 123 4567",
                                  "42 Elm Street", "Email digest", "Rust")]}
    result = LLMEnricher(FakeProvider(answer)).enrich("...", extract(""))
    assert [e.name for e in result.extraction.entities] == ["Rust"]
    assert [r.object.name for r in result.extraction.relations] == ["Rust"]
    assert result.rejected == {"pii": 6, "unknown_entity": 6}


def test_predicate_table_and_unknown_entities_are_enforced():
    answer = {"entities": [{"name": "Rust", "type": "tool"}, {"name": "Atlas", "type": "project"}],
              "edges": [{"subject": "Rust", "predicate": "prefers", "object": "Atlas", "weight": 0.9},
                        {"subject": "user", "predicate": "uses", "object": "Ghost", "weight": 0.9},
                        {"subject": "Atlas", "predicate": "uses", "object": "Rust", "weight": 0.9}]}
    result = LLMEnricher(FakeProvider(answer)).enrich("...", extract(""))
    assert [(r.subject.name, r.predicate, r.object.name) for r in result.extraction.relations] == [("Atlas", "uses", "Rust")]
    assert result.rejected == {"predicate_types": 1, "unknown_entity": 1}


def test_off_by_default_and_no_provider(ws):
    fake = FakeProvider(GOOD)
    mem = MemoryService(ws, config=MemoryConfig(), provider=fake)
    assert mem.add(NOTE).llm == "off" and fake.calls == []
    assert mem.add(NOTE, enrich=True).llm == "ok" and len(fake.calls) == 1     # per call
    assert MemoryService(ws, config=MemoryConfig(llm_enrich=True)).add(NOTE).llm == "no provider"


def test_assistant_turns_get_no_llm_user_edges(ws):
    mem = service(ws, FakeProvider(GOOD))
    r = mem.remember_turn("c1", "assistant", NOTE)
    assert not any(x.subject.type == "user" for x in r.relations)
    assert any(x.src == "llm" for x in r.relations)


def test_rebuild_is_deterministic_only_and_reports_dropped_llm_edges(ws):
    mem = service(ws, FakeProvider(GOOD))
    mem.add(NOTE)
    report = mem.rebuild(dry_run=True)
    # the note names Meshalyzer without a project cue, so both edges exist only thanks to the LLM
    assert (report.edges_before, report.llm_edges_dropped, report.edges) == (2, 2, 0)


def _openai_events(text: str) -> list[bytes]:
    from llm_fake_servers import sse
    return [sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}),
            sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), sse("[DONE]")]


def test_cli_enrichment_reaches_the_named_provider(tmp_path, monkeypatch):
    """`kgos memory add` with enrichment on asks the provider KGOS_MEMORY_LLM_PROVIDER names (it made no
    request at all before: the CLI never gave the service a provider)."""
    from click.testing import CliRunner
    from llm_fake_servers import FakeServer, stream_script

    from kgos.cli import cli
    server = FakeServer().start()
    server.script = stream_script(_openai_events(json.dumps(GOOD)))
    try:
        monkeypatch.setenv("KGOS_OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("KGOS_MEMORY_LLM_ENRICH", "true")
        monkeypatch.setenv("KGOS_MEMORY_LLM_PROVIDER", "openai:tiny-model")
        home = str(tmp_path / "home")
        r = CliRunner().invoke(cli, ["--home", home, "memory", "add", NOTE, "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["llm"] == "ok" and len(server.requests) == 1
        assert server.requests[0].body["model"] == "tiny-model"
        off = CliRunner().invoke(cli, ["--home", home, "memory", "add", NOTE, "--no-llm", "--json"])
        assert json.loads(off.stdout)["llm"] == "off" and len(server.requests) == 1
        monkeypatch.delenv("KGOS_MEMORY_LLM_PROVIDER")
        named = CliRunner().invoke(cli, ["--home", home, "memory", "add", NOTE, "--provider", "openai:other",
                                         "--json"])
        assert json.loads(named.stdout)["llm"] == "ok" and server.requests[-1].body["model"] == "other"
    finally:
        server.stop()


def test_enrichment_with_only_the_offline_default_is_no_provider(ws, monkeypatch):
    monkeypatch.delenv("KGOS_LLM_PROVIDER", raising=False)
    monkeypatch.delenv("KGOS_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert MemoryService(ws, config=MemoryConfig(llm_enrich=True)).add(NOTE).llm == "no provider"
    unconfigured = MemoryService(ws, config=MemoryConfig(llm_enrich=True, llm_provider="anthropic"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert unconfigured.add(NOTE).llm == "no provider"
