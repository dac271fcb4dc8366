"""Time to meaning-search after an import, and the speed of each embedding tier (issue 14 goal 1).

python benchmarks/embed_tiers.py [--dataset go] [--sample 2000] [--models DIR] [--json-out FILE]

1. A fresh KGOS_HOME in a temp folder: import the dataset, embed it with the fast tier, run a first
   search (wall and CPU seconds per step, and since the start).
2. The default model (the fill-in) on a random sample of node texts (seed 0): texts per wall second
   and per CPU second, extrapolated to the whole KG, beside the anchor measured right after it: bare
   ``session.run`` calls on the same texts, already tokenised, as many at a time as the embedder runs. Speeds are for comparing on a shared box: CPU seconds are what the load disturbs least.

``--models`` is a folder holding an already built ``minilm-int8-static-256`` (copied into the temp home);
without it the fast tier is distilled first and that step is timed too.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


class Laps:
    def __init__(self) -> None:
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        self.t, self.c = self.t0, self.c0
        self.rows: list[tuple[str, float, float, float, float]] = []

    def lap(self, label: str) -> None:
        t, c = time.perf_counter(), time.process_time()
        self.rows.append((label, t - self.t, c - self.c, t - self.t0, c - self.c0))
        self.t, self.c = t, c

    def table(self) -> str:
        lines = ["| step | wall s | CPU s | since start: wall s | CPU s |", "|---|---|---|---|---|"]
        lines += [f"| {r[0]} | {r[1]:.1f} | {r[2]:.1f} | {r[3]:.1f} | {r[4]:.1f} |" for r in self.rows]
        return "\n".join(lines)


def time_to_searchable(dataset: str, home: Path, models: Path | None) -> tuple[Laps, int]:
    os.environ["KGOS_HOME"] = str(home)
    os.environ.pop("KGOS_EMBEDDER", None)
    laps = Laps()
    from kgos.embed.static import FAST_STATIC_NAME, ensure_fast_static, fast_static_path
    if models is not None:
        shutil.copytree(models / FAST_STATIC_NAME, fast_static_path())
    else:
        ensure_fast_static()
        laps.lap("distill the fast tier (once per KGOS_HOME)")
    import kgos
    ws = kgos.Workspace(home)
    ws.import_file(dataset, BENCH / dataset / "kg.json.gz")
    laps.lap("import (nodes, edges, snapshot)")
    kg = ws.kg(dataset)
    n = kg.embed_fast().embedded
    laps.lap(f"fast tier: {n:,} nodes")
    kg.search("regulation of cell death", k=10)
    laps.lap("first search (meaning + text + graph)")
    ws.close()
    return laps, n


def fill_in_rate(dataset: str, sample: int) -> tuple[int, float, float, float, float]:
    """The default model's wall and CPU seconds on ``sample`` node texts, then the bare onnxruntime loop's."""
    import kgos
    from kgos.embed import get_embedder
    from kgos.index.vectors import embed_text
    ws = kgos.Workspace(os.environ["KGOS_HOME"])
    nodes = list(ws.kg(dataset).nodes())
    random.seed(0)
    texts = [embed_text(node) for node in random.sample(nodes, min(sample, len(nodes)))]
    emb = get_embedder("default")
    emb.embed(texts[:32])  # warm-up: session and tokenizer caches
    t, c = time.perf_counter(), time.process_time()
    emb.embed(texts)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    return (len(texts), wall, cpu, *bare_ort_loop(emb, texts))


def bare_ort_loop(emb, texts: list[str]) -> tuple[float, float]:
    """The anchor: ``session.run`` alone on each text, as ``emb.embed`` runs them (tokenised
    beforehand, so only the model runs), ``emb.threads`` calls at a time: wall and CPU seconds."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    feeds = []
    for s in emb._ids(texts):
        ids = np.array([[emb._cls, *s, emb._sep]], np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in emb._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        feeds.append(feed)
    session = emb._open(1)  # as embed() runs them: one intra-op thread per call
    with ThreadPoolExecutor(emb.threads) as pool:
        t, c = time.perf_counter(), time.process_time()
        list(pool.map(lambda feed: session.run(None, feed), feeds))
        return time.perf_counter() - t, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="go")
    ap.add_argument("--sample", type=int, default=2000, help="node texts for the default model's rate")
    ap.add_argument("--models", type=Path, default=None, help="folder with a built minilm-int8-static-256")
    ap.add_argument("--json-out", type=Path, help="write the figures as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgos-tiers-") as tmp:
        laps, n = time_to_searchable(args.dataset, Path(tmp) / "home", args.models)
        print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start of the rate run\n")
        print(laps.table())
        done, wall, cpu, bare_wall, bare_cpu = fill_in_rate(args.dataset, args.sample)
    print(f"\ndefault model on {done:,} sampled texts: {done / wall:.1f} texts/s wall, {done / cpu:.1f} texts/CPU s;"
          f" whole KG ({n:,} nodes) extrapolated: {n / (done / wall) / 60:.1f} min at this wall rate, "
          f"{n / (done / cpu):.0f} CPU s (about {n / (done / cpu) / 2 / 60:.1f} min on 2 idle cores)")
    print(f"anchor, bare session.run per text, same threads: {done / bare_wall:.1f} texts/s wall, "
          f"{done / bare_cpu:.1f} texts/CPU s ({wall / bare_wall:.2f}x its wall time)")
    if args.json_out:
        args.json_out.write_text(json.dumps({
            "dataset": args.dataset, "nodes": n, "steps": [dict(zip(("step", "wall_s", "cpu_s", "since_wall_s", "since_cpu_s"), r))
                                                           for r in laps.rows],
            "searchable_s": laps.rows[-1][3], "searchable_cpu_s": laps.rows[-1][4], "sample": done,
            "default_s": wall, "default_cpu_s": cpu, "bare_ort_s": bare_wall, "bare_ort_cpu_s": bare_cpu}, indent=2))


if __name__ == "__main__":
    main()
