"""The exact_match weight profile: where its weight goes, measured on the dev probes the retrieval
cascade classifies exact_match (the only probes a change of that profile can move).

    python benchmarks/exact_match_profile.py --home ~/kgos-bench             # go, cli-man, demo, demo-extra
    python benchmarks/exact_match_profile.py --home ~/kgos-bench --only go

The exact_match intent follows no edge types (intents.INTENT_EDGE_TYPES), so its intent signal is 0 on
every node: a delta weight there only shrinks the weighted sum against the name signal, which is added
unweighted, and against the vectorless rows' rescaling. Each row is one profile, same process, same
KGs (embedded as they are in ``--home``; ``benchmarks/devsets.py`` imports the missing ones).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets

VARIANTS: dict[str, tuple[float, float, float, float]] = {
    "fitted (0.45 on the zero intent signal)": (0.50, 0.05, 0.00, 0.45),
    "delta to text": (0.50, 0.50, 0.00, 0.00),
    "delta spread alpha:beta as fitted": (0.50 / 0.55, 0.05 / 0.55, 0.00, 0.00),
    "delta to text and graph": (0.50, 0.35, 0.15, 0.00),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", required=True, help="a workspace holding (or to hold) the dev-set KGs")
    ap.add_argument("--only", action="append", choices=devsets.NAMES, help="a dev set (repeatable)")
    args = ap.parse_args()
    import kgos
    from kgos.eval.run import evaluate, kg_ranker
    from kgos.retrieval import intents as I
    ws = kgos.Workspace(args.home)
    print("| dev set | exact_match probes | profile (alpha, beta, gamma, delta) | MRR@10 | recall@10 |")
    print("|---|---|---|---|---|")
    fitted = I.KGOS_PROFILES["exact_match"]
    for name in args.only or ("go", "cli-man", "demo", "demo-extra"):
        kg = devsets.open_kg(ws, name, embedder=None)
        probes = [p for p in devsets.probes(name) if I.classify(p.query).name == "exact_match"]
        for label, weights in VARIANTS.items():
            I.KGOS_PROFILES["exact_match"] = weights
            kg.engine.cache.clear()  # results are cached by query, not by profile
            report = evaluate(probes, kg_ranker(kg))
            print(f"| {name} | {len(probes)} | {label} {tuple(round(w, 3) for w in weights)} | "
                  f"{report.strict['mrr@10']:.4f} | {report.strict['recall@10']:.4f} |")
        I.KGOS_PROFILES["exact_match"] = fitted
    ws.close()


if __name__ == "__main__":
    main()
