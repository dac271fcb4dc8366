"""The workspace's shared tables in PostgreSQL (docs/postgres.md, "What is shared") against SQLite.

    python benchmarks/shared_workspace_bench.py              # a throwaway cluster, 200 ops per measure
    python benchmarks/shared_workspace_bench.py --ops 50     # quicker
    python benchmarks/shared_workspace_bench.py --database-url postgresql://...   # an existing empty database

Sections, each against its anchor measured in the same run:
- single operations, p50 in ms: append a turn (2 messages), read a 20-turn conversation, list
  experts, a vote, add a memory (with its deterministic KG enrichment), recall a memory; PostgreSQL
  (a workspace on the database) against SQLite (a workspace.db), and their ratio;
- concurrent turns: 2 workspaces (two servers' homes) x 4 threads appending turns to one conversation
  on PostgreSQL, against 8 threads on one SQLite workspace: turns/s, and turns lost (must be 0). Each
  thread holds its workspace's lock per turn, as the HTTP server does, so SQLite writes one at a time
  and PostgreSQL two (one per server), meeting at the conversation's row lock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the throwaway cluster of the tests

import kgos
from kgos.experts import ExpertService
from kgos.experts.feedback import FeedbackService
from kgos.memory import MemoryConfig, MemoryService

EXPERT = {"name": "Bench", "kg_db_id": "notes"}
WORDS = ["deploy", "docker", "billing", "service", "postgres", "cache", "quokka", "notes", "expert", "memory", "search", "graph"]


def p50(fn: Callable[[int], object], n: int) -> float:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def turn(store: object, cid: str, n: int) -> None:
    store.add_messages(cid, [("user", f"question {n} about {WORDS[n % len(WORDS)]}", {}),  # type: ignore[attr-defined]
                             ("assistant", f"answer {n}", {"kg_db_id": "notes"})], turn_id=f"turn_{n:016x}")


def single_ops(ws: kgos.Workspace, n: int) -> dict[str, float]:
    ws.create("notes").add_node("Prompt caching", type="feature")
    experts = ExpertService(ws)
    experts.create(EXPERT, id="bench")
    cid, _ = experts.store.open_conversation("bench", "c1")
    read_cid, _ = experts.store.open_conversation("bench", "c20")
    for i in range(20):
        turn(experts.store, read_cid, 10_000 + i)
    mem = MemoryService(ws, config=MemoryConfig())
    mem.add("warm up the memory KG", enrich=True)
    out = {
        "append a turn (2 messages)": p50(lambda i: turn(experts.store, cid, i), n),
        "read a 20-turn conversation": p50(lambda i: experts.conversation("bench", read_cid), n),
        "list experts": p50(lambda i: experts.list(), n),
        "vote on a turn": p50(lambda i: FeedbackService(ws).give(f"turn_{10_000 + i % 20:016x}",
                                                                  "up" if i % 2 else "down"), min(n, 20)),
        "add a memory (+ KG enrichment)": p50(lambda i: mem.add(f"I use {WORDS[i % len(WORDS)]} at work {i}"), n),
        "recall a memory": p50(lambda i: mem.recall(WORDS[i % len(WORDS)]), n),
    }
    return out


def concurrent(workspaces: list[kgos.Workspace], threads_each: int, turns_each: int) -> tuple[float, int, int]:
    """(turns/s, turns written, turns found) of every thread appending to one conversation."""
    store = ExpertService(workspaces[0]).store
    cid, _ = store.open_conversation("bench", "busy")
    jobs = [(ws, k) for ws in workspaces for k in range(threads_each)]

    def work(ws: kgos.Workspace, k: int, base: int) -> None:
        s = ExpertService(ws).store
        for i in range(turns_each):
            with ws.lock:  # as the HTTP server holds it around every use of a workspace
                turn(s, cid, base + i)
    threads = [threading.Thread(target=work, args=(ws, k, 1_000_000 * (j + 1))) for j, (ws, k) in enumerate(jobs)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    seconds = time.perf_counter() - t0
    conv = ExpertService(workspaces[-1]).conversation("bench", cid)
    written = len(jobs) * turns_each
    return written / seconds, written, len(conv.messages) // 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=200, help="operations per measure (default 200)")
    ap.add_argument("--database-url", help="an existing empty database (default: a throwaway cluster)")
    args = ap.parse_args()
    if args.database_url:
        url = args.database_url
    else:
        from postgres_cluster import running_cluster
        url = running_cluster().new_database()
    folder = Path(tempfile.mkdtemp(prefix="kgos-shared-bench-"))
    sqlite_ws = kgos.Workspace(folder / "sqlite")
    pg_a = kgos.Workspace(folder / "a", database_url=url)
    pg_b = kgos.Workspace(folder / "b", database_url=url)
    lite, pg = single_ops(sqlite_ws, args.ops), single_ops(pg_a, args.ops)
    print(f"## single operations, p50 ms ({args.ops} each; votes: 20)\n")
    print("| operation | PostgreSQL | SQLite (anchor) | ratio |\n|---|---:|---:|---:|")
    for name, value in pg.items():
        print(f"| {name} | {value:.2f} | {lite[name]:.2f} | {value / lite[name]:.2f}x |")
    turns = max(10, args.ops // 4)
    pg_rate, pg_written, pg_found = concurrent([pg_a, pg_b], 4, turns)
    lite_rate, lite_written, lite_found = concurrent([sqlite_ws], 8, turns)
    print(f"\n## concurrent turns on one conversation ({turns} turns per thread)\n")
    print("| setup | turns/s | written | found | lost |\n|---|---:|---:|---:|---:|")
    print(f"| PostgreSQL: 2 workspaces x 4 threads | {pg_rate:.0f} | {pg_written} | {pg_found} | "
          f"{pg_written - pg_found} |")
    print(f"| SQLite (anchor): 1 workspace x 8 threads | {lite_rate:.0f} | {lite_written} | {lite_found} | "
          f"{lite_written - lite_found} |")
    print(f"\nratio PostgreSQL / SQLite turns/s: {pg_rate / lite_rate:.2f}x")
    for ws in (sqlite_ws, pg_a, pg_b):
        ws.close()


if __name__ == "__main__":
    main()
