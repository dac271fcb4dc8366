"""Readers in several processes while one process writes: how many reads fail (issue 12, point 2).

    python benchmarks/concurrency_bench.py [--readers 8] [--seconds 20] [--write-pause 0] [--kind native]

Seeds a KG embedded with the hashing embedder (native, or a foreign-schema file attached writable),
runs the readers (search, neighbors, want_to, stats in turn) and one writer (add_node + add_edge),
each in a process of its own, and prints reads, failed reads by kind, writes, and writes not visible
afterwards. Exit code 1 when a read failed or a write went missing. The workload is the one
tests/test_concurrency.py runs (tests/concurrency_workload.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import concurrency_workload as workload


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--write-pause", type=float, default=0.0, help="seconds between writes")
    ap.add_argument("--kind", choices=("native", "foreign"), default="native")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        workload.seed(home, args.kind)
        res = workload.run(home, args.readers, args.seconds, args.write_pause)
    print(f"{args.kind}: reads {sum(res.reads)}, failed {res.failed}, writes {len(res.written)}, "
          f"missing writes {len(res.missing)}, not in a fresh snapshot {len(res.unsearched)}")
    for kind, count in sorted(res.errors.items(), key=lambda kv: -kv[1]):
        print(f"  {count:5d}  {kind}")
    return 1 if res.failed or res.missing or res.unsearched else 0


if __name__ == "__main__":
    sys.exit(main())
