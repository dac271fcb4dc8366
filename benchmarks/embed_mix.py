"""Per-row mixing of fast-tier and MiniLM cosines during a fill-in (docs/embedders.md, "One model per scan").

KGOS_HOME=DIR python benchmarks/embed_mix.py

DIR must hold cli-man with MiniLM vectors (e.g. a copy of a workspace where `kgos embed cli-man` ran).
Embedding only, cli-man dev probes, strict MRR@10, with a random 25-90% of nodes given their MiniLM
vector: raw cosines mixed per row, z-scores per model and query, and fast cosines mapped by a per-query
linear fit on the rows that have both.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import kgos
from kgos.embed import get_embedder
from kgos.eval.probes import load_probes
from kgos.index.vectors import embed_text, load_vectors

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


def mrr(scores: np.ndarray, relevant: list[set[int]]) -> float:
    total = 0.0
    for s, rel in zip(scores, relevant):
        for rank, i in enumerate(np.argsort(-s)[:10]):
            if i in rel:
                total += 1 / (rank + 1)
                break
    return total / len(relevant)


def zscores(c: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return (c - c[:, rows].mean(1, keepdims=True)) / c[:, rows].std(1, keepdims=True)


def main() -> None:
    os.environ.pop("KGOS_EMBEDDER", None)
    kg = kgos.Workspace(os.environ["KGOS_HOME"]).kg("cli-man")
    ids = kg.engine.snapshot().node_ids
    index = {n: i for i, n in enumerate(ids)}
    full = load_vectors(kg.store, "minilm-l6-int8", ids)
    nodes = kg.store.get_nodes(list(ids))
    fast = get_embedder("fast").embed([embed_text(nodes[i]) for i in ids])
    probes = load_probes(BENCH / "cli-man" / "probes-dev.jsonl")
    queries = [p.query for p in probes]
    relevant = [{index[r] for r in p.relevant if r in index} for p in probes]
    cf = get_embedder("minilm").embed_queries(queries) @ full.T
    cs = get_embedder("fast").embed_queries(queries) @ fast.T
    print(f"MiniLM alone {mrr(cf, relevant):.3f}, fast tier alone {mrr(cs, relevant):.3f}")
    order = np.random.default_rng(0).permutation(len(ids))
    everything = np.ones(len(ids), bool)
    for coverage in (0.25, 0.5, 0.75, 0.9):
        have = np.zeros(len(ids), bool)
        have[order[: int(coverage * len(ids))]] = True
        affine = np.empty_like(cs)
        for q in range(len(queries)):
            a, b = np.polyfit(cs[q, have], cf[q, have], 1)
            affine[q] = np.where(have, cf[q], a * cs[q] + b)
        z = np.where(have, zscores(cf, have), zscores(cs, everything))
        print(f"coverage {coverage:.0%}: raw {mrr(np.where(have, cf, cs), relevant):.3f}  "
              f"z-scores {mrr(z, relevant):.3f}  affine {mrr(affine, relevant):.3f}")


if __name__ == "__main__":
    main()
