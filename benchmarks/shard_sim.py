"""Per-query cost of a KG sharded across PostgreSQL nodes (issue 31 goal 5; docs/postgres.md "Past one
database"): a simulation over the synthetic graph of benchmarks/pushdown_bench.py (10 out-edges per
node, half to nodes of nearby rowid, half anywhere), distributed by node id over S shards.

    python benchmarks/shard_sim.py                       # 200,000 nodes, S = 1, 2, 4, 8, 16, 32
    python benchmarks/shard_sim.py --nodes 1000000

For each S and two placements of nodes, ``hash`` (Citus' default: hash of the node id) and ``range``
(contiguous rowid ranges: a stand-in for placing communities together), it counts what the
coordinator does per query, the layout being: nodes, their out-edges (distributed by source) and their
in-edges (a second copy distributed by target) on the node's shard, so every hop from a node is local
to that node's shard:

- impact depth 3 (both directions) and trace depth 3: a level-synchronous BFS, one round of
  requests per level to every shard holding part of the frontier; counted: requests (shard x level),
  rounds, and the frontier rows that cross shards;
- search: the text and vector candidates are a scatter-gather to every shard (each returns its local
  top k, the coordinator merges), then one request per shard holding a seed for the neighbourhood.

Latency is modelled from the single-node measurements (docs/postgres.md "Pushdown"): a round costs
one network round trip (``--rtt-ms``, 0.5) plus the largest shard's share of the rows; the figures to
read are the counts and how they grow with S.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

PER_ROW_MS = 0.012  # impact: ~100 ms for ~8,000 reached rows on one node (pushdown_bench, 100K nodes)
SHIP_MS = 0.002  # one row sent from shard to shard (a few bytes of a batched message)
SEARCH_SHARD_MS = 8.0  # one shard's text + HNSW candidates (pushdown_bench: ~8-12 ms at ef 200)


def graph(n: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the undirected adjacency of the benchmark's synthetic graph."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n), 10)
    near = src + rng.integers(-500, 501, src.size)
    far = rng.integers(0, n, src.size)
    dst = np.where(rng.random(src.size) < 0.5, near, far)
    dst = np.where((dst < 0) | (dst >= n) | (dst == src), far, dst)
    a, b = np.concatenate([src, dst]), np.concatenate([dst, src])
    order = np.argsort(a, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, a + 1, 1)
    return np.cumsum(indptr), b[order]


def placement(n: int, shards: int, how: str) -> np.ndarray:
    if how == "hash":
        return (np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(40)).astype(np.int64) % shards
    return np.arange(n) * shards // n


def bfs_cost(indptr, indices, shard, root: int, depth: int, rtt: float) -> dict[str, float]:
    """Each shard expands its part of the frontier (local adjacency) and sends every neighbour it finds
    on another shard to that shard (a crossing row); one round per level, shards in parallel."""
    seen = np.zeros(shard.size, bool)
    seen[root] = True
    frontier = np.array([root])
    requests = cross = rows = 0
    latency = 0.0
    for _ in range(depth):
        owners = shard[frontier]
        requests += np.unique(owners).size
        starts, ends = indptr[frontier], indptr[frontier + 1]
        nbr = np.concatenate([indices[a:b] for a, b in zip(starts, ends)])
        origin = np.repeat(owners, ends - starts)
        crossing = int(np.count_nonzero(shard[nbr] != origin))
        per_shard = np.bincount(origin, minlength=int(shard.max()) + 1)
        latency += rtt + per_shard.max() * PER_ROW_MS + crossing * SHIP_MS / max(np.unique(owners).size, 1)
        rows, cross = rows + nbr.size, cross + crossing
        fresh = np.unique(nbr[~seen[nbr]])
        seen[fresh] = True
        frontier = fresh
        if not frontier.size:
            break
    return {"requests": requests, "rows": rows, "cross": cross, "share": cross / max(rows, 1), "latency": latency}


def search_cost(shards: int, seeds: np.ndarray, shard: np.ndarray, rtt: float) -> dict[str, float]:
    seed_shards = np.unique(shard[seeds]).size
    # scatter-gather: every shard answers its local candidates in parallel (HNSW/GIN cost ~ log of its size)
    per_shard = SEARCH_SHARD_MS * max(0.5, 1 - 0.05 * np.log2(shards))
    return {"requests": shards + seed_shards, "latency": 2 * rtt + per_shard + rtt + 1.0,
            "work": shards * per_shard}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--roots", type=int, default=30)
    ap.add_argument("--rtt-ms", type=float, default=0.5)
    args = ap.parse_args()
    indptr, indices = graph(args.nodes)
    rng = np.random.default_rng(3)
    roots = rng.integers(0, args.nodes, args.roots)
    print(f"{args.nodes:,} nodes, {indices.size // 2:,} edges; medians over {args.roots} roots; "
          f"round trip {args.rtt_ms} ms, {PER_ROW_MS * 1000:.0f} us per traversed row\n")
    print("| shards | placement | impact d3: requests | rows crossing shards (share) | modelled ms | "
          "search: requests | modelled ms | search: shard work ms |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for shards in (1, 2, 4, 8, 16, 32):
        for how in ("hash", "range"):
            if shards == 1 and how == "range":
                continue
            shard = placement(args.nodes, shards, how)
            costs = [bfs_cost(indptr, indices, shard, int(r), 3, args.rtt_ms) for r in roots]
            seeds = rng.integers(0, args.nodes, 20)
            s = search_cost(shards, seeds, shard, args.rtt_ms)
            med = {k: statistics.median(c[k] for c in costs) for k in costs[0]}
            print(f"| {shards} | {how} | {med['requests']:.0f} | {med['cross']:,.0f} ({med['share']:.0%}) | "
                  f"{med['latency']:.1f} | {s['requests']:.0f} | {s['latency']:.1f} | {s['work']:.0f} |")


if __name__ == "__main__":
    main()
