"""The shipped fast tier (int8 rows + row scales) against a float16 build of the same distillation.

    python benchmarks/fast_tier_storage.py FLOAT16_FOLDER [--n 2000]

FLOAT16_FOLDER is a fast tier written by ``distill_onnx`` before it stored int8 rows (commit c966836:
``python -m kgos.embed build-fast OUT``). Embeds N go node texts (name + description, seed 0) and the
first N go dev probes with both, and prints the cosine between the two vectors of each text and how
often each text's nearest neighbours among the N agree (docs/embedders.md, "The shipped fast tier").
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from devsets import BENCH

from kgos.embed.static import FAST_STATIC_SHA256, PACKAGED_FAST, StaticEmbedder


def agreement(va: np.ndarray, vb: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Per-text cosine of the two vectors; share of same top-1 and mean top-10 overlap among the texts."""
    cos = (va * vb).sum(1)[np.abs(va).sum(1) > 0]
    sa, sb = va @ va.T, vb @ vb.T
    np.fill_diagonal(sa, -9)
    np.fill_diagonal(sb, -9)
    ta, tb = np.argsort(-sa, 1)[:, :10], np.argsort(-sb, 1)[:, :10]
    overlap = np.mean([len(set(x) & set(y)) / 10 for x, y in zip(ta, tb, strict=True)])
    return cos, float(np.mean(ta[:, 0] == tb[:, 0])), float(overlap)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("float16_folder", type=Path)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    with gzip.open(BENCH / "go" / "kg.json.gz") as f:
        nodes = json.load(f)["nodes"]
    random.Random(0).shuffle(nodes)
    texts = [f"{n['name']} {n['description']}" for n in nodes[:args.n]]
    with open(BENCH / "go" / "probes-dev.jsonl", encoding="utf-8") as f:
        probes = [json.loads(line)["query"] for line in f][:args.n]
    old = StaticEmbedder(args.float16_folder)
    new = StaticEmbedder(PACKAGED_FAST, expected_sha256=FAST_STATIC_SHA256)
    for label, batch in (("node texts", texts), ("probe queries", probes)):
        cos, top1, overlap = agreement(old.embed(batch), new.embed(batch))
        print(f"{label}: n={cos.size} cosine min {cos.min():.5f} p1 {np.percentile(cos, 1):.5f} "
              f"mean {cos.mean():.6f}; top-1 same {top1:.4f}, top-10 overlap {overlap:.4f}")


if __name__ == "__main__":
    main()
