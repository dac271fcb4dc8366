"""First query after opening a KG, `import kgos`, and the snapshot rebuild after one small write.

    python benchmarks/first_query.py                       # synthetic 100,000 nodes / 1,000,000 edges
    python benchmarks/first_query.py --nodes 300000 --edges 3000000 --json-out out.json

1. ``import kgos`` in a new process (median of 5), anchor ``import numpy`` in a new process.
2. The KG is imported with ``Workspace.import_file``, which builds and saves the search snapshot.
3. First query in a new process (import kgos, open the workspace and KG, one hybrid search; median
   of 3), anchor: a new process that only ``np.load``s every array of the saved snapshot folder.
4. The full snapshot build (cache folder removed), then the rebuild after one small write in the
   same process (a description changed, an edge added, a node added); anchor: the full build.
Budgets (DESIGN.md section 7): first query <= 2 s at 100k nodes, ``import kgos`` <= 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from synthetic import kg_file

FIRST = """
import sys, time
t0, c0 = time.perf_counter(), time.process_time()
import kgos
kg = kgos.Workspace(sys.argv[1]).kg("bench")
kg.search("term1 term20 term300")
print(time.perf_counter() - t0, time.process_time() - c0)
"""
LOAD_ARRAYS = """
import sys, time
t0, c0 = time.perf_counter(), time.process_time()
from pathlib import Path
import numpy as np
for f in sorted(Path(sys.argv[1]).rglob("*.np[yz]")):
    a = np.load(f, allow_pickle=True)
    if f.suffix == ".npz":
        [a[k] for k in a.files]
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def in_new_process(code: str, *args: str, repeats: int = 3) -> tuple[float, float]:
    """Median (wall s, CPU s) of ``code`` run in new processes; it prints its own two figures."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
        runs.append(tuple(float(x) for x in out.stdout.split()[-2:]))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


IMPORT_TIME = "import time; t0, c0 = time.perf_counter(), time.process_time(); import {0}; " \
              "print(time.perf_counter() - t0, time.process_time() - c0)"


def timed(fn) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def run(n: int, m: int) -> dict:
    import kgos
    out: dict = {"nodes": n, "edges": m}
    out["import_kgos"] = in_new_process(IMPORT_TIME.format("kgos"), repeats=5)
    out["import_numpy"] = in_new_process(IMPORT_TIME.format("numpy"), repeats=5)
    path = kg_file(n, m)
    with tempfile.TemporaryDirectory() as home:
        ws = kgos.Workspace(home)
        out["import_with_snapshot"] = timed(lambda: ws.import_file("bench", path))
        kg = ws.kg("bench")
        out["first_query"] = in_new_process(FIRST, home)
        out["load_arrays"] = in_new_process(LOAD_ARRAYS, str(ws.cache_dir / "bench"))
        shutil.rmtree(ws.cache_dir / "bench", ignore_errors=True)
        kg.engine._snapshot = kg.engine._previous = None  # a cold build: nothing to reuse
        out["full_build"] = timed(kg.engine.snapshot)
        writes = {"description changed": lambda: kg.update_node("n1", description="a changed description"),
                  "edge added": lambda: kg.add_edge("n1", "n2", "relates_to"),
                  "node added": lambda: kg.add_node("A new node", "thing", "fresh words", id="fresh")}
        for name, write in writes.items():
            write()
            out[f"rebuild: {name}"] = timed(kg.engine.snapshot)
        ws.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, help="default 10 x nodes")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    result = run(args.nodes, args.edges or 10 * args.nodes)
    for key, value in result.items():
        print(f"{key:32s} " + (f"{value[0]:8.2f} s wall {value[1]:8.2f} s CPU" if isinstance(value, tuple) else f"{value:,}"))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
