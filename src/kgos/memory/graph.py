"""Writing extracted entities and relations into the memory KG (spec/002 "Upsert Semantics").

- Entity upsert: unique by ``(normalized_name, type)``; on conflict ``updated_ts`` moves forward and
  metadata is merged; the first spelling is kept as the display name.
- Edge upsert: unique by ``(subject_id, predicate, object_id)``; on conflict ``weight = max(old, new)``,
  evidence merged, ``created_ts`` kept.
- Ids: ``entity:<uuid>`` as spec/002 says, a UUID5 of (type, normalised name) so a rebuild or another
  machine mints the same id; the user is always ``entity:user:primary``. Edges: ``edge:<uuid5>``.

The rules themselves are the store's unit of work (``kgos.store.writing``): a memory's entities and
edges land in one ``store.writing()`` unit, so all of them or none, on any backend. Evidence is capped
(``evidence_cap``): a hub edge such as ``user --[uses]--> Python`` may be evidenced by thousands of
memories, and rewriting an unbounded list on every mention would make writes quadratic. The first
evidence entry (where the edge came from) and the newest ``evidence_cap - 1`` are kept;
``evidence_count`` counts them all. The full provenance stays in ``workspace.db`` (``memory_relations``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from ..model import normalize_name
from ..store.base import GraphStore
from ..store.migrations import now_iso
from ..store.writing import Writer, as_list  # noqa: F401  (as_list: used by the memory modules)
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
    """Upserts into one memory KG: ``write`` for extractions, ``session`` for entity/edge upserts."""

    def __init__(self, store: GraphStore, evidence_cap: int = 20,
                 aliases: Mapping[Key, str] | None = None) -> None:
        self.store = store
        self.evidence_cap = evidence_cap
        self.aliases = dict(aliases or {})  # (alias norm, type) -> canonical display name

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One unit of work of upserts: all of them land, or none."""
        with self.store.writing() as w:
            yield Session(self, w)

    def write(self, items: Iterable[tuple[Extraction, str, str]]) -> WriteReport:
        """Write (extraction, memory_id, timestamp) items in one unit of work: all or nothing."""
        with self.session() as session:
            for extraction, memory_id, timestamp in items:
                session.extraction(extraction, memory_id, timestamp)
        return session.report

    def ensure_user(self) -> None:
        if self.store.get_node(USER_ID) is None:
            with self.session() as session:
                session.entity(EntityRef(USER_NAME, "user"), now_iso())


class Session:
    """One unit of work's worth of upserts; entities are referred to by node id."""

    def __init__(self, writer: GraphWriter, w: Writer) -> None:
        self.writer = writer
        self.w = w
        self.report = WriteReport()
        self._seen: dict[Key, tuple[str, str]] = {}  # key -> (node id, latest timestamp written)

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
               node_id: str | None = None, created: str | None = None) -> str:
        """The id of the entity with e's (normalised name, type), inserted if new."""
        e = self.canonical(e)
        seen = self._seen.get(e.key)
        if seen is not None and not metadata and ts <= seen[1]:
            return seen[0]  # written by this session already, at this time or later
        if seen is None:
            old = self.w.entity(e.name, e.type)
            if old is not None:
                self.report.entities_updated += 1
            else:
                self.report.entities_created += 1
                node_id = self._free_id(node_id or entity_id(e.name, e.type))
        node = self.w.upsert_entity(e.name, e.type, metadata or {}, id=node_id, at=ts, created=created)
        self._seen[e.key] = (node.id, max(ts, seen[1]) if seen else ts)
        self.report.entity_ids[e.key] = node.id
        return node.id

    def _free_id(self, node_id: str) -> str:
        """``node_id``, or a random ``entity:<uuid>`` when a node of another name holds it."""
        return node_id if self.w.node(node_id) is None else f"entity:{uuid.uuid4().hex}"

    def edge(self, s: str, o: str, predicate: str, weight: float, evidence: list[Any], ts: str,
             eid: str | None = None, created: str | None = None) -> None:
        before = self.w.log.edges_created
        self.w.add_edge(s, o, predicate, weight, {"evidence": evidence} if evidence else {},
                        id=eid or edge_id(s, predicate, o), at=created or ts,
                        evidence_cap=self.writer.evidence_cap)
        if self.w.log.edges_created > before:
            self.report.edges_created += 1
        else:
            self.report.edges_updated += 1
