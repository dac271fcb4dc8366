"""Dimension auto-extraction benchmark (issue 35 goal 5): how many of a person's dimension values do the
rules recover, and how close are they?

    python benchmarks/dims_bench.py            # the demo KG's hand-set values, the rules of kgos.methods.autodims
    python benchmarks/dims_bench.py --json

The demo KG (``src/kgos/data/demo/cookbook.json``) carries hand-set values of all 56 dimensions on 179
of its 350 nodes. The benchmark imports it with every catalogue dimension removed, runs ``dims auto``
(dry run), and compares each inferred value with the value the person set:

- **coverage**: the share of the person's (node, dimension) values for which a rule gives a value;
- **agreement**: of those, the share on the same side of 0.5 as the person's value (0.5 itself agrees
  with both sides), and the mean absolute error;
- **unanchored**: values the rules give for (node, dimension) pairs the person left unset, which
  nothing here can grade (reported so a rule that fires everywhere shows up).

The nodes are split in two halves by a hash of their id: ``dev`` (the rules were written looking at
it) and ``held-out`` (not looked at); both are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import kgos
from kgos.methods.catalog import DIMENSIONS

DEMO = Path(kgos.__file__).parent / "data" / "demo" / "cookbook.json"


def half(node_id: str) -> str:
    return "dev" if hashlib.sha256(node_id.encode()).digest()[0] % 2 == 0 else "held-out"


def stripped(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[tuple[str, str], float]]:
    """The document without any catalogue dimension, and the removed values {(node id, dimension): value}."""
    gold: dict[tuple[str, str], float] = {}
    nodes = []
    for node in doc["nodes"]:
        props = dict(node.get("properties") or {})
        for dim in [k for k in props if k in DIMENSIONS]:
            value = props.pop(dim)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                gold[(node["id"], dim)] = float(value)
        nodes.append({**node, "properties": props})
    return {**doc, "nodes": nodes}, gold


def agrees(pred: float, truth: float) -> bool:
    return pred == 0.5 or truth == 0.5 or (pred > 0.5) == (truth > 0.5)


def score(inferred: dict[tuple[str, str], float], gold: dict[tuple[str, str], float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("dev", "held-out"):
        g = {k: v for k, v in gold.items() if half(k[0]) == part}
        hit = [(inferred[k], v) for k, v in g.items() if k in inferred]
        extra = sum(1 for k in inferred if half(k[0]) == part and k not in gold)
        out[part] = {"gold": len(g), "covered": len(hit), "coverage": round(len(hit) / max(len(g), 1), 3),
                     "agreement": round(sum(agrees(p, t) for p, t in hit) / max(len(hit), 1), 3),
                     "mae": round(sum(abs(p - t) for p, t in hit) / max(len(hit), 1), 3), "unanchored": extra}
    return out


def per_dimension(inferred: dict[tuple[str, str], float], gold: dict[tuple[str, str], float]) -> dict[str, Any]:
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for k, v in gold.items():
        if k in inferred:
            rows[k[1]].append((inferred[k], v))
    return {d: {"covered": len(r), "gold": sum(1 for k in gold if k[1] == d),
                "agreement": round(sum(agrees(p, t) for p, t in r) / len(r), 3)} for d, r in sorted(rows.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    doc, gold = stripped(json.loads(DEMO.read_text()))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "demo.json"
        src.write_text(json.dumps(doc))
        ws = kgos.Workspace(Path(tmp) / "home")
        ws.import_file("demo", src, dimensions=False)
        kg = ws.kg("demo")
        started = time.perf_counter()
        report = kg.infer_dimensions(dry_run=True)
        seconds = time.perf_counter() - started
        ws.close()
    inferred = {(v.node, v.dimension): v.value for v in report.inferred}
    result = {"nodes": report.nodes, "rules": len(report.rules), "dimensions_with_a_rule": len(set(report.rules)),
              "seconds": round(seconds, 3), "scores": score(inferred, gold), "per_dimension": per_dimension(inferred, gold)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"demo KG: {report.nodes} nodes, {len(gold)} hand-set values, rules for {len(report.rules)} of "
          f"{len(DIMENSIONS)} dimensions, dry run {seconds * 1000:.0f} ms")
    print(f"{'half':<9} {'gold':>5} {'covered':>8} {'coverage':>9} {'agreement':>10} {'mae':>6} {'unanchored':>11}")
    for part, s in result["scores"].items():
        print(f"{part:<9} {s['gold']:>5} {s['covered']:>8} {s['coverage']:>9.3f} {s['agreement']:>10.3f} "
              f"{s['mae']:>6.3f} {s['unanchored']:>11}")


if __name__ == "__main__":
    main()
