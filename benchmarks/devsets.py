"""The dev sets every quality benchmark runs on: where each one's KG and dev probes live.

``../shared/bench`` holds cli-man and go (see its README); the demo KG and its shipped probes come
with the package. Dev sets built by this repository's own scripts (from registry packages, with
their licences) are registered here as well, so ``benchmarks/quality.py`` runs them all.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent
BENCH = ROOT.parents[1] / "shared" / "bench"
DATA = ROOT / "data"  # dev sets this repository builds itself (benchmarks/devdata/)


def _demo(name: str) -> Path:
    from kgos.data import demo_file
    return demo_file(name)


# name -> (KG file, dev probes file); callables so the demo's files resolve lazily
DEV_SETS = {
    "cli-man": (lambda: BENCH / "cli-man" / "kg.json.gz", lambda: BENCH / "cli-man" / "probes-dev.jsonl"),
    "go": (lambda: BENCH / "go" / "kg.json.gz", lambda: BENCH / "go" / "probes-dev.jsonl"),
    "demo": (lambda: _demo("cookbook.json"), lambda: _demo("probes.jsonl")),
    # issue 13: more goal/benefit probes of the same KG, written blind (commit a485df9)
    "demo-extra": (lambda: _demo("cookbook.json"), lambda: _demo("probes-goal-benefit.jsonl")),
    # built by benchmarks/devdata/<name>.py from Debian packages; benchmarks/data/<name>/README.md tells how
    "wordnet-gcide": (lambda: DATA / "wordnet-gcide" / "kg.json.gz", lambda: DATA / "wordnet-gcide" / "probes-dev.jsonl"),
    "python-stdlib": (lambda: DATA / "python-stdlib" / "kg.json.gz", lambda: DATA / "python-stdlib" / "probes-dev.jsonl"),
}
NAMES = tuple(DEV_SETS)


def kg_file(name: str) -> Path:
    """The KG file of dev set ``name`` (importable with ``Workspace.import_file``)."""
    return DEV_SETS[name][0]()


def probes_file(name: str) -> Path:
    """The dev probes (JSON Lines, bench README format) of dev set ``name``."""
    return DEV_SETS[name][1]()


def open_kg(ws, name: str, embedder: str | None = "default"):
    """Dev set ``name``'s KG in workspace ``ws``, imported on first use and embedded with ``embedder``
    (only what changed; ``none`` or None: left as it is, a KG never embedded searches on text + graph)."""
    if not ws.exists(name):
        ws.import_file(name, kg_file(name))
    kg = ws.kg(name)
    if embedder not in (None, "none"):
        kg.embed(embedder)
    return kg


def probes(name: str, sample: int | None = None) -> list:
    """The dev probes of ``name``, or a fixed random sample of ``sample`` of them (seed 13)."""
    import random

    from kgos.eval.probes import load_probes
    found = load_probes(probes_file(name))
    if sample and sample < len(found):
        found = sorted(random.Random(13).sample(found, sample), key=lambda p: p.id)
    return found
