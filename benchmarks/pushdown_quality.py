"""Pushdown search quality beside the in-memory search, on the bench dev sets (issue 31; docs/postgres.md).

    python benchmarks/pushdown_quality.py                          # cli-man and go, every dev probe
    python benchmarks/pushdown_quality.py --only go --sample 500   # a fixed sample (seed 13)

Imports each dev set's KG (``benchmarks/devsets.py``: the bench's cli-man and go) into a throwaway
PostgreSQL with pgvector (``tests/postgres_cluster.py``), embeds it once (``--embedder``, default
``fast``: the installed MiniLM distilled to static 256-dim vectors, no download; ``default`` = MiniLM
itself embeds ~30 texts/s on this machine, 24 min for go), and runs the dev probes on the same KG,
same vectors: with ``pushdown=off`` (the in-memory engine: the whole-KG snapshot, as a SQLite KG is
searched), ``pushdown=on``, and ``pushdown=on`` with the text query of before (``--before``: the
query's literal words, stopwords included, no inflections; BM25 with the candidates' document
frequencies, not the KG's; the same code otherwise). Prints strict
nDCG@10, MRR@10, recall@10 per KG and mode, p50 latency, and the overlap of the two top 10s (mean
|top10 in-memory & top10 pushdown| / 10, and the share of probes whose first hit is the same).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))  # the throwaway cluster of the tests
sys.path.insert(0, str(HERE))

import devsets

KGS = ("cli-man", "go")
METRICS = ("ndcg@10", "mrr@10", "recall@10")


def run_mode(kg, probes: list, mode: str, literal: bool = False):
    """The dev probes through ``kg.search`` with the KG's pushdown setting ``mode`` (on/off);
    ``literal``: the code of before (the text query of the query's words as written, no analyzer; BM25
    with the candidates' document frequencies)."""
    from kgos.eval.run import evaluate, kg_ranker
    from kgos.retrieval import pushdown as rp
    from kgos.store import postgres_pushdown as pp
    kg.store.set_meta(pushdown=mode)
    kg.search(probes[0].query, k=10)  # untimed: pushdown's first search copies the vectors, builds HNSW
    words, kg_idf = pp.query_words, rp.with_kg_idf
    if literal:
        pp.query_words = lambda query, limit=16, analyzer=None: words(query, limit)
        rp.with_kg_idf = lambda *args: None
    try:
        kg.engine.cache.clear()
        return evaluate(probes, kg_ranker(kg, k=10), label=mode)
    finally:
        pp.query_words, rp.with_kg_idf = words, kg_idf


def overlap(a, b) -> dict[str, float]:
    """How alike two runs' top 10s are, probe by probe."""
    shared = [len(set(x["top"]) & set(y["top"])) / 10 for x, y in zip(a.per_probe, b.per_probe, strict=True)]
    first = [bool(x["top"]) and x["top"][:1] == y["top"][:1] for x, y in zip(a.per_probe, b.per_probe, strict=True)]
    return {"top10": statistics.fmean(shared), "top1": statistics.fmean(first)}


def measure(url: str, home: Path, name: str, embedder: str, sample: int | None, before: bool) -> dict:
    import kgos
    ws = kgos.Workspace(home / name, database_url=url)
    t0 = time.perf_counter()
    kg = devsets.open_kg(ws, name, embedder)
    setup = time.perf_counter() - t0
    probes = devsets.probes(name, sample)
    off = run_mode(kg, probes, "off")
    on = run_mode(kg, probes, "on")
    runs = {"off": off, "on": on} | ({"before": run_mode(kg, probes, "on", literal=True)} if before else {})
    ws.close()
    return {"kg": name, "n": len(probes), "setup_s": setup, "runs": runs,
            "overlap": {m: overlap(off, r) for m, r in runs.items() if m != "off"}}


LABELS = {"off": "in-memory", "before": "pushdown before (literal words, candidates' df)", "on": "pushdown"}


def table(rows: list[dict]) -> str:
    out = ["| KG (probes) | search | nDCG@10 | MRR@10 | recall@10 | p50 ms | top-10 overlap | same first hit |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        for mode, label in LABELS.items():
            rep = r["runs"].get(mode)
            if rep is None:
                continue
            figs = " | ".join(f"{rep.strict[m]:.3f}" for m in METRICS)
            ov = r["overlap"].get(mode)
            ov_text = f"{ov['top10']:.3f} | {ov['top1']:.3f}" if ov else " | "
            out.append(f"| {r['kg']} ({r['n']}) | {label} | {figs} | {rep.latency_ms['p50']:.1f} | {ov_text} |")
    return "\n".join(out)


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", choices=KGS, help="a dev set (repeatable; default both)")
    ap.add_argument("--sample", type=int, default=None, help="a fixed sample of this many dev probes per KG")
    ap.add_argument("--embedder", default="fast", help="embedder spec (default: fast)")
    ap.add_argument("--before", action="store_true", help="also pushdown with the text query of before")
    args = ap.parse_args()
    from postgres_cluster import vector_cluster

    from kgos.embed import resolve_spec
    cluster, why = vector_cluster()
    if cluster is None:
        sys.exit(f"pushdown_quality: {why}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgos-pdq-") as tmp:
        for name in args.only or KGS:
            rows.append(measure(cluster.new_database(), Path(tmp), name, args.embedder, args.sample, args.before))
            print(f"{name}: imported + embedded in {rows[-1]['setup_s']:.0f} s", flush=True)
            print(table(rows[-1:]), flush=True)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nembedder {resolve_spec(args.embedder)}; commit {commit()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load}\n")
    print(table(rows))


if __name__ == "__main__":
    main()
