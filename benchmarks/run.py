"""The one benchmark table: every budget of DESIGN.md section 7 with its same-run anchor.

    python benchmarks/run.py                          # default sizes, ~10-15 min on 2 loaded cores
    python benchmarks/run.py --quick                  # 10x smaller synthetic graphs, a few minutes
    python benchmarks/run.py --only methods --only first-query
    python benchmarks/run.py --import-nodes 300000 --methods-nodes 3000000 --no-doc

Each section runs one of the existing scripts (import_bench.py, first_query.py, methods_bench.py,
search_bench.py, ...) in a subprocess with ``--json-out`` and turns its figures into ``table.Row``s;
the table is printed and written between the markers of docs/performance.md (``--no-doc``: not).
Adding a row: write a function ``(args) -> list[Row]`` that runs your script and reads its JSON,
decorate it with ``@section("name")``; docs/performance.md says more.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from table import Row, markdown

DOC = HERE.parent / "docs" / "performance.md"
START, END = "<!-- benchmark table: start -->", "<!-- benchmark table: end -->"
Section = Callable[[argparse.Namespace], list[Row]]
SECTIONS: dict[str, Section] = {}


def section(name: str) -> Callable[[Section], Section]:
    """Register a section: ``run.py`` calls it (in registration order) unless ``--only`` leaves it out."""
    def register(fn: Section) -> Section:
        SECTIONS[name] = fn
        return fn
    return register


def run_script(script: str, *args: str) -> object:
    """Run ``benchmarks/<script>`` with ``args`` + ``--json-out FILE`` and return the JSON it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(HERE / script), *args, "--json-out", str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{script} failed:\n{done.stderr[-2000:]}")
        return json.loads(out.read_text())


def _size(n: int, m: int) -> str:
    return f"{n:,} / {m:,}"


# -- sections -----------------------------------------------------------------------------------------
@section("import")
def import_rows(args: argparse.Namespace) -> list[Row]:
    n, m = args.import_nodes, 10 * args.import_nodes
    extra = ["--bad-share", str(args.bad_share)] if args.bad_share else []
    rows = []
    for r in run_script("import_bench.py", "--only", "synthetic", "--nodes", str(n), "--edges", str(m), *extra):
        bad = "bad" in r["dataset"]
        size = _size(n, n) + f", {args.bad_share:.0%} bad, --skip-invalid" if bad else _size(n, m)
        rows += [Row("import", f"nodes/s, node phase (parse, checks, insert), {size}", r["nodes_per_s"], "nodes/s",
                     100_000, True, r["nodes"] / r["floor_node_s"], "parse + insert floor",
                     note=f"{r['nodes_per_cpu_s']:,.0f} nodes per CPU-second"
                          + (f"; {r['skipped_invalid']:,} invalid records left out" if bad else ""))]
        if not bad:
            rows += [Row("import", f"to the commit (nodes, edges, indexes, FTS), {size}", r["commit_s"], "s",
                         anchor=r["floor_s"], anchor_name="parse + insert floor", cpu=r["commit_cpu_s"],
                         note=f"{r['nodes'] / r['commit_s']:,.0f} nodes/s end to end"),
                     Row("import", f"search snapshot built and saved at import, {size}", r["snapshot_s"], "s",
                         cpu=r["snapshot_cpu_s"])]
    return rows


@section("first-query")
def first_query_rows(args: argparse.Namespace) -> list[Row]:
    n = args.first_nodes
    r = run_script("first_query.py", "--nodes", str(n))
    size = _size(n, 10 * n)
    full = r["full_build"]
    rows = [Row("first query", "`import kgos`, new process", r["import_kgos"][0], "s", 0.5, anchor=r["import_numpy"][0],
                anchor_name="`import numpy`", cpu=r["import_kgos"][1]),
            Row("first query", f"first search after opening, new process, {size}", r["first_query"][0], "s", 2.0,
                anchor=r["load_arrays"][0], anchor_name="np.load of the saved snapshot", cpu=r["first_query"][1]),
            Row("first query", f"snapshot full build, {size}", full[0], "s", cpu=full[1])]
    for key in ("description changed", "edge added", "node added"):
        wall, cpu = r[f"rebuild: {key}"]
        rows.append(Row("first query", f"snapshot rebuild after one write ({key}), {size}", wall, "s",
                        anchor=full[0], anchor_name="full build", cpu=cpu))
    return rows


@section("methods")
def method_rows(args: argparse.Namespace) -> list[Row]:
    n = args.methods_nodes
    r = run_script("methods_bench.py", "--nodes", str(n), "--edges", str(10 * n), "--queries", str(args.queries))
    anchor = r["anchor"]["p50"]
    return [Row("graph methods", f"{name} p50, {_size(n, 10 * n)}", x["p50"], "ms", x.get("budget_ms"),
                anchor=anchor, anchor_name="scipy BFS (full)", cpu=x["cpu_p50"], note=f"p99 {x['p99']:.1f} ms")
            for name, x in r["rows"].items()]


@section("search")
def search_rows(args: argparse.Namespace) -> list[Row]:
    cmd = [sys.executable, str(HERE / "search_bench.py"), "--child", "seeds-largest", "--embedder", args.search_embedder]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"search_bench.py failed:\n{done.stderr[-2000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    size = f"{_size(r['nodes'], r['edges'])}, {r['embedder']} embedder"
    rows = [Row("search", f"hybrid search p50 (warm), {size}", r["p50_ms"], "ms", anchor=r["floor_p50_ms"],
                anchor_name="bm25s + numpy scan", cpu=r["cpu_p50_ms"], note=f"p99 {r['p99_ms']:.1f} ms")]
    if "beyond_encoder_p50_ms" in r:
        rows.append(Row("search", f"search beyond the query encoder p50, {size}", r["beyond_encoder_p50_ms"], "ms", 3.0,
                        anchor=r["floor_p50_ms"], anchor_name="bm25s + numpy scan", cpu=r.get("beyond_encoder_cpu_p50_ms")))
    return rows


# -- the run --------------------------------------------------------------------------------------------
def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.node()}, {os.cpu_count()} CPUs, load average {load}, Python {platform.python_version()}"


def write_doc(table: str, header: str) -> None:
    text = DOC.read_text() if DOC.exists() else f"# Performance\n\n{START}\n{END}\n"
    if START not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1] if END in rest else ""
    DOC.write_text(f"{head}{START}\n{header}\n\n{table}\n{END}{tail}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="synthetic graphs 10x smaller (a few minutes)")
    ap.add_argument("--only", action="append", choices=list(SECTIONS), help="repeatable; default: every section")
    ap.add_argument("--import-nodes", type=int, help="synthetic import size (edges: 10x; default 1,000,000)")
    ap.add_argument("--bad-share", type=float, default=0.05, help="share of bad records in a second import (0: none)")
    ap.add_argument("--first-nodes", type=int, help="KG size for the first query (default 100,000)")
    ap.add_argument("--methods-nodes", type=int, help="graph-method size (edges: 10x; default 1,000,000)")
    ap.add_argument("--queries", type=int, default=100, help="start nodes per graph method")
    ap.add_argument("--search-embedder", default="hash", help="embedder of the search section (default: hash)")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite the table in docs/performance.md")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    args.import_nodes = args.import_nodes or 1_000_000 // scale
    args.first_nodes = args.first_nodes or 100_000 // scale
    args.methods_nodes = args.methods_nodes or 1_000_000 // scale
    rows, failed, t0 = [], [], time.perf_counter()
    for name, fn in SECTIONS.items():
        if args.only and name not in args.only:
            continue
        print(f"-- {name} ...", file=sys.stderr, flush=True)
        try:
            rows += fn(args)
        except Exception as exc:  # one broken section must not lose the others' figures
            failed.append(f"{name}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__}")
    table = markdown(rows)
    header = (f"`python benchmarks/run.py {' '.join(sys.argv[1:])}`".replace(" `", "`") + f" on {machine()}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {time.perf_counter() - t0:.0f} s.")
    if failed:
        header += "\n\nSections that failed: " + "; ".join(failed)
    print(header + "\n\n" + table)
    if args.json_out:
        args.json_out.write_text(json.dumps([r.to_dict() for r in rows], indent=2))
    if not args.no_doc and not args.only:
        write_doc(table, header)


if __name__ == "__main__":
    main()
