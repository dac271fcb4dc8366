"""Synthetic node-link KGs for the import and first-query benchmarks, cached in ``benchmarks/out``.

Node names and descriptions are Zipf-distributed words (as search_bench.py's), edges uniformly random
with typed, unique (source, target, type) and no loops. ``bad_share`` > 0 makes that share of the
nodes invalid in one of three ways (a number as name, properties nested 40 deep, a list as type), so an
import with ``--skip-invalid`` leaves them and their edges out.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"
EDGE_TYPES = ["implements", "provides", "enables", "requires", "feeds_into", "part_of", "similar_to",
              "relates_to", "has_limitation", "has_workaround"]


def _deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"x": value}
    return value


BAD = [lambda i, name, desc: {"id": f"n{i}", "name": 12345, "type": "thing", "description": desc},
       lambda i, name, desc: {"id": f"n{i}", "name": name, "type": "thing", "properties": _deep(40)},
       lambda i, name, desc: {"id": f"n{i}", "name": name, "type": ["thing"], "description": desc}]


def kg_file(n_nodes: int, n_edges: int, bad_share: float = 0.0, seed: int = 11) -> Path:
    """The file for these sizes (written once, then reused from ``benchmarks/out``)."""
    OUT.mkdir(exist_ok=True)
    suffix = f"-bad{round(bad_share * 100)}" if bad_share else ""
    path = OUT / f"synthetic-{n_nodes}-{n_edges}{suffix}.json"
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    vocab = np.array([f"term{i}" for i in range(20_000)])
    words = vocab[np.minimum(rng.zipf(1.3, size=n_nodes * 12), len(vocab)) - 1].reshape(n_nodes, 12)
    every = round(1 / bad_share) if bad_share else 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write('{"format": "kgos-node-link/1", "name": "synthetic", "nodes": [\n')
        for i in range(n_nodes):
            name, desc = " ".join(words[i, :3]), " ".join(words[i, 3:])
            node = (BAD[(i // every) % 3](i, name, desc) if every and i % every == every - 1
                    else {"id": f"n{i}", "name": name, "type": "thing", "description": desc})
            f.write(("," if i else "") + json.dumps(node) + "\n")
        f.write('], "edges": [\n')
        _write_edges(f, rng, n_nodes, n_edges)
        f.write("]}\n")
    tmp.rename(path)
    return path


def _write_edges(f, rng: np.random.Generator, n: int, m: int) -> None:
    src, dst, etype = rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, len(EDGE_TYPES), m)
    keep = src != dst
    keys = np.unique(np.stack([src[keep], dst[keep], etype[keep]], 1), axis=0)
    keys = keys[rng.permutation(len(keys))]  # file order is not sorted by source
    first = True
    for s, t, k in keys.tolist():
        f.write(("" if first else ",") + f'{{"source": "n{s}", "target": "n{t}", "type": "{EDGE_TYPES[k]}"}}\n')
        first = False
