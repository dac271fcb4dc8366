"""The bench README's bm25s baseline table for a registered dev set, by probe level (no kgos engine involved).

    python benchmarks/devdata/baseline.py wordnet-gcide python-stdlib

Same scorer as ``benchmarks/quality.py`` (its ``Bm25s`` and ``ranked``): bm25s Lucene BM25, k1 = 1.5,
b = 0.75, node text = name + description, English stopwords, Snowball stemmer, top 10, a zero
score not retrieved, strict metrics.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import devsets
import quality


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    hit = lambda k: sum(r is not None and r < k for r in ranks) / n
    return {"n": len(ranks), "recall@1": hit(1), "recall@5": hit(5), "recall@10": hit(10),
            "mrr@10": sum(1 / (r + 1) for r in ranks if r is not None and r < 10) / n}


def baseline(name: str) -> dict[str, dict]:
    """``{"all": metrics, <level>: metrics, ...}`` of bm25s on dev set ``name``."""
    kg_path = devsets.kg_file(name)
    with (gzip.open if kg_path.suffix == ".gz" else open)(kg_path, "rt", encoding="utf-8") as fh:
        nodes = [SimpleNamespace(**n) for n in json.load(fh)["nodes"]]
    bm = quality.Bm25s(nodes)
    lines = devsets.probes_file(name).read_text(encoding="utf-8").splitlines()
    by_level: dict[str, list] = {}
    for p in (json.loads(line) for line in lines if line.strip()):
        top = quality.ranked(bm.ids, bm.scores(p["query"]))
        rank = next((i for i, nid in enumerate(top) if nid in p["relevant"]), None)
        by_level.setdefault("all", []).append(rank)
        by_level.setdefault(p["level"], []).append(rank)
    return {level: metrics(ranks) for level, ranks in by_level.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+", choices=devsets.NAMES)
    for name in ap.parse_args().names:
        print(f"\n{name}\n| probes | n | Recall@1 | Recall@5 | Recall@10 | MRR@10 |\n|---|---|---|---|---|---|")
        for level, m in baseline(name).items():
            print(f"| {level} | {m['n']:,} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['recall@10']:.3f} "
                  f"| {m['mrr@10']:.3f} |")


if __name__ == "__main__":
    main()
