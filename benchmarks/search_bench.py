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
from contextlib import contextmanager
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
    from kgos.index import quantised
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
    ann_s = attach_ann(kg, snap)
    for q in queries[:5]:
        kg.search(q)  # warm up (loads the query embedder, fills caches; the 3rd starts an int8 copy)
    quantised.join_builds(120.0)  # a KG of 20k-200k nodes is timed on its int8 copy, as a server runs it
    times, cpu = timed(kg, queries, clear_vectors=True)  # whole queries: the encoder included
    for q in queries:
        kg.engine.embed_query(q)  # every query's vector in the cache (the loop above left only the last)
    beyond, beyond_cpu = timed(kg, queries, clear_vectors=False)  # query vectors cached: all but the encoder
    encoder = encoder_times(kg.engine.query_embedder(), queries)
    ann = ann_quality(kg, snap, queries[:100]) if snap.ann is not None else {}
    if snap.ann is not None:  # the same queries on the exact scan, same run: what the index saves
        with exact_scan(snap):
            exact, exact_cpu = timed(kg, queries, clear_vectors=False)
        ann.update(exact_p50_ms=statistics.median(exact), exact_cpu_p50_ms=statistics.median(exact_cpu))
    floor = floor_times(corpus(path), queries, snap.vectors.shape[1] if snap.vectors is not None else 384)
    ws.close()
    first, search_rss = first_query(home, db_id, queries[1:51])
    return {"dataset": name, "nodes": snap.n, "edges": int(snap.graph.n_edges), "import_s": import_s,
            "embed_s": embed_s, "embedder": embedder, "build_s": build_s,
            "p50_ms": statistics.median(times), "p99_ms": float(np.percentile(times, 99)),
            "cpu_p50_ms": statistics.median(cpu), "beyond_encoder_p50_ms": statistics.median(beyond),
            "beyond_encoder_p99_ms": float(np.percentile(beyond, 99)), "beyond_encoder_cpu_p50_ms": statistics.median(beyond_cpu), **encoder, "ann_build_s": ann_s, **ann,
            "floor_p50_ms": statistics.median(floor), "first_query_ms": first, "search_rss_mb": search_rss,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def timed(kg, queries: list[str], clear_vectors: bool) -> tuple[list[float], list[float]]:
    """Wall and CPU ms per query with the result cache cleared (and the query-vector cache too, or not)."""
    wall, cpu = [], []
    for q in queries:
        kg.engine.cache.clear()
        if clear_vectors:
            kg.engine.vector_cache.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        kg.search(q, k=10)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return wall, cpu


def encoder_times(embedder, queries: list[str]) -> dict:
    """The query encoder (tokenise, run, pool, normalise) against a bare onnxruntime ``session.run`` on
    the same, already tokenised input, interleaved query by query so both see the same load."""
    session = getattr(embedder, "_session", None)
    if session is None:
        return {}
    enc, bare = [], []
    for q in queries:
        ids = [embedder._cls, *embedder._ids([q])[0], embedder._sep]
        feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)}
        if "token_type_ids" in embedder._input_names:
            feeds["token_type_ids"] = np.zeros((1, len(ids)), np.int64)
        t0 = time.perf_counter()
        session.run(None, feeds)
        t1 = time.perf_counter()
        embedder.embed_query(q)
        enc.append((time.perf_counter() - t1) * 1000)
        bare.append((t1 - t0) * 1000)
    return {"encoder_p50_ms": statistics.median(enc), "bare_ort_p50_ms": statistics.median(bare)}


def attach_ann(kg, snap) -> float | None:
    """Build (or load) the approximate index of a large KG before timing; its build seconds."""
    from kgos.index import nearest
    t0 = time.perf_counter()
    nearest.attach_ann(snap, kg.engine.cache_root, wait=True)
    return time.perf_counter() - t0 if snap.ann is not None else None


@contextmanager
def exact_scan(snap):
    """Searches inside scan every vector (no index attached, none attached meanwhile)."""
    from kgos.index import ann
    index, threshold = snap.ann, ann.MIN_ROWS
    snap.ann, ann.MIN_ROWS = None, snap.n + 1
    try:
        yield
    finally:
        snap.ann, ann.MIN_ROWS = index, threshold


def ann_quality(kg, snap, queries: list[str]) -> dict:
    """The approximate path against the exact scan on the same queries: recall@10 of the embedding
    signal's top 10, and the overlap of the final top-10 results of the search."""
    from kgos.index import nearest
    recall, overlap = [], []
    for q in queries:
        qv = kg.engine.embed_query(q)
        exact = nearest.similarities(snap, qv, exact=True)
        approx = nearest.similarities(snap, qv)
        top = np.argsort(-exact)[:10]
        kth = exact[top[-1]]
        recall.append(float(np.mean(exact[np.argsort(-approx)[:10]] >= kth - 1e-6)))
        kg.engine.cache.clear()
        with_ann = [h.node.id for h in kg.search(q, k=10).results]
        kg.engine.cache.clear()
        with exact_scan(snap):
            without = [h.node.id for h in kg.search(q, k=10).results]
        overlap.append(len(set(with_ann) & set(without)) / max(1, len(without)))
    return {"ann_recall10": statistics.mean(recall), "ann_top10_overlap": statistics.mean(overlap)}


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
    lines = ["| dataset | nodes | edges | embedder | build s | first query ms | p50 ms | p99 ms | CPU p50 ms "
             "| floor p50 ms | x floor | search RSS MB | bench RSS MB |", "|" + "---|" * 13]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['nodes']:,} | {r['edges']:,} | {r['embedder']} | {r['build_s']:.2f} | "
                     f"{r['first_query_ms']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['cpu_p50_ms']:.2f} | "
                     f"{r['floor_p50_ms']:.2f} | {r['p50_ms'] / r['floor_p50_ms']:.2f} | {r['search_rss_mb']:,.0f} | "
                     f"{r['peak_rss_mb']:,.0f} |")
    return "\n".join(lines) + "\n\n" + query_path_table(rows)


def query_path_table(rows: list[dict]) -> str:
    """DESIGN.md 7: search beyond the encoder (query vector cached) <= 3 ms on 2K/280K; the encoder
    within 1.1x a bare onnxruntime call; the approximate index's recall@10 against the exact scan."""
    head = ("| dataset | beyond encoder p50 ms | p99 ms | CPU p50 ms | encoder p50 ms | bare onnxruntime p50 ms | x bare "
            "| ANN build s | ANN recall@10 | top-10 overlap with exact | exact-scan p50 ms (CPU) |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        enc = (f"{r['encoder_p50_ms']:.2f} | {r['bare_ort_p50_ms']:.2f} | {r['encoder_p50_ms'] / r['bare_ort_p50_ms']:.2f}"
               if "encoder_p50_ms" in r else "- | - | -")
        ann = (f"{r['ann_build_s']:.1f} | {r['ann_recall10']:.3f} | {r['ann_top10_overlap']:.3f} | "
               f"{r['exact_p50_ms']:.1f} ({r['exact_cpu_p50_ms']:.1f})" if "ann_recall10" in r else "- | - | - | (exact scan)")
        lines.append(f"| {r['dataset']} | {r['beyond_encoder_p50_ms']:.2f} | {r['beyond_encoder_p99_ms']:.2f} | "
                     f"{r['beyond_encoder_cpu_p50_ms']:.2f} | {enc} | {ann} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["seeds-largest", "go", "1m"])
    ap.add_argument("--embedder", default="default", help="embedder for seeds-largest and go (1m uses hash:384)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        embedder = "hash:384" if args.child == "1m" else args.embedder  # DESIGN.md 7: 384-d vectors at 1M
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
