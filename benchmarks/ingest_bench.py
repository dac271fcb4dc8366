"""kgos ingest: files/s and lines/s per tier, peak RSS, and re-ingest after touching one file, against
the same-run anchor of parsing the same files with ``ast.parse`` alone (DESIGN.md section 7: tier 1 of a
50k-line Python package <= 30 s on 2 cores, embeddings excluded; an unchanged re-ingest < 5% of that).

    python benchmarks/ingest_bench.py                          # rich's source from site-packages
    python benchmarks/ingest_bench.py --path SRC --repeat 3 --docs /usr/share/doc/python3.11/html
    python benchmarks/ingest_bench.py --json-out out.json

Every scenario runs in a fresh subprocess (so its peak RSS is its own) on a copy of the source tree in a
temporary folder; timings are medians over ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def default_path() -> str:
    import rich
    return os.path.dirname(rich.__file__)


# -- worker: one scenario in this process ---------------------------------------------------------------
def worker(scenario: str, src: str, home: str) -> dict[str, Any]:
    import kgos
    from kgos.ingest import IngestOptions, ingest

    files = sorted(Path(src).rglob("*.py"))
    t0 = time.perf_counter()
    if scenario == "anchor":
        for f in files:
            ast.parse(f.read_bytes())
        out: dict[str, Any] = {}
    else:
        tiers = {"tier1": (1,), "tier12": (1, 2)}.get(scenario, (1, 2))
        after = scenario == "after"
        options = IngestOptions(tiers=tiers, embed=after, dimensions=after, validate=after)
        with kgos.Workspace(home) as ws:
            report = ingest(ws, "bench", [src], options)
        out = {"nodes": sum(report.nodes.values()), "edges": sum(report.edges.values()), "changed": report.changed,
               "files": sum(report.files.values()), "lines": report.lines, "phases": report.seconds}
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **out}


def spawn(scenario: str, src: str, home: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(HERE), "--worker", scenario, "--path", src, "--home", home],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{scenario} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# -- the table ------------------------------------------------------------------------------------------
def measure(src: str, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / Path(src).name
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns("__pycache__"))
        pyfiles = sorted(tree.rglob("*.py"))
        lines = sum(f.read_bytes().count(b"\n") for f in pyfiles)
        files = len(pyfiles)
        results: dict[str, list[dict[str, Any]]] = {"anchor": [], "tier1": [], "tier12": []}
        for i in range(repeat):  # interleaved, so a change in the machine's load hits every scenario alike
            for scenario, runs in results.items():
                runs.append(spawn(scenario, str(tree), f"{tmp}/home-{scenario}-{i}"))
        home = f"{tmp}/home-rerun"
        results["full"] = [spawn("tier12", str(tree), home)]
        target = pyfiles[files // 2]
        unchanged, edited = [], []
        for _ in range(repeat):
            os.utime(target)  # touched: new mtime, same content
            unchanged.append(spawn("tier12", str(tree), home))
            with open(target, "a", encoding="utf-8") as f:
                f.write("\n# edited by the benchmark\n")
            edited.append(spawn("tier12", str(tree), home))
        results["touch"], results["edit"] = unchanged, edited
    return {"files": files, "lines": lines, "results": results, "touched": str(target.relative_to(tree))}


def docs_run(path: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        return spawn("tier12", path, f"{tmp}/home")


def med(runs: list[dict[str, Any]], key: str = "seconds", phase: str | None = None) -> float:
    values = [r["phases"].get(phase, 0.0) if phase else r[key] for r in runs]
    return float(statistics.median(values))


def table(m: dict[str, Any], docs: dict[str, Any] | None) -> str:
    r, files, lines = m["results"], m["files"], m["lines"]
    anchor = med(r["anchor"])
    full = med(r["full"])
    rows = [("ast.parse alone (anchor)", anchor, r["anchor"]), ("tier 1", med(r["tier1"]), r["tier1"]),
            ("tiers 1+2", med(r["tier12"]), r["tier12"])]
    out = [f"Source: {files:,} Python files, {lines:,} lines; medians of {len(r['tier1'])} runs, each in a fresh process.",
           "", "| run | seconds | files/s | lines/s | x anchor | peak RSS MB |", "|---|---:|---:|---:|---:|---:|"]
    for name, sec, runs in rows:
        out.append(f"| {name} | {sec:.2f} | {files / sec:,.0f} | {lines / sec:,.0f} | {sec / anchor:.1f} | "
                   f"{med(runs, 'rss_mb'):.0f} |")
    for name, key in (("re-ingest, one file touched (same content)", "touch"), ("re-ingest, one file edited", "edit")):
        sec = med(r[key])
        out.append(f"| {name} | {sec:.2f} | | | {sec / anchor:.1f} | {med(r[key], 'rss_mb'):.0f} |")
    out += ["", (f"Re-ingest vs the full tiers 1+2 run ({full:.2f} s): touched {med(r['touch']) / full:.1%}, "
                 f"edited {med(r['edit']) / full:.1%} (file: {m['touched']}).")]
    phases = r["tier12"][0]["phases"]
    out.append("Phases of one tiers 1+2 run (s): " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))
    if docs:
        out.append(f"Documents: {docs['files']:,} files, {docs['lines']:,} lines in {docs['seconds']:.1f} s "
                   f"({docs['files'] / docs['seconds']:.0f} files/s, {docs['lines'] / docs['seconds']:,.0f} lines/s), "
                   f"{docs['nodes']:,} nodes, {docs['edges']:,} edges, peak RSS {docs['rss_mb']:.0f} MB; phases: "
                   + ", ".join(f"{k} {v:.1f}" for k, v in docs["phases"].items()))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", help="a Python source tree (default: rich's, from site-packages)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--docs", help="also ingest this documentation folder once (e.g. Debian's python3.11-doc html)")
    ap.add_argument("--json-out")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--home", help=argparse.SUPPRESS)
    args = ap.parse_args()
    src = args.path or default_path()
    if args.worker:
        print(json.dumps(worker(args.worker, src, args.home)))
        return
    m = measure(src, args.repeat)
    docs = docs_run(args.docs) if args.docs else None
    print(table(m, docs))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"code": m, "docs": docs}, indent=1))


if __name__ == "__main__":
    main()
