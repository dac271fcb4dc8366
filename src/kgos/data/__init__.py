"""Data shipped with the package: the demo KGs and their probe set."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store.importer import ImportReport
    from ..workspace import Workspace

DEMO_KGS = {"demo": "cookbook.json", "finance": "finance.json"}


def demo_file(name: str) -> Path:
    """Path of a file in ``kgos/data/demo`` (e.g. ``cookbook.json``, ``probes.jsonl``)."""
    return Path(str(resources.files(__package__) / "demo" / name))


def load_demo(ws: Workspace) -> list[ImportReport]:
    """Load (or restore) the demo KGs as ``demo`` and ``finance``; safe to run again."""
    return [ws.import_file(db_id, demo_file(filename), mode="replace") for db_id, filename in DEMO_KGS.items()]
