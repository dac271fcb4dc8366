"""Ranking metrics agree with ir-measures (pytrec_eval) on the same runs."""

from __future__ import annotations

import random

import pytest

from kgos.eval.metrics import mrr_at, ndcg_at, probe_metrics, recall_at
from kgos.eval.probes import load_probes
from kgos.errors import InvalidArgument


def random_case(rng: random.Random) -> tuple[list[str], set[str]]:
    pool = [f"n{i}" for i in range(40)]
    ranked = rng.sample(pool, rng.randint(0, 15))
    answers = set(rng.sample(pool, rng.randint(1, 4)))
    return ranked, answers


def test_metrics_match_ir_measures():
    ir = pytest.importorskip("ir_measures")
    rng = random.Random(3)
    cases = {f"q{i}": random_case(rng) for i in range(200)}
    qrels = [ir.Qrel(q, d, 1) for q, (_, ans) in cases.items() for d in ans]
    run = [ir.ScoredDoc(q, d, float(100 - r)) for q, (ranked, _) in cases.items() for r, d in enumerate(ranked)]
    measures = [ir.Success @ 1, ir.Success @ 5, ir.Success @ 10, ir.RR @ 10, ir.nDCG @ 10]
    ref: dict[tuple[str, str], float] = {}
    for m in ir.iter_calc(measures, qrels, run):
        ref[(m.query_id, str(m.measure))] = m.value
    for q, (ranked, answers) in cases.items():
        assert recall_at(ranked, answers, 1) == ref.get((q, "Success@1"), 0.0)
        assert recall_at(ranked, answers, 5) == ref.get((q, "Success@5"), 0.0)
        assert recall_at(ranked, answers, 10) == ref.get((q, "Success@10"), 0.0)
        assert mrr_at(ranked, answers, 10) == pytest.approx(ref.get((q, "RR@10"), 0.0))
        assert ndcg_at(ranked, answers, 10) == pytest.approx(ref.get((q, "nDCG@10"), 0.0))


def test_hand_computed_values():
    m = probe_metrics(["a", "b", "c"], {"c", "z"})
    assert (m["recall@1"], m["recall@5"], m["mrr@10"]) == (0.0, 1.0, pytest.approx(1 / 3))
    assert m["ndcg@10"] == pytest.approx((1 / 2) / (1 + 1 / 1.584962500721156))
    assert probe_metrics([], {"a"})["mrr@10"] == 0.0


def test_probe_files(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "1", "query": "q", "relevant": ["a"], "lenient": ["b"], "level": "goal"}\n\n')
    [p] = load_probes(path)
    assert (p.relevant, p.lenient, p.level) == (frozenset({"a"}), frozenset({"b"}), "goal")
    for bad in ('{"query": ""}', '{"query": "q", "relevant": []}', "not json"):
        path.write_text(bad + "\n")
        with pytest.raises(InvalidArgument, match=r"p\.jsonl"):
            load_probes(path)
