"""Readers in several processes while one process writes: how many reads fail (issue 12, point 2).

    python benchmarks/concurrency_bench.py --readers 8 --seconds 20 [--write-pause 0]

Seeds a KG embedded with the hashing embedder, then runs the readers (search, neighbors, want_to,
stats in turn) and one writer (add_node + add_edge) for the given time, each in its own process with
its own Workspace. Prints reads, failed reads by error kind, writes, and whether every write is
visible afterwards. Exit code 1 when any read failed or a write went missing.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import kgos

SEED_NODES = 300


def seed(home: Path, db_id: str = "conc") -> None:
    with kgos.Workspace(home) as ws:
        kg = ws.create(db_id)
        for i in range(SEED_NODES):
            kg.add_node(f"Seed topic {i}", type="feature", description=f"cost latency caching tokens {i % 17}",
                        id=f"seed:{i}")
        for i in range(1, SEED_NODES):
            kg.add_edge(f"seed:{i // 2}", f"seed:{i}", "enables")
        kg.embed("hash")
        kg.search("warm the snapshot cache")


def reader(home: str, db_id: str, seconds: float, out: mp.Queue) -> None:
    ops = [lambda kg: kg.search("reduce cost with caching", k=5),
           lambda kg: kg.neighbors("seed:3"),
           lambda kg: kg.want_to("lower latency", k=5),
           lambda kg: kg.stats()]
    reads, errors = 0, Counter()
    with kgos.Workspace(Path(home)) as ws:
        kg = ws.kg(db_id)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                ops[reads % len(ops)](kg)
            except Exception as exc:  # the measurement: every failed read, by kind
                errors[re.sub(r"\d+", "#", f"{type(exc).__name__}: {str(exc)[:80]}")] += 1  # by kind, not by size
            reads += 1
    out.put(("reader", reads, dict(errors)))


def writer(home: str, db_id: str, seconds: float, pause: float, out: mp.Queue) -> None:
    written: list[str] = []
    with kgos.Workspace(Path(home)) as ws:
        kg = ws.kg(db_id)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            node = kg.add_node(f"Written topic {len(written)}", type="feature", description="fresh write")
            kg.add_edge(f"seed:{len(written) % SEED_NODES}", node.id, "relates_to")
            written.append(node.id)
            time.sleep(pause)
    out.put(("writer", written, {}))


def run(home: Path, readers: int = 8, seconds: float = 20.0, pause: float = 0.0,
        db_id: str = "conc") -> dict:
    """Run the workload on an already seeded KG; returns reads, failures by kind, writes, missing writes."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=reader, args=(str(home), db_id, seconds, out)) for _ in range(readers)]
    procs.append(ctx.Process(target=writer, args=(str(home), db_id, seconds, pause, out)))
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    reads, errors, written = 0, Counter(), []
    for role, value, errs in results:
        if role == "reader":
            reads += value
            errors.update(errs)
        else:
            written = value
    with kgos.Workspace(home) as ws:
        kg = ws.kg(db_id)
        missing = [nid for nid in written if kg.get_node(nid) is None]
        hits = kg.search("Written topic", k=5).results if written else []
    return {"reads": reads, "failed": sum(errors.values()), "errors": dict(errors), "writes": len(written),
            "missing": missing, "searchable": bool(hits) or not written}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--write-pause", type=float, default=0.0, help="seconds between writes")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        seed(home)
        report = run(home, args.readers, args.seconds, args.write_pause)
    print(f"reads {report['reads']}, failed {report['failed']}, writes {report['writes']}, "
          f"missing writes {len(report['missing'])}")
    for kind, count in sorted(report["errors"].items(), key=lambda kv: -kv[1]):
        print(f"  {count:5d}  {kind}")
    return 1 if report["failed"] or report["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
