"""Import benchmark: nodes/s and edges/s into a native KG, CPU time, peak memory, vs a floor from the same run.

    python benchmarks/import_bench.py                          # go + cli-man + synthetic 1M nodes / 10M edges
    python benchmarks/import_bench.py --quick                  # go + cli-man + synthetic 100k / 1M
    python benchmarks/import_bench.py --nodes 300000 --edges 3000000 --only synthetic
    python benchmarks/import_bench.py --bad-share 0.05 --only synthetic   # + N nodes / N edges, 5% bad, --skip-invalid
    python benchmarks/import_bench.py --json-out out.json

Each measurement runs in a fresh subprocess (so peak RSS is its own). The floor ("anchor") is what
no importer can beat in Python: parsing the same file with ijson (the node array alone for the node
phase, as the importer does) and inserting the same rows into bare tables with ``executemany``, with
no checks, indexes or full-text index. Since the importer parses the node array with orjson in
chunks (store/formats/array_chunks.py), a second node floor uses that parser with the same bare
insert ("orjson floor"): the cost of the checks and the real table. Phases: nodes (parse + checks + insert), edges, indexes and
full-text index (to the commit), then the search snapshot that ``import_file`` builds and saves.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from synthetic import kg_file

from kgos.store.formats.array_chunks import array_start, fast_items

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def measure_kgos(path: str, skip_invalid: bool) -> dict:
    import kgos
    marks: dict[str, tuple[float, float]] = {}
    t0, c0 = _clock()

    def progress(phase: str, count: int) -> None:
        if phase not in marks:
            t, c = _clock()
            marks[phase] = (t - t0, c - c0)
    with tempfile.TemporaryDirectory() as home:
        if skip_invalid:  # the bad-records run measures the import alone (store layer, no snapshot)
            from kgos.store.formats import open_source
            from kgos.store.importer import bulk_load
            report = bulk_load(Path(home) / "bench.db", open_source(path, None), "bench", progress=progress,
                               skip_invalid=True)
            t, c = _clock()
        else:
            ws = kgos.Workspace(home)
            report = ws.import_file("bench", path, progress=progress)
            t, c = _clock()
            ws.close()
    end = (t - t0, c - c0)
    at = {name: marks.get(name, end) for name in ("nodes", "edges", "indexes", "search index")}

    def span(a: str, b: str, i: int) -> float:
        return (end if b == "end" else at[b])[i] - at[a][i]
    return {"nodes": report.nodes, "edges": report.edges, "skipped_invalid": report.skipped_invalid,
            "node_phase_s": span("nodes", "edges", 0), "node_phase_cpu_s": span("nodes", "edges", 1),
            "edge_phase_s": span("edges", "indexes", 0), "edge_phase_cpu_s": span("edges", "indexes", 1),
            "index_s": span("indexes", "search index", 0), "commit_s": at["search index"][0],
            "commit_cpu_s": at["search index"][1], "snapshot_s": span("search index", "end", 0),
            "snapshot_cpu_s": span("search index", "end", 1), "total_s": end[0], "total_cpu_s": end[1],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _node_events(f, key: str = "nodes"):
    import ijson
    for event in ijson.parse(f, use_float=True):
        yield event
        if event[1] == "end_array" and event[0] == key:
            return


def measure_floor(path: str) -> dict:
    import ijson
    opener = gzip.open if path.endswith(".gz") else open
    with tempfile.TemporaryDirectory() as d:
        conn = sqlite3.connect(Path(d) / "floor.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("CREATE TABLE n (id, name, type, description)")
        conn.execute("CREATE TABLE e (source, target, type)")
        conn.execute("BEGIN")
        t0, c0 = _clock()
        with opener(path, "rb") as f:
            conn.executemany("INSERT INTO n VALUES (?,?,?,?)", ((x.get("id"), x.get("name"), str(x.get("type")), x.get("description"))
                                                              for x in ijson.items(_node_events(f), "nodes.item")))
        t1, c1 = _clock()
        with opener(path, "rb") as f:
            conn.executemany("INSERT INTO e VALUES (?,?,?)", ((x["source"], x["target"], x["type"])
                                                            for x in ijson.items(f, "edges.item", use_float=True)))
        conn.execute("COMMIT")
        t2, c2 = _clock()
        conn.execute("CREATE TABLE n2 (id, name, type, description)")
        conn.execute("BEGIN")
        t3, c3 = _clock()
        with opener(path, "rb") as f:  # the importer's own parser (orjson in chunks), no checks
            items = fast_items(f, "nodes", array_start(f, "nodes"))
            conn.executemany("INSERT INTO n2 VALUES (?,?,?,?)", ((x.get("id"), x.get("name"), str(x.get("type")),
                                                                x.get("description")) for x in items))
        t4, c4 = _clock()
        conn.execute("COMMIT")
        conn.close()
    return {"node_s": t1 - t0, "node_cpu_s": c1 - c0, "total_s": t2 - t0, "total_cpu_s": c2 - c0,
            "node_orjson_s": t4 - t3, "node_orjson_cpu_s": c4 - c3}


def run_child(kind: str, path: Path, skip_invalid: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, str(path)] + (["--skip-invalid"] if skip_invalid else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(name: str, path: Path, repeats: int, skip_invalid: bool = False) -> dict:
    runs = [run_child("kgos", path, skip_invalid) for _ in range(repeats)]
    floors = [run_child("floor", path) for _ in range(repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    floor = {k: statistics.median(r[k] for r in floors) for k in floors[0]}
    return {"dataset": name, **med, "nodes": int(med["nodes"]), "edges": int(med["edges"]),
            "nodes_per_s": med["nodes"] / med["node_phase_s"],
            "nodes_per_cpu_s": med["nodes"] / max(med["node_phase_cpu_s"], 1e-9),
            "edges_per_s": med["edges"] / max(med["edge_phase_s"], 1e-9),
            "end_to_end_nodes_per_s": med["nodes"] / med["commit_s"],
            "floor_node_s": floor["node_s"], "floor_node_cpu_s": floor["node_cpu_s"],
            "floor_s": floor["total_s"], "floor_cpu_s": floor["total_cpu_s"],
            "node_ratio_to_floor": med["node_phase_s"] / floor["node_s"],
            "node_cpu_ratio_to_floor": med["node_phase_cpu_s"] / max(floor["node_cpu_s"], 1e-9),
            "floor_orjson_node_s": floor["node_orjson_s"], "floor_orjson_node_cpu_s": floor["node_orjson_cpu_s"],
            "node_ratio_to_orjson_floor": med["node_phase_s"] / floor["node_orjson_s"],
            "node_cpu_ratio_to_orjson_floor": med["node_phase_cpu_s"] / max(floor["node_orjson_cpu_s"], 1e-9),
            "ratio_to_floor": med["commit_s"] / floor["total_s"]}


def table(rows: list[dict]) -> str:
    head = ("| dataset | nodes | edges | nodes/s (node phase) | nodes per CPU-s | x floor (nodes, CPU) | "
            "x orjson floor (nodes, CPU) | edges/s | commit s (CPU) | "
            "snapshot s (CPU) | floor s | x floor | invalid left out | peak RSS MB |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['nodes']:,} | {r['edges']:,} | {r['nodes_per_s']:,.0f} | "
                     f"{r['nodes_per_cpu_s']:,.0f} | {r['node_ratio_to_floor']:.2f} ({r['node_cpu_ratio_to_floor']:.2f}) | "
                     f"{r['node_ratio_to_orjson_floor']:.2f} ({r['node_cpu_ratio_to_orjson_floor']:.2f}) | "
                     f"{r['edges_per_s']:,.0f} | {r['commit_s']:.1f} ({r['commit_cpu_s']:.1f}) | "
                     f"{r['snapshot_s']:.1f} ({r['snapshot_cpu_s']:.1f}) | {r['floor_s']:.1f} | {r['ratio_to_floor']:.2f} | "
                     f"{r['skipped_invalid']:,} | {r['peak_rss_mb']:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="synthetic 100k/1M instead of 1M/10M")
    ap.add_argument("--nodes", type=int, help="synthetic nodes (default 1,000,000; --quick 100,000)")
    ap.add_argument("--edges", type=int, help="synthetic edges (default 10 x nodes)")
    ap.add_argument("--only", action="append", choices=["go", "cli-man", "synthetic"], help="repeatable")
    ap.add_argument("--bad-share", type=float, default=0.0,
                    help="also import a synthetic file with this share of bad records, with --skip-invalid")
    ap.add_argument("--repeats", type=int, default=3, help="for go and cli-man")
    ap.add_argument("--synthetic-repeats", type=int, default=1, help="for the synthetic files (medians)")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--skip-invalid", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, path = args.child
        print(json.dumps(measure_kgos(path, args.skip_invalid) if kind == "kgos" else measure_floor(path)))
        return
    only = args.only or ["go", "cli-man", "synthetic"]
    rows = [bench(name, BENCH / name / "kg.json.gz", args.repeats) for name in ("go", "cli-man") if name in only]
    n = args.nodes or (100_000 if args.quick else 1_000_000)
    m = args.edges or 10 * n
    if "synthetic" in only:
        rows.append(bench(f"synthetic {n:,}/{m:,}", kg_file(n, m), args.synthetic_repeats))
    if args.bad_share:  # one edge per node: the row is about nodes, and the file stays quick to import
        rows.append(bench(f"synthetic {n:,}/{n:,}, {args.bad_share:.0%} bad, --skip-invalid",
                          kg_file(n, n, args.bad_share), args.synthetic_repeats, skip_invalid=True))
    print(table(rows))
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
