"""Shared pieces of the dev-set builders: unpack Debian packages, write and check bench-format files.

The builders read only ``.deb`` files fetched beforehand with ``apt-get download <package>`` (the
one step that needs the network); everything after that is offline and deterministic, so a rerun on
the same packages writes byte-identical files.
"""

from __future__ import annotations

import argparse
import atexit
import gzip
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
MAX_DESCRIPTION = 1500  # the bench README's cap on a node's description


def unpack(debs: Path, packages: list[str]) -> tuple[Path, dict[str, str]]:
    """Extract each package's newest ``<package>_*.deb`` under ``debs`` into one temporary root.

    Returns the root and ``{package: version}`` read from the packages' control fields.
    """
    root = Path(tempfile.mkdtemp(prefix="kgos-devdata-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    versions = {}
    for package in packages:
        found = sorted(debs.glob(f"{package}_*.deb"))
        if not found:
            raise SystemExit(f"no {package}_*.deb in {debs}: run `apt-get download {package}` there first")
        deb = found[-1]
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        versions[package] = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True,
                                           capture_output=True, text=True).stdout.strip()
    return root, versions


def clip(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """Whitespace-normalised ``text`` cut at a word boundary to at most ``limit`` characters."""
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


def write_kg(path: Path, meta: dict, nodes: list[dict], edges: list[dict]) -> None:
    """Write a ``kgos-node-link/1`` file (gzip mtime 0 so reruns are byte-identical)."""
    doc = {"format": "kgos-node-link/1", **meta, "nodes": nodes, "edges": edges}
    raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw)


def write_probes(path: Path, probes: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in probes)


def dedupe_edges(edges: list[dict], ids: set[str]) -> list[dict]:
    """Edges with both endpoints in ``ids``, no self loops, no repeated ``(source, target, type)``."""
    seen, out = set(), []
    for e in edges:
        key = (e["source"], e["target"], e["type"])
        if e["source"] == e["target"] or key in seen or e["source"] not in ids or e["target"] not in ids:
            continue
        seen.add(key)
        out.append({**e, "weight": 1.0})
    return out


def merge_probes(raw: list[dict]) -> list[dict]:
    """Merge probes with the same (case-insensitive) query, unioning their answers; first one's fields win."""
    merged: dict[str, dict] = {}
    for p in raw:
        key = p["query"].casefold()
        if key in merged:
            m = merged[key]
            m["relevant"] += [r for r in p["relevant"] if r not in m["relevant"]]
        else:
            merged[key] = {**p, "relevant": list(p["relevant"]), "lenient": list(p.get("lenient", []))}
    for m in merged.values():
        m["lenient"] = [x for x in m["lenient"] if x not in m["relevant"]]
    return list(merged.values())


def counts(items: list[dict], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for it in items:
        out[it[key]] = out.get(it[key], 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def run_builder(build: Callable[..., dict], doc: str | None, name: str) -> None:
    """The command line every builder shares: ``--debs DIR [--out DIR]``, then the build's summary."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--debs", type=Path, required=True, help="folder holding the downloaded .deb files")
    ap.add_argument("--out", type=Path, default=DATA / name)
    print(build(**vars(ap.parse_args())))
