"""Issue 13: does a query-independent graph prior (how central a node is) lift the default's ranking?

    python benchmarks/graph_prior.py cli-man --home benchmarks/out/ws-quality
    python benchmarks/graph_prior.py go --home benchmarks/out/ws-quality --sample 300

Web search adds a document's link-based importance to its query score (PageRank, Brin and Page
1998; in-link counts, Craswell et al. 2005, "Relevance weighting for query independent evidence").
Here the default hybrid's top 50 of each dev probe are re-ranked by ``score + w * prior(node)``,
where the prior is the log of in-degree, of degree, of PageRank on the directed edges or of
PageRank on the undirected graph (damping 0.85), each divided by its maximum so it lies in 0..1.
Strict MRR@10 for every prior and weight, one process, the KG's own vectors.

Measured (docs/defaults.md "Graph centrality prior"): at best +1.0% on cli-man (PageRank, w 0.3) and
+0.8% on demo, while every prior at every weight loses on go, wordnet-gcide and python-stdlib: not kept.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets

WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)


def log_scaled(x: np.ndarray) -> np.ndarray:
    """log(1 + x) / max: a prior in 0..1 whose top is not a few hubs alone."""
    x = np.log1p(np.maximum(x, 0))
    return x / (x.max() or 1.0)


def pagerank(adj: sparse.csr_matrix, damping: float = 0.85, iterations: int = 50) -> np.ndarray:
    """Power iteration of r = (1 - d) / N + d P^T r, P the row-normalised adjacency (Brin and Page 1998)."""
    n = adj.shape[0]
    out = np.asarray(adj.sum(axis=1)).ravel()
    step = sparse.diags(1.0 / np.where(out > 0, out, 1.0)) @ adj
    r = np.full(n, 1.0 / n)
    for _ in range(iterations):
        r = (1 - damping) / n + damping * (step.T @ r)
    return r


def _relative(rank: np.ndarray) -> np.ndarray:
    """PageRank over its minimum, minus 1: 0 for a node nothing links to."""
    return rank / rank.min() - 1


def priors(kg, row: dict[str, int]) -> dict[str, np.ndarray]:
    n = len(row)
    pairs = np.array([(row[e.source], row[e.target]) for e in kg.edges()], dtype=np.int64).reshape(-1, 2)
    adj = sparse.csr_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    indeg = np.bincount(pairs[:, 1], minlength=n).astype(float)
    degree = indeg + np.bincount(pairs[:, 0], minlength=n)
    return {"in-degree": log_scaled(indeg), "degree": log_scaled(degree),
            "pagerank": log_scaled(_relative(pagerank(adj))),
            "pagerank (undirected)": log_scaled(_relative(pagerank(adj + adj.T)))}


def reranked_mrr(runs: list, prior: np.ndarray, row: dict[str, int], w: float) -> float:
    from kgos.eval.metrics import mrr_at
    total = 0.0
    for ids, scores, relevant in runs:
        boosted = scores + w * prior[[row[i] for i in ids]]
        total += mrr_at([ids[i] for i in np.argsort(-boosted, kind="stable")], relevant, 10)
    return total / len(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", choices=devsets.NAMES)
    ap.add_argument("--home", type=Path, default=Path(__file__).parent / "out" / "ws-quality")
    ap.add_argument("--sample", type=int, help="a fixed random sample of this many probes (seed 13)")
    args = ap.parse_args()
    import kgos
    kg = devsets.open_kg(kgos.Workspace(args.home), args.dataset)
    row = {node.id: i for i, node in enumerate(kg.nodes())}
    probes = devsets.probes(args.dataset, args.sample)
    runs = []
    for probe in probes:
        hits = kg.search(probe.query, k=50).results
        runs.append(([h.node.id for h in hits], np.array([h.score for h in hits]), probe.relevant))
    print(f"{args.dataset}: {len(probes)} probes, strict MRR@10 of score + w * prior over the default's top 50")
    print(f"{'prior':24s}" + "".join(f"  w={w:<5}" for w in WEIGHTS))
    for name, prior in priors(kg, row).items():
        print(f"{name:24s}" + "".join(f"  {reranked_mrr(runs, prior, row, w):.4f} " for w in WEIGHTS), flush=True)


if __name__ == "__main__":
    main()
