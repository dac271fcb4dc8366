"""Agent-memory benchmark (issue 7): extraction + upsert per memory, and 10,000 memories in a row.

    python benchmarks/memory_bench.py              # 10,000 memories
    python benchmarks/memory_bench.py --n 2000     # quicker
    python benchmarks/memory_bench.py --json       # one JSON document on stdout

Measured in one run, on synthetic notes and chat turns (projects, known tools, files, preferences,
decisions, usage, and entity-free chatter) whose vocabulary keeps growing, so the KG grows too:

1. per memory, p50/p90/p99 of: deterministic extraction alone; the KG upsert alone (one transaction);
   extraction + upsert (the spec/002 budget: p50 <= 10 ms); and the whole ``MemoryService.add``
   (memory row + FTS + extraction + KG upsert + provenance rows);
2. N ``add`` calls in a row: throughput, and p50 of the first and last 10% (does it slow as the KG grows?);
3. the anchor: a bare ``INSERT`` of the same memory rows into a plain table of a file with the same
   settings (WAL, synchronous=NORMAL, one transaction per row), which no memory write can beat.
Ratios against the anchor are what to compare across machines; absolute times vary with load.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import kgos
from kgos.memory import MemoryConfig, MemoryService, extract
from kgos.memory.graph import GraphWriter
from kgos.store.migrations import now_iso

TOOLS = ["Python", "Rust", "Docker", "Kubernetes", "PostgreSQL", "SQLite", "Redis", "FastAPI", "React",
         "TypeScript", "Terraform", "GitHub Actions", "Vim", "pytest", "Kafka", "DuckDB", "NumPy", "Go"]
CONCEPTS = ["dark mode", "small functions", "type hints", "pair programming", "early mornings", "tabs"]
SYLLABLES = ["zor", "vex", "mel", "tri", "kan", "lo", "qua", "ris", "bel", "dor", "fin", "sa", "mi", "on"]
CHATTER = ["Had a long call about the roadmap and took notes.", "Lunch was late, then reviewed the plan.",
           "Need to remember to water the plants on Friday.", "The meeting moved to Thursday afternoon."]


def project(rng: random.Random, size: int) -> str:
    i = rng.randrange(size)
    r = random.Random(i)
    return "".join(r.choice(SYLLABLES) for _ in range(3)).capitalize()


def note(rng: random.Random, i: int) -> str:
    """A memory; the pool of projects grows with i, so the KG keeps growing."""
    p, t, t2 = project(rng, 50 + i // 4), rng.choice(TOOLS), rng.choice(TOOLS)
    templates = [
        f"I'm working on {p} using {t} and {t2}.",
        f"I prefer {rng.choice(CONCEPTS)} when writing {t}.",
        f"We decided to use {t} for {p} because it is simpler.",
        f"Fixed a bug in ./src/{p.lower()}/module_{i % 97}.py for the {p} project.",
        f"Deploying {p} via {t} today, with {t2} for the data.",
        f"I always use {t}. Building {p} with {t2} next week.",
        rng.choice(CHATTER),
    ]
    return rng.choice(templates)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(values_s: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values_s]
    return {"p50_ms": round(pct(ms, 0.5), 3), "p90_ms": round(pct(ms, 0.9), 3), "p99_ms": round(pct(ms, 0.99), 3),
            "mean_ms": round(statistics.fmean(ms), 3)}


def bench_components(texts: list[str], home: Path) -> dict[str, dict[str, float]]:
    """Extraction alone, upsert alone, both (into a KG that starts empty and grows)."""
    with kgos.Workspace(home) as ws:
        store = ws.create("bench").store
        writer = GraphWriter(store)
        writer.ensure_user()
        t_extract, t_upsert = [], []
        for i, text in enumerate(texts):
            t0 = time.perf_counter()
            extraction = extract(text)
            t1 = time.perf_counter()
            writer.write([(extraction, f"mem_{i:032x}", now_iso())])
            t2 = time.perf_counter()
            t_extract.append(t1 - t0)
            t_upsert.append(t2 - t1)
        both = [a + b for a, b in zip(t_extract, t_upsert)]
        return {"extract": summary(t_extract), "upsert": summary(t_upsert), "extract+upsert": summary(both),
                "kg": {"entities": store.node_count(), "edges": store.edge_count()}}


def bench_service(texts: list[str], home: Path) -> dict[str, object]:
    """``MemoryService.add`` N times in a row: throughput and the latency trend as the KG grows."""
    with kgos.Workspace(home) as ws:
        mem = MemoryService(ws, config=MemoryConfig())
        mem.add("warm-up: I prefer Python.")
        times = []
        t_start = time.perf_counter()
        for text in texts:
            t0 = time.perf_counter()
            mem.add(text)
            times.append(time.perf_counter() - t0)
        total = time.perf_counter() - t_start
        tenth = max(1, len(times) // 10)
        stats = mem.stats()
        t0 = time.perf_counter()
        ctx = [mem.context(q) for q in ("python", "what do I prefer?", "docker and kubernetes")]
        context_ms = (time.perf_counter() - t0) / len(ctx) * 1000
        return {"memories": len(texts), "seconds": round(total, 3), "per_second": round(len(texts) / total, 1),
                "add": summary(times), "first_10pct_p50_ms": summary(times[:tenth])["p50_ms"],
                "last_10pct_p50_ms": summary(times[-tenth:])["p50_ms"], "context_ms": round(context_ms, 2),
                "kg": {"entities": stats.entities, "edges": stats.edges}, "kg_status": stats.kg_status}


def bench_anchor(texts: list[str], home: Path) -> dict[str, object]:
    """The floor: the memory row alone, one INSERT + COMMIT per memory, same journal settings."""
    conn = sqlite3.connect(home / "anchor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT, tags TEXT, metadata TEXT, "
                 "created_at TEXT, updated_at TEXT)")
    times = []
    t_start = time.perf_counter()
    for text in texts:
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO memories VALUES (?, ?, '[]', '{}', ?, ?)",
                     (f"mem_{uuid.uuid4().hex}", text, now_iso(), now_iso()))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - t_start
    conn.close()
    return {"seconds": round(total, 3), "per_second": round(len(texts) / total, 1), "insert": summary(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories to write in a row (default 10,000)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    texts = [note(rng, i) for i in range(args.n)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        anchor = bench_anchor(texts, root)
        components = bench_components(texts, root / "components")
        service = bench_service(texts, root / "service")
    result = {"n": args.n, "anchor": anchor, "components": components, "service": service,
              "ratios": {"add_p50_vs_insert_p50": round(service["add"]["p50_ms"] / anchor["insert"]["p50_ms"], 1),
                         "throughput_vs_insert": round(anchor["per_second"] / service["per_second"], 1)},
              "budget": {"extract+upsert_p50_ms<=10": components["extract+upsert"]["p50_ms"] <= 10}}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


def report(r: dict) -> None:
    c, s, a = r["components"], r["service"], r["anchor"]
    print(f"memory benchmark: {r['n']:,} synthetic memories\n")
    print(f"{'per memory':<28}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}")
    for label, d in (("extraction", c["extract"]), ("KG upsert (1 transaction)", c["upsert"]),
                     ("extraction + upsert", c["extract+upsert"]), ("MemoryService.add (all)", s["add"]),
                     ("anchor: bare INSERT row", a["insert"])):
        print(f"{label:<28}{d['p50_ms']:>9.3f}{d['p90_ms']:>9.3f}{d['p99_ms']:>9.3f}")
    ok = "within" if r["budget"]["extract+upsert_p50_ms<=10"] else "OVER"
    print(f"\nextraction + upsert p50 {c['extract+upsert']['p50_ms']:.3f} ms: {ok} the 10 ms budget")
    print(f"{s['memories']:,} adds in a row: {s['seconds']:.2f} s, {s['per_second']:,.0f} memories/s "
          f"(anchor {a['per_second']:,.0f} rows/s; {r['ratios']['throughput_vs_insert']}x)")
    print(f"add p50 first 10%: {s['first_10pct_p50_ms']:.3f} ms, last 10%: {s['last_10pct_p50_ms']:.3f} ms "
          f"(KG grew to {s['kg']['entities']:,} entities, {s['kg']['edges']:,} edges)")
    print(f"context() on the final KG: {s['context_ms']:.2f} ms per query; kg_status {s['kg_status']}")


if __name__ == "__main__":
    main()
