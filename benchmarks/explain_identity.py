"""Explanation identity over every dev set: does each hit's ``score`` equal the sum of its weighted
signals plus its named bonuses (issue 29, goal 4)? Also records the dev-set metrics and every ranking,
so a change to how scores are explained can be shown not to change retrieval.

    python benchmarks/explain_identity.py                       # every dev set, hash embedder
    python benchmarks/explain_identity.py --only demo --dump before.json
    python benchmarks/explain_identity.py --compare before.json  # rankings identical to a dump?

The identity read from each hit's JSON (``to_dict()``, the shape HTTP and MCP return):
``score == sum(weights[s] * components[s]) + sum(bonuses.values())`` to 1e-6. A hit of an older
build without per-hit ``weights`` is explained by the result's four weights and its diversity bonus
(what the JSON showed before), which is how the "before" figure is measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets  # noqa: E402

TOLERANCE = 1e-6
FOUR = {"alpha": "embedding", "beta": "text", "gamma": "graph", "delta": "intent"}


def explained(hit: dict, result_weights: dict) -> float:
    """The score a hit's JSON accounts for: its weighted components plus its bonuses."""
    if "weights" in hit:
        weights, bonuses = hit["weights"], hit.get("bonuses", {})
    else:  # before issue 29: only the result's 4 weights and the diversity bonus were shown
        weights = {FOUR[k]: v for k, v in result_weights.items() if k in FOUR}
        bonuses = {"diversity": hit.get("diversity_bonus", 0.0)}
    return sum(weights.get(s, 0.0) * v for s, v in hit["components"].items()) + sum(bonuses.values())


def run_set(ws, name: str, embedder: str, k: int) -> dict:
    """Every dev probe of ``name``: metrics, the identity on every hit, the rankings."""
    kg = devsets.open_kg(ws, name, embedder)
    probes = devsets.probes(name)
    hits = held = four = 0  # four: what the result's 4 weights and diversity_bonus alone explain
    worst = 0.0
    recall10 = mrr = 0.0
    rankings: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    for p in probes:
        d = kg.search(p.query, k=k).to_dict()
        ids = [h["node"]["id"] for h in d["results"]]
        rankings[p.id] = ids
        first = next((i for i, n in enumerate(ids[:10], 1) if n in p.relevant), 0)
        recall10 += first > 0
        mrr += 1.0 / first if first else 0.0
        for h in d["results"]:
            gap = abs(h["score"] - explained(h, d["weights"]))
            hits += 1
            held += gap <= TOLERANCE
            worst = max(worst, gap)
            four += abs(h["score"] - explained({k: v for k, v in h.items() if k not in ("weights", "bonuses")},
                                               d["weights"])) <= TOLERANCE
    n = len(probes)
    return {"set": name, "probes": n, "recall@10": recall10 / n, "mrr@10": mrr / n, "hits": hits,
            "identity": held / hits if hits else 1.0, "worst_gap": worst,
            "identity_four": four / hits if hits else 1.0,
            "seconds": time.perf_counter() - t0, "rankings": rankings}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", choices=devsets.NAMES)
    ap.add_argument("--embedder", default="hash", help="node/query embedder (default: hash, fast and deterministic)")
    ap.add_argument("--home", type=Path, help="workspace (default: a temporary one)")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--dump", type=Path, help="write metrics and rankings as JSON")
    ap.add_argument("--compare", type=Path, help="a --dump of another build: count rankings that differ")
    args = ap.parse_args()
    import kgos
    home = args.home or Path(tempfile.mkdtemp(prefix="kgos-identity-"))
    ws = kgos.Workspace(home)
    before = json.loads(args.compare.read_text()) if args.compare else {}
    rows = []
    print(f"{'set':<15}{'probes':>7}{'R@10':>8}{'MRR@10':>8}{'hits':>8}{'identity':>10}{'worst gap':>11}"
          + ("  rankings changed" if before else ""))
    for name in args.only or devsets.NAMES:
        if not devsets.kg_file(name).exists():
            print(f"{name:<15} (not on this machine)")
            continue
        r = run_set(ws, name, args.embedder, args.k)
        rows.append(r)
        line = (f"{name:<15}{r['probes']:>7}{r['recall@10']:>8.3f}{r['mrr@10']:>8.3f}{r['hits']:>8}"
                f"{r['identity']:>10.1%}{r['worst_gap']:>11.2e}")
        if name in before:
            old = before[name]["rankings"]
            changed = sum(old.get(pid) != ids for pid, ids in r["rankings"].items())
            line += f"  {changed} of {r['probes']}"
        print(line, flush=True)
    if args.dump:
        args.dump.write_text(json.dumps({r["set"]: r for r in rows}))


if __name__ == "__main__":
    main()
