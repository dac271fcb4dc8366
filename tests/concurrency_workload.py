"""Readers in several processes while one process writes (issue 12, point 2): the workload shared by
tests/test_concurrency.py and benchmarks/concurrency_bench.py.

Every role runs in a process of its own (``spawn``: nothing inherited but the arguments) with its own
Workspace on one KG home. Readers cycle through search, neighbors, want_to and stats and count every
exception by kind; the writer adds a node and an edge to it per step. Native KGs and attached
(foreign-schema) KGs, both embedded with the hashing embedder, so the vectors path is exercised.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
import re
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import kgos

DB_ID = "conc"
SEED_NODES = 200
FOREIGN_DDL = """
CREATE TABLE nodes (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT, description TEXT, properties TEXT);
CREATE TABLE edges (source TEXT NOT NULL, target TEXT NOT NULL, type TEXT NOT NULL, weight REAL,
                    properties TEXT, UNIQUE (source, target, type));
"""


def _seed_graph() -> tuple[list[dict], list[dict]]:
    nodes = [{"id": f"seed:{i}", "name": f"Seed topic {i}", "type": "feature",
              "description": f"cost latency caching tokens {i % 17}"} for i in range(SEED_NODES)]
    edges = [{"source": f"seed:{i // 2}", "target": f"seed:{i}", "type": "enables"} for i in range(1, SEED_NODES)]
    return nodes, edges


def seed(home: Path, kind: str = "native") -> None:
    """A KG named ``DB_ID`` in ``home``: a native file, or a foreign-schema file (WAL) attached writable."""
    nodes, edges = _seed_graph()
    with kgos.Workspace(home) as ws:
        if kind == "native":
            path = home / "seed.json"
            path.write_text(json.dumps({"format": "kgos-node-link/1", "nodes": nodes, "edges": edges}))
            ws.import_file(DB_ID, path)
        else:
            path = home / "foreign.db"
            with sqlite3.connect(path) as conn:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(FOREIGN_DDL)
                conn.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?, '{}')",
                                 [(n["id"], n["name"], n["type"], n["description"]) for n in nodes])
                conn.executemany("INSERT INTO edges VALUES (?, ?, ?, 1.0, '{}')",
                                 [(e["source"], e["target"], e["type"]) for e in edges])
            conn.close()
            ws.attach(DB_ID, path, writable=True)
        kg = ws.kg(DB_ID)
        kg.embed("hash")
        kg.search("warm the snapshot cache")


def error_kind(exc: BaseException) -> str:
    """An exception as a kind: numbers (sizes, indices, paths' random parts) folded to #."""
    return re.sub(r"\d+", "#", f"{type(exc).__name__}: {str(exc)[:80]}")


def reader(home: str, seconds: float, out: mp.Queue) -> None:
    ops = [lambda kg: kg.search("reduce cost with caching", k=5),
           lambda kg: kg.neighbors("seed:3"),
           lambda kg: kg.want_to("lower latency", k=5),
           lambda kg: kg.stats()]
    reads, errors = 0, Counter()
    with kgos.Workspace(Path(home)) as ws:
        kg = ws.kg(DB_ID)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                ops[reads % len(ops)](kg)
            except Exception as exc:  # noqa: BLE001  (the measurement: every failed read, by kind)
                errors[error_kind(exc)] += 1
            reads += 1
    out.put(("reader", reads, dict(errors)))


def writer(home: str, seconds: float, pause: float, out: mp.Queue) -> None:
    written: list[str] = []
    with kgos.Workspace(Path(home)) as ws:
        kg = ws.kg(DB_ID)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            node = kg.add_node(f"Written topic {len(written)}", type="feature", description="fresh write")
            kg.add_edge(f"seed:{len(written) % SEED_NODES}", node.id, "relates_to")
            written.append(node.id)
            time.sleep(pause)
    out.put(("writer", written, {}))


@dataclass(frozen=True)
class Outcome:
    reads: list[int]  # per reader
    errors: dict[str, int]  # failed reads by kind
    written: list[str]  # node ids the writer added, in order
    missing: list[str] = field(default_factory=list)  # of those, not readable afterwards
    unsearched: list[str] = field(default_factory=list)  # of those, not in a fresh snapshot afterwards

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


def _collect(out: mp.Queue, procs: list, timeout: float) -> list[tuple]:
    """One result per process; a process that died without one (its traceback is on stderr) fails the
    run at once instead of leaving the caller waiting for the timeout."""
    results: list[tuple] = []
    deadline = time.monotonic() + timeout
    while len(results) < len(procs):
        try:
            results.append(out.get(timeout=1.0))
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"a worker process died (exit codes {dead}) or timed out") from None
    return results


def run(home: Path, readers: int = 8, seconds: float = 20.0, pause: float = 0.0) -> Outcome:
    """Run the readers and the writer on a seeded home; then check every write from a new Workspace."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=reader, args=(str(home), seconds, out)) for _ in range(readers)]
    procs.append(ctx.Process(target=writer, args=(str(home), seconds, pause, out)))
    for p in procs:
        p.start()
    try:
        results = _collect(out, procs, seconds + 120)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    reads, errors, written = [], Counter(), []
    for role, value, errs in results:
        if role == "reader":
            reads.append(value)
            errors.update(errs)
        else:
            written = value
    with kgos.Workspace(home) as ws:
        kg = ws.kg(DB_ID)
        missing = [nid for nid in written if kg.get_node(nid) is None]
        snap = kg.engine.snapshot()
        unsearched = [nid for nid in written if nid not in snap.index]
    return Outcome(reads, dict(errors), written, missing, unsearched)
