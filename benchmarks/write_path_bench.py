"""Write path benchmark (issue 34): one node written through each source and found by meaning.

    python benchmarks/write_path_bench.py                   # demo KG, the default embedder, 40 writes per source
    python benchmarks/write_path_bench.py --model hash --n 100

On the demo KG embedded with ``--model``, per source, the p50/p90 of one write that returns with the
node embedded (the post-commit hook of ``kg/written.py``) followed by one embedding search that must
rank the node first: the facade's ``add_node``, a ``kg.writing()`` unit (``upsert_entity`` plus an edge),
a review-queue acceptance of a node proposal, a research delta (``apply_delta``) and an agent memory
(``MemoryService.add``: extraction + upsert + embed, on its own memory KG). The anchor, from the same
run: one query embedding alone (what the budget adds to the write's own time) and a bare write of the
same node with no embedding (the hook off). Budgets: write + found p50 <= write + one query embedding,
and <= 50 ms; a memory write p50 <= 30 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import kgos
from kgos.data import load_demo
from kgos.memory import MemoryService
from kgos.research.stages import apply_delta


def _words() -> Callable[[], str]:
    """A fresh, distinctive three-word name per call (so the written node is the one to find)."""
    syll = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "xu", "bo", "se"]
    state = {"i": 0}

    def make() -> str:
        state["i"] += 1
        u = uuid.uuid5(uuid.NAMESPACE_OID, str(state["i"])).int
        return " ".join("".join(syll[(u >> (4 * (k * 3 + j))) % 12] for j in range(3)) for k in range(3))
    return make


def _percentiles(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs) * 1000, 2), "p90": round(xs[int(0.9 * (len(xs) - 1))] * 1000, 2)}


def _timed(n: int, step: Callable[[], None]) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        out.append(time.perf_counter() - t0)
    return out


class Clock:
    """Splits each step into the write (returns with the node embedded) and the search that finds it."""

    def __init__(self) -> None:
        self.write: dict[str, list[float]] = {}
        self.find: dict[str, list[float]] = {}
        self.t0 = 0.0

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def lap(self, source: str, into: str) -> None:
        now = time.perf_counter()
        getattr(self, into).setdefault(source, []).append(now - self.t0)
        self.t0 = now


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="default")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    name = _words()
    with tempfile.TemporaryDirectory() as home:
        ws = kgos.Workspace(home)
        load_demo(ws, args.model)
        kg = ws.kg("demo")
        embedder = kg.engine.query_embedder()
        misses: dict[str, int] = {}
        clock = Clock()

        def found(source: str, text: str, node_id: str) -> None:
            clock.lap(source, "write")
            hit = kg.search(text, k=1, mode="embedding").results
            clock.lap(source, "find")
            if not hit or hit[0].node.id != node_id:
                misses[source] = misses.get(source, 0) + 1

        def facade() -> None:
            text = name()
            clock.start()
            found("facade add_node", text, kg.add_node(text, "concept").id)

        def unit() -> None:
            text = name()
            clock.start()
            with kg.writing() as w:
                node = w.upsert_entity(text, "concept")
                w.add_edge(node.id, "goal:cost_reduction", "relates_to", 0.5) if kg.get_node(
                    "goal:cost_reduction") else None
            found("unit of work", text, node.id)

        def proposal() -> None:
            text = name()
            node_id = f"concept:{uuid.uuid4().hex[:12]}"
            pid = kg.proposals.propose_node(node_id, text, "concept", origin="bench", score=0.5).added[0]
            clock.start()
            kg.proposals.accept(pid)
            found("proposal accept", text, node_id)

        def research() -> None:
            text = name()
            node_id = f"research:entity:{uuid.uuid4().hex[:12]}"
            clock.start()
            apply_delta(ws, "demo", {"nodes": [{"id": node_id, "name": text, "type": "term", "description": "",
                                                "properties": {}}], "edges": []}, "bench")
            found("research delta", text, node_id)

        def query_only() -> None:
            embedder.embed([name()])

        hook = kg.write_embedding

        def bare() -> None:  # the same write with the embed hook off: the write's own time
            kg.store.__dict__["_commit_hooks"].remove(hook)
            try:
                kg.add_node(name(), "concept")
            finally:
                kg.store.on_commit(hook)

        for step in (facade, query_only, bare):  # warm up: model loaded, snapshot built
            step()
        clock.write.clear(), clock.find.clear()
        rows = {"one query embedding (anchor)": _timed(args.n, query_only),
                "bare write, no embedding (anchor)": _timed(args.n, bare)}
        for step in (facade, unit, proposal, research):
            _timed(args.n, step)
        for source, times in clock.write.items():
            rows[f"{source}: write, embedded on return"] = times
            rows[f"{source}: then the search that finds it"] = clock.find[source]
        mem = MemoryService(ws)
        mem.add("I use Python")
        mem.kg().embed(args.model)
        texts = [f"I'm working on {name().split()[0]} using Python." for _ in range(args.n + 1)]
        mem.add(texts.pop())
        mem_kg = ws.kg(mem.db_id)
        before = mem_kg.embedding_models()
        rows["memory add (extract + upsert + embed)"] = _timed(args.n, lambda: mem.add(texts.pop()))
        result_vectors = {"memory vectors before": before, "after": mem_kg.embedding_models()}
        result = {"model": embedder.name, "n": args.n, "ms": {k: _percentiles(v) for k, v in rows.items()},
                  "not_found_first": misses, **result_vectors}
        ws.close()
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"write path, demo KG, model {result['model']}, n={args.n} per row (ms)")
    print("| path | p50 | p90 |\n|---|---|---|")
    for k, v in result["ms"].items():
        print(f"| {k} | {v['p50']} | {v['p90']} |")
    print(f"writes not ranked first by their own text: {misses or 'none'}")
    print(f"memory KG vectors before/after the timed adds: {result['memory vectors before']} -> {result['after']}")


if __name__ == "__main__":
    main()
