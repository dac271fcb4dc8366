"""intent_search with the routing table before and after every one of the 14 categories routed, on the
dev probes (same process, same KGs; the hybrid search under it is the same, so what moves is the routes).

    python benchmarks/routing.py --home ~/kgos-bench                      # demo, demo-extra, cli-man, go (sample)
    python benchmarks/routing.py --home ~/kgos-bench --only demo --sample 0

"routed" counts the probes whose intent_search ran at least one query method.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets

# The six categories that routed nowhere before (issue 32).
NEW = ("prompt_engineering", "deployment", "coding_help", "knowledge_graph", "embedding_search", "reasoning")


def ranker(kg: object, routed: list[bool]) -> object:
    """intent_search's ranking; ``routed`` collects whether each query ran a method."""
    def rank(query: str) -> tuple[list[str], str]:
        res = kg.intent_search(query)  # type: ignore[attr-defined]
        routed.append(bool(res.routes))
        return [h.node.id for h in res.nodes], res.retrieval_intent
    return rank


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", required=True, help="a workspace holding (or to hold) the dev-set KGs")
    ap.add_argument("--only", action="append", choices=devsets.NAMES, help="a dev set (repeatable)")
    ap.add_argument("--sample", type=int, default=300, help="probes per dev set (0: all; default 300)")
    args = ap.parse_args()
    import kgos
    from kgos.eval.run import evaluate
    from kgos.methods import intent
    ws = kgos.Workspace(args.home)
    full = dict(intent.CATEGORY_ROUTES)
    before = {c: r for c, r in full.items() if c not in NEW}
    print("| dev set | probes | routing table | routed | MRR@10 | recall@10 |")
    print("|---|---|---|---|---|---|")
    for name in args.only or ("demo", "demo-extra", "cli-man", "go"):
        kg = devsets.open_kg(ws, name, embedder=None)
        probes = devsets.probes(name, args.sample or None)
        for label, table in (("before (8 categories route)", before), ("after (14 route)", full)):
            intent.CATEGORY_ROUTES.clear()
            intent.CATEGORY_ROUTES.update(table)
            routed: list[bool] = []
            report = evaluate(probes, ranker(kg, routed))
            print(f"| {name} | {len(probes)} | {label} | {sum(routed)} | {report.strict['mrr@10']:.4f} | "
                  f"{report.strict['recall@10']:.4f} |", flush=True)
    intent.CATEGORY_ROUTES.clear()
    intent.CATEGORY_ROUTES.update(full)
    ws.close()


if __name__ == "__main__":
    main()
