"""Conflict detection over planted pairs (issue 29, goal 3): recall on conflicting pairs written in
different words, false conflicts on agreeing pairs, by kind.

    python benchmarks/conflict_pairs.py            # benchmarks/data/conflicts/pairs.jsonl

Each pair is two documents from two sources, run through the research pipeline's own extractor and
merge (``research.extract.extract_document`` -> ``research.merge.integrate``), exactly as a research
run reads them; a pair counts as flagged when a conflict links a claim of one to a claim of the other.
"Before" is the same merge with only the earlier same-frame comparison (``find_conflicts`` off).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from unittest import mock

PAIRS = Path(__file__).resolve().parent / "data" / "conflicts" / "pairs.jsonl"


def load_pairs(path: Path = PAIRS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def flagged(pair: dict) -> bool:
    """Whether the merge of the pair's two documents reports a conflict between them."""
    from kgos.research.extract import extract_document
    from kgos.research.merge import integrate
    knowledge = None
    sides = {}
    for side in ("a", "b"):
        doc = {"id": side, "title": "", "source": f"{pair['id']}-{side}.md",
               "chunks": [{"text": pair[side], "start": 0}]}
        out = extract_document(doc, [])
        sides[side] = {c["id"] for c in out["claims"]}
        knowledge, _ = integrate(knowledge or {}, out, 1)
    return any(set(c["claims"]) & sides["a"] and set(c["claims"]) & sides["b"] for c in knowledge["conflicts"])


def measure(pairs: list[dict], before: bool = False) -> dict:
    """Recall (conflicting pairs flagged) and false conflicts (agreeing pairs flagged), overall and by kind."""
    if before:  # the earlier merge: same-frame comparison only, any negation word negates
        with mock.patch("kgos.research.merge.find_conflicts", lambda claims: []), \
                mock.patch("kgos.research.extract.is_negated", _any_negation):
            got = {p["id"]: flagged(p) for p in pairs}
    else:
        got = {p["id"]: flagged(p) for p in pairs}
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for p in pairs:
        kinds[("conflict " if p["conflict"] else "agree ") + p["kind"]][0] += got[p["id"]]
        kinds[("conflict " if p["conflict"] else "agree ") + p["kind"]][1] += 1
    conflicting = [p for p in pairs if p["conflict"]]
    agreeing = [p for p in pairs if not p["conflict"]]
    return {"recall": sum(got[p["id"]] for p in conflicting) / len(conflicting),
            "false_conflicts": sum(got[p["id"]] for p in agreeing) / len(agreeing),
            "conflicting": len(conflicting), "agreeing": len(agreeing),
            "missed": [p["id"] for p in conflicting if not got[p["id"]]],
            "false": [p["id"] for p in agreeing if got[p["id"]]],
            "by_kind": {k: v for k, v in sorted(kinds.items())}}


def _any_negation(text: str) -> bool:
    import re

    from kgos.index.text import fold
    from kgos.research.extract import NEGATIONS
    return any(w in NEGATIONS for w in re.findall(r"[a-z']+", fold(text)))


def main() -> None:
    pairs = load_pairs()
    before, after = measure(pairs, before=True), measure(pairs)
    print(f"{'':<28}{'before':>10}{'after':>10}")
    print(f"{'conflict recall':<28}{before['recall']:>10.2f}{after['recall']:>10.2f}   ({after['conflicting']} pairs)")
    print(f"{'false conflicts':<28}{before['false_conflicts']:>10.2f}{after['false_conflicts']:>10.2f}   ({after['agreeing']} pairs)")
    for kind, (hit, n) in after["by_kind"].items():
        print(f"  {kind:<26}{before['by_kind'][kind][0]:>7}/{n:<2}{hit:>7}/{n:<2}")
    print("missed:", after["missed"], " false:", after["false"])


if __name__ == "__main__":
    main()
