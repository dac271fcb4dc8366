"""Writing extracted entities and relations into the memory KG (spec/002 "Upsert Semantics").

- Entity upsert: unique by ``(normalized_name, type)``; on conflict ``updated_ts`` moves forward and
  metadata is merged; the first spelling is kept as the display name.
- Edge upsert: unique by ``(subject_id, predicate, object_id)``; on conflict ``weight = max(old, new)``,
  evidence merged, ``created_ts`` kept.
- Ids: ``entity:<uuid>`` as spec/002 says, a UUID5 of (type, normalised name) so a rebuild or another
  machine mints the same id; the user is always ``entity:user:primary``. Edges: ``edge:<uuid5>``.

These are the semantics of ``NativeStore.upsert_entity`` / ``add_edge``, written here as two small
statements each because a memory's entities and edges must land in ONE transaction (the store's
methods each open their own and do not nest), and because evidence is capped: a hub edge such as
``user --[uses]--> Python`` may be evidenced by thousands of memories, and rewriting an unbounded list on
every mention would make writes quadratic. The first evidence entry (where the edge came from) and the
newest ``evidence_cap - 1`` are kept; ``evidence_count`` counts them all. The full provenance stays in
``workspace.db`` (``memory_relations``).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from ..model import normalize_name
from ..store.migrations import now_iso
from ..store.native import NativeStore, dumps, merge_properties
from .extract import USER_ID, USER_NAME, EntityRef, Extraction, Relation

NAMESPACE = uuid.UUID("6f1c1a52-52a4-4c61-9a8e-0b7c1d7e5a10")  # fixed: ids must not change between runs
SEP = "\x1f"
Key = tuple[str, str]


def entity_id(name: str, type: str) -> str:
    if type == "user":
        return USER_ID
    return "entity:" + uuid.uuid5(NAMESPACE, SEP.join((type, normalize_name(name)))).hex


def edge_id(subject_id: str, predicate: str, object_id: str) -> str:
    return "edge:" + uuid.uuid5(NAMESPACE, SEP.join((subject_id, predicate, object_id))).hex


def evidence_entry(memory_id: str, timestamp: str, relation: Relation) -> dict[str, Any]:
    """spec/002's evidence: memory_id, src, timestamp, and the pattern for deterministic edges."""
    entry = {"memory_id": memory_id, "src": relation.src, "timestamp": timestamp}
    if relation.pattern:
        entry["pattern"] = relation.pattern
    return entry


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _ev_key(entry: Any) -> Any:
    if isinstance(entry, dict):
        return entry.get("memory_id"), entry.get("src"), entry.get("pattern")
    return json.dumps(entry, sort_keys=True)


def merge_evidence(old: Any, new: Iterable[Any], cap: int) -> tuple[list[Any], int]:
    """Old entries plus the new ones not already there, trimmed to the first + the newest ``cap - 1``.
    Returns the list and how many entries were new."""
    items = as_list(old)
    seen = {_ev_key(e) for e in items}
    added = 0
    for entry in new:
        if _ev_key(entry) not in seen:
            seen.add(_ev_key(entry))
            items.append(entry)
            added += 1
    if len(items) > cap:
        items = items[:1] + items[len(items) - (cap - 1):] if cap > 1 else items[-1:]
    return items, added


@dataclass
class WriteReport:
    entities_created: int = 0
    entities_updated: int = 0
    edges_created: int = 0
    edges_updated: int = 0
    entity_ids: dict[Key, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("entity_ids")
        return d


class GraphWriter:
    """Upserts into one native KG: ``write`` for extractions, ``session`` for entity/edge upserts."""

    def __init__(self, store: NativeStore, evidence_cap: int = 20,
                 aliases: Mapping[Key, str] | None = None) -> None:
        self.store = store
        self.evidence_cap = evidence_cap
        self.aliases = dict(aliases or {})  # (alias norm, type) -> canonical display name

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One KG transaction of upserts: all of them land, or none."""
        with self.store.transaction() as conn:
            session = Session(self, conn)
            yield session
            session.flush()

    def write(self, items: Iterable[tuple[Extraction, str, str]]) -> WriteReport:
        """Write (extraction, memory_id, timestamp) items in one transaction: all or nothing."""
        with self.session() as session:
            for extraction, memory_id, timestamp in items:
                session.extraction(extraction, memory_id, timestamp)
        return session.report

    def ensure_user(self) -> None:
        if self.store.get_node(USER_ID) is None:
            with self.session() as session:
                session.entity(EntityRef(USER_NAME, "user"), now_iso())


class Session:
    """One transaction's worth of upserts, with the entities it touched cached by key."""

    def __init__(self, writer: GraphWriter, conn: sqlite3.Connection) -> None:
        self.writer = writer
        self.conn = conn
        self.report = WriteReport()
        self._rows: dict[Key, tuple[int, str]] = {}
        self._touched: dict[int, str] = {}
        self._new: set[int] = set()  # rowids inserted by this session: their metadata is already fresh

    def canonical(self, e: EntityRef) -> EntityRef:
        name = self.writer.aliases.get(e.key)
        return EntityRef(name, e.type) if name else e

    def extraction(self, extraction: Extraction, memory_id: str, timestamp: str) -> None:
        for entity in extraction.entities:
            self.entity(entity, timestamp)
        for relation in extraction.relations:
            self.relation(relation, memory_id, timestamp)

    def relation(self, r: Relation, memory_id: str, timestamp: str) -> None:
        s = self.entity(r.subject, timestamp)
        o = self.entity(r.object, timestamp)
        if s == o:  # an alias merge can fold both ends into one entity
            return
        self.edge(s, o, r.predicate, r.weight, [evidence_entry(memory_id, timestamp, r)], timestamp)

    def entity(self, e: EntityRef, ts: str, metadata: dict[str, Any] | None = None,
               node_id: str | None = None, created: str | None = None) -> tuple[int, str]:
        """(rowid, id) of the entity with e's (normalised name, type), inserted if new."""
        e = self.canonical(e)
        hit = self._rows.get(e.key)
        if hit is None:
            row = self.conn.execute("SELECT rowid, id FROM nodes WHERE norm_name = ? AND type = ? "
                                    "ORDER BY rowid LIMIT 1", e.key).fetchone()
            hit = tuple(row) if row else self._insert(e, ts, metadata or {}, node_id, created or ts)
            self._rows[e.key] = hit  # type: ignore[assignment]
            if row:
                self.report.entities_updated += 1
        if metadata and hit[0] not in self._new:
            self._merge_metadata(hit[0], metadata)
        self._touched[hit[0]] = max(ts, self._touched.get(hit[0], ts))
        self.report.entity_ids[e.key] = hit[1]
        return hit  # type: ignore[return-value]

    def _insert(self, e: EntityRef, ts: str, metadata: dict[str, Any], node_id: str | None,
                created: str) -> tuple[int, str]:
        node_id = node_id or entity_id(e.name, e.type)
        if self.conn.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone():
            node_id = f"entity:{uuid.uuid4().hex}"  # the id is taken by a node of another name
        cur = self.conn.execute(
            "INSERT INTO nodes (id, name, norm_name, type, description, properties, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, '', ?, ?, ?)", (node_id, e.name, e.key[0], e.type, dumps(metadata), created, ts))
        self.report.entities_created += 1
        self._new.add(cur.lastrowid)  # type: ignore[arg-type]
        return cur.lastrowid, node_id  # type: ignore[return-value]

    def _merge_metadata(self, rowid: int, metadata: dict[str, Any]) -> None:
        old = json.loads(self.conn.execute("SELECT properties FROM nodes WHERE rowid = ?", (rowid,)).fetchone()[0])
        merged = merge_properties(old, metadata)
        if merged != old:
            self.conn.execute("UPDATE nodes SET properties = ? WHERE rowid = ?", (dumps(merged), rowid))

    def edge(self, s: tuple[int, str], o: tuple[int, str], predicate: str, weight: float,
             evidence: list[Any], ts: str, eid: str | None = None, created: str | None = None) -> None:
        cap = self.writer.evidence_cap
        row = self.conn.execute("SELECT rowid, properties FROM edges WHERE source = ? AND target = ? AND type = ?",
                                (s[0], o[0], predicate)).fetchone()
        if row is None:
            items, added = merge_evidence([], evidence, cap)
            props = {"evidence": items, "evidence_count": added} if added else {}
            self.conn.execute("INSERT INTO edges (source, target, type, weight, properties, created_at, id) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?)", (s[0], o[0], predicate, weight, dumps(props),
                                                               created or ts, self._edge_id(s, o, predicate, eid)))
            self.report.edges_created += 1
            return
        old = json.loads(row[1] or "{}")
        items, added = merge_evidence(old.get("evidence"), evidence, cap)
        count = int(old.get("evidence_count", len(as_list(old.get("evidence"))))) + added
        props = {**old, "evidence": items, "evidence_count": count} if items else old
        self.conn.execute("UPDATE edges SET weight = max(weight, ?), properties = ? WHERE rowid = ?",
                          (weight, dumps(props), row[0]))
        self.report.edges_updated += 1

    def _edge_id(self, s: tuple[int, str], o: tuple[int, str], predicate: str, eid: str | None) -> str:
        candidate = eid or edge_id(s[1], predicate, o[1])
        if self.conn.execute("SELECT 1 FROM edges WHERE id = ?", (candidate,)).fetchone():
            return f"edge:{uuid.uuid4().hex}"
        return candidate

    def flush(self) -> None:
        """Move ``updated_at`` of every touched entity forward (never back: memories may arrive late)."""
        self.conn.executemany("UPDATE nodes SET updated_at = ? WHERE rowid = ? AND updated_at < ?",
                              [(ts, rowid, ts) for rowid, ts in self._touched.items()])
