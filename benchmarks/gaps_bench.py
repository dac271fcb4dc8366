"""Gap detection benchmark (issue 35): does the gap report attribute failed questions correctly?

    python benchmarks/gaps_bench.py                       # demo KG, its probes, the default embedder
    python benchmarks/gaps_bench.py --kg cli-man --n 20   # human-written cheat-sheet questions
    python benchmarks/gaps_bench.py --embedder hash --json

Scripted conversations over a dev set's KG (kgos.Workspace in a temporary home, the offline provider),
five groups of ``--n`` probes each (disjoint, seed 13), each with a known cause:

- ``removed``: the probe's relevant and lenient nodes are deleted from the KG first, the question is
  asked and voted down -> expected ``no_matching_node``;
- ``off_topic``: a question from another dev set (go's synonyms, or demo's for the others), no vote
  -> expected a failure (``off_kg``) with ``no_matching_node``;
- ``misranked``: asked to an expert whose weights put 0.97 on the intent signal with 3 nodes, kept only
  when none of the probe's relevant nodes was among them, voted down -> expected
  ``retrieval_misconfigured`` (and the node it names should be relevant or lenient);
- ``thin``: asked to the default expert, kept only when a relevant node was used, voted down ->
  expected ``content_insufficient``;
- ``fine``: asked to the default expert, a relevant node used, no vote -> expected no failure.

Prints per group how many were attributed to each cause, the accuracy, and the share of ``fine``
turns wrongly reported as failures.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import devsets

import kgos
from kgos.api.turns import ask
from kgos.experts import ExpertService
from kgos.experts.feedback import FeedbackService
from kgos.experts.gaps import GapDetector
from kgos.llm import get_provider

EXPECTED = {"removed": "no_matching_node", "off_topic": "no_matching_node", "misranked": "retrieval_misconfigured",
            "thin": "content_insufficient", "fine": None}
SKEWED = {"alpha": 0.01, "beta": 0.01, "gamma": 0.01, "delta": 0.97, "limit": 3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kg", default="demo", choices=["demo", "demo-extra", "cli-man"])
    ap.add_argument("--n", type=int, default=15, help="probes per group")
    ap.add_argument("--embedder", default="default")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as home:
        rows, report, turns = run(Path(home), args.kg, args.n, args.embedder)
    summary = summarise(rows)
    summary.update(kg=args.kg, embedder=args.embedder, turns=turns, calibration=report.calibration.to_dict(),
                   seconds=round(time.perf_counter() - started, 1))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_table(summary)


def run(home: Path, name: str, n: int, embedder: str) -> tuple[list[dict], object, int]:
    ws = kgos.Workspace(home)
    kg = devsets.open_kg(ws, name, embedder)
    sets = ("demo", "demo-extra") if name.startswith("demo") else (name,)  # both probe files of the demo KG
    probes = [p for s in sets for p in devsets.probes(s) if all(kg.get_node(r) for r in p.relevant)]
    random.Random(13).shuffle(probes)
    removed, rest = probes[:n], iter(probes[n:])  # each probe is asked once, by the first group that takes it
    experts = ExpertService(ws)
    plain = experts.create({"name": "Plain", "kg_db_id": name}).id
    skewed = experts.create({"name": "Skewed", "kg_db_id": name, "retrieval": SKEWED}).id
    offline, votes = get_provider("offline"), FeedbackService(ws)
    rows: list[dict] = []
    for p in removed:
        for node in (*p.relevant, *p.lenient):
            if kg.get_node(node):
                kg.delete_node(node)
    rest = iter([p for p in rest if all(kg.get_node(r) for r in p.relevant)])
    for p in removed:
        rows.append(_row("removed", p.query, ask(ws, offline, plain, p.query), votes, down=True))
    other = "go" if name != "go" else "demo"
    for p in devsets.probes(other, sample=n):
        rows.append(_row("off_topic", p.query, ask(ws, offline, plain, p.query), votes, down=False))
    rows += _kept(ws, "misranked", rest, skewed, votes, n, used=False)
    rows += _kept(ws, "thin", rest, plain, votes, n, used=True, down=True)
    rows += _kept(ws, "fine", rest, plain, votes, n, used=True, down=False)
    report = GapDetector(ws).report(name, limit=1_000, propose=False)
    by_turn = {f.turn_id: f for f in report.failures}
    relevant = {r["turn_id"]: r.pop("relevant") for r in rows}
    for r in rows:
        f = by_turn.get(r["turn_id"])
        r["cause"] = f.cause if f else None
        r["named_relevant"] = bool(f and f.found and f.found["node"] in relevant[r["turn_id"]])
    ws.close()
    return rows, report, len(rows)


def _kept(ws: kgos.Workspace, group: str, probes: Iterator, expert: str, votes: FeedbackService, n: int, *,
          used: bool, down: bool = True) -> list[dict]:
    """Ask until ``n`` turns meet the group's condition (a relevant node used, or not)."""
    out = []
    for p in probes:
        answer = ask(ws, get_provider("offline"), expert, p.query)
        hit = bool({s["id"] for s in answer.sources} & set(p.relevant))
        if hit == used:
            out.append(_row(group, p.query, answer, votes, down, (*p.relevant, *p.lenient)))
        if len(out) == n:
            break
    return out


def _row(group: str, query: str, answer: object, votes: FeedbackService, down: bool,
         relevant: tuple[str, ...] = ()) -> dict:
    if down:
        votes.give(answer.turn_id, "down")
    return {"group": group, "query": query, "turn_id": answer.turn_id, "relevant": set(relevant)}


def summarise(rows: list[dict]) -> dict:
    groups = {}
    for g, expected in EXPECTED.items():
        mine = [r for r in rows if r["group"] == g]
        causes = Counter(str(r["cause"]) for r in mine)
        right = sum(r["cause"] == expected for r in mine)
        entry = {"n": len(mine), "expected": expected, "causes": dict(causes),
                 "accuracy": round(right / len(mine), 3) if mine else None}
        if g == "misranked":
            entry["named_relevant"] = round(sum(r["named_relevant"] for r in mine) / len(mine), 3) if mine else None
        groups[g] = entry
    failed = [r for r in rows if r["group"] != "fine"]
    overall = sum(r["cause"] == EXPECTED[r["group"]] for r in failed) / max(len(failed), 1)
    return {"groups": groups, "attribution_accuracy": round(overall, 3),
            "false_failures": round(1 - groups["fine"]["accuracy"], 3) if groups["fine"]["n"] else None}


def print_table(s: dict) -> None:
    print(f"gap attribution on {s['kg']} ({s['embedder']}), {s['turns']} turns, {s['seconds']} s; "
          f"calibration off_kg={s['calibration']['off_kg']} weak={s['calibration']['weak']}")
    print(f"{'group':<10} {'n':>3} {'expected':<24} {'accuracy':>8}  causes")
    for g, e in s["groups"].items():
        print(f"{g:<10} {e['n']:>3} {e['expected']!s:<24} {e['accuracy']!s:>8}  {e['causes']}"
              + (f"  (named a relevant node: {e['named_relevant']})" if "named_relevant" in e else ""))
    print(f"attribution accuracy over failures: {s['attribution_accuracy']}; false failures: {s['false_failures']}")


if __name__ == "__main__":
    main()
