"""Import benchmark: nodes/s and edges/s into a native KG, peak memory, vs a floor from the same run.

    python benchmarks/import_bench.py            # go + cli-man + synthetic 1M nodes / 10M edges
    python benchmarks/import_bench.py --quick    # go + cli-man + synthetic 100k / 1M

Each measurement runs in a fresh subprocess (so peak RSS is its own). The floor ("anchor") is what
no importer can beat in Python: parsing the same file with ijson and inserting the same rows into
bare tables with ``executemany``, with no checks, indexes or full-text index.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


def synthetic(path: Path, n_nodes: int, n_edges: int, seed: int = 7) -> Path:
    """A node-link file with short text per node and random typed edges (no duplicates or loops)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    types = ["requires", "enables", "part_of", "relates_to", "feeds_into"]
    with open(path, "w") as f:
        f.write('{"format": "kgos-node-link/1", "name": "synthetic", "nodes": [\n')
        for i in range(n_nodes):
            text = " ".join(rng.choice(words) for _ in range(6))
            f.write(("," if i else "") + json.dumps({"id": f"n{i}", "name": f"node {i}", "type": "thing",
                                                    "description": text}) + "\n")
        f.write('], "edges": [\n')
        seen: set[int] = set()
        written = 0
        while written < n_edges:
            s, t = rng.randrange(n_nodes), rng.randrange(n_nodes)
            key = s * n_nodes + t
            if s == t or key in seen:
                continue
            seen.add(key)
            f.write(("," if written else "") + f'{{"source": "n{s}", "target": "n{t}", "type": "{types[key % 5]}"}}\n')
            written += 1
        f.write("]}\n")
    return path


def measure_kgos(path: str) -> dict:
    import kgos
    marks: dict[str, float] = {}
    t0 = time.perf_counter()

    def progress(phase: str, count: int) -> None:
        marks.setdefault(phase, time.perf_counter() - t0)
    with tempfile.TemporaryDirectory() as home:
        ws = kgos.Workspace(home)
        report = ws.import_file("bench", path, progress=progress)
        total = time.perf_counter() - t0
        ws.close()
    node_phase = marks.get("edges", total)
    edge_phase = marks.get("indexes", total) - node_phase
    return {"nodes": report.nodes, "edges": report.edges, "total_s": total, "node_phase_s": node_phase,
            "edge_phase_s": edge_phase, "index_s": total - marks.get("indexes", total),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure_floor(path: str) -> dict:
    import gzip
    import ijson
    t0 = time.perf_counter()
    opener = gzip.open if path.endswith(".gz") else open
    with tempfile.TemporaryDirectory() as d:
        conn = sqlite3.connect(Path(d) / "floor.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("CREATE TABLE n (id, name, type, description)")
        conn.execute("CREATE TABLE e (source, target, type)")
        conn.execute("BEGIN")
        with opener(path, "rb") as f:
            conn.executemany("INSERT INTO n VALUES (?,?,?,?)", ((x["id"], x["name"], x.get("type"), x.get("description"))
                                                              for x in ijson.items(f, "nodes.item", use_float=True)))
        with opener(path, "rb") as f:
            conn.executemany("INSERT INTO e VALUES (?,?,?)", ((x["source"], x["target"], x["type"])
                                                            for x in ijson.items(f, "edges.item", use_float=True)))
        conn.execute("COMMIT")
        conn.close()
    return {"total_s": time.perf_counter() - t0}


def run_child(kind: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(path)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def bench(name: str, path: Path, repeats: int) -> dict:
    runs = [run_child("kgos", path) for _ in range(repeats)]
    floors = [run_child("floor", path)["total_s"] for _ in range(repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    floor = statistics.median(floors)
    return {"dataset": name, "nodes": int(med["nodes"]), "edges": int(med["edges"]),
            "nodes_per_s": med["nodes"] / med["node_phase_s"], "edges_per_s": med["edges"] / max(med["edge_phase_s"], 1e-9),
            "end_to_end_nodes_per_s": med["nodes"] / med["total_s"], "total_s": med["total_s"],
            "index_s": med["index_s"], "peak_rss_mb": med["peak_rss_mb"], "floor_s": floor,
            "ratio_to_floor": med["total_s"] / floor}


def table(rows: list[dict]) -> str:
    head = ("| dataset | nodes | edges | nodes/s (node phase) | edges/s (edge phase) | end-to-end nodes/s | "
            "total s | index+FTS s | peak RSS MB | floor s | x floor |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['nodes']:,} | {r['edges']:,} | {r['nodes_per_s']:,.0f} | "
                     f"{r['edges_per_s']:,.0f} | {r['end_to_end_nodes_per_s']:,.0f} | {r['total_s']:.2f} | "
                     f"{r['index_s']:.2f} | {r['peak_rss_mb']:,.0f} | {r['floor_s']:.2f} | {r['ratio_to_floor']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="synthetic 100k/1M instead of 1M/10M")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, path = args.child
        print(json.dumps(measure_kgos(path) if kind == "kgos" else measure_floor(path)))
        return
    rows = [bench(name, BENCH / name / "kg.json.gz", args.repeats) for name in ("go", "cli-man")]
    n, m = (100_000, 1_000_000) if args.quick else (1_000_000, 10_000_000)
    with tempfile.TemporaryDirectory() as d:
        path = synthetic(Path(d) / "synthetic.json", n, m)
        rows.append(bench(f"synthetic {n:,}/{m:,}", path, 1 if not args.quick else args.repeats))
    print(table(rows))


if __name__ == "__main__":
    main()
