"""spec/003 3.6 embedding benchmark, and whether a projection helps search (issue 15 part 6).

    python benchmarks/embed_projection_bench.py --home /tmp/embhome              # demo, finance, cli-man
    python benchmarks/embed_projection_bench.py --home H --only cli-man --sample 1500 --models minilm,fast,hash
    python benchmarks/embed_projection_bench.py --home H --search-only            # projections in search

1. ``kgos.embed.bench.bench`` on each KG of ``--home`` named by ``--only`` (default: the demo KGs
   ``demo`` and ``finance`` plus a ``--sample`` of ``cli-man``, imported beforehand with
   ``kgos demo`` / ``kgos kg import cli-man ../shared/bench/cli-man/kg.json.gz``): one table per KG.
   The anchor of every table is the same run's ``<model>+none`` row (the raw vectors, no projection).
2. Projections in search, on cli-man's dev probes: the KG's search model with raw vectors (anchor)
   against the same vectors projected by PCA (fitted on the node vectors) or by the learned linear
   projection (trained on the KG's edges), applied to node and query vectors alike, by embeddings alone and in the default hybrid; Recall@1/10 and MRR@10 strict
   (``kgos.eval``), and the ratio of each MRR@10 to the anchor's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import kgos
from kgos.embed.bench import bench
from kgos.embed.projections import PCA, LearnedLinear
from kgos.eval.probes import load_probes
from kgos.eval.run import evaluate, kg_ranker

ROOT = Path(__file__).resolve().parent
BENCH = ROOT.parents[1] / "shared" / "bench"
METRICS = ("recall@1", "recall@10", "mrr@10")


def bench_table(kg: kgos.KG, models: list[str] | None, sample: int | None, dims: int, epochs: int) -> str:
    r = bench(kg.store, models, dims=dims, sample=sample, epochs=epochs, cache_root=kg.workspace.cache_dir,
              progress=lambda m: print(m, file=sys.stderr))
    anchors = {row.models[0]: row.mrr for row in r.rows if row.projection == "none"}
    title = (f"**{r.db_id}**: {r.nodes:,} nodes{' (sample)' if sample and sample < kg.node_count() else ''}, "
             f"{r.types} node types; MRR of {r.test_edges:,} held-out edges vs {r.negatives} corrupted tails "
             f"(learned projection trained on the other {r.train_edges:,}, {epochs} epochs), {r.dims} dims")
    lines = [title,
             "", "| configuration | dims | MRR | x raw | intra | inter | separation | PCA var | fit s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for x in r.rows:
        ratio = x.mrr / anchors[x.models[0]] if anchors.get(x.models[0]) else float("nan")
        var = "" if x.explained is None else f"{x.explained:.0%}"
        lines.append(f"| {x.config} | {x.dims} | {x.mrr:.4f} | {ratio:.2f} | {x.intra:.3f} | {x.inter:.3f} | "
                     f"{x.separation:.3f} | {var} | {x.fit_seconds:.2f} |")
    lines += ["", "| model | vector name | dims | ms/node | load MB |", "|---|---|---|---|---|"]
    for m in r.models:
        load = "" if m.load_mb is None else f"{m.load_mb:.0f}"
        lines.append(f"| {m.spec} | {m.name} | {m.dims} | {m.seconds_per_node * 1000:.3f} | {load} |")
    return "\n".join(lines)


def projected_search(kg: kgos.KG, probes: list, configs: list[str]) -> str:
    """The search model's raw vectors vs projections of them (``pca:D`` or ``learned:D``, the learned
    one trained on the KG's edges), in embedding-only and hybrid search."""
    engine = kg.engine
    snap = engine.snapshot()
    if snap.vectors is None:
        return f"{kg.db_id} has no vectors: skipped"
    raw_vectors = np.array(snap.vectors)
    raw_query = engine.embed_query
    rows, anchor = [], {}
    for config in ["raw", *configs]:
        label = "raw (anchor)" if config == "raw" else config
        projection = None if config == "raw" else _fit(config, raw_vectors, kg, snap)
        _install(engine, raw_vectors, raw_query, projection)
        for mode in ("embedding", "hybrid"):
            rep = evaluate(probes, kg_ranker(kg, 10, mode=mode), label)
            anchor.setdefault(mode, rep.strict["mrr@10"])
            rows.append((label, mode, rep, rep.strict["mrr@10"] / anchor[mode]))
    _install(engine, raw_vectors, raw_query, None)
    lines = [f"**{kg.db_id}**, search model {snap.embedder} ({raw_vectors.shape[1]} dims), {len(probes)} probes",
             "", "| vectors | mode | R@1 | R@10 | MRR@10 | x anchor |", "|---|---|---|---|---|---|"]
    for label, mode, rep, ratio in rows:
        lines.append(f"| {label} | {mode} | " + " | ".join(f"{rep.strict[m]:.3f}" for m in METRICS) + f" | {ratio:.3f} |")
    return "\n".join(lines)


def _fit(config: str, vectors: np.ndarray, kg: kgos.KG, snap) -> PCA | LearnedLinear:
    kind, _, dims = config.partition(":")
    if kind == "pca":
        return PCA.fit(vectors, int(dims))
    arrays = kg.store.graph_arrays()
    rows = np.array([snap.index[nid] for nid in arrays.node_ids])
    return LearnedLinear.fit(vectors, np.stack([rows[arrays.src], rows[arrays.dst]], 1), int(dims))


def _install(engine, vectors: np.ndarray, embed_query, pca: PCA | LearnedLinear | None) -> None:
    """Search through ``pca`` (or the raw vectors): node and query vectors projected alike."""
    snap = engine.snapshot()
    snap.vectors = vectors if pca is None else pca.transform(vectors)
    snap.__dict__.pop("vector_rows", None)  # cached per snapshot: recomputed for the new matrix
    snap.__dict__.pop("vectorless", None)
    snap.ann = None
    engine.embed_query = embed_query if pca is None else (lambda t: pca.transform(embed_query(t)[None])[0])
    engine.cache.clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True, help="Workspace holding the KGs")
    ap.add_argument("--only", default="demo,finance,cli-man")
    ap.add_argument("--models", help="Comma-separated embedder specs (default: every installed local one)")
    ap.add_argument("--sample", type=int, default=1500, help="Nodes of cli-man benchmarked (random, seed 0)")
    ap.add_argument("--dims", type=int, default=54)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--search-only", action="store_true", help="Only part 2 (projections in search)")
    ap.add_argument("--search-projections", default="pca:54,pca:128,pca:256,pca:384,learned:54,learned:384",
                    help="Projections tried in search (pca:D, learned:D)")
    ap.add_argument("--out", help="Also write the tables to this markdown file")
    args = ap.parse_args()
    ws = kgos.Workspace(args.home)
    models = args.models.split(",") if args.models else None
    parts = []
    if not args.search_only:
        for db_id in args.only.split(","):
            sample = args.sample if db_id == "cli-man" else None
            parts.append(bench_table(ws.kg(db_id), models, sample, args.dims, args.epochs))
            print(parts[-1] + "\n", flush=True)
    if "cli-man" in args.only.split(","):
        probes = load_probes(BENCH / "cli-man" / "probes-dev.jsonl")
        parts.append(projected_search(ws.kg("cli-man"), probes, args.search_projections.split(",")))
        print(parts[-1], flush=True)
    if args.out:
        Path(args.out).write_text("\n\n".join(parts) + "\n")
    ws.close()


if __name__ == "__main__":
    main()
