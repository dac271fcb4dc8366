"""Tier 2 (patterns and cue phrases) and tier 3 (LLM, spec/002 rules) of the ingest pipeline."""

from __future__ import annotations

from pathlib import Path

from ingest_helpers import ANSWER, DOC, FakeLLM, edges_of, write_tree

import pytest

import kgos
from kgos.ingest import IngestOptions, ingest
from kgos.errors import ProposalStale
from kgos.llm.base import ChatProvider, ProviderError

PATTERNS = {
    "app/__init__.py": "",
    "app/patterns.py": '''
        import functools

        HANDLERS = {}


        def register(name):
            def deco(fn):
                HANDLERS[name] = fn
                return fn
            return deco


        class Config:
            _instance = None

            def __new__(cls):
                if cls._instance is None:
                    cls._instance = super().__new__(cls)
                return cls._instance


        def create_widget(kind):
            return Widget(kind)


        class Widget:
            def __init__(self, kind):
                self.kind = kind


        def timed(fn):
            @functools.wraps(fn)
            def inner(*a):
                return fn(*a)
            return inner


        class StorageAdapter:
            pass


        class PluginRegistry:
            pass
        ''',
    "app/a.py": "from . import b\n",
    "app/b.py": "from . import a\n",
}


def _long_function(lines: int) -> str:
    return "def long_one():\n" + "".join(f"    x{i} = {i}\n" for i in range(lines)) + "    return 0\n"


def _god_class(methods: int, lines_each: int) -> str:
    body = "".join(f"    def m{i}(self):\n" + "".join(f"        y{j} = {j}\n" for j in range(lines_each))
                   + "        return 0\n" for i in range(methods))
    return "class Everything:\n" + body


def _ingest(ws: kgos.Workspace, root: Path, tiers: tuple[int, ...] = (1, 2), provider: ChatProvider | None = None,
            **opts: object) -> kgos.ingest.IngestReport:
    options = IngestOptions(tiers=tiers, embed=False, dimensions=False, **opts)  # type: ignore[arg-type]
    return ingest(ws, "t", [str(root)], options, provider=provider)


def test_design_patterns_and_anti_patterns(ws: kgos.Workspace, tmp_path: Path) -> None:
    files = {**PATTERNS, "app/big.py": _long_function(90) + _god_class(21, 24)}
    root = write_tree(tmp_path / "proj", files)
    _ingest(ws, root / "app")
    kg = ws.kg("t")
    found = {(s, t) for s, t in edges_of(kg, "pattern_instance_of")}
    expected = {
        ("py:app.patterns.register", "pattern:decorator"), ("py:app.patterns.Config", "pattern:singleton"),
        ("py:app.patterns.create_widget", "pattern:factory"), ("py:app.patterns.timed", "pattern:decorator"),
        ("py:app.patterns.StorageAdapter", "pattern:adapter"), ("py:app.patterns.PluginRegistry", "pattern:registry"),
        ("py:app.big.long_one", "pattern:long_function"), ("py:app.big.Everything", "pattern:god_class"),
        ("py:app.a", "pattern:import_cycle"), ("py:app.b", "pattern:import_cycle"),
    }
    assert expected <= found, expected - found
    assert ("py:app.patterns.Widget", "pattern:factory") not in found
    edge = kg.store.get_edge("py:app.patterns.timed", "pattern:decorator", "pattern_instance_of")
    assert edge.properties["confidence"] == 0.9 and "wraps" in edge.properties["rule"]
    assert kg.node("pattern:god_class").type == "anti_pattern"
    assert ("pattern:factory", "pattern:registry") in edges_of(kg, "pattern_alternative_to")


def test_cue_phrases_give_typed_relations_with_evidence(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {
        "lib/engine.py": '''
            def run_query(q):
                """Run a query. It requires a warm cache."""
                return q


            def exporter(rows):
                """The output of this function is passed to the renderer."""
                return rows
            ''',
        "lib/notes.md": '''
            # Notes

            The `run_query` function cannot stream results. As a workaround, page through them.
            Connection pooling enables high throughput. Use SQLite instead of PostgreSQL for tests.
            ''',
    })
    _ingest(ws, root / "lib")
    kg = ws.kg("t")
    requires = kg.store.get_edge("py:engine.run_query", "concept:warm_cache", "requires")
    assert requires is not None and requires.properties["evidence"] == "It requires a warm cache."
    assert requires.properties["confidence"] == 0.6  # explicit verb 0.7, minus 0.1 for a free-phrase end
    limitation = [e for e in kg.edges() if e.type == "has_limitation" and e.source == "py:engine.run_query"]
    assert len(limitation) == 1 and kg.node(limitation[0].target).type == "limitation"
    assert "cannot stream results" in kg.node(limitation[0].target).name
    workaround = [e for e in kg.edges() if e.type == "has_workaround"]
    assert workaround and workaround[0].source == limitation[0].target  # rule 10: attached to the limitation
    assert ("concept:connection_pooling", "concept:high_throughput") in edges_of(kg, "enables")
    assert ("concept:sqlite", "concept:postgresql") in edges_of(kg, "alternative_to")
    assert ("py:engine.exporter", "concept:renderer") in edges_of(kg, "feeds_into")


def test_tier_two_off_removes_its_output(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", PATTERNS)
    _ingest(ws, root / "app")
    assert ws.kg("t").get_node("pattern:singleton") is not None
    _ingest(ws, root / "app", tiers=(1,))
    kg = ws.kg("t")
    assert kg.get_node("pattern:singleton") is None and not edges_of(kg, "pattern_instance_of")
    assert kg.get_node("py:app.patterns.Config") is not None


def test_tier_three_keeps_what_passes_spec_002_rules(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"docs/cache.md": DOC})
    llm = FakeLLM(ANSWER)
    report = _ingest(ws, root / "docs", tiers=(1, 2, 3), provider=llm, llm_review=False)  # written directly
    kg = ws.kg("t")
    assert kg.node("capability:prompt_caching").properties["evidence"] == "Prompt caching reduces cost"
    edge = kg.store.get_edge("capability:prompt_caching", "concept:stable_prefix", "requires")
    assert edge.weight == 0.9 and edge.properties["tier"] == 3 and edge.properties["evidence_span"]
    assert kg.store.get_edge("concept:stable_prefix", "goal:cheaper_agent_loops", "enables") is None  # < 0.5
    names = {n.name for n in kg.nodes()}
    assert "bob@example.com" not in names and "Invented thing" not in names
    assert report.semantic["rejected"] == {"pii": 1, "evidence_not_in_text": 1, "low_weight": 1}
    calls = llm.calls
    _ingest(ws, root / "docs", tiers=(1, 2, 3), provider=llm, llm_review=False)
    assert llm.calls == calls  # unchanged file: its tier-3 result is reused, no new call


def test_tier_three_proposes_into_the_review_queue_by_default(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"docs/cache.md": DOC})
    report = _ingest(ws, root / "docs", tiers=(1, 2, 3), provider=FakeLLM(ANSWER))
    kg = ws.kg("t")
    assert kg.get_node("capability:prompt_caching") is None  # not in the KG: waiting for a reviewer
    assert not [e for e in kg.edges() if e.properties.get("tier") == 3]
    total, pending = kg.proposals.list("pending", origin="ingest.llm", limit=100)
    assert total == report.semantic["proposed"] > 0
    node = next(p for p in pending if p.kind == "node" and p.source == "capability:prompt_caching")
    assert node.evidence["evidence"] == "Prompt caching reduces cost" and node.evidence["file"].endswith("cache.md")
    edge = next(p for p in pending if p.kind == "edge" and p.type == "requires")
    assert edge.score == 0.9 and edge.evidence["evidence"]
    with pytest.raises(ProposalStale, match="accept that node first"):
        kg.proposals.accept(edge.id)  # its concept nodes are proposals too
    for p in pending:
        if p.kind == "node" and p.source in (edge.source, edge.target):
            kg.proposals.accept(p.id)
    accepted = kg.proposals.accept(edge.id)
    assert accepted.status == "accepted"
    promoted = kg.store.get_edge(edge.source, edge.target, "requires")
    assert promoted.properties["source"] == "ingest.llm" and promoted.properties["prediction_id"] == edge.id
    kg.proposals.undo(edge.id)
    assert kg.store.get_edge(edge.source, edge.target, "requires") is None
    _ingest(ws, root / "docs", tiers=(1, 2, 3), provider=FakeLLM(ANSWER))  # unchanged: nothing new
    assert kg.proposals.list("pending", origin="ingest.llm", limit=100)[0] == total - 2  # the 2 accepted nodes


def test_tier_three_caps_edges_per_text(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"docs/cache.md": DOC})
    words = DOC.split("\n\n")[1].split()  # the chunk's text (the heading is its section)
    concepts = [{"name": f"Thing {i}", "type": "concept", "evidence": words[i]} for i in range(14)]
    edges = [{"subject": f"Thing {i}", "predicate": "requires", "object": f"Thing {i + 1}", "weight": 0.6 + i / 100,
              "evidence": words[i]} for i in range(13)]
    report = _ingest(ws, root / "docs", tiers=(1, 3), provider=FakeLLM({"concepts": concepts, "edges": edges}),
                     llm_review=False)
    assert report.semantic["edges"] == 10 and report.semantic["rejected"] == {"over_edge_cap": 3}
    kept = edges_of(ws.kg("t"), "requires")
    assert ("concept:thing_12", "concept:thing_13") in kept and ("concept:thing_0", "concept:thing_1") not in kept


def test_tier_three_failure_never_blocks_tiers_one_and_two(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"docs/cache.md": DOC})
    for llm in (FakeLLM(error=ProviderError("upstream down")), FakeLLM("no json here"),
                FakeLLM({"concepts": [{"name": "x", "type": "person", "evidence": "x"}]})):
        report = _ingest(ws, root / "docs", tiers=(1, 2, 3), provider=llm)
        assert report.semantic["failed"] == 1 and report.semantic["nodes"] == 0
        kg = ws.kg("t")
        assert kg.node("doc:docs/cache.md").type == "document"
        assert ("concept:prompt_caching", "concept:stable_prefix") not in edges_of(kg, "requires")
        ws.delete("t")
