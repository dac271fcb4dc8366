"""Data shipped with the package: the demo KGs and their probe set."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DemoChanged

if TYPE_CHECKING:
    from ..kg import Workspace
    from ..store.base import GraphStore
    from ..store.importer import ImportReport

DEMO_KGS = {"demo": "cookbook.json", "finance": "finance.json"}
DEMO_EXPERTS = ("demo", "finance")  # experts/<id>.json, one per demo KG


def demo_file(name: str) -> Path:
    """Path of a file in ``kgos/data/demo`` (e.g. ``cookbook.json``, ``probes.jsonl``)."""
    return Path(str(resources.files(__package__) / "demo" / name))


DEMO_FINGERPRINT = "demo_fingerprint"  # workspace setting: the demo KG's content as load_demo left it


def kg_fingerprint(store: GraphStore) -> str:
    """A digest of a KG's nodes and edges (ids, names, types, text, properties, weights); vectors,
    timestamps and edge row ids are left out, so re-embedding is not a change."""
    h = hashlib.blake2b(digest_size=16)
    rows = sorted(json.dumps(n.to_dict(), sort_keys=True) for n in store.iter_nodes())
    rows += sorted(json.dumps({k: v for k, v in e.to_dict().items() if k != "id"}, sort_keys=True)
                   for e in store.iter_edges())
    for row in rows:
        h.update(row.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


def changed_demo_kgs(ws: Workspace) -> list[str]:
    """The demo KGs that exist and differ from what :func:`load_demo` last wrote (or that it did not
    write at all: a KG of the user's that happens to be called ``demo``)."""
    return [db_id for db_id in DEMO_KGS if ws.exists(db_id)
            and ws.setting(db_id, DEMO_FINGERPRINT) != kg_fingerprint(ws.kg(db_id).store)]


def load_demo(ws: Workspace, embedder: str | None = "default", reset: bool = False) -> list[ImportReport]:
    """Load (or restore) the demo KGs as ``demo`` and ``finance``, embed them, and (re)create their
    experts ``demo`` and ``finance`` (conversations are kept); safe to run again.

    ``embedder`` None skips embedding (search then uses text + graph + intent only). A demo KG that
    was changed since it was loaded is not overwritten (``DemoChanged``) unless ``reset`` is True.
    """
    changed = [] if reset else changed_demo_kgs(ws)
    if changed:
        raise DemoChanged(f"the demo KG(s) {', '.join(changed)} changed since they were loaded, and loading "
                          "the demo again would replace them: keep them as they are, export them first "
                          f"(kgos kg export {changed[0]} my-{changed[0]}.json), or restore the originals "
                          "with kgos demo --reset (load_demo(ws, reset=True))")
    from ..experts import ExpertService
    reports = []
    for db_id, filename in DEMO_KGS.items():
        reports.append(ws.import_file(db_id, demo_file(filename), mode="replace"))
        if embedder:
            ws.kg(db_id).embed(embedder)
        ws.set_setting(db_id, DEMO_FINGERPRINT, kg_fingerprint(ws.kg(db_id).store))
    experts = ExpertService(ws)
    for expert_id in DEMO_EXPERTS:
        experts.import_(json.loads(demo_file(f"experts/{expert_id}.json").read_text(encoding="utf-8")), replace=True)
    return reports
