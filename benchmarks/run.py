"""The one benchmark table: every budget of DESIGN.md section 7 with its same-run anchor.

    python benchmarks/run.py                          # default sizes, ~10-15 min on 2 loaded cores
    python benchmarks/run.py --quick                  # 10x smaller synthetic graphs, a few minutes
    python benchmarks/run.py --only methods --only first-query
    python benchmarks/run.py --import-nodes 300000 --methods-nodes 3000000 --no-doc

Sections: import, first-query, methods, search (synthetic sizes: the flags below), embedding (go:
embed_tiers.py), after-write (first_query.py --home on go with fast-tier vectors), studio
(studio_bench.py; skipped without Chromium/playwright) and chat (chat_bench.py, offline provider).
Each section runs one of the existing scripts in a subprocess with ``--json-out`` and turns its figures into ``table.Row``s;
the table is printed and written between the markers of docs/performance.md (``--no-doc``: not).
Adding a row: write a function ``(args) -> list[Row]`` that runs your script and reads its JSON,
decorate it with ``@section("name")``; docs/performance.md says more.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from table import Row, markdown

DOC = HERE.parent / "docs" / "performance.md"
START, END = "<!-- benchmark table: start -->", "<!-- benchmark table: end -->"
GO = HERE.parent.parent / "shared" / "bench" / "go" / "kg.json.gz"
Section = Callable[[argparse.Namespace], list[Row]]
SECTIONS: dict[str, Section] = {}


class Skipped(Exception):
    """A section that cannot run here (a missing browser, data set or extra): noted, not failed."""


def section(name: str) -> Callable[[Section], Section]:
    """Register a section: ``run.py`` calls it (in registration order) unless ``--only`` leaves it out."""
    def register(fn: Section) -> Section:
        SECTIONS[name] = fn
        return fn
    return register


def run_script(script: str, *args: str, env: dict[str, str] | None = None) -> object:
    """Run ``benchmarks/<script>`` with ``args`` + ``--json-out FILE`` and return the JSON it wrote
    (``env``: added to this process's environment)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(HERE / script), *args, "--json-out", str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
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


@section("embedding")
def embedding_rows(args: argparse.Namespace) -> list[Row]:
    if not GO.exists():
        raise Skipped(f"no {GO}")
    extra = ["--models", str(args.fast_models)] if args.fast_models else []
    r = run_script("embed_tiers.py", "--dataset", "go", "--sample", str(args.embed_sample), *extra)
    n, k = r["nodes"], r["sample"]
    idle_min = n / (k / r["default_cpu_s"]) / 2 / 60
    built = "" if args.fast_models else "; includes distilling the fast tier (no built one found)"
    return [Row("embedding", f"go ({n:,} nodes) searchable by meaning: import + fast tier + first search, fresh home",
                r["searchable_s"], "s", 60, cpu=r["searchable_cpu_s"],
                note=" + ".join(f"{s['step'].split(':')[0].split(' (')[0]} {s['wall_s']:.1f} s" for s in r["steps"]) + built),
            Row("embedding", f"default model (MiniLM int8), texts/s on {k:,} sampled go node texts", k / r["default_s"],
                "nodes/s", 145, True, k / r["bare_ort_s"], "bare session.run per text, same threads",
                note=f"{k / r['default_cpu_s']:.1f} texts per CPU-second (anchor {k / r['bare_ort_cpu_s']:.1f}); "
                     f"all of go: {n / (k / r['default_s']) / 60:.1f} min at this wall rate, "
                     f"~{idle_min:.1f} min on 2 idle cores (budget 5 min = 145 nodes/s)")]


def _go_workspace(home: Path, fast_models: Path | None) -> None:
    """A workspace at ``home`` holding go (../shared/bench) with fast-tier vectors (MiniLM is too slow here)."""
    code = ("import sys, kgos; ws = kgos.Workspace(sys.argv[1]); ws.import_file('go', sys.argv[2]); "
            "ws.kg('go').embed_fast(); ws.close()")
    if fast_models:
        shutil.copytree(fast_models / "minilm-int8-static-256", home / "models" / "minilm-int8-static-256")
    done = subprocess.run([sys.executable, "-c", code, str(home), str(GO)], capture_output=True, text=True,
                          env={**os.environ, "KGOS_HOME": str(home)})
    if done.returncode:
        raise RuntimeError(f"importing go failed:\n{done.stderr[-2000:]}")


@section("after-write")
def after_write_rows(args: argparse.Namespace) -> list[Row]:
    if not GO.exists():
        raise Skipped(f"no {GO}")
    with tempfile.TemporaryDirectory(prefix="kgos-after-write-") as tmp:
        home = Path(tmp) / "home"
        _go_workspace(home, args.fast_models)
        r = run_script("first_query.py", "--home", str(home), "--kg", "go", "--repeats", str(args.write_repeats),
                       env={"KGOS_HOME": str(home)})
    size = f"go, {_size(r['nodes'], r['edges'])}, fast-tier vectors"
    full, full_cpu = r["anchor: full build + search"]
    rows = []
    for key in ("description changed", "edge added", "node added"):
        wall, cpu = r[f"write -> search: {key}"]
        rows.append(Row("after a write", f"next search after one write ({key}), {size}", wall, "s", anchor=full,
                        anchor_name="full snapshot build + search", cpu=cpu,
                        note=f"background save {r[f'  background save ({key})']:.2f} s"))
    rows[-1] = replace(rows[-1], note=f"{rows[-1].note}; results equal to a full build: "
                                      f"{r['results equal to the full build']}")
    return rows


@section("studio")
def studio_rows(args: argparse.Namespace) -> list[Row]:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from studio_browser import missing
    why = missing()
    if why:
        raise Skipped(why)
    r = run_script("studio_bench.py", "--runs", str(args.studio_runs))
    rows = []
    if "api_go_2000_ms" in r:
        rows.append(Row("studio", "neighbourhood endpoint on go, 2,000 nodes (depth 3), p50 over HTTP", r["api_go_2000_ms"],
                        "ms", 50, anchor=r["api_anchor_ms"], anchor_name="bare JSON fetch (/api/health)"))
    for key, label, budget in (("go_2000", "go, 2,000-node neighbourhood", 1000),
                               ("synthetic_20000", "synthetic, 20,000 elements", None)):
        if key in r:
            t = r[key]
            rows.append(Row("studio", f"first rendered graph in headless Chromium, {label} "
                                      f"({t['nodes']:,.0f} nodes + {t['edges']:,.0f} edges)", t["since_navigation_ms"], "ms",
                            budget, anchor=t["anchor_ms"], anchor_name="bare JSON fetch from the page",
                            note=f"fetch {t['fetch_ms']:.0f} ms, draw {t['draw_ms']:.0f} ms; software rendering"))
    rows.append(Row("studio", "drag on 20,000 elements: median frame interval", r["drag_frame_ms_20000"], "ms"))
    if "pan_zoom_5000" in r:
        pz = r["pan_zoom_5000"]
        rows.append(Row("studio", "pan + zoom of 5,000 drawn nodes: frames per second (median)", pz["fps_median"], "fps",
                        30, higher_is_better=True, note=f"p10 {pz['fps_p10']:.0f} fps over {pz['frames']} frames"))
    return rows


@section("chat")
def chat_rows(args: argparse.Namespace) -> list[Row]:
    r = run_script("chat_bench.py", "--reps", str(args.chat_reps))
    rows = []
    for kg, stages in r.items():
        anchor = stages["anchor: kg.search"]["p50_ms"]
        for stage, what in (("retrieve", "retrieval for one turn (search + boosts)"),
                            ("turn", "one grounded turn in-process, offline provider"),
                            ("http first event", "turn over HTTP (SSE): first event"),
                            ("http turn", "turn over HTTP (SSE): last event")):
            x = stages[stage]
            rows.append(Row("chat", f"{what} p50, {kg}", x["p50_ms"], "ms", anchor=anchor, anchor_name="kg.search (k=10)",
                            cpu=x.get("cpu_p50_ms"), note=f"p99 {x['p99_ms']:.1f} ms"))
    return rows


# -- the run --------------------------------------------------------------------------------------------
def _fast_models() -> Path | None:
    """The models folder of ``$KGOS_HOME`` (or ~/.kgos) if the fast tier is built there."""
    folder = Path(os.environ.get("KGOS_HOME") or Path.home() / ".kgos") / "models"
    return folder if (folder / "minilm-int8-static-256").is_dir() else None


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
    ap.add_argument("--embed-sample", type=int, default=500, help="go node texts for the default model's rate")
    ap.add_argument("--fast-models", type=Path, default=_fast_models(),
                    help="folder holding a built minilm-int8-static-256 (default: the one of $KGOS_HOME or ~/.kgos, "
                         "if built; without it the fast tier is distilled first, ~1 min)")
    ap.add_argument("--write-repeats", type=int, default=5, help="writes of each kind (after-write)")
    ap.add_argument("--studio-runs", type=int, default=3, help="page loads per graph (studio)")
    ap.add_argument("--chat-reps", type=int, default=5, help="repetitions per query (chat)")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite the table in docs/performance.md")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    args.import_nodes = args.import_nodes or 1_000_000 // scale
    args.first_nodes = args.first_nodes or 100_000 // scale
    args.methods_nodes = args.methods_nodes or 1_000_000 // scale
    rows, failed, skipped, t0 = [], [], [], time.perf_counter()
    for name, fn in SECTIONS.items():
        if args.only and name not in args.only:
            continue
        print(f"-- {name} ...", file=sys.stderr, flush=True)
        try:
            rows += fn(args)
        except Skipped as why:
            skipped.append(f"{name}: {why}")
        except Exception as exc:  # one broken section must not lose the others' figures
            failed.append(f"{name}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__}")
    table = markdown(rows)
    header = (f"`python benchmarks/run.py {' '.join(sys.argv[1:])}`".replace(" `", "`") + f" on {machine()}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {time.perf_counter() - t0:.0f} s.")
    if skipped:
        header += "\n\nSections skipped (not runnable here): " + "; ".join(skipped)
    if failed:
        header += "\n\nSections that failed: " + "; ".join(failed)
    print(header + "\n\n" + table)
    if args.json_out:
        args.json_out.write_text(json.dumps([r.to_dict() for r in rows], indent=2))
    if not args.no_doc and not args.only:
        write_doc(table, header)


if __name__ == "__main__":
    main()
