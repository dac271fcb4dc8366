"""Search benchmark: warm p50/p99, first query after opening, build time, peak RSS, vs a floor.

    python benchmarks/search_bench.py                 # 2k/280k synthetic, go, 1M/10M synthetic
    python benchmarks/search_bench.py --quick         # 2k/280k, go, 100k/1M
    python benchmarks/search_bench.py --only go --embedder minilm

The floor ("anchor"), measured in the same process on the same corpus: bm25s top-10
(``get_scores`` + ``argpartition``) plus one brute-force float32 cosine scan over a matrix of the
same size as the KG's vectors. Each dataset runs in its own subprocess so peak RSS is its own.
Workspaces are kept in ``benchmarks/out/`` so imports and embeddings are reused across runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
BENCH = ROOT.parents[1] / "shared" / "bench"
OUT = ROOT / "out"
EDGE_TYPES = ["implements", "provides", "enables", "requires", "feeds_into", "part_of", "similar_to",
              "relates_to", "has_limitation", "has_workaround"]


def synthetic_file(path: Path, n_nodes: int, n_edges: int, seed: int = 11) -> Path:
    """Zipf-distributed words as text, uniformly random typed edges (duplicates and loops removed)."""
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    vocab = np.array([f"term{i}" for i in range(20_000)])
    ranks = np.minimum(rng.zipf(1.3, size=n_nodes * 12), len(vocab)) - 1
    words = vocab[ranks].reshape(n_nodes, 12)
    src = rng.integers(0, n_nodes, n_edges)
    dst = rng.integers(0, n_nodes, n_edges)
    etype = rng.integers(0, len(EDGE_TYPES), n_edges)
    keep = src != dst
    keys = np.unique(np.stack([src[keep], dst[keep], etype[keep]], 1), axis=0)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write('{"format": "kgos-node-link/1", "name": "synthetic", "nodes": [\n')
        for i in range(n_nodes):
            f.write(("," if i else "") + json.dumps({"id": f"n{i}", "name": " ".join(words[i, :3]), "type": "thing",
                                                    "description": " ".join(words[i, 3:])}) + "\n")
        f.write('], "edges": [\n')
        for j, (s, t, k) in enumerate(keys):
            f.write(("," if j else "") + f'{{"source": "n{s}", "target": "n{t}", "type": "{EDGE_TYPES[k]}"}}\n')
        f.write("]}\n")
    tmp.rename(path)
    return path


def dataset(name: str, quick: bool) -> tuple[Path, list[str]]:
    """(KG file, queries) for a dataset name."""
    OUT.mkdir(exist_ok=True)
    if name == "go":
        probes = [json.loads(line)["query"] for line in open(BENCH / "go" / "probes-dev.jsonl")]
        return BENCH / "go" / "kg.json.gz", probes[:300]
    sizes = {"seeds-largest": (2_000, 280_000), "1m": (100_000, 1_000_000) if quick else (1_000_000, 10_000_000)}
    n, m = sizes[name]
    rng = random.Random(5)
    queries = [" ".join(f"term{min(int(rng.paretovariate(0.3)), 19_999)}" for _ in range(3)) for _ in range(300)]
    return synthetic_file(OUT / f"{name}-{n}-{m}.json", n, m), queries


def corpus(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        nodes = json.load(f)["nodes"]
    return [f"{n['name']} {n.get('description', '')}" for n in nodes]


def floor_times(docs: list[str], queries: list[str], dims: int) -> list[float]:
    import bm25s
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    matrix = np.random.default_rng(0).standard_normal((len(docs), dims)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    times = []
    for q in queries:
        tokens = bm25s.tokenize([q], stopwords="en", show_progress=False, return_ids=False)[0]
        qv = matrix[hash(q) % len(docs)]
        t0 = time.perf_counter()
        scores = retriever.get_scores(tokens)
        np.argpartition(-scores, 10)[:10]
        np.argpartition(-(matrix @ qv), 10)[:10]
        times.append((time.perf_counter() - t0) * 1000)
    return times


def home_and_id(name: str, quick: bool) -> tuple[Path, str]:
    """go shares the workspace of benchmarks/quality.py (its vectors take minutes to compute)."""
    if name == "go":
        return OUT / "ws-quality", "go"
    return OUT / f"ws-{name}-{'q' if quick else 'f'}", "bench"


def run_dataset(name: str, quick: bool, embedder: str) -> dict:
    import kgos
    path, queries = dataset(name, quick)
    home, db_id = home_and_id(name, quick)
    ws = kgos.Workspace(home)
    t0 = time.perf_counter()
    if not ws.exists(db_id):
        ws.import_file(db_id, path)
    import_s = time.perf_counter() - t0
    kg = ws.kg(db_id)
    t0 = time.perf_counter()
    kg.embed(embedder)
    embed_s = time.perf_counter() - t0
    shutil.rmtree(ws.cache_dir / db_id, ignore_errors=True)
    kg.engine.invalidate()
    t0 = time.perf_counter()
    snap = kg.engine.snapshot()
    build_s = time.perf_counter() - t0
    for q in queries[:5]:
        kg.search(q)  # warm up (loads the query embedder, fills caches)
    times = []
    for q in queries:
        kg.engine.cache.clear()
        t0 = time.perf_counter()
        kg.search(q, k=10)
        times.append((time.perf_counter() - t0) * 1000)
    floor = floor_times(corpus(path), queries, snap.vectors.shape[1] if snap.vectors is not None else 384)
    ws.close()
    first, search_rss = first_query(home, db_id, queries[1:51])
    return {"dataset": name, "nodes": snap.n, "edges": int(snap.graph.n_edges), "import_s": import_s,
            "embed_s": embed_s, "embedder": embedder, "build_s": build_s,
            "p50_ms": statistics.median(times), "p99_ms": float(np.percentile(times, 99)),
            "floor_p50_ms": statistics.median(floor), "first_query_ms": first, "search_rss_mb": search_rss,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


FIRST = """
import sys, time
t0 = time.perf_counter()
import kgos
ws = kgos.Workspace(sys.argv[1])
kg = ws.kg(sys.argv[2])
kg.search(sys.argv[3])
ms = (time.perf_counter() - t0) * 1000
for q in sys.argv[4:]:
    kg.search(q)
# VmHWM, not ru_maxrss: ru_maxrss survives fork+exec and would report the parent's peak
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(ms, hwm / 1024)
"""


def first_query(home: Path, db_id: str, queries: list[str]) -> tuple[float, float]:
    """(ms to the first answer in a new process, peak RSS MB of a process that only searches)."""
    out = subprocess.run([sys.executable, "-c", FIRST, str(home), db_id, *queries], capture_output=True,
                         text=True, check=True)
    ms, rss = out.stdout.strip().splitlines()[-1].split()
    return float(ms), float(rss)


def table(rows: list[dict]) -> str:
    lines = ["| dataset | nodes | edges | embedder | build s | first query ms | p50 ms | p99 ms | floor p50 ms | x floor "
             "| search RSS MB | bench RSS MB |", "|" + "---|" * 12]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['nodes']:,} | {r['edges']:,} | {r['embedder']} | {r['build_s']:.2f} | "
                     f"{r['first_query_ms']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['floor_p50_ms']:.2f} | "
                     f"{r['p50_ms'] / r['floor_p50_ms']:.2f} | {r['search_rss_mb']:,.0f} | {r['peak_rss_mb']:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["seeds-largest", "go", "1m"])
    ap.add_argument("--embedder", default="default", help="embedder for seeds-largest and go (1m uses hash)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        embedder = "hash" if args.child == "1m" else args.embedder
        print(json.dumps(run_dataset(args.child, args.quick, embedder)))
        return
    rows = []
    for name in [args.only] if args.only else ["seeds-largest", "go", "1m"]:
        cmd = [sys.executable, __file__, "--child", name, "--embedder", args.embedder] + (["--quick"] if args.quick else [])
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            print(out.stderr, file=sys.stderr)
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(table(rows))


if __name__ == "__main__":
    main()
