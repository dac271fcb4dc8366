"""Quality benchmark: the ablation on the bench KGs' dev probes, vs the bm25s baseline, same run.

    python benchmarks/quality.py                     # cli-man + go, writes docs/quality.md + PNG
    python benchmarks/quality.py --only cli-man --embedder hash

Imports ``../shared/bench/{cli-man,go}/kg.json.gz`` into ``benchmarks/out/ws-quality`` (reused across
runs), embeds them with the default embedder, runs every ablation configuration on the dev probes,
and measures the bench README's bm25s baseline (Lucene BM25 k1=1.5 b=0.75 over name + description,
English stopwords, Snowball stemmer, top 10, zero scores not retrieved) in the same process.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
BENCH = ROOT.parents[1] / "shared" / "bench"
DOCS = ROOT.parent / "docs"
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")


def bm25s_baseline(dataset: str, probes: list) -> dict:
    import bm25s
    import Stemmer
    from kgos.eval.metrics import mean_metrics, probe_metrics
    with gzip.open(BENCH / dataset / "kg.json.gz", "rt") as f:
        nodes = json.load(f)["nodes"]
    ids = [n["id"] for n in nodes]
    stemmer = Stemmer.Stemmer("english")
    corpus = bm25s.tokenize([f"{n['name']} {n.get('description', '')}" for n in nodes], stopwords="en",
                            stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(corpus, show_progress=False)
    rows = []
    for p in probes:
        tokens = bm25s.tokenize([p.query], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False)[0]
        scores = retriever.get_scores(tokens)
        top = np.argsort(-scores, kind="stable")[:10]
        ranked = [ids[i] for i in top if scores[i] > 0]
        rows.append(probe_metrics(ranked, p.relevant))
    return mean_metrics(rows)


def run(dataset: str, embedder: str) -> dict:
    import kgos
    from kgos.eval.ablation import ablation
    from kgos.eval.probes import load_probes
    ws = kgos.Workspace(ROOT / "out" / "ws-quality")
    if not ws.exists(dataset):
        ws.import_file(dataset, BENCH / dataset / "kg.json.gz")
    kg = ws.kg(dataset)
    kg.embed(embedder)
    probes = load_probes(BENCH / dataset / "probes-dev.jsonl")
    reports = ablation(kg, probes)
    base = bm25s_baseline(dataset, probes)
    ws.close()
    return {"dataset": dataset, "n": len(probes), "embedder": embedder, "bm25s": base,
            "configs": [r.to_dict() for r in reports]}


def markdown(results: list[dict]) -> str:
    out = ["# Retrieval quality", "",
           "Measured by `python benchmarks/quality.py` on the dev probes of `../shared/bench` (strict metrics",
           "unless marked lenient). The bm25s row is the bench README's lexical baseline, measured in the",
           "same run. Regenerate after any change to a retrieval default.", "",
           "![MRR@10 by configuration](quality.png)", ""]
    for r in results:
        default = next(c for c in r["configs"] if c["label"] == "adaptive (default)")
        out += [f"## {r['dataset']} ({r['n']} probes, embedder `{r['embedder']}`)", "",
                "| configuration | R@1 | R@5 | R@10 | MRR@10 | nDCG@10 | lenient R@10 | p50 ms |", "|---|---|---|---|---|---|---|---|",
                "| bm25s baseline | " + " | ".join(f"{r['bm25s'][m]:.3f}" for m in METRICS) + " | | |"]
        for c in r["configs"]:
            out.append(f"| {c['label']} | " + " | ".join(f"{c['strict'][m]:.3f}" for m in METRICS)
                       + f" | {c['lenient']['recall@10']:.3f} | {c['latency_ms']['p50']:.1f} |")
        ratio = default["strict"]["mrr@10"] / r["bm25s"]["mrr@10"]
        out += ["", f"Default MRR@10 / bm25s MRR@10 = **{ratio:.2f}x**.", ""]
        out += ["By probe level (default, strict MRR@10): " + ", ".join(
            f"{lvl} {v['strict']['mrr@10']:.3f} (n={v['n']})" for lvl, v in default["by_level"].items()), ""]
    return "\n".join(out)


def chart(results: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
    for ax, r in zip(axes[0], results):
        labels = ["bm25s baseline"] + [c["label"] for c in r["configs"]]
        values = [r["bm25s"]["mrr@10"]] + [c["strict"]["mrr@10"] for c in r["configs"]]
        colors = ["#999999"] + ["#1f77b4"] * (len(values) - 2) + ["#d62728"]
        ax.barh(labels[::-1], values[::-1], color=colors[::-1])
        ax.set_title(f"{r['dataset']}: MRR@10 (strict)")
        ax.set_xlim(0, max(values) * 1.15)
        for y, v in enumerate(values[::-1]):
            ax.text(v, y, f" {v:.3f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["cli-man", "go"])
    ap.add_argument("--embedder", default="default")
    ap.add_argument("--no-write", action="store_true", help="print only; do not write docs/quality.md")
    args = ap.parse_args()
    results = [run(d, args.embedder) for d in ([args.only] if args.only else ["cli-man", "go"])]
    text = markdown(results)
    print(text)
    if not args.no_write:
        DOCS.mkdir(exist_ok=True)
        (DOCS / "quality.md").write_text(text + "\n")
        chart(results, DOCS / "quality.png")
        (ROOT / "out").mkdir(exist_ok=True)
        (ROOT / "out" / "quality.json").write_text(json.dumps(results, indent=1))
    for r in results:
        default = next(c for c in r["configs"] if c["label"] == "adaptive (default)")
        print(f"{r['dataset']}: default MRR@10 {default['strict']['mrr@10']:.3f} / bm25s {r['bm25s']['mrr@10']:.3f} "
              f"= {default['strict']['mrr@10'] / r['bm25s']['mrr@10']:.2f}x", file=sys.stderr)


if __name__ == "__main__":
    main()
