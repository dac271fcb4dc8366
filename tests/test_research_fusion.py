"""The five merge strategies of spec/004 against the spec's own RRF code and hand-computed rankings,
and source-type routing by glob."""

from __future__ import annotations

import pytest

from kgos.errors import InvalidArgument
from kgos.research.fusion import (
    fuse,
    interleave_by_score,
    reciprocal_rank_fusion,
    round_robin,
    routed_backends,
    union_dedupe,
    weighted,
)


class Result:
    def __init__(self, id: str) -> None:
        self.id = id


def spec_rrf(backend_results, k: int = 60):
    """spec/004 "RRF Algorithm", verbatim."""
    scores = {}
    for results in backend_results:
        for rank, item in enumerate(results):
            scores[item.id] = scores.get(item.id, 0) + 1 / (k + rank + 1)
    return sorted(scores.items(), key=lambda x: -x[1])


def hits(backend: str, *pairs: tuple[str, float], text: dict[str, str] | None = None) -> list[dict]:
    return [{"id": i, "score": s, "backend": backend, "text": (text or {}).get(i, f"text of {i}")} for i, s in pairs]


A = hits("A", ("a", 3.0), ("b", 2.0), ("c", 1.0))
B = hits("B", ("b", 10.0), ("c", 5.0), ("d", 0.0))


@pytest.mark.parametrize("k", [1, 60])
def test_rrf_matches_the_spec_code(k: int) -> None:
    lists = [A, B, hits("C", ("d", 1.0), ("e", 0.5), ("a", 0.1))]
    spec = spec_rrf([[Result(h["id"]) for h in lst] for lst in lists], k)
    ours = reciprocal_rank_fusion(lists, k)
    assert [(h["id"], h["fused_score"]) for h in ours] == [(i, round(s, 12)) for i, s in spec]


def test_rrf_hand_computed() -> None:
    # a: 1/61; b: 1/61 + 1/62; c: 1/62 + 1/63; d: 1/63
    out = reciprocal_rank_fusion([A, B])
    assert [h["id"] for h in out] == ["b", "c", "a", "d"]
    assert out[0]["fused_score"] == pytest.approx(1 / 61 + 1 / 62)
    assert out[0]["backends"] == ["A", "B"] and out[2]["backends"] == ["A"]


def test_interleave_by_score_normalises_per_backend() -> None:
    # A -> a 1, b .5, c 0; B -> b 1, c .5, d 0; best per item: a 1, b 1, c .5, d 0 (ties: first seen)
    out = interleave_by_score([A, B])
    assert [(h["id"], h["fused_score"]) for h in out] == [("a", 1.0), ("b", 1.0), ("c", 0.5), ("d", 0.0)]


def test_round_robin_alternates_and_skips_taken() -> None:
    out = round_robin([A, hits("B", ("d", 1.0), ("b", 0.9))])
    assert [h["id"] for h in out] == ["a", "d", "b", "c"]  # B's b is already taken at rank 1


def test_union_dedupe_by_content_hash() -> None:
    x = hits("A", ("x1", 5.0), ("y", 4.0), text={"x1": "Same  text here"})
    y = hits("B", ("x2", 9.0), ("z", 1.0), text={"x2": "same text HERE"})
    out = union_dedupe([x, y])
    assert [h["id"] for h in out] == ["x1", "y", "z"]
    assert out[0]["backends"] == ["A", "B"]


def test_weighted_hand_computed() -> None:
    # A (w=2): a 1, b .5, c 0; B (w=1): c 1, a 0 -> a 2, b 1, c 1
    out = weighted([A, hits("B", ("c", 10.0), ("a", 0.0))], [2.0, 1.0])
    assert [(h["id"], h["fused_score"]) for h in out] == [("a", 2.0), ("b", 1.0), ("c", 1.0)]
    with pytest.raises(InvalidArgument):
        weighted([A], [1.0, 2.0])


def test_fuse_by_name_and_unknown_strategy() -> None:
    named = {"bm25": A, "vector": B}
    assert [h["id"] for h in fuse("weighted", named, weights={"vector": 0.0})] == ["a", "b", "c", "d"]
    assert [h["id"] for h in fuse("reciprocal_rank_fusion", named)] == ["b", "c", "a", "d"]
    with pytest.raises(InvalidArgument, match="one of"):
        fuse("llm_rerank", named)
    assert fuse("round_robin", {}) == []


def test_source_routing_by_glob() -> None:
    routing = {"*.py|*.ts|*.rs": ["code"], "*.md|*.pdf|*.html": ["fulltext"], "*": ["vectors"]}
    assert routed_backends("src/a.py", routing) == {"code", "vectors"}
    assert routed_backends("docs/guide.md", routing) == {"fulltext", "vectors"}
    assert routed_backends("notes.txt", routing) == {"vectors"}
    assert routed_backends("docs/x.md", {"docs/*": ["bm25"]}) == {"bm25"}  # relative-path patterns
