"""One unit of work for every write to a KG: ``with store.writing() as w: w.upsert_entity(...); w.add_edge(...)``.

The validated write operations and spec/002's upsert rules live here, once, above the backends:

- a node is unique by id; an entity (``upsert_entity``) by (normalised name, type), its first spelling
  kept as the display name;
- an upsert merges properties (new keys win, ``evidence`` accumulates), keeps ``created_at`` and moves
  ``updated_at`` forward only (memories may arrive late);
- an edge is unique by (source, target, type): weight = max(old, new), properties and evidence merged,
  ``created_at`` kept; ``evidence_cap`` bounds the evidence list of hub edges (the first entry and the
  newest ``cap - 1`` are kept, ``evidence_count`` counts them all).

A backend supplies only ``WriteOps`` (a few primitives on its open transaction) and the transaction
itself; ``GraphStore.writing`` nests (SQLite SAVEPOINTs, PostgreSQL savepoints): an inner unit that fails
is taken back alone, the outer one decides. When the outermost unit commits, the store's commit hooks
learn what it wrote (``Written``): the kg layer embeds those nodes, so they are searchable by meaning
when the write returns. A failed unit reports nothing, so nothing of it is embedded.
"""

from __future__ import annotations

import json
import math
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgument
from ..model import Edge, Node, normalize_name, slugify
from .limits import check_mergeable, check_properties
from .migrations import now_iso


# -- spec/002's rules, as pure functions ----------------------------------------------------------------
def dumps(value: dict[str, Any], what: str = "properties") -> str:
    """Properties as stored: compact JSON, within the depth and size bounds of ``limits``."""
    return check_properties(value, what)


def merge_properties(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """New keys win, except ``evidence``, which accumulates (spec/002: evidence is merged)."""
    check_mergeable(old)
    merged = {**old, **new}
    if "evidence" in old and "evidence" in new:
        items = as_list(old["evidence"])
        items += [e for e in as_list(new["evidence"]) if e not in items]
        merged["evidence"] = items
    return merged


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _evidence_key(entry: Any) -> Any:
    """Two evidence entries are one if they differ only in their timestamp (one memory, one span).
    A tuple of the items where they are hashable (JSON of each entry made hub-edge writes 2x slower)."""
    if isinstance(entry, dict):
        key = tuple(sorted((k, v) for k, v in entry.items() if k != "timestamp"))
        try:
            hash(key)
            return key
        except TypeError:
            entry = dict(key)
    return json.dumps(entry, sort_keys=True, default=str)


def capped_evidence(old: Any, new: Iterable[Any], cap: int) -> tuple[list[Any], int]:
    """Old entries plus the new ones not already there, trimmed to the first + the newest ``cap - 1``
    (an unbounded list rewritten on every mention makes hub-edge writes quadratic). Returns the list
    and how many entries were new."""
    items = as_list(old)
    seen = {_evidence_key(e) for e in items}
    added = 0
    for entry in new:
        key = _evidence_key(entry)
        if key not in seen:
            seen.add(key)
            items.append(entry)
            added += 1
    if len(items) > cap:
        items = items[:1] + items[len(items) - (cap - 1):] if cap > 1 else items[-1:]
    return items, added


def merge_edge_properties(old: dict[str, Any] | None, new: dict[str, Any], cap: int | None) -> dict[str, Any]:
    """An edge's properties after an upsert; ``cap`` bounds evidence and keeps ``evidence_count``."""
    if cap is None:
        return merge_properties(old or {}, new)
    rest = {k: v for k, v in new.items() if k != "evidence"}
    base = merge_properties(old or {}, rest)
    items, added = capped_evidence((old or {}).get("evidence"), as_list(new.get("evidence")), cap)
    if not items:
        return base
    before = (old or {}).get("evidence_count", len(as_list((old or {}).get("evidence"))))
    return {**base, "evidence": items, "evidence_count": int(before) + added}


def check_weight(weight: Any) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
        raise InvalidArgument(f"edge weight must be a finite number, not {weight!r}")
    return float(weight)


def check_edge_type(type: Any) -> str:
    if not isinstance(type, str) or not type.strip():
        raise InvalidArgument("edge type must be a non-empty string")
    return type


def check_node_fields(name: Any, type: Any, description: Any, properties: Any) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument("node name must be a non-empty string")
    if not isinstance(type, str) or not type.strip():
        raise InvalidArgument("node type must be a non-empty string")
    if not isinstance(description, str):
        raise InvalidArgument("node description must be a string")
    if properties is not None and not isinstance(properties, dict):
        raise InvalidArgument("node properties must be a JSON object (a dict)")


def updated_fields(old: Node, name: str | None, type: str | None, description: str | None,
                   properties: dict[str, Any] | None, replace_properties: bool) -> tuple[str, str, str, dict[str, Any]]:
    """(name, type, description, properties) of ``old`` after ``update_node``, checked: the given
    fields replace the old ones; properties are merged into the old ones unless ``replace_properties``."""
    props = properties if replace_properties else merge_properties(old.properties, properties or {})
    new = (name if name is not None else old.name, type if type is not None else old.type,
           description if description is not None else old.description)
    check_node_fields(*new, props)
    return (*new, props or {})


# -- what a unit of work wrote --------------------------------------------------------------------------
@dataclass(frozen=True)
class Written:
    """What one committed unit of work changed: the ids of the nodes it inserted or updated (their
    text may have changed: the embed hook re-embeds them by content hash), the ids it deleted, how
    many edges it wrote, and whether it was a bulk write (then the fill-in embeds, not the hook)."""

    node_ids: tuple[str, ...] = ()
    deleted_ids: tuple[str, ...] = ()
    edges: int = 0
    bulk: bool = False

    @property
    def empty(self) -> bool:
        return not (self.node_ids or self.deleted_ids or self.edges)


@dataclass
class WriteLog:
    """The running tally of one unit (and the units nested in it that committed)."""

    bulk: bool = False
    bump: bool = True  # bump the KG version at commit (False: writes no snapshot reads, e.g. vectors)
    node_ids: dict[str, None] = field(default_factory=dict)  # ordered set
    deleted_ids: dict[str, None] = field(default_factory=dict)
    nodes_created: int = 0
    nodes_updated: int = 0
    edges_created: int = 0
    edges_updated: int = 0
    edges_deleted: int = 0

    def node(self, node_id: str, created: bool) -> None:
        self.node_ids[node_id] = None
        self.deleted_ids.pop(node_id, None)
        if created:
            self.nodes_created += 1
        else:
            self.nodes_updated += 1

    def absorb(self, inner: WriteLog) -> None:
        """A nested unit committed into this one."""
        for node_id in inner.node_ids:
            self.node_ids[node_id] = None
            self.deleted_ids.pop(node_id, None)
        for node_id in inner.deleted_ids:
            self.node_ids.pop(node_id, None)
            self.deleted_ids[node_id] = None
        self.bulk = self.bulk or inner.bulk
        self.bump = self.bump or inner.bump
        self.nodes_created += inner.nodes_created
        self.nodes_updated += inner.nodes_updated
        self.edges_created += inner.edges_created
        self.edges_updated += inner.edges_updated
        self.edges_deleted += inner.edges_deleted

    def written(self) -> Written:
        return Written(tuple(self.node_ids), tuple(self.deleted_ids),
                       self.edges_created + self.edges_updated + self.edges_deleted, self.bulk)


# -- what a backend supplies ------------------------------------------------------------------------------
class WriteOps(ABC):
    """The primitives of one backend on its open transaction. Rows are read "for update" where the
    backend has row locks (PostgreSQL), so two writers of one node serialise instead of losing one."""

    @abstractmethod
    def node(self, node_id: str) -> Node | None: ...

    @abstractmethod
    def entity(self, norm_name: str, type: str) -> Node | None:
        """The oldest node with this normalised name and type."""

    def id_taken(self, node_id: str) -> bool:
        return self.node(node_id) is not None

    def fresh_id(self, type: str, name: str) -> str:
        """``<type>:<slug of name>``, with ``_2``, ``_3`` ... until it is free."""
        base = f"{slugify(type)}:{slugify(name)}"
        candidate, n = base, 1
        while self.id_taken(candidate):
            n += 1
            candidate = f"{base}_{n}"
        return candidate

    @abstractmethod
    def insert_node(self, node: Node) -> None: ...

    @abstractmethod
    def update_node(self, node: Node) -> None:
        """Rewrite the row of ``node.id`` with these fields (``created_at`` is never changed)."""

    @abstractmethod
    def delete_node(self, node_id: str) -> int:
        """Delete the node and its edges; the number of edges removed."""

    @abstractmethod
    def degree(self, node_id: str) -> int:
        """How many edges touch the node."""

    @abstractmethod
    def edge(self, source: str, target: str, type: str) -> Edge | None: ...

    def edge_id_taken(self, edge_id: str) -> bool:
        return False

    def fresh_edge_id(self) -> str | None:
        """The id of a new edge when none is given (None: the backend needs none)."""
        return None

    @abstractmethod
    def insert_edge(self, edge: Edge) -> None: ...

    @abstractmethod
    def update_edge(self, edge: Edge) -> None:
        """Set weight and properties of the edge with this (source, target, type)."""

    @abstractmethod
    def delete_edge(self, source: str, target: str, type: str) -> bool: ...

    # -- bulk mode (imports): rows as the importer checks them ----------------------------------------
    def merge_node_rows(self, rows: list[tuple[Any, ...]], ts: str) -> None:
        """Upsert rows ``(id, name, norm_name, type, description, properties, created_at, updated_at)``
        by id, properties merged and an empty description keeping the old one."""
        raise InvalidArgument(f"{type(self).__name__}: this KG's backend has no bulk mode")

    def patch_node_properties(self, rows: list[tuple[str, str]], ts: str) -> None:
        """Set top-level properties ``(node id, JSON object)`` of existing nodes, leaving the others
        (values the caller made, such as dimension values: no spec/002 merge, no text change)."""
        raise InvalidArgument(f"{type(self).__name__}: this KG's backend has no bulk mode")

    def node_keys(self) -> dict[str, Any]:
        """node id -> the key edges refer to it by (``merge_edge_rows``' endpoints)."""
        raise InvalidArgument(f"{type(self).__name__}: this KG's backend has no bulk mode")

    def merge_edge_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Upsert rows ``(source key, target key, type, weight, properties, created_at, id)`` by
        (source, target, type): weight = max, properties merged."""
        raise InvalidArgument(f"{type(self).__name__}: this KG's backend has no bulk mode")


# -- the unit of work ----------------------------------------------------------------------------------------
class Writer:
    """The write operations of one unit of work (``store.writing()``): checked, with spec/002's rules.
    Results are built from what was written (no read back)."""

    def __init__(self, ops: WriteOps, log: WriteLog, not_found: Callable[[str], Exception]) -> None:
        self.ops, self.log, self.not_found = ops, log, not_found

    # -- reads inside the unit -------------------------------------------------------------------------------
    def node(self, node_id: str) -> Node | None:
        return self.ops.node(node_id)

    def entity(self, name: str, type: str) -> Node | None:
        """The node that ``upsert_entity(name, type)`` would update, if any."""
        return self.ops.entity(normalize_name(name), type)

    def edge(self, source: str, target: str, type: str) -> Edge | None:
        return self.ops.edge(source, target, type)

    def _require(self, node_id: str) -> Node:
        node = self.ops.node(node_id) if isinstance(node_id, str) else None
        if node is None:
            raise self.not_found(str(node_id))
        return node

    # -- nodes -------------------------------------------------------------------------------------------------
    def add_node(self, name: str, type: str = "entity", description: str = "",
                 properties: dict[str, Any] | None = None, id: str | None = None, at: str | None = None) -> Node:
        """Insert a new node; ``id`` defaults to ``<type>:<slug of name>`` made unique."""
        check_node_fields(name, type, description, properties)
        node_id = id if id is not None else self.ops.fresh_id(type, name)
        if not isinstance(node_id, str) or not node_id:
            raise InvalidArgument("node id must be a non-empty string")
        if self.ops.id_taken(node_id):
            raise InvalidArgument(f"a node with id '{node_id}' already exists; use update_node")
        return self._insert(node_id, name, type, description, properties or {}, at)

    def _insert(self, node_id: str, name: str, type: str, description: str, props: dict[str, Any],
                at: str | None, created: str | None = None) -> Node:
        ts = at or now_iso()
        node = Node(node_id, name, type, description, props, created or ts, ts)
        dumps(props, f"properties of node '{node_id}'")  # checked before the backend sees it: names the record
        self.ops.insert_node(node)
        self.log.node(node_id, created=True)
        return node

    def upsert_node(self, id: str, name: str, type: str = "entity", description: str = "",
                    properties: dict[str, Any] | None = None, at: str | None = None) -> Node:
        """Insert, or update the node with this id (properties merged, created_at kept)."""
        check_node_fields(name, type, description, properties)
        if not isinstance(id, str) or not id:
            raise InvalidArgument("node id must be a non-empty string")
        old = self.ops.node(id)
        if old is None:
            return self._insert(id, name, type, description, properties or {}, at)
        return self._merge(old, name, type, description, properties or {}, at)

    def _merge(self, old: Node, name: str, type: str, description: str, props: dict[str, Any],
               at: str | None) -> Node:
        ts = at or now_iso()
        merged = merge_properties(old.properties, props)
        node = Node(old.id, name, type, description or old.description, merged, old.created_at,
                    max(ts, old.updated_at or ""))
        if node != old:
            dumps(merged, f"properties of node '{old.id}'")
            self.ops.update_node(node)
        self.log.node(old.id, created=False)
        return node

    def upsert_entity(self, name: str, type: str, properties: dict[str, Any] | None = None,
                      description: str = "", id: str | None = None, at: str | None = None,
                      created: str | None = None) -> Node:
        """Entity semantics of spec/002: unique by (normalised name, type), the first spelling kept,
        metadata merged. ``id`` names a new entity (a taken one gets a fresh ``<type>:<slug>``); ``at``
        is the time of the write (``updated_at`` moves forward to it, never back), ``created`` a new
        entity's ``created_at`` (default ``at``)."""
        check_node_fields(name, type, description, properties)
        old = self.ops.entity(normalize_name(name), type)
        if old is not None:
            return self._merge(old, old.name, type, description, properties or {}, at)
        node_id = id if id is not None and not self.ops.id_taken(id) else self.ops.fresh_id(type, name)
        return self._insert(node_id, name, type, description, properties or {}, at, created)

    def update_node(self, id: str, name: str | None = None, type: str | None = None,
                    description: str | None = None, properties: dict[str, Any] | None = None,
                    replace_properties: bool = False) -> Node:
        """Change the given fields; properties are merged unless ``replace_properties``."""
        old = self._require(id)
        new = updated_fields(old, name, type, description, properties, replace_properties)
        dumps(new[3], f"properties of node '{old.id}'")
        node = Node(old.id, *new, created_at=old.created_at, updated_at=max(now_iso(), old.updated_at or ""))
        self.ops.update_node(node)
        self.log.node(old.id, created=False)
        return node

    def delete_node(self, id: str) -> int:
        """Delete a node and its edges; returns the number of edges removed with it."""
        self._require(id)
        n_edges = self.ops.delete_node(id)
        self.log.node_ids.pop(id, None)
        self.log.deleted_ids[id] = None
        self.log.edges_deleted += n_edges
        return n_edges

    # -- edges -------------------------------------------------------------------------------------------------
    def add_edge(self, source: str, target: str, type: str, weight: float = 1.0,
                 properties: dict[str, Any] | None = None, id: str | None = None, at: str | None = None,
                 evidence_cap: int | None = None) -> Edge:
        """Upsert by (source, target, type): weight = max(old, new), properties/evidence merged, the
        original ``created_at`` kept (spec/002). ``id`` names a new edge (a taken one: a fresh id)."""
        weight, type = check_weight(weight), check_edge_type(type)
        if properties is not None and not isinstance(properties, dict):
            raise InvalidArgument("edge properties must be a JSON object (a dict)")
        self._require(source), self._require(target)
        old = self.ops.edge(source, target, type)
        props = merge_edge_properties(old.properties if old else None, properties or {}, evidence_cap)
        dumps(props, f"properties of edge {source} -[{type}]-> {target}")
        if old is None:
            edge_id = id if id is not None and not self.ops.edge_id_taken(id) else None
            if id is not None and edge_id is None:
                edge_id = f"edge:{uuid.uuid4().hex}"
            edge = Edge(source, target, type, weight, props, edge_id or self.ops.fresh_edge_id(), at or now_iso())
            self.ops.insert_edge(edge)
            self.log.edges_created += 1
            return edge
        edge = Edge(source, target, type, max(old.weight, weight), props, old.id, old.created_at)
        if edge != old:
            self.ops.update_edge(edge)
        self.log.edges_updated += 1
        return edge

    def set_edge(self, source: str, target: str, type: str, weight: float | None = None,
                 properties: dict[str, Any] | None = None) -> Edge:
        """Replace an existing edge's weight and/or properties as given (no max, no merge: a decay
        lowers weights). ``EdgeNotFound``-like ``InvalidArgument`` when there is no such edge."""
        old = self.ops.edge(source, target, type)
        if old is None:
            raise InvalidArgument(f"no edge {source} -[{type}]-> {target} in the KG")
        if properties is not None and not isinstance(properties, dict):
            raise InvalidArgument("edge properties must be a JSON object (a dict)")
        new_weight = check_weight(weight) if weight is not None else old.weight
        props = properties if properties is not None else old.properties
        dumps(props, f"properties of edge {source} -[{type}]-> {target}")
        edge = Edge(source, target, type, new_weight, props, old.id, old.created_at)
        self.ops.update_edge(edge)
        self.log.edges_updated += 1
        return edge

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        self._require(source), self._require(target)
        gone = self.ops.delete_edge(source, target, type)
        self.log.edges_deleted += int(gone)
        return gone

    # -- bulk mode -----------------------------------------------------------------------------------------------
    def merge_node_rows(self, rows: list[tuple[Any, ...]], ts: str | None = None) -> None:
        """Bulk upsert of checked rows (``importer``): one statement per batch, spec/002's merge."""
        self.ops.merge_node_rows(rows, ts or now_iso())
        self.log.bulk = True
        self.log.nodes_updated += len(rows)

    def patch_node_properties(self, rows: list[tuple[str, str]], ts: str | None = None) -> None:
        """Bulk: set top-level properties of existing nodes (``WriteOps.patch_node_properties``)."""
        self.ops.patch_node_properties(rows, ts or now_iso())
        self.log.bulk = True
        self.log.nodes_updated += len(rows)

    def node_keys(self) -> dict[str, Any]:
        return self.ops.node_keys()

    def merge_edge_rows(self, rows: list[tuple[Any, ...]]) -> None:
        self.ops.merge_edge_rows(rows)
        self.log.bulk = True
        self.log.edges_updated += len(rows)


__all__ = ["WriteLog", "WriteOps", "Writer", "Written", "capped_evidence", "check_node_fields", "check_weight",
           "dumps", "merge_properties", "updated_fields"]
