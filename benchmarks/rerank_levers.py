"""Issue 13: can a second stage over the default's top 50 lift the ranking? Three re-rankers, measured.

    python benchmarks/rerank_levers.py pool cli-man --home benchmarks/out/ws-quality   # once per set
    python benchmarks/rerank_levers.py pool go --home benchmarks/out/ws-quality --sample 600
    python benchmarks/rerank_levers.py ltr                    # every pool written so far
    python benchmarks/rerank_levers.py static cli-man --home benchmarks/out/ws-quality
    python benchmarks/rerank_levers.py lm cli-man --home benchmarks/out/ws-quality --sample 20 --top 20
    python benchmarks/rerank_levers.py overlap cli-man --home benchmarks/out/ws-quality

``pool`` runs the default hybrid (k = 50) on a set's dev probes and keeps, per hit, its score, its
components and a few node and query-overlap features (benchmarks/out/pools/SET.json). On top of it:

- ``ltr``: learning to rank (a linear scorer, ListNet's top-one softmax cross-entropy, Cao et al.
  2007, "Learning to rank: from pairwise approach to listwise approach"), trained on every other set
  and judged on the held-out one (demo and demo-extra count as one KG), so the figure is what a
  default fitted on the dev sets would do on a KG it never saw.
- ``static``: a second embedder, the distilled fast tier (``fast``) or any spec, added as
  ``score + w * cos / max cos``: an ensemble of two vector models.
- ``lm``: unsupervised passage re-ranking (Sachan et al. 2022, "Improving passage retrieval with
  zero-shot question generation"): the mean log-likelihood of the query given the node's text under a
  bundled GGUF model, ``score + w * z``, z its z-score over the pool. Slow: one forward pass per hit.
- ``overlap``: how many probes share no content word with their answer (name, description,
  properties), and the default's MRR@10 at each level of overlap: what text retrieval can reach.

Measured (docs/defaults.md "Second-stage re-rankers"): none is kept.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets

from kgos.eval.metrics import mrr_at

POOLS = Path(__file__).resolve().parent / "out" / "pools"
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
STOP = frozenset(["a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "with", "by", "from", "is", "are", "be", "as", "at", "it", "its", "this", "that", "how", "do", "i", "you", "your", "what", "which", "all"])
SAME_KG = {"demo-extra": "demo"}  # held out together in ``ltr``


def words(text: str) -> set[str]:
    """Content words cut to 5 letters: a crude stem, enough to count overlap."""
    return {t[:5] for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOP and len(t) > 1}


def reranked_mrr(pools: list[dict], extra: list[np.ndarray], w: float) -> float:
    """MRR@10 of ``score + w * extra`` over each probe's pool."""
    total = 0.0
    for pool, add in zip(pools, extra):
        ids = [h["id"] for h in pool["hits"]]
        if ids:
            s = np.array([h["score"] for h in pool["hits"]]) + w * add
            total += mrr_at([ids[i] for i in np.argsort(-s, kind="stable")], set(pool["relevant"]))
    return total / max(len(pools), 1)


def _hit(hit, query: set[str], degree: dict[str, tuple[int, int]]) -> dict:
    node, c = hit.node, hit.components
    name = words(node.name)
    both = name | words(node.description or "")
    return {"id": node.id, "score": hit.score, "emb": c.embedding, "text": c.text, "graph": c.graph,
            "name": c.name, "solution": c.solution, "propagation": c.propagation,
            "indeg": degree.get(node.id, (0, 0))[0], "outdeg": degree.get(node.id, (0, 0))[1],
            "desc_chars": len(node.description or ""), "name_words": len(name),
            "name_covered": len(name & query) / max(len(name), 1),
            "query_in_name": len(name & query) / max(len(query), 1), "query_covered": len(both & query) / max(len(query), 1)}


def build_pool(args) -> None:
    import kgos
    kg = devsets.open_kg(kgos.Workspace(args.home), args.dataset)
    degree: dict[str, list[int]] = {}
    for e in kg.edges():
        degree.setdefault(e.target, [0, 0])[0] += 1
        degree.setdefault(e.source, [0, 0])[1] += 1
    pools = []
    for probe in devsets.probes(args.dataset, args.sample):
        q = words(probe.query)
        hits = kg.search(probe.query, k=50).results
        pools.append({"id": probe.id, "query": probe.query, "relevant": sorted(probe.relevant),
                      "hits": [_hit(h, q, degree) for h in hits]})
    POOLS.mkdir(parents=True, exist_ok=True)
    (POOLS / f"{args.dataset}.json").write_text(json.dumps(pools))
    print(f"{args.dataset}: {len(pools)} pools -> {POOLS / (args.dataset + '.json')}")


def load_pools(name: str) -> list[dict]:
    path = POOLS / f"{name}.json"
    if not path.exists():
        sys.exit(f"no pool for {name}: run `python benchmarks/rerank_levers.py pool {name} --home ...` first")
    return json.loads(path.read_text())


# --- learning to rank ------------------------------------------------------------------------

FEATURES = ("score", "emb", "text", "graph", "name", "solution", "propagation", "log_indeg", "log_outdeg",
            "log_desc", "no_desc", "name_words", "name_covered", "query_in_name", "query_covered",
            "rank_rr", "emb_rr", "text_rr", "emb_z", "text_z")
SUBSETS = {"all": FEATURES, "score + query_covered": ("score", "query_covered"),
           "score + z-scores": ("score", "emb_z", "text_z"), "score + ranks": ("score", "rank_rr", "emb_rr", "text_rr"),
           "score + node stats": ("score", "log_indeg", "log_desc", "query_covered")}


def _z(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() + 1e-9)


def _rr(x: np.ndarray) -> np.ndarray:
    return 1.0 / (np.argsort(np.argsort(-x, kind="stable")) + 1)


def feature_matrix(pool: dict) -> tuple[np.ndarray, np.ndarray]:
    """One row per hit, columns as FEATURES; y = 1 for a relevant hit."""
    h = pool["hits"]
    col = {k: np.array([x[k] for x in h], dtype=float) for k in ("score", "emb", "text", "graph", "name", "solution",
                                                                 "propagation", "name_words", "name_covered",
                                                                 "query_in_name", "query_covered")}
    col.update(log_indeg=np.log1p([x["indeg"] for x in h]), log_outdeg=np.log1p([x["outdeg"] for x in h]),
               log_desc=np.log1p([x["desc_chars"] for x in h]), no_desc=np.array([x["desc_chars"] == 0 for x in h], float),
               rank_rr=1.0 / np.arange(1, len(h) + 1), emb_rr=_rr(col["emb"]), text_rr=_rr(col["text"]),
               emb_z=_z(col["emb"]), text_z=_z(col["text"]))
    col["name_words"] = np.minimum(col["name_words"], 10)
    return np.column_stack([col[k] for k in FEATURES]), np.array([x["id"] in pool["relevant"] for x in h], float)


def listnet_fit(lists: list[tuple[np.ndarray, np.ndarray, float]], l2: float = 1.0) -> np.ndarray:
    """Weights minimising sum_q weight_q * -log(sum over relevant of softmax(X_q w)) + l2 |w|^2 (ListNet top-one,
    Cao et al. 2007), by L-BFGS; features standardised beforehand."""
    from scipy.optimize import minimize

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = l2 * w @ w, 2 * l2 * w
        for x, y, weight in lists:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            hit = p @ y
            total -= weight * np.log(hit + 1e-12)
            grad -= weight * ((p * y) @ x / (hit + 1e-12) - p @ x)
        return total, grad
    w0 = np.zeros(lists[0][0].shape[1])
    w0[0] = 1.0
    return minimize(loss, w0, jac=True, method="L-BFGS-B").x


def _ltr_mrr(data: list[tuple[np.ndarray, np.ndarray]], w: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> float:
    total = 0.0
    for x, y in data:
        if len(y):
            order = np.argsort(-(((x - mu) / sd) @ w), kind="stable")[:10]
            found = np.nonzero(y[order])[0]
            total += 1.0 / (found[0] + 1) if len(found) else 0.0
    return total / max(len(data), 1)


def held_out(data: dict[str, list], cols: list[int], held: str) -> tuple[float, float]:
    """(default, learned) MRR@10 on ``held`` of a scorer trained on every other KG, each set weighted equally."""
    train = [(x[:, cols], y, s) for s, rows in data.items() if SAME_KG.get(s, s) != held
             for x, y in rows if y.any()]
    sizes = {s: sum(1 for _, y in rows if y.any()) for s, rows in data.items()}
    stacked = np.vstack([x for x, _, _ in train])
    mu, sd = stacked.mean(0), stacked.std(0) + 1e-9
    w = listnet_fit([((x - mu) / sd, y, 100.0 / sizes[s]) for x, y, s in train])
    test = [(x[:, cols], y) for s, rows in data.items() if SAME_KG.get(s, s) == held for x, y in rows]
    base = np.zeros(len(cols))
    base[0] = 1.0
    return _ltr_mrr(test, base, np.zeros(len(cols)), np.ones(len(cols))), _ltr_mrr(test, w, mu, sd)


def run_ltr(args) -> None:
    names = [p.stem for p in sorted(POOLS.glob("*.json"))]
    if len({SAME_KG.get(n, n) for n in names}) < 2:
        sys.exit("ltr needs the pools of at least two KGs (run `pool` for each)")
    data = {n: [feature_matrix(p) for p in load_pools(n)] for n in names}
    print(f"strict MRR@10 on the held-out KG, default -> linear ListNet over the default's top 50; sets: {', '.join(names)}")
    for label, subset in SUBSETS.items():
        cols = [FEATURES.index(f) for f in subset]
        cells, ratios = [], []
        for held in sorted({SAME_KG.get(n, n) for n in names}):
            base, learned = held_out({n: data[n] for n in names}, cols, held)
            cells.append(f"{held} {base:.4f} -> {learned:.4f}")
            ratios.append(learned / base)
        print(f"{label:24s} geo-mean x{np.exp(np.mean(np.log(ratios))):.3f}: " + "; ".join(cells), flush=True)


# --- a second embedder, a language model, word overlap -----------------------------------------

def _pools_and_kg(args):
    import kgos
    pools = load_pools(args.dataset)
    return pools, devsets.open_kg(kgos.Workspace(args.home), args.dataset, embedder=None)


def run_static(args) -> None:
    from kgos.embed import get_embedder
    from kgos.index.vectors import embed_text
    pools, kg = _pools_and_kg(args)
    model = get_embedder(args.model or "fast")
    ids = sorted({h["id"] for p in pools for h in p["hits"]})
    nodes = {n.id: n for n in kg.nodes()}
    unit = lambda v: v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-9)
    vectors = dict(zip(ids, unit(model.embed([embed_text(nodes[i]) for i in ids]))))
    queries = unit(model.embed([p["query"] for p in pools]))
    extra = []
    for pool, q in zip(pools, queries):
        cos = np.maximum([vectors[h["id"]] @ q for h in pool["hits"]], 0.0)
        extra.append(cos / (cos.max() if len(cos) and cos.max() > 0 else 1.0))
    print(f"{args.dataset}: score + w * cos/max cos of {model.name}, strict MRR@10 ({len(pools)} probes)")
    print("  ".join(f"w={w}: {reranked_mrr(pools, extra, w):.4f}" for w in WEIGHTS))


def _query_loglik(llm, passage: str, query: str) -> float:
    prompt = llm.tokenize(f"Passage: {passage[:900]}\nA question or task this passage answers:".encode(), add_bos=True)
    asked = llm.tokenize((" " + query).encode(), add_bos=False)
    llm.reset()
    llm.eval(prompt + asked)
    logits = np.asarray(llm.scores[len(prompt) - 1:len(prompt) + len(asked) - 1], dtype=np.float64)
    top = logits.max(axis=1)
    norm = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
    return float(np.mean(logits[np.arange(len(asked)), asked] - norm))


def run_lm(args) -> None:
    import time

    from llama_cpp import Llama

    from kgos.llm.local import model_path
    pools, kg = _pools_and_kg(args)
    pools = [{**pool, "hits": pool["hits"][: args.top]} for pool in pools[: args.sample]]
    llm = Llama(str(model_path(args.model or "smollm2")), n_ctx=1024, logits_all=True, n_threads=2, verbose=False)
    nodes = {n.id: n for n in kg.nodes()}
    start, extra, alone = time.perf_counter(), [], 0.0
    for pool in pools:
        ll = np.array([_query_loglik(llm, f"{nodes[h['id']].name}: {nodes[h['id']].description or ''}", pool["query"])
                       for h in pool["hits"]])
        extra.append(_z(ll) if len(ll) else ll)
        alone += mrr_at([pool["hits"][i]["id"] for i in np.argsort(-ll, kind="stable")], set(pool["relevant"]))
    took = (time.perf_counter() - start) / max(len(pools), 1)
    print(f"{args.dataset}: {len(pools)} probes, {took:.1f} s a query; query likelihood alone {alone / max(len(pools), 1):.4f}")
    print("  ".join(f"w={w}: {reranked_mrr(pools, extra, w):.4f}" for w in WEIGHTS))


def run_overlap(args) -> None:
    pools, kg = _pools_and_kg(args)
    nodes = {n.id: n for n in kg.nodes()}
    levels: dict[str, list[float]] = {"none": [], "under half": [], "half or more": []}
    for pool in pools:
        q = words(pool["query"])
        share = max(len(q & words(f"{nodes[i].name} {nodes[i].description or ''} {json.dumps(nodes[i].properties)}"))
                    / max(len(q), 1) for i in pool["relevant"])
        level = "none" if share == 0 else "under half" if share < 0.5 else "half or more"
        levels[level].append(mrr_at([h["id"] for h in pool["hits"]], set(pool["relevant"])))
    print(f"{args.dataset}: share of the query's content words found in the answer's text ({len(pools)} probes)")
    for level, rr in levels.items():
        if rr:
            print(f"  {level:13s} {len(rr) / len(pools):5.1%} of probes, default MRR@10 {np.mean(rr):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name, run in (("pool", build_pool), ("static", run_static), ("lm", run_lm), ("overlap", run_overlap)):
        p = sub.add_parser(name)
        p.add_argument("dataset", choices=devsets.NAMES)
        p.add_argument("--home", type=Path, default=Path(__file__).parent / "out" / "ws-quality")
        p.add_argument("--sample", type=int, help="pool: a fixed random sample of probes (seed 13); lm: the first N pools")
        p.add_argument("--model", help="static: an embedder spec (default fast); lm: a bundled GGUF (default smollm2)")
        p.add_argument("--top", type=int, default=20, help="lm: re-rank the top N of each pool (default 20)")
        p.set_defaults(run=run)
    sub.add_parser("ltr").set_defaults(run=run_ltr)
    args = ap.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
