"""Learning-from-conversations benchmark (issue 35): facts removed from the demo KG, then stated in
scripted chat turns — how many come back as proposals, and how many proposals are wrong?

    python benchmarks/learning_bench.py              # 40 removed edges, 3 phrasings each
    python benchmarks/learning_bench.py --json

The demo KG is loaded in a temporary home (hash vectors: learning does not use them), ``--n`` edges of
the relation types below are deleted (seed 13), and each is stated to the demo expert through the
real chat loop (offline provider) in three phrasings: two the cue table knows ("A requires B", "I
found that a needs b") and one it does not ("you can't use A without B"), names lower-cased in half of
them, among distractor turns: questions about the same pairs, negations of edges the KG keeps, and
small talk. Reported:

- recall: removed edges proposed with the same relation (strict) / between the same pair (any relation);
- precision: proposals that restore a removed edge (same pair and relation) / all proposals;
- what the distractors proposed (they should propose nothing).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import kgos
from kgos.data import load_demo
from kgos.experts.chat import ExpertChat
from kgos.llm import get_provider

# relation -> (two phrasings the cue table reads, one it does not)
PHRASES = {
    "requires": ("{a} requires {b}.", "I found that {a} needs {b}.", "You can't use {a} without {b}."),
    "depends_on": ("{a} depends on {b}.", "In our setup {a} relies on {b}.", "{a} only runs on top of {b}."),
    "enables": ("{a} enables {b}.", "{a} allows {b}.", "Thanks to {a} we got {b}."),
    "alternative_to": ("{a} is an alternative to {b}.", "{a} can replace {b}.", "Instead of {b} you could go with {a}."),
    "conflicts_with": ("{a} conflicts with {b}.", "{a} does not work with {b}.", "Never combine {a} and {b}."),
    "reduces": ("{a} reduces {b}.", "{a} lowers {b}.", "With {a}, {b} goes down."),
    "optimizes": ("{a} improves {b}.", "{a} optimizes {b}.", "{b} got better once we added {a}."),
    "fixes": ("{a} fixes {b}.", "{a} solves {b}.", "{b} went away after {a}."),
    "causes": ("{a} causes {b}.", "{a} leads to {b}.", "We saw {b} because of {a}."),
    "part_of": ("{a} is part of {b}.", "{a} belongs to {b}.", "{b} includes {a}."),
    "used_for": ("{a} is used for {b}.", "{a} helps with {b}.", "For {b} we use {a}."),
    "feeds_into": ("{a} feeds into {b}.", "{a} feeds {b}.", "The output of {a} goes to {b}."),
    "contributes_to": ("{a} contributes to {b}.", "{a} contributes to {b} a lot.", "{b} is partly thanks to {a}."),
}
SMALL_TALK = ["Thanks, that helps.", "Great, I'll try that tomorrow.", "We are a small team of four.",
              "Our budget is tight this quarter.", "I read the docs yesterday.", "That makes sense to me."]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40, help="edges removed and stated")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as home:
        result = run(Path(home), args.n)
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=2) if args.json else table(result))


def run(home: Path, n: int) -> dict:
    ws = kgos.Workspace(home)
    load_demo(ws, embedder="hash")
    kg = ws.kg("demo")
    names = {node.id: node.name for node in kg.nodes()}
    edges = [e for e in kg.edges() if e.type in PHRASES]
    rng = random.Random(13)
    removed = rng.sample(edges, min(n, len(edges)))
    kept = [e for e in edges if e not in removed]
    for e in removed:
        kg.delete_edge(e.source, e.target, e.type)
    chat = ExpertChat(ws, get_provider("offline"), use_memory=False)
    stated, distract = [], []
    for i, e in enumerate(removed):
        for j, phrase in enumerate(PHRASES[e.type]):
            a, b = names[e.source], names[e.target]
            if (i + j) % 2:
                a, b = a.lower(), b.lower()
            stated.append(_say(chat, phrase.format(a=a, b=b)))
        distract.append(_say(chat, f"Does {names[e.source]} {e.type.replace('_', ' ')} {names[e.target]}?"))
    for e in rng.sample(kept, min(n // 2, len(kept))):
        distract.append(_say(chat, f"{names[e.source]} does not {e.type.split('_')[0]} {names[e.target]}."))
    distract += [_say(chat, s) for s in SMALL_TALK]
    _, proposals = kg.proposals.list(origin="conversation", status=None, limit=10_000)
    ws.close()
    return score(removed, proposals, stated, distract)


def _say(chat: ExpertChat, text: str) -> list[dict]:
    turn = chat.start("demo", text)
    return list(chat.events(turn))[-1].get("learned") or []


def score(removed: list, proposals: list, stated: list[list[dict]], distract: list[list[dict]]) -> dict:
    gold = {(e.source, e.type, e.target) for e in removed}
    pairs = {(e.source, e.target) for e in removed}
    edges = [(p.source, p.type, p.target) for p in proposals if p.kind == "edge"]
    strict = gold & set(edges)
    any_rel = {(s, t) for s, _, t in edges} & pairs
    by_phrase = [sum(1 for i in range(k, len(stated), 3) if stated[i]) for k in range(3)]
    right = sum(1 for x in edges if x in gold)
    return {"removed": len(gold), "proposals": len(proposals), "edge_proposals": len(edges),
            "node_proposals": len(proposals) - len(edges),
            "recall_strict": round(len(strict) / len(gold), 3), "recall_pair": round(len(any_rel) / len(pairs), 3),
            "precision": round(right / len(proposals), 3) if proposals else None,
            "turns_proposing_by_phrasing": {"cue 1": by_phrase[0], "cue 2": by_phrase[1], "unknown": by_phrase[2],
                                            "of": len(removed)},
            "distractor_turns": len(distract),
            "distractor_proposals": sum(1 for d in distract for x in d if x.get("status") == "proposed")}


def table(r: dict) -> str:
    p = r["turns_proposing_by_phrasing"]
    return (f"learning from conversations on demo: {r['removed']} edges removed and stated 3 ways, "
            f"{r['distractor_turns']} distractor turns, {r['seconds']} s\n"
            f"recall (same relation) {r['recall_strict']}, recall (same pair) {r['recall_pair']}, "
            f"precision {r['precision']} over {r['proposals']} proposals ({r['node_proposals']} nodes)\n"
            f"turns that proposed, by phrasing: {p['cue 1']}/{p['of']}, {p['cue 2']}/{p['of']}, "
            f"unknown phrasing {p['unknown']}/{p['of']}; distractor proposals: {r['distractor_proposals']}")


if __name__ == "__main__":
    main()
