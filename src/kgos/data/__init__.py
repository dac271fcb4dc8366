"""Data shipped with the package: the demo KGs and their probe set."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store.importer import ImportReport
    from ..kg import Workspace

DEMO_KGS = {"demo": "cookbook.json", "finance": "finance.json"}
DEMO_EXPERTS = ("demo", "finance")  # experts/<id>.json, one per demo KG


def demo_file(name: str) -> Path:
    """Path of a file in ``kgos/data/demo`` (e.g. ``cookbook.json``, ``probes.jsonl``)."""
    return Path(str(resources.files(__package__) / "demo" / name))


def load_demo(ws: Workspace, embedder: str | None = "default") -> list[ImportReport]:
    """Load (or restore) the demo KGs as ``demo`` and ``finance``, embed them, and (re)create their
    experts ``demo`` and ``finance`` (conversations are kept); safe to run again.

    ``embedder`` None skips embedding (search then uses text + graph + intent only).
    """
    import json

    from ..experts import ExpertService
    reports = []
    for db_id, filename in DEMO_KGS.items():
        reports.append(ws.import_file(db_id, demo_file(filename), mode="replace"))
        if embedder:
            ws.kg(db_id).embed(embedder)
    experts = ExpertService(ws)
    for expert_id in DEMO_EXPERTS:
        experts.import_(json.loads(demo_file(f"experts/{expert_id}.json").read_text(encoding="utf-8")), replace=True)
    return reports
