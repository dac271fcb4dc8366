"""A/B test benchmark (issue 35): does the report pick a known better variant, and does it stay quiet
when the variants are equal?

    python benchmarks/ab_bench.py                  # 3 scenarios x 8 runs x 120 turns
    python benchmarks/ab_bench.py --runs 20 --turns 200 --json

Each run starts an A/B test of the demo expert (control vs a text-heavy variant), asks ``--turns``
questions from the demo probes through the real chat loop (offline provider), each in a new
conversation, and votes on every answer with a simulated preference: thumbs up with probability
``p_control`` or ``p_variant`` by the variant that served it (seeded per run). Scenarios: the variant
is much better (0.45 -> 0.75), a little better (0.45 -> 0.60), equal (0.5 -> 0.5). Reported per
scenario: how often the report named the better variant, named the worse one, or made no decision,
with the decision rule's 30 votes per variant and p < 0.05.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import kgos
from kgos.api.turns import ask
from kgos.data import demo_file, load_demo
from kgos.eval.probes import load_probes
from kgos.experts.ab import ABService
from kgos.experts.feedback import FeedbackService
from kgos.llm import get_provider

SCENARIOS = {"much better": (0.45, 0.75), "a little better": (0.45, 0.60), "equal": (0.5, 0.5)}
VARIANT = {"retrieval": {"alpha": 0.1, "beta": 0.8, "gamma": 0.1, "delta": 0.0}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--turns", type=int, default=120)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as home:
        ws = kgos.Workspace(Path(home))
        load_demo(ws, embedder="hash")
        questions = [p.query for p in load_probes(demo_file("probes.jsonl"))]
        out = {name: scenario(ws, questions, p, args.runs, args.turns) for name, p in SCENARIOS.items()}
        ws.close()
    out["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(out, indent=2) if args.json else table(out, args))


def scenario(ws: kgos.Workspace, questions: list[str], p: tuple[float, float], runs: int, turns: int) -> dict:
    ab, votes, offline = ABService(ws), FeedbackService(ws), get_provider("offline")
    tally = {"variant": 0, "control": 0, "none": 0}
    for run in range(runs):
        test = ab.create("demo", [{"name": "control"}, {"name": "variant", "overrides": VARIANT}])
        rng = random.Random(1000 + run)
        for i in range(turns):
            answer = ask(ws, offline, "demo", questions[i % len(questions)])
            served = ws.db.execute("SELECT json_extract(metadata, '$.ab.variant') FROM messages WHERE turn_id = ? "
                                   "AND role = 'assistant'", (answer.turn_id,)).fetchone()[0]
            votes.give(answer.turn_id, "up" if rng.random() < p[served == "variant"] else "down")
        report = ab.report(test.id)
        ab.stop(test.id)
        tally[report.winner or "none"] += 1
    return {"p_control": p[0], "p_variant": p[1], "runs": runs, "turns": turns, **tally}


def table(out: dict, args: argparse.Namespace) -> str:
    lines = [f"A/B decisions over {args.runs} runs of {args.turns} turns per scenario ({out['seconds']} s)",
             (f"{'scenario':<16} {'p up control':>12} {'p up variant':>12} {'picked variant':>15} "
              f"{'picked control':>15} {'no decision':>12}")]
    for name in SCENARIOS:
        s = out[name]
        lines.append(f"{name:<16} {s['p_control']:>12} {s['p_variant']:>12} {s['variant']:>15} {s['control']:>15} "
                     f"{s['none']:>12}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
