"""Graph-method benchmark: impact (depth 3), trace, explore (depth 2) and similar on a synthetic graph.

    python benchmarks/methods_bench.py             # 1,000,000 nodes / 10,000,000 edges
    python benchmarks/methods_bench.py --quick     # 100,000 nodes / 1,000,000 edges
    python benchmarks/methods_bench.py --json-out results.json

The graph is built straight from numpy arrays (uniformly random typed edges, random node types,
three Zipf-distributed name words per node) into a ``GraphIndex`` and a ``GraphView``; nothing goes
through SQLite. Each method runs from the same random start nodes; the anchor, measured in the same
run from the same start nodes, is ``scipy.sparse.csgraph.breadth_first_order`` (a full BFS over the
out-adjacency, compiled code), so ratios compare against a plain traversal on this machine right now.
Budget (DESIGN.md section 7): p50 <= 50 ms for impact depth 3, trace, explore depth 2 and similar.
Sizes: ``--nodes N --edges M``; each row reports wall and CPU time per call.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kgos.index.graph import GraphIndex  # noqa: E402
from kgos.methods.structure import explore, impact, similar_rows, trace  # noqa: E402
from kgos.methods.view import GraphView, _LazyIndex  # noqa: E402
from kgos.store.arrays import GraphArrays  # noqa: E402

EDGE_TYPES = ("implements", "provides", "enables", "requires", "feeds_into", "part_of", "similar_to",
              "relates_to", "has_limitation", "has_workaround")
NODE_TYPES = ("feature", "tool", "technique", "pattern", "concept", "goal", "benefit", "limitation",
              "workaround", "step", "metric", "model")
BUDGET_MS = {"impact both d3": 50.0, "impact forward d3": 50.0, "trace max 5": 50.0, "explore d2": 50.0,
             "similar k10": 50.0}


class RowStrings(Sequence[str]):
    """``prefix + row`` without materialising a million strings."""

    def __init__(self, n: int, prefix: str) -> None:
        self.n, self.prefix = n, prefix

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        if not 0 <= i < self.n:
            raise IndexError(i)
        return f"{self.prefix}{i}"


def build_view(n: int, m: int, seed: int = 7) -> tuple[GraphView, float]:
    """(the view, seconds to build the index)."""
    rng = np.random.default_rng(seed)
    arrays = GraphArrays(node_ids=RowStrings(n, "n"), node_types=rng.integers(0, len(NODE_TYPES), n).astype(np.int32),  # type: ignore[arg-type]
                         node_type_names=NODE_TYPES, src=rng.integers(0, n, m).astype(np.int32),
                         dst=rng.integers(0, n, m).astype(np.int32),
                         type_code=rng.integers(0, len(EDGE_TYPES), m).astype(np.int32), types=EDGE_TYPES,
                         weight=rng.choice(np.array([0.5, 0.8, 1.0], np.float32), m))
    t0 = time.perf_counter()
    graph = GraphIndex.build(arrays)
    seconds = time.perf_counter() - t0
    view = GraphView(graph=graph, node_ids=arrays.node_ids, names=RowStrings(n, "name "), node_types=arrays.node_types,
                     type_names=NODE_TYPES, index=_LazyIndex(arrays.node_ids))
    view._cache["name_tokens"] = name_tokens(n, rng)  # 3 Zipf words per name, as numpy, not tokenised strings
    return view, seconds


def name_tokens(n: int, rng: np.random.Generator, vocab: int = 20_000) -> tuple[sp.csr_array, dict[str, int]]:
    words = np.minimum(rng.zipf(1.3, size=(n, 3)), vocab) - 1
    words.sort(axis=1)
    keep = np.ones_like(words, bool)
    keep[:, 1:] = words[:, 1:] != words[:, :-1]
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    matrix = sp.csr_array((np.ones(int(indptr[-1]), np.float32), words[keep].astype(np.int64), indptr), shape=(n, vocab))
    return matrix, {}


def timed(fn: Callable[[int], object], starts: Sequence[int]) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) per call."""
    times, cpu = [], []
    for s in starts:
        t0, c0 = time.perf_counter(), time.process_time()
        fn(int(s))
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return times, cpu


def summary(measured: tuple[list[float], list[float]]) -> dict[str, float]:
    ordered = sorted(measured[0])
    return {"p50": statistics.median(ordered), "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "mean": statistics.fmean(ordered), "n": len(ordered), "cpu_p50": statistics.median(measured[1])}


def warm(view: GraphView) -> dict[str, float]:
    """First-call costs, cached once per KG version: degree centrality, the undirected CSR (Jaccard)."""
    out = {}
    for name, fn in (("degree_centrality", view.graph.degree_centrality),
                     ("undirected (jaccard)", lambda: view.graph.jaccard_all(0)),
                     ("name postings", lambda: similar_rows(view, 0, 10))):
        t0 = time.perf_counter()
        fn()
        out[name] = time.perf_counter() - t0
    return out


def run(n: int, m: int, queries: int, seed: int) -> dict:
    view, build_s = build_view(n, m, seed)
    warm_s = warm(view)
    rng = np.random.default_rng(seed + 1)
    starts = rng.integers(0, n, queries)
    ends = rng.integers(0, n, queries)
    pairs = dict(zip(starts.tolist(), ends.tolist()))
    reached: dict[str, list[int]] = {}

    def note(name: str, count: int) -> None:
        reached.setdefault(name, []).append(count)

    methods: dict[str, Callable[[int], object]] = {
        "impact both d3": lambda s: note("impact both d3", impact(view, s, "both", 3).total_impacted),
        "impact forward d3": lambda s: note("impact forward d3", impact(view, s, "forward", 3).total_impacted),
        "trace max 5": lambda s: note("trace max 5", trace(view, s, pairs[s], 5).length or 0),
        "explore d2": lambda s: note("explore d2", sum(lv.count for lv in explore(view, s, 2).levels)),
        "similar k10": lambda s: similar_rows(view, s, 10),
    }
    for fn in methods.values():  # one warm-up call each
        fn(int(starts[0]))
    reached.clear()
    rows = {name: summary(timed(fn, starts)) for name, fn in methods.items()}
    # float64 CSR up front, so the anchor times the traversal and not csgraph's input conversion
    out_adj = sp.csr_matrix(view.graph.out_adj, dtype=np.float64)
    anchor = summary(timed(lambda s: breadth_first_order(out_adj, s, directed=True, return_predecessors=False),
                           starts[: max(5, queries // 5)]))
    for name, row in rows.items():
        row["ratio_to_anchor"] = row["p50"] / anchor["p50"]
        row["budget_ms"] = BUDGET_MS.get(name)
        if name in reached:
            row["avg_result"] = statistics.fmean(reached[name])
    return {"nodes": n, "edges": m, "build_s": build_s, "warm_s": warm_s, "anchor": anchor, "rows": rows,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def print_table(result: dict) -> None:
    a = result["anchor"]
    print(f"\n{result['nodes']:,} nodes / {result['edges']:,} edges; index build {result['build_s']:.1f} s; "
          "first-call caches: " + ", ".join(f"{k} {v:.1f} s" for k, v in result["warm_s"].items())
          + f"; peak RSS {result['peak_rss_mb']:,.0f} MB")
    print(f"anchor (scipy breadth_first_order, full BFS): p50 {a['p50']:.1f} ms, p99 {a['p99']:.1f} ms\n")
    print(f"| {'method':<18} | {'p50 ms':>7} | {'CPU p50':>7} | {'p99 ms':>7} | {'budget':>6} | {'x anchor':>8} | {'avg nodes/length':>16} |")
    print(f"|{'-' * 20}|{'-' * 9}|{'-' * 9}|{'-' * 9}|{'-' * 8}|{'-' * 10}|{'-' * 18}|")
    for name, r in result["rows"].items():
        budget = f"{r['budget_ms']:.0f}" if r["budget_ms"] else "-"
        ok = "" if not r["budget_ms"] else (" ok" if r["p50"] <= r["budget_ms"] else " OVER")
        avg = f"{r['avg_result']:,.1f}" if "avg_result" in r else "-"
        print(f"| {name:<18} | {r['p50']:>7.2f} | {r['cpu_p50']:>7.2f} | {r['p99']:>7.2f} | {budget:>6} | {r['ratio_to_anchor']:>8.3f} | {avg:>16} |{ok}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100k nodes / 1M edges instead of 1M / 10M")
    parser.add_argument("--nodes", type=int, help="nodes (default 1,000,000; --quick 100,000)")
    parser.add_argument("--edges", type=int, help="edges (default 10 x nodes)")
    parser.add_argument("--queries", type=int, default=200, help="start nodes per method")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    n = args.nodes or (100_000 if args.quick else 1_000_000)
    m = args.edges or 10 * n
    result = run(n, m, args.queries, args.seed)
    print_table(result)
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
