"""The research pipeline of spec/004 end to end on a small corpus and a tiny KG: each stage, the
convergence criteria and caps, asking a person, replay identity and tamper detection, bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from research_helpers import DOCS, corpus  # noqa: F401  (the shared corpus fixture)

import kgos
from kgos.errors import InvalidArgument, KGNotFound, RunNotFound, RunStateConflict, SnapshotMismatch
from kgos.pipeline import BaseModule, ProcessContext, StageInput, StageOutput, register
from kgos.research import (
    ResearchRequest,
    ResearchRunner,
    RunControl,
    diff_runs,
    replay,
    research,
    resume,
    runs,
)
from kgos.research.corpus import open_corpus
from kgos.research.extract import extract_document
from kgos.research.manifest import RunStore
from kgos.research.merge import integrate
from kgos.research.reasoner import DefaultReasoner
from kgos.research.stages import QueryModule, SearchModule, StoreModule


@pytest.fixture
def tools(ws: kgos.Workspace) -> kgos.KG:
    g = ws.create("tools")
    g.add_node("tar", "command", "tar stores many files in one archive file.", id="tar")
    g.add_node("zip", "command", "zip packages and compresses files into a zip archive.", id="zip",
               properties={"aliases": ["info-zip"]})
    return g


def run(coro):
    return asyncio.run(coro)


# -- stages ---------------------------------------------------------------------------------------------
def test_query_stage_intent_entities_subtopics() -> None:
    out = run(QueryModule().process(StageInput({"question": "What is the difference between tar and zip?"}),
                                    ProcessContext())).data
    assert out["intent"]["type"] == "comparison" and out["intent"]["retrieval_intent"] == "comparison"
    assert out["entities"] == ["tar", "zip"]
    assert [s["id"] for s in out["subtopics"]] == ["products", "benchmarks", "pros_cons", "about:tar", "about:zip"]
    how = run(QueryModule().process(StageInput({"question": "How do I compress a folder with zip?"}),
                                    ProcessContext())).data
    assert how["intent"]["type"] == "how_to" and {"steps", "prerequisites", "examples"} <= {
        s["id"] for s in how["subtopics"]}
    refined = run(QueryModule().process(StageInput({"question": "tar", "refinement": {
        "queries": ["tar exclude"], "keep_original": False}}), ProcessContext())).data
    assert refined["queries"] == ["tar exclude"]


def test_corpus_chunks_spans_and_cache(ws: kgos.Workspace, corpus: Path) -> None:
    c = open_corpus(corpus, ws.cache_dir / "rc", "hash")
    assert sorted({ch.path for ch in c.chunks}) == ["gzip.md", "tar.txt", "zip.txt"]  # the binary is skipped
    for ch in c.chunks:
        assert (corpus / ch.path).read_text()[ch.start:ch.end] == ch.text
    top = c.search_scored("exclude files pattern", 3, "bm25")
    assert top[0][0].path == "tar.txt"
    assert open_corpus(corpus, ws.cache_dir / "rc", "hash") is c  # same content: the same index
    (corpus / "new.txt").write_text("rsync copies files")
    assert open_corpus(corpus, ws.cache_dir / "rc", "hash").fingerprint != c.fingerprint


def test_a_saved_corpus_index_is_mapped_and_answers_as_the_built_one(ws: kgos.Workspace, corpus: Path,  # noqa: F811
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What a worker saves, the server maps (np.load mmap_mode="r", no pickle, no JSON per chunk): the
    same chunks, BM25 and vector answers and routing as the index built in memory."""
    from kgos.research import corpus as corpus_mod
    monkeypatch.setattr(corpus_mod, "_open", {})
    built = open_corpus(corpus, ws.cache_dir / "rc", "hash")
    monkeypatch.setattr(corpus_mod, "_open", {})
    monkeypatch.setattr(corpus_mod, "_build", lambda *a, **k: pytest.fail("the saved index was built again"))
    mapped = open_corpus(corpus, ws.cache_dir / "rc", "hash")
    assert mapped is not built and isinstance(mapped.vectors, np.memmap)
    assert list(mapped.chunks) == list(built.chunks) and mapped.text_bytes == built.text_bytes
    for q in ("exclude files pattern", "compression level", "unknownword"):
        for backend in ("bm25", "vector"):
            assert mapped.search_scored(q, 5, backend) == built.search_scored(q, 5, backend)
            assert mapped.count_matches(q, backend) == built.count_matches(q, backend)
    routing = {"*.md": ["bm25"], "*.txt": ["vector"]}
    assert mapped.routed("bm25", routing).tolist() == [c.path.endswith(".md") for c in built.chunks]


def test_search_stage_backends_routing_and_recording(ws: kgos.Workspace, corpus: Path, tools: kgos.KG) -> None:
    c = open_corpus(corpus, ws.cache_dir / "rc", "hash")
    m = SearchModule({"source_routing": {"*.md": ["bm25"], "*.txt": ["vector"]}, "k": 20})
    ctx = ProcessContext(services={"workspace": ws, "corpus": c})
    data = {"queries": ["compression level"], "sources": {"kgs": {"tools": "1"}, "corpus": c.fingerprint}}
    out = run(m.process(StageInput(data), ctx))
    per = out.data["per_backend"]
    assert all(h.startswith("corpus:gzip.md") for h in per["bm25|compression level"])  # only .md to bm25
    assert all(".txt#" in h for h in per["vector|compression level"])
    assert any(h["backend"] == "kg:tools" for h in out.data["hits"])
    assert len(out.external) == 3  # kg, bm25, vector answers recorded for replay
    again = run(m.replay(m.snapshot(StageInput(data), out), ProcessContext()))  # no workspace, no corpus
    assert again.sha256 == out.sha256


def test_extract_claims_have_source_spans(corpus: Path) -> None:
    text = DOCS["zip.txt"]
    doc = {"id": "zip.txt", "title": "zip", "source": "zip.txt", "chunks": [{"start": 0, "text": text}]}
    got = extract_document(doc, ["tar"])
    texts = [c["text"] for c in got["claims"]]
    assert "zip compresses each file separately, unlike tar." in texts
    for c in got["claims"]:
        assert " ".join(text[c["span"][0]:c["span"][1]].split()) == c["text"]
    level = next(c for c in got["claims"] if "level" in c["text"])
    assert level["numbers"] == ["6"] and level["subject"] == "zip"
    assert {"zip", "tar"} <= {e["key"] for e in got["entities"]}


def _claim(cid: str, text: str, source: str, authority: str = "official", numbers=(), negated=False) -> dict:
    return {"id": cid, "text": text, "source": source, "doc": source, "span": [0, len(text)], "subject": "x",
            "entities": [], "numbers": list(numbers), "negated": negated, "authority": authority, "age_days": None}


def test_merge_dedup_corroboration_and_conflicts() -> None:
    extracted = {
        "entities": [{"key": "zip", "name": "zip", "type": "term", "aliases": ["info-zip"]},
                     {"key": "info-zip", "name": "Info-ZIP", "type": "term", "aliases": []},
                     {"key": "archives", "name": "archives", "type": "term", "aliases": []},
                     {"key": "archive", "name": "archive", "type": "term", "aliases": []}],
        "claims": [_claim("c:1", "The default compression level is 6.", "zip.txt", numbers=["6"]),
                   _claim("c:2", "The default compression level is 9.", "gzip.md", "blog", numbers=["9"]),
                   _claim("c:3", "zip compresses each file separately.", "zip.txt"),
                   _claim("c:4", "Zip compresses each file separately!", "faq.txt"),
                   _claim("c:5", "zip does not compress each file separately.", "forum.txt", "forum", negated=True)],
        "relations": []}
    kn, stats = integrate({}, extracted, 1)
    assert set(kn["entities"]) == {"zip", "archives"}  # alias and stem duplicates merged
    assert "Info-ZIP" in kn["entities"]["zip"]["aliases"]
    assert [s["source"] for s in kn["claims"]["c:3"]["sources"]] == ["zip.txt", "faq.txt"]  # corroborated
    kinds = {(c["kind"], tuple(c["claims"])): c["resolution"] for c in kn["conflicts"]}
    assert kinds[("number", ("c:1", "c:2"))] == {"winner": "c:1", "by": "authority"}
    assert kinds[("negation", ("c:3", "c:5"))]["winner"] == "c:3"
    assert stats["new_claims"] == 4 and stats["corroborated"] == 1 and stats["new_info"] == 1.0
    _, again = integrate(kn, extracted, 2)
    assert again["new_info"] == 0.0


def test_merge_entity_embedding_similarity() -> None:
    from kgos.embed.registry import get_embedder
    emb = get_embedder("hash").embed
    ex = {"entities": [{"key": "postgresql", "name": "PostgreSQL", "type": "term", "aliases": []}],
          "claims": [], "relations": []}
    kn, _ = integrate({}, ex, 1)
    near = {"entities": [{"key": "postgresql.", "name": "PostgreSQL.", "type": "term", "aliases": []}],
            "claims": [], "relations": []}
    merged, _ = integrate(kn, near, 2, entity_similarity=0.8, embed=emb)
    assert list(merged["entities"]) == ["postgresql"]
    apart, _ = integrate(kn, near, 2, entity_similarity=0.8, embed=None)
    assert len(apart["entities"]) == 2


def test_store_applies_or_proposes_and_replay_never_writes(ws: kgos.Workspace, tools: kgos.KG) -> None:
    ex = {"entities": [{"key": "tar", "name": "tar", "type": "term", "aliases": []}],
          "claims": [{**_claim("c:abc", "tar stores many files in one archive.", "tar.txt"), "entities": ["tar"]}],
          "relations": []}
    kn, _ = integrate({}, ex, 1)
    data = {"knowledge": kn, "iteration": 1, "run_id": "r", "target": "notes"}
    ctx = ProcessContext(services={"workspace": ws})
    m = StoreModule()
    out = run(m.process(StageInput(data), ctx))
    assert out.data["mode"] == "auto" and out.metrics["mode"] == "apply"  # a KG the run creates: written
    assert ws.kg("notes").get_node("research:claim:abc") is not None
    assert {e.type for e in ws.kg("notes").edges()} == {"mentions", "cited_from"}
    again = run(m.process(StageInput(data), ctx))
    assert again.metrics["mode"] == "apply"  # still this run's KG
    other = run(m.process(StageInput({**data, "run_id": "r2"}), ctx))
    assert other.metrics["mode"] == "propose"  # another run's KG: its delta waits for a reviewer
    ws.delete("notes")
    assert run(m.replay(m.snapshot(StageInput(data), out), ctx)).sha256 == out.sha256
    assert not ws.exists("notes")  # the replay did not write
    p = StoreModule({"mode": "propose"})
    run(p.process(StageInput({**data, "target": "tools"}), ctx))
    total, pending = ws.kg("tools").proposals.list("pending", origin="research")
    assert total == 3 and {x.kind for x in pending} == {"node"}  # claim, entity, source nodes await review
    assert ws.kg("tools").get_node("research:claim:abc") is None


# -- the reasoner and the convergence criteria ----------------------------------------------------------
def _reason_input(claims: dict, **over) -> dict:
    plan = {"question": "what is zip", "entities": ["zip"], "queries": ["what is zip"],
            "subtopics": [{"id": "definition", "label": "definition", "cues": [" is a "]},
                          {"id": "uses", "label": "uses", "cues": ["used"]},
                          {"id": "alternatives", "label": "alternatives", "cues": ["alternative"]},
                          {"id": "about:zip", "label": "about zip", "cues": [], "entity": "zip"}]}
    data = {"iteration": 1, "plan": plan, "knowledge": {"claims": claims, "entities": {}, "conflicts": [],
                                                        "relations": []},
            "merge_stats": {"new_info": 0.5}, "search": {"total_candidates": 10, "hits": ["a", "b", "c"]},
            "history": [], "budget": {}, "answers": []}
    data.update(over)
    return data


def _sourced(cid: str, text: str, n: int) -> dict:
    c = _claim(cid, text, "s0")
    c.update(entities=["zip"], sources=[{"source": f"s{i}", "doc": f"s{i}", "span": [0, 1], "iteration": 1}
                                        for i in range(n)])
    return c


def decide(data: dict, **config) -> dict:
    return run(DefaultReasoner(config).process(StageInput(data), ProcessContext())).data


def test_confidence_criterion() -> None:
    three = {"c:1": _sourced("c:1", "zip is a packager.", 3)}
    out = decide(_reason_input(three))
    assert out["assessment"]["confidence"] == pytest.approx(0.875)  # (1 - 0.5^3) x 1 x 1 x 1
    assert out["decision"]["action"] == "stop" and out["decision"]["criterion"] == "confidence"
    one = decide(_reason_input({"c:1": _sourced("c:1", "zip is a packager.", 1)}))
    assert one["decision"]["action"] == "loop" and one["assessment"]["confidence"] == 0.5
    assert any(g["type"] == "verification" for g in one["assessment"]["gaps"])


def test_coverage_criterion() -> None:
    claims = {"c:1": _sourced("c:1", "zip is a packager.", 1),
              "c:2": _sourced("c:2", "zip is used for archives.", 1),
              "c:3": _sourced("c:3", "zip has an alternative: tar.", 1)}
    out = decide(_reason_input(claims))
    assert out["assessment"]["coverage"] == 1.0 and out["decision"]["criterion"] == "coverage"
    partial = decide(_reason_input({"c:1": _sourced("c:1", "zip is a packager.", 1)}))
    assert partial["assessment"]["coverage"] == 0.5  # definition + about:zip of 4
    assert {g["reason"] for g in partial["assessment"]["gaps"]} >= {"missing_subtopic"}


def test_diminishing_returns_needs_two_iterations() -> None:
    claims = {"c:1": _sourced("c:1", "zip is a packager.", 1)}
    once = decide(_reason_input(claims, merge_stats={"new_info": 0.01}))
    assert once["decision"]["action"] == "loop"
    twice = decide(_reason_input(claims, merge_stats={"new_info": 0.01}, iteration=2,
                                 history=[{"iteration": 1, "new_info": 0.04, "queries": []}]))
    assert twice["decision"]["criterion"] == "diminishing_returns"
    not_yet = decide(_reason_input(claims, merge_stats={"new_info": 0.01}, iteration=2,
                                   history=[{"iteration": 1, "new_info": 0.06, "queries": []}]))
    assert not_yet["decision"]["action"] == "loop"


def test_budget_and_max_iterations_criteria() -> None:
    claims = {"c:1": _sourced("c:1", "zip is a packager.", 1)}
    for budget in ({"elapsed_seconds": 5.0, "seconds": 5.0}, {"tokens_used": 10, "tokens": 10},
                   {"cost_used": 0.0, "cost": 0.0}):
        assert decide(_reason_input(claims, budget=budget))["decision"]["criterion"] == "budget"
    assert decide(_reason_input(claims, iteration=10))["decision"]["criterion"] == "max_iterations"
    assert decide(_reason_input(claims, iteration=3), max_iterations=3)["decision"]["criterion"] == "max_iterations"


def test_conflict_gap_comes_first_and_refinement_types() -> None:
    a, b = _sourced("c:1", "zip level is 6.", 1), _sourced("c:2", "zip level is 9.", 1)
    b["sources"][0]["source"] = "other"
    conflicts = [{"kind": "number", "claims": ["c:1", "c:2"], "resolution": None}]
    data = _reason_input({"c:1": a, "c:2": b})
    data["knowledge"]["conflicts"] = conflicts
    out = decide(data)
    assert out["decision"]["loop_type"] == "conflict_resolution" and out["decision"]["next"]["authority_first"]
    broad = decide(_reason_input({}, search={"total_candidates": 5000, "hits": ["a"] * 12}))
    assert any(g["reason"] == "too_broad" for g in broad["assessment"]["gaps"])
    data = _reason_input({}, search={"total_candidates": 0, "hits": []})
    data["plan"]["entities"] = ["zip", "levels"]
    narrow = decide(data)
    assert narrow["decision"]["loop_type"] == "refinement"
    assert set(narrow["decision"]["next"]["queries"]) >= {"zip", "levels"}


# -- whole runs ---------------------------------------------------------------------------------------------
def test_research_run_answer_citations_manifest(ws: kgos.Workspace, corpus: Path, tools: kgos.KG) -> None:
    r = research(ws, "What is the difference between tar and zip?", corpus=str(corpus), kgs=["tools"],
                 into="notes")
    # coverage 0.8 (no benchmark numbers about tar or zip), single sources: an expansion loop, a
    # verification loop, then two iterations without new information
    assert (r.status, r.stopped_by, r.iterations) == ("completed", "diminishing_returns", 3)
    assert [d["loop_type"] for d in r.decisions] == ["expansion", "verification", None]
    assert r.citations and all(s["citations"] for s in r.sentences)
    for c in r.citations:  # every citation points at the text it cites
        if not c["source"].startswith("kg:"):
            doc = (corpus / c["source"]).read_text()
            cited = " ".join(doc[c["span"][0]:c["span"][1]].split())[:20].lower()
            assert any(cited in s["text"].lower() for s in r.sentences if c["n"] in s["citations"]), (cited, r.answer)
    m = json.loads((Path(r.folder) / "manifest.json").read_text())
    assert m["query"]["intent"]["type"] == "comparison"
    stages = [e["stage"] for e in m["iterations"][0]["stages"]]
    assert stages == ["query", "search", "ingest", "extract", "merge", "store", "reason"]
    assert all(e["config_hash"].startswith("sha256:") for e in m["iterations"][0]["stages"])
    assert m["final_state"]["convergence_reason"] == "diminishing_returns"
    assert m["iterations"][1]["reason"] == "expansion" and m["iterations"][1]["reasoning"]["rationale"]
    assert (Path(r.folder) / "outputs" / "answer.md").read_text().startswith("# What is the difference")
    assert ws.kg("notes").node_count() == r.kg_delta["nodes"] > 0
    assert runs(ws)[0]["run_id"] == r.run_id


def test_replay_identity_and_tamper_detection(ws: kgos.Workspace, corpus: Path, tools: kgos.KG) -> None:
    r = research(ws, "How do I compress files with gzip or zip?", corpus=str(corpus), kgs=["tools"], into="tools",
                 max_iterations=3, reasoner="reason.conservative")
    rep = replay(ws, r.run_id)
    assert rep.identical and rep.output_sha256 == r.output_sha256 and rep.answer == r.answer
    assert len(rep.stages) == 7 * r.iterations + 1
    if r.iterations > 1:
        assert replay(ws, r.run_id, from_iteration=2).identical
    folder = Path(r.folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    edited = {**manifest, "query": {**manifest["query"], "original": "something else"}}
    (folder / "manifest.json").write_text(json.dumps(edited))
    with pytest.raises(SnapshotMismatch) as err:
        replay(ws, r.run_id)
    assert err.value.field == "manifest_sha256"
    store = RunStore(ws.home)
    resealed = json.loads(json.dumps(manifest))
    resealed["iterations"][0]["stages"][1]["output_hash"] = "sha256:" + "0" * 64
    store.save_manifest(resealed)  # a forger who re-seals is caught by the snapshot's hash
    with pytest.raises(SnapshotMismatch) as err:
        replay(ws, r.run_id)
    assert err.value.field == "iteration 1.search.output_hash"
    store.save_manifest(manifest)
    snap_path = folder / manifest["iterations"][0]["stages"][0]["snapshot"]
    snap = json.loads(snap_path.read_text())
    snap["input"]["question"] = "edited"
    snap_path.write_text(json.dumps(snap))
    with pytest.raises(SnapshotMismatch) as err:
        replay(ws, r.run_id)
    assert err.value.field == "input_sha256"


def test_diff_two_runs_stage_by_stage(ws: kgos.Workspace, corpus: Path) -> None:
    a = research(ws, "What is zip?", corpus=str(corpus), max_iterations=1)
    b = research(ws, "What is zip?", corpus=str(corpus), max_iterations=1,
                 configs={"search": {"strategy": "round_robin"}})
    d = diff_runs(ws, a.run_id, b.run_id)
    first = d["first_difference"]
    assert (first["iteration"], first["stage"]) == (1, "search")
    assert first["same"]["input_hash"] and not first["same"]["config_hash"]
    assert diff_runs(ws, a.run_id, a.run_id)["first_difference"] is None


class NeverConverges(DefaultReasoner):
    """Always loops: the runner's caps must stop it."""

    id = "reason.test_never"

    async def run(self, input, context, config):
        return StageOutput({"assessment": {"confidence": 0.0, "coverage": 0.0, "new_info": 1.0, "gaps": [],
                                           "answer_claims": []},
                            "decision": {"action": "loop", "loop_type": "expansion", "rationale": "more!",
                                         "next": {"queries": ["zip"]}}})


register(replace=True)(NeverConverges)


def test_a_reasoner_that_never_converges_hits_the_caps(ws: kgos.Workspace, corpus: Path) -> None:
    r = research(ws, "What is zip?", corpus=str(corpus), reasoner="reason.test_never", max_iterations=3)
    assert (r.iterations, r.stopped_by, r.status) == (3, "max_iterations", "completed")
    assert r.decisions[-1]["by"] == "runner"
    default_cap = research(ws, "What is zip?", corpus=str(corpus), reasoner="reason.test_never",
                           configs={"reason": {"max_iterations": 2}})
    assert default_cap.iterations == 2
    timed = research(ws, "What is zip?", corpus=str(corpus), reasoner="reason.test_never", budget_seconds=0.05)
    assert timed.stopped_by == "budget" and 1 <= timed.iterations < 100


def test_one_word_question_asks_and_resumes(ws: kgos.Workspace, corpus: Path) -> None:
    r = research(ws, "zip", corpus=str(corpus))
    assert r.status == "waiting" and "zip" in r.pending_question and r.answer == ""
    with pytest.raises(RunStateConflict, match="waits for an answer"):
        resume(ws, r.run_id)
    done = resume(ws, r.run_id, "how to compress a folder")
    assert done.status == "completed" and done.run_id == r.run_id and done.answer
    assert [d["action"] for d in done.decisions][:2] == ["ask", "answer"]
    with pytest.raises(RunStateConflict):
        resume(ws, r.run_id, "again")
    asked = []
    inline = research(ws, "tar", corpus=str(corpus), on_ask=lambda q: asked.append(q) or "what is it")
    assert asked and inline.status == "completed"
    assert replay(ws, done.run_id).identical


def test_user_interrupt_and_breakpoint(ws: kgos.Workspace, corpus: Path) -> None:
    control = RunControl()
    control.stop()
    runner = ResearchRunner(ws, ResearchRequest("What is zip?", corpus=str(corpus)), control=control)
    r = runner.run()
    assert (r.status, r.stopped_by, r.iterations) == ("stopped", "user_interrupt", 0)
    assert r.answer.startswith("No source found")
    control = RunControl(breakpoints=("merge",))
    runner = ResearchRunner(ws, ResearchRequest("What is zip?", corpus=str(corpus), max_iterations=1),
                            control=control)
    import threading
    t = threading.Thread(target=runner.run)
    t.start()
    events = control.events_after(0, timeout=10)
    while not any(e["event"] == "breakpoint" for e in events):
        events = control.events_after(0, timeout=10)
    assert [e["stage"] for e in events if e["event"] == "stage_completed"] == ["query", "search", "ingest", "extract"]
    control.step()  # merge runs, then it stays paused before store
    control.events_after(len(control.events), timeout=2)
    control.resume()
    t.join(30)
    assert not t.is_alive() and runner.manifest["status"] == "completed"


class Broken(BaseModule):
    id = "extract.test_broken"
    category = "extract"

    async def run(self, input, context, config):
        raise RuntimeError("extractor bug")


register(replace=True)(Broken)


def test_hot_swap_a_module_between_iterations(ws: kgos.Workspace, corpus: Path) -> None:
    runner = ResearchRunner(ws, ResearchRequest("What is zip?", corpus=str(corpus), max_iterations=2,
                                                reasoner="reason.test_never"))
    swapped = []

    def on_event(kind: str, payload: dict) -> None:
        if kind == "decision" and not swapped:
            swapped.append(runner.swap_module("search", "search.multi", {"strategy": "round_robin"}))

    emit = runner.control.emit
    runner.control.emit = lambda kind, payload: (emit(kind, payload), on_event(kind, payload))[0]
    r = runner.run()
    m = json.loads((Path(r.folder) / "manifest.json").read_text())
    first, second = (next(e for e in it["stages"] if e["stage"] == "search") for it in m["iterations"])
    assert first["config_hash"] != second["config_hash"]  # the new config was used from iteration 2
    assert replay(ws, r.run_id).identical  # each call replays with the config it ran with
    with pytest.raises(InvalidArgument):
        runner.swap_module("nope")


def test_a_failing_module_stops_or_is_skipped(ws: kgos.Workspace, corpus: Path) -> None:
    r = research(ws, "What is zip?", corpus=str(corpus), modules={"extract": "extract.test_broken"})
    assert (r.status, r.stopped_by) == ("failed", "stage_failed")
    m = json.loads((Path(r.folder) / "manifest.json").read_text())
    failed = m["iterations"][0]["stages"][-1]
    assert failed["stage"] == "extract" and failed["status"] == "failed" and "extractor bug" in failed["error"]
    assert replay(ws, r.run_id).identical  # the failure replays as the same failure
    skipped = research(ws, "What is zip?", corpus=str(corpus), modules={"extract": "extract.test_broken"},
                       on_failure="skip", max_iterations=2)
    assert skipped.status == "completed" and skipped.iterations == 2


def test_bad_input_gives_clear_results_or_errors(ws: kgos.Workspace, tmp_path: Path, corpus: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    r = research(ws, "What is zip?", corpus=str(empty), max_iterations=2)
    assert r.status == "completed" and "No source found" in r.answer and r.citations == ()
    with pytest.raises(KGNotFound):
        research(ws, "What is zip?", kgs=["nope"])
    zero = research(ws, "What is zip?", corpus=str(corpus), budget_seconds=0)
    assert (zero.iterations, zero.stopped_by) == (0, "budget")
    with pytest.raises(InvalidArgument):
        research(ws, "  ")
    with pytest.raises(InvalidArgument):
        research(ws, "What is zip?", max_iterations=0)
    with pytest.raises(InvalidArgument, match="not exist"):
        research(ws, "What is zip?", corpus=str(tmp_path / "missing"))
    with pytest.raises(InvalidArgument, match="reason: query.intent is a query module"):
        research(ws, "What is zip?", reasoner="query.intent")
    with pytest.raises(RunNotFound):
        replay(ws, "r_2020-01-01_001")
    with pytest.raises(InvalidArgument):
        replay(ws, "../etc")


def test_large_values_are_stored_once_and_still_checked(ws: kgos.Workspace, corpus: Path, monkeypatch) -> None:
    import kgos.research.manifest as manifest
    monkeypatch.setattr(manifest, "BLOB_BYTES", 200)
    r = research(ws, "What is the difference between tar and zip?", corpus=str(corpus), max_iterations=2)
    blobs = sorted((Path(r.folder) / "blobs").glob("*.json"))
    assert blobs
    merge = json.loads((Path(r.folder) / "snapshots" / "1-merge.json").read_text())
    ref = merge["output"]["knowledge"]["$blob"]
    store = json.loads((Path(r.folder) / "snapshots" / "1-store.json").read_text())
    assert store["input"]["knowledge"] == {"$blob": ref}  # the same knowledge, stored once
    assert replay(ws, r.run_id).identical
    blob = Path(r.folder) / "blobs" / f"{ref.split(':')[1]}.json"
    kn = json.loads(blob.read_text())
    kn["claims"] = {}
    blob.write_text(json.dumps(kn))
    with pytest.raises(SnapshotMismatch):
        replay(ws, r.run_id)
