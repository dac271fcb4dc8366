"""Quality benchmark: the ablation on the dev probes, beside bm25s and the best simple hybrid, same run.

    python benchmarks/quality.py                     # every dev set, writes docs/quality.md + PNG
    python benchmarks/quality.py --only cli-man --embedder hash
    python benchmarks/quality.py --only go --sample 300 --home ~/kgos-bench --no-write

Imports every dev set of ``benchmarks/devsets.py`` (../shared/bench's cli-man and go, the demo KG's probe sets,
the sets of ``benchmarks/data``)
into ``--home`` (default ``benchmarks/out/ws-quality``, reused across runs), embeds them with the
default embedder, runs every ablation configuration on the dev probes, and measures in the same
process the anchors every default must beat (issue 13):

- the bench README's bm25s baseline (Lucene BM25 k1=1.5 b=0.75 over name + description, English
  stopwords, Snowball stemmer, top 10, zero scores not retrieved);
- the "simple hybrids" a competent engineer builds from the same parts: those bm25s scores and the
  same embedder's cosine (the KG's own node vectors), fused by RRF (k = 60) or by a convex
  combination of max-normalised scores (alpha 0.5). "best simple hybrid" is the better of the two.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets  # noqa: E402

ROOT = Path(__file__).resolve().parent
DOCS = ROOT.parent / "docs"
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
DATASETS = devsets.NAMES
DEFAULT = "adaptive (default)"
RRF_K = 60
CONVEX_ALPHA = 0.5


class Bm25s:
    """The bench README's bm25s baseline over the KG's nodes, scores aligned with ``ids``."""

    def __init__(self, nodes: list) -> None:
        import bm25s
        import Stemmer
        self._bm25s = bm25s
        self.ids = [n.id for n in nodes]
        self.stemmer = Stemmer.Stemmer("english")
        corpus = bm25s.tokenize([f"{n.name} {n.description or ''}" for n in nodes], stopwords="en",
                                stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        self.retriever.index(corpus, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False,
                                      return_ids=False)[0]
        return np.asarray(self.retriever.get_scores(tokens), np.float32)


def ranked(ids: list[str], scores: np.ndarray, k: int = 10) -> list[str]:
    """Top k ids by score; a zero score is not retrieved (the bench README's convention)."""
    top = np.argsort(-scores, kind="stable")[:k]
    return [ids[i] for i in top if scores[i] > 0]


def rrf(*scores: np.ndarray, depth: int = 100) -> np.ndarray:
    out = np.zeros(scores[0].shape[0], np.float32)
    for s in scores:
        order = np.argsort(-s, kind="stable")[:depth]
        order = order[s[order] > 0]
        out[order] += 1.0 / (RRF_K + 1 + np.arange(order.size, dtype=np.float32))
    return out


def maxnorm(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if x.size else 0.0
    return x / top if top > 0 else x


def baselines(kg, probes: list) -> dict[str, dict]:
    """bm25s and the two simple hybrids (bm25s + the KG's own vectors), strict and lenient metrics."""
    from kgos.eval.metrics import mean_metrics, probe_metrics
    snap = kg.engine.snapshot()
    bm = Bm25s(list(kg.store.get_nodes(snap.node_ids).values()))
    order = np.array([snap.index[i] for i in bm.ids])  # snapshot rows in bm25s order
    vectors = None if snap.vectors is None else np.asarray(snap.vectors)[order]
    rows: dict[str, list] = {"bm25s baseline": [], f"simple hybrid: RRF k={RRF_K}": [],
                             f"simple hybrid: convex alpha {CONVEX_ALPHA}": []}
    for p in probes:
        lex = bm.scores(p.query)
        runs = {"bm25s baseline": lex}
        if vectors is not None:
            cos = np.maximum(vectors @ np.asarray(kg.engine.embed_query(p.query), np.float32), 0)
            runs[f"simple hybrid: RRF k={RRF_K}"] = rrf(lex, cos)
            runs[f"simple hybrid: convex alpha {CONVEX_ALPHA}"] = (CONVEX_ALPHA * maxnorm(lex)
                                                                 + (1 - CONVEX_ALPHA) * maxnorm(cos))
        for label, scores in runs.items():
            top = ranked(bm.ids, scores)
            rows[label].append((probe_metrics(top, p.relevant), probe_metrics(top, p.relevant | p.lenient)))
    return {label: {"label": label, "strict": mean_metrics([r[0] for r in rs]),
                    "lenient": mean_metrics([r[1] for r in rs])} for label, rs in rows.items() if rs}


def run(dataset: str, embedder: str, home: Path, sample: int | None = None, options: dict | None = None) -> dict:
    import kgos
    from kgos.eval.ablation import ablation
    ws = kgos.Workspace(home)
    kg = devsets.open_kg(ws, dataset, embedder)
    probes = devsets.probes(dataset, sample)
    reports = ablation(kg, probes, base={"options": options} if options else None)
    anchors = baselines(kg, probes)
    ws.close()
    return {"dataset": dataset, "n": len(probes), "sampled": bool(sample), "embedder": embedder,
            "bm25s": anchors["bm25s baseline"]["strict"], "anchors": list(anchors.values()),
            "configs": [r.to_dict() for r in reports]}


def best_simple(r: dict) -> dict | None:
    simple = [a for a in r["anchors"] if a["label"].startswith("simple hybrid")]
    return max(simple, key=lambda a: a["strict"]["mrr@10"]) if simple else None


def ratios(r: dict) -> str:
    default = next(c for c in r["configs"] if c["label"] == DEFAULT)["strict"]["mrr@10"]
    out = f"Default MRR@10 / bm25s MRR@10 = **{default / r['bm25s']['mrr@10']:.2f}x**"
    simple = best_simple(r)
    if simple:
        out += (f"; / best simple hybrid ({simple['label'].split(': ')[1]}, "
                f"{simple['strict']['mrr@10']:.3f}) = **{default / simple['strict']['mrr@10']:.2f}x**")
    spec = next((c for c in r["configs"] if c["label"].startswith("spec formula")), None)
    if spec and spec["strict"]["mrr@10"] > 0:
        out += f"; / spec formula = **{default / spec['strict']['mrr@10']:.2f}x**"
    return out + "."


GRAPH_ROWS = (("default without the graph signal", "the graph (gamma, solution hops, propagation)"),
              ("default without the intent signal", "the intent signal (delta)"))
EARNS = 0.05  # issue 13: the graph earns its place when removing it loses >= 5% MRR@10


def earns(r: dict) -> list[str]:
    """What each graph-derived signal adds to the default's MRR@10, said plainly (issue 13)."""
    by_label = {c["label"]: c["strict"]["mrr@10"] for c in r["configs"]}
    out = []
    for label, what in GRAPH_ROWS:
        if label not in by_label:
            continue
        default, without = by_label[DEFAULT], by_label[label]
        gain = (default - without) / without if without > 0 else 0.0
        verdict = ("earns its place" if gain >= EARNS else "does not earn its place here: it helps by less than 5%"
                   if gain > 0 else "does not help here" if gain == 0 else "costs MRR@10 here")
        out.append(f"Without {what}: {without:.3f} -> default {default:.3f} ({gain:+.1%}): {verdict}.")
    return out


def row(c: dict) -> str:
    latency = f"{c['latency_ms']['p50']:.1f}" if "latency_ms" in c else ""
    return (f"| {c['label']} | " + " | ".join(f"{c['strict'][m]:.3f}" for m in METRICS)
            + f" | {c['lenient']['recall@10']:.3f} | {latency} |")


def markdown(results: list[dict]) -> str:
    out = ["# Retrieval quality", "",
           "Measured by `python benchmarks/quality.py` on every dev set of `benchmarks/devsets.py`: cli-man and",
           "go from `../shared/bench`, the demo KG with its shipped probes (`demo`) and its blind goal/benefit",
           "probes (`demo-extra`), and the sets built here from Debian packages (`wordnet-gcide`,",
           "`python-stdlib`; see [benchmarks/data](../benchmarks/data/README.md)). Strict metrics unless marked",
           "lenient. The bm25s and simple-hybrid rows are",
           "the anchors of issue 13, measured in the same run: bm25s as in the bench README, and bm25s fused",
           "with the same embedder's cosine by RRF (k = 60) or by 0.5/0.5 of max-normalised scores.",
           "Regenerate after any change to a retrieval default. The before/after of each default's change is",
           "in [defaults.md](defaults.md). The rows \"default without the graph signal\" (gamma = 0, no solution",
           "hops, no propagation) and \"default without the intent signal\" (delta = 0) say what the graph earns;",
           "under each table, plainly, whether it earns the 5% of issue 13 on that set.", "",
           "![MRR@10 by configuration](quality.png)", ""]
    for r in results:
        default = next(c for c in r["configs"] if c["label"] == DEFAULT)
        sampled = " (fixed sample, seed 13)" if r.get("sampled") else ""
        out += [f"## {r['dataset']} ({r['n']} probes{sampled}, embedder `{r['embedder']}`)", ""]
        if r["embedder"] == "none":
            out += ["No vectors (`--embedder none`): text, graph and names only, as for a KG never embedded;",
                    "the embedding and simple-hybrid rows need vectors.", ""]
        out += ["| configuration | R@1 | R@5 | R@10 | MRR@10 | nDCG@10 | lenient R@10 | p50 ms |",
                "|---|---|---|---|---|---|---|---|"]
        out += [row(a) for a in r["anchors"]] + [row(c) for c in r["configs"]]
        out += ["", ratios(r), ""] + earns(r) + ([""] if earns(r) else [])
        out += ["By probe level (default, strict MRR@10 / strict R@5 / lenient R@10): " + ", ".join(
            f"{lvl} {v['strict']['mrr@10']:.3f} / {v['strict']['recall@5']:.3f} / {v['lenient']['recall@10']:.3f} "
            f"(n={v['n']})" for lvl, v in default["by_level"].items()), ""]
    return "\n".join(out)


def chart(results: list[dict], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:  # the tables are written anyway
        print(f"matplotlib is not installed: {path.name} not redrawn (pip install matplotlib)", file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 5), squeeze=False)
    for ax, r in zip(axes[0], results):
        rows = r["anchors"] + r["configs"]
        labels = [c["label"] for c in rows]
        values = [c["strict"]["mrr@10"] for c in rows]
        colors = ["#999999"] * len(r["anchors"]) + ["#1f77b4"] * (len(r["configs"]) - 1) + ["#d62728"]
        ax.barh(labels[::-1], values[::-1], color=colors[::-1])
        ax.set_title(f"{r['dataset']} ({r['embedder']}): MRR@10 (strict)")
        ax.set_xlim(0, max(values) * 1.18)
        for y, v in enumerate(values[::-1]):
            ax.text(v, y, f" {v:.3f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def per_dataset(values: list[str], default: str):
    """``["x", "go=y"]`` -> a function giving "y" for go and "x" for the others."""
    named = dict(v.split("=", 1) for v in values if v.split("=", 1)[0] in DATASETS)
    plain = [v for v in values if v.split("=", 1)[0] not in DATASETS]
    return lambda dataset: named.get(dataset, plain[-1] if plain else default)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=DATASETS, action="append", help="a dataset (repeatable; default: all)")
    ap.add_argument("--embedder", action="append", default=[],
                    help="an embedder spec, or none (no vectors); DATASET=SPEC for one dataset (repeatable)")
    ap.add_argument("--home", action="append", default=[],
                    help="KGOS workspace to use (default benchmarks/out/ws-quality); DATASET=PATH for one dataset")
    ap.add_argument("--sample", type=int, help="a fixed random sample of this many probes per dataset")
    ap.add_argument("--options", type=json.loads, help='SearchOptions for every row, e.g. \'{"name_weight": 0}\'')
    ap.add_argument("--no-write", action="store_true", help="print only; do not write docs/quality.md")
    ap.add_argument("--from-json", type=Path, help="rewrite docs/quality.md + PNG from a saved quality.json, no runs")
    args = ap.parse_args()
    homes = per_dataset(args.home, str(ROOT / "out" / "ws-quality"))
    embedders = per_dataset(args.embedder, "default")
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = [run(d, embedders(d), Path(homes(d)), args.sample, args.options) for d in (args.only or DATASETS)]
        (ROOT / "out").mkdir(exist_ok=True)
        (ROOT / "out" / "quality.json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    print(text)
    if not args.no_write:
        DOCS.mkdir(exist_ok=True)
        (DOCS / "quality.md").write_text(text + "\n")
        chart(results, DOCS / "quality.png")
    for r in results:
        print(f"{r['dataset']}: {ratios(r)}", file=sys.stderr)


if __name__ == "__main__":
    main()
