"""spec/002's export/import snapshot: ``{"version": "1.0", "exported_at", "entities", "edges"}``.

Export writes every entity (id, type, name, normalized_name, metadata, created_ts, updated_ts) and edge
(id, subject_id, predicate, object_id, weight, evidence, created_ts) of the memory KG; evidence is one
object when an edge has one entry, as in spec/002, and a list when it has several.

Import checks the whole file before touching anything (a malformed file changes nothing, and the
error names the offending record). Without ``merge`` the file replaces the memory KG (built aside and
swapped in by the workspace importer); with ``merge`` it is upserted by spec/002's rules in one
transaction: entities by (normalised name, type) with metadata merged, edges by (subject, predicate,
object) with weight = max and evidence merged.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import ImportFailed
from ..model import normalize_name
from ..store.formats import open_text_out
from ..store.migrations import now_iso
from ..store.base import GraphStore
from .extract import USER_ID, USER_NAME, EntityRef
from .graph import GraphWriter, as_list, edge_id

VERSION = "1.0"


@dataclass(frozen=True)
class SnapshotReport:
    path: str
    entities: int
    edges: int
    mode: str  # export | replace | merge

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- export -----------------------------------------------------------------------------------------
def entity_record(node: Any) -> dict[str, Any]:
    return {"id": node.id, "type": node.type, "name": node.name, "normalized_name": normalize_name(node.name),
            "metadata": node.properties, "created_ts": node.created_at, "updated_ts": node.updated_at}


def edge_record(edge: Any) -> dict[str, Any]:
    evidence = as_list(edge.properties.get("evidence"))
    return {"id": edge.id or edge_id(edge.source, edge.type, edge.target), "subject_id": edge.source,
            "predicate": edge.type, "object_id": edge.target, "weight": edge.weight,
            "evidence": evidence[0] if len(evidence) == 1 else evidence or {}, "created_ts": edge.created_at}


def write_snapshot(store: GraphStore, path: Path | str) -> SnapshotReport:
    """Stream the KG out as a spec/002 snapshot, one record per line."""
    path = Path(path)
    meta = store.meta()
    head = {"version": VERSION, "exported_at": now_iso(), "name": meta.get("name", store.db_id),
            "description": meta.get("description", "")}
    counts = []
    with open_text_out(path) as f:
        f.write(json.dumps(head, ensure_ascii=False)[:-1] + ',\n"entities": [\n')
        counts.append(_write_all(f, (entity_record(n) for n in store.iter_nodes())))
        f.write('],\n"edges": [\n')
        counts.append(_write_all(f, (edge_record(e) for e in store.iter_edges())))
        f.write("]}\n")
    return SnapshotReport(str(path), counts[0], counts[1], "export")


def _write_all(f: Any, records: Iterator[dict[str, Any]]) -> int:
    n = 0
    for n, record in enumerate(records, 1):
        f.write((",\n" if n > 1 else "") + json.dumps(record, ensure_ascii=False))
    f.write("\n")
    return n


# -- import: checks ---------------------------------------------------------------------------------
def read_snapshot(path: Path | str) -> dict[str, Any]:
    """The parsed and fully checked snapshot, or ImportFailed naming what is wrong and where."""
    path = Path(path)
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ImportFailed(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, EOFError) as exc:
        raise ImportFailed(f"{path.name} is not a readable JSON snapshot ({exc})") from None
    check_snapshot(data)
    return data


def check_snapshot(data: Any) -> None:
    if not isinstance(data, dict):
        raise ImportFailed(f"a snapshot is a JSON object, not a {type(data).__name__}")
    if str(data.get("version")) != VERSION:
        raise ImportFailed(f"unsupported snapshot version {data.get('version')!r}; expected \"{VERSION}\" "
                           "(spec/002 export format)")
    for key in ("entities", "edges"):
        if not isinstance(data.get(key), list):
            raise ImportFailed(f"'{key}' must be a list", record=key)
    ids = _check_entities(data["entities"])
    for i, edge in enumerate(data["edges"]):
        _check_edge(f"edges[{i}]", edge, ids)


def _text(loc: str, record: dict[str, Any], key: str, required: bool = True) -> None:
    value = record.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str) or not value.strip():
        raise ImportFailed(f"'{key}' must be a non-empty string, not {value!r}", record=loc)


def _check_entities(entities: list[Any]) -> set[str]:
    ids: set[str] = set()
    keys: dict[tuple[str, str], str] = {}
    for i, e in enumerate(entities):
        loc = f"entities[{i}]"
        if not isinstance(e, dict):
            raise ImportFailed("an entity must be an object", record=loc)
        for key in ("id", "name", "type"):
            _text(loc, e, key)
        for key in ("created_ts", "updated_ts"):
            _text(loc, e, key, required=False)
        if e.get("metadata") is not None and not isinstance(e["metadata"], dict):
            raise ImportFailed("'metadata' must be an object", record=loc)
        key = (normalize_name(e["name"]), e["type"])
        if e["id"] in ids or key in keys:
            raise ImportFailed(f"duplicate entity {e['id']!r} ({e['type']} {e['name']!r}); ids and "
                               "(normalized_name, type) must be unique", record=loc)
        ids.add(e["id"])
        keys[key] = e["id"]
    return ids


def _check_edge(loc: str, e: Any, ids: set[str]) -> None:
    if not isinstance(e, dict):
        raise ImportFailed("an edge must be an object", record=loc)
    for key in ("subject_id", "predicate", "object_id"):
        _text(loc, e, key)
    _text(loc, e, "id", required=False)
    _text(loc, e, "created_ts", required=False)
    for key in ("subject_id", "object_id"):
        if e[key] not in ids and e[key] != USER_ID:
            raise ImportFailed(f"'{key}' {e[key]!r} is not an entity of the snapshot", record=loc)
    weight = e.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) \
            or not 0.0 <= weight <= 1.0:
        raise ImportFailed(f"'weight' must be a number in [0, 1], not {weight!r}", record=loc)
    evidence = e.get("evidence")
    if evidence is not None and not isinstance(evidence, (dict, list)):
        raise ImportFailed("'evidence' must be an object or a list of objects", record=loc)
    if any(not isinstance(item, dict) for item in as_list(evidence)):
        raise ImportFailed("every evidence entry must be an object", record=loc)


# -- import: merge ----------------------------------------------------------------------------------
def merge_snapshot(store: GraphStore, data: dict[str, Any], evidence_cap: int = 20) -> SnapshotReport:
    """Upsert a checked snapshot into ``store`` in one transaction (spec/002 upsert rules)."""
    with GraphWriter(store, evidence_cap).session() as session:
        rows = {USER_ID: session.entity(EntityRef(USER_NAME, "user"), now_iso())}
        for e in data["entities"]:
            if e["type"] == "user" or e["id"] == USER_ID:  # one user, whatever the file calls it
                rows[e["id"]] = rows[USER_ID]
                continue
            ts = e.get("updated_ts") or now_iso()
            rows[e["id"]] = session.entity(EntityRef(e["name"].strip(), e["type"]), ts, e.get("metadata") or {},
                                           node_id=e["id"], created=e.get("created_ts"))
        for e in data["edges"]:
            s, o = rows[e["subject_id"]], rows[e["object_id"]]
            if s != o:
                session.edge(s, o, e["predicate"], float(e.get("weight", 1.0)),
                             [x for x in as_list(e.get("evidence")) if x], e.get("created_ts") or now_iso(),
                             eid=e.get("id"))
    return SnapshotReport("", len(data["entities"]), len(data["edges"]), "merge")
