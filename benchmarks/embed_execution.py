"""How MiniLM's texts run, and minilm-q8 beside minilm (docs/embedders.md, "Per-text execution and minilm-q8").

python benchmarks/embed_execution.py [--sample 600] [--reps 5] [--queries 300]

On ``--sample`` go node texts (seed 0), interleaved ``--reps`` times in one process, medians:
- ``minilm`` and ``minilm-q8`` as kgos runs them: without padding (minilm: texts of equal token length
  share a call; minilm-q8: each text alone) on a one-thread session, as many calls at a time as there
  are usable cores;
- the anchor, the same models the way kgos ran them before: length-sorted batches of at most 64 x 48
  padded tokens on one session with an intra-op thread per usable core.
Then single-query encoding p50/p99 over the first ``--queries`` go probes, and the cosine of each
minilm-q8 vector to minilm's. ``minilm-q8`` is built first in ``$KGOS_HOME/models`` when missing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import time
from pathlib import Path

import numpy as np

from kgos.embed import get_embedder

GO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "go"


def padded_batches(emb, texts: list[str]) -> np.ndarray:
    """The former ``embed``: length-sorted token-budget batches on all usable cores (mean-pooled)."""
    session, seqs = emb._session, emb._ids(texts)
    order = sorted(range(len(seqs)), key=lambda j: len(seqs[j]))
    out, start = np.zeros((len(texts), emb.dims), np.float32), 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end + 1 - start) * (len(seqs[order[end]]) + 2) <= 64 * 48:
            end += 1
        rows = order[start:end]
        out[rows] = padded_run(emb, session, [seqs[j] for j in rows])
        start = end
    return out


def padded_run(emb, session, seqs: list[list[int]]) -> np.ndarray:
    """One call on sequences padded to the longest, mean-pooled over the attention mask."""
    ids = np.zeros((len(seqs), max(map(len, seqs)) + 2), np.int64)
    mask = np.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, : len(s) + 2] = [emb._cls, *s, emb._sep]
        mask[i, : len(s) + 2] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in emb._input_names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    m = mask[:, :, None].astype(np.float32)
    return (session.run(None, feeds)[0] * m).sum(axis=1) / m.sum(axis=1)


def rate(fn, n: int) -> tuple[float, float]:
    t, c = time.perf_counter(), time.process_time()
    fn()
    return n / (time.perf_counter() - t), n / (time.process_time() - c)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=600)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    nodes = json.loads(gzip.open(GO / "kg.json.gz").read())["nodes"]
    random.seed(0)
    texts = [(n["name"] + ". " + (n.get("description") or ""))[:1000] for n in random.sample(nodes, args.sample)]
    with open(GO / "probes-dev.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["query"] for line in f][: args.queries]
    models = {spec: get_embedder(spec) for spec in ("minilm", "minilm-q8")}
    runs = {}
    for spec, emb in models.items():
        runs[f"`{spec}`, padded batches (anchor)"] = lambda e=emb: padded_batches(e, texts)
        runs[f"`{spec}`, as kgos runs it"] = lambda e=emb: e.embed(texts)
    for fn in runs.values():
        fn()  # warm-up: sessions, pools, tokenizer caches
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
    for _ in range(args.reps):
        for name, fn in runs.items():
            got[name].append(rate(fn, len(texts)))
    anchor = statistics.median(r[0] for r in got["`minilm`, padded batches (anchor)"])
    print(f"{len(texts)} go texts, {args.reps} interleaved runs, load {os.getloadavg()[0]:.1f}\n")
    print("| setting | texts/s | texts per CPU-s | x anchor |\n|---|---|---|---|")
    for name, rows in got.items():
        wall = statistics.median(r[0] for r in rows)
        print(f"| {name} | {wall:.1f} | {statistics.median(r[1] for r in rows):.1f} | {wall / anchor:.2f} |")
    for spec, emb in models.items():
        ms = []
        for q in queries:
            t = time.perf_counter()
            emb.embed_query(q)
            ms.append((time.perf_counter() - t) * 1000)
        print(f"\nquery encoding, {spec}: p50 {statistics.median(ms):.2f} ms, p99 {np.percentile(ms, 99):.2f} ms", end="")
    cos = (models["minilm"].embed(texts) * models["minilm-q8"].embed(texts)).sum(axis=1)
    print(f"\n\nminilm-q8 vs minilm, cosine: mean {cos.mean():.4f}, min {cos.min():.4f}")


if __name__ == "__main__":
    main()
