"""Research answers a person can read (issue 29, goals 2 and 3): document markup never becomes a
claim, the extractive answer is deduplicated prose with every sentence cited, and conflicts are found
however they are phrased, flagged in the answer with both sources and counted in the confidence."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import kgos
from kgos.research import research
from kgos.research.conflicts import conflict_between, facts_of, quantities
from kgos.research.extract import extract_document, prose_only

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import conflict_pairs  # noqa: E402

MARKUP = re.compile(r"```|~~~|^\s*[$#>] |[\u2500-\u259f]|\|\s*-{3,}|\+-{3,}\+", re.MULTILINE)
DOC = """# Cutting API costs

Use the Batch API for offline jobs. It halves the price of every request.

```bash
$ kgos trace demo --from feature:batch_api --to goal:cost_reduction
curl -X POST https://api.example.com/v1/batches -d @jobs.jsonl
```

$ kgos search demo "reduce costs" --explain

| option | effect |
|--------|--------|
| --fast | skip checks |

┌──────────┐
│ box art  │
└──────────┘

Prompt caching cuts input costs by up to 90% for repeated prefixes.
"""


def claims_of(text: str, source: str = "doc.md") -> list[dict]:
    return extract_document({"id": "d", "title": "", "source": source, "chunks": [{"text": text, "start": 0}]},
                            [])["claims"]


def test_markup_is_kept_out_of_claims_and_spans_still_point_at_the_text():
    claims = claims_of(DOC)
    texts = [c["text"] for c in claims]
    assert texts == ["Use the Batch API for offline jobs.", "It halves the price of every request.",
                     "Prompt caching cuts input costs by up to 90% for repeated prefixes."]
    for c in claims:
        assert DOC[c["span"][0]:c["span"][1]] == c["text"]  # blanking kept every offset
    assert len(prose_only(DOC)) == len(DOC) and prose_only(DOC).count("\n") == DOC.count("\n")


def test_man_page_prose_is_kept():
    page = "       tar saves many files together into a single tape or disk archive, and can restore\n" \
           "       individual files from the archive.\n"
    assert [c["text"] for c in claims_of(page)] == [
        "tar saves many files together into a single tape or disk archive, and can restore individual files "
        "from the archive."]


@pytest.mark.parametrize("text, family, low, high", [
    ("handles 100K QPS", "rate", 1e5, 1e5), ("handles 100,000 queries per second", "rate", 1e5, 1e5),
    ("handles 1e5 QPS", "rate", 1e5, 1e5), ("takes 10-20 ms", "time", 0.01, 0.02),
    ("between 2 and 4 GB", "bytes", 2 * 1024 ** 3, 4 * 1024 ** 3), ("costs $4,000 per month", "usd", 4000, 4000),
    ("2.5 million vectors", "vectors", 2.5e6, 2.5e6)])
def test_quantities_are_normalised(text, family, low, high):
    q = quantities(text)[0]
    assert (q.family, q.low, q.high) == (family, pytest.approx(low), pytest.approx(high))


def test_the_issue_s_example_is_a_conflict_and_its_agreeing_rewrite_is_not():
    def fact(text, source):
        claim = claims_of(text, source)[0]
        return facts_of({**claim, "sources": [{"source": source}]})
    vendor = fact("Qdrant reaches 100K QPS on a single node according to the vendor benchmark.", "vendor.md")
    ours = fact("In our tests Qdrant handles 50K QPS on a single node.", "ours.md")
    same = fact("On a single node Qdrant handles 100,000 queries per second.", "ours.md")
    assert conflict_between(vendor, ours)[0] == "number"
    assert conflict_between(vendor, same) is None


def test_planted_pairs_recall_and_false_conflicts():
    """benchmarks/data/conflicts/pairs.jsonl: 24 conflicting pairs (scales, units, ranges, money,
    comparatives, negation, dates) and 22 agreeing ones, all in different words."""
    pairs = conflict_pairs.load_pairs()
    assert sum(p["conflict"] for p in pairs) >= 20
    kinds = {p["kind"].split("-")[0] for p in pairs if p["conflict"]}
    assert {"number", "comparative", "negation", "date"} <= kinds
    after = conflict_pairs.measure(pairs)
    assert after["recall"] >= 0.9 and after["false_conflicts"] <= 0.05, after
    assert conflict_pairs.measure(pairs, before=True)["recall"] < 0.2  # the same-frame comparison alone


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    folder = tmp_path / "planted"
    folder.mkdir()
    (folder / "vendor.md").write_text(
        "# Qdrant benchmark\n\nQdrant handles 100K QPS on a single node according to the vendor benchmark.\n\n"
        "Qdrant supports sparse vectors in hybrid queries.\n\n```\n$ docker run qdrant/qdrant\n```\n")
    (folder / "ours.md").write_text(
        "# Our Qdrant tests\n\nIn our tests Qdrant handles 50K QPS on a single node.\n\n"
        "| node | qps |\n|------|-----|\n| one  | 50K |\n\n"
        "Qdrant supports sparse vectors in hybrid queries, which we used for every test.\n")
    return folder


def test_a_research_run_flags_the_conflict_with_both_sources_and_no_markup(tmp_path: Path, planted: Path):
    ws = kgos.Workspace(tmp_path / "ws")
    r = research(ws, "How many QPS does Qdrant handle on a single node?", corpus=str(planted), max_iterations=3)
    assert not MARKUP.search(r.answer), r.answer
    flag = next(c for c in r.conflicts if c["kind"] == "number")
    assert "100K QPS" in flag["sentence"] and "50K QPS" in flag["sentence"] and flag["sentence"] in r.answer
    sides = [{r.citations[n - 1]["source"] for n in side} for side in flag["citations"]]
    assert sorted(map(sorted, sides)) == [["ours.md"], ["vendor.md"]]  # both sides, each with its source
    assert "Sources disagree about Qdrant (numbers)" in r.answer
    assert all(s["citations"] for s in r.sentences)  # every sentence cites its sources
    assert r.confidence < 1.0  # an open conflict lowers the run's confidence
    ws.close()


@pytest.mark.parametrize("kind", ["empty", "binary", "near-duplicates"])
def test_bad_corpora_give_a_clear_answer(tmp_path: Path, kind: str):
    folder = tmp_path / kind
    folder.mkdir()
    if kind == "empty":
        (folder / "a.md").write_text("")
    elif kind == "binary":
        (folder / "x.bin").write_bytes(bytes(range(256)) * 20)
        (folder / "y.md").write_bytes(b"\x00\x01\xff" * 300)
    else:
        for i in range(200):
            (folder / f"d{i}.md").write_text(f"Qdrant handles {100 + i % 3}K QPS on a single node in run {i}.\n")
    ws = kgos.Workspace(tmp_path / "ws")
    r = research(ws, "How many QPS does Qdrant handle?", corpus=str(folder), max_iterations=3)
    assert r.status == "completed"
    if kind == "near-duplicates":  # one sentence, cited by its copies; 100K/101K/102K agree within 10%
        assert r.conflicts == () and len(r.sentences) == 1
        assert len(r.sentences[0]["citations"] + r.sentences[0]["restated"]) > 1
    else:
        assert r.answer == "No source found answers 'How many QPS does Qdrant handle?'." and not r.citations
    ws.close()


def test_with_a_model_the_prompt_names_the_disagreement(tmp_path: Path, planted: Path):
    from expert_helpers import ScriptedProvider
    llm = ScriptedProvider(["Sources disagree: 100K [1] versus 50K [2]."])
    ws = kgos.Workspace(tmp_path / "ws")
    r = research(ws, "How many QPS does Qdrant handle on a single node?", corpus=str(planted), max_iterations=1,
                 provider=llm, configs={"output": {"provider": "scripted"}})
    prompt = llm.calls[0]["messages"][0].content
    assert "Disagreements (say so, citing both):" in prompt
    assert re.search(r"\[\d\] and \[\d\] disagree \(number: (100K QPS vs 50K QPS|50K QPS vs 100K QPS)\)", prompt)
    assert any(c["kind"] == "number" for c in r.conflicts)
    ws.close()
