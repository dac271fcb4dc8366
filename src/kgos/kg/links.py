"""Cross-KG edges (spec/000 section 14, "Multi-KG expert composition"): edges whose ends live in two
KGs of one workspace, named ``kg:node_id`` (the citation convention), stored in ``workspace.db``
(migration ``007_cross_edges``; or the workspace's PostgreSQL database) because neither KG owns them. ``trace`` follows them: a path may run
inside one KG, cross a link, and go on in the other.

>>> import tempfile, kgos
>>> from kgos.data import load_demo
>>> ws = kgos.Workspace(tempfile.mkdtemp()); _ = load_demo(ws, embedder=None)
>>> links = CrossLinks(ws)
>>> _ = links.add("demo:goal:cost_reduction", "finance:goal:reduce_taxes", "relates_to")
>>> links.trace("demo:feature:batch_api", "finance:goal:reduce_taxes").found
True
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import EdgeNotFound, InvalidArgument
from ..store.limits import check_properties
from ..store.migrations import now_iso
from ..store.postgres_workspace import write_transaction

if TYPE_CHECKING:
    from .facade import KG
    from .workspace import Workspace

MAX_DEPTH = 8
MAX_VISITED = 100_000  # nodes one trace may reach before it gives up (a bounded answer, never a hang)


@dataclass(frozen=True)
class Ref:
    """``kg:node`` split in two; the node part may itself hold ':' (``demo:goal:cost_reduction``)."""

    kg: str
    node: str

    def __str__(self) -> str:
        return f"{self.kg}:{self.node}"


@dataclass(frozen=True)
class CrossEdge:
    source: Ref
    target: Ref
    type: str
    weight: float
    properties: dict[str, Any]
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return {"source": str(self.source), "target": str(self.target), "type": self.type, "weight": self.weight,
                "properties": self.properties, "created_at": self.created_at}


@dataclass(frozen=True)
class CrossStep:
    ref: Ref
    name: str
    type: str
    edge_type: str | None = None  # the edge from the previous step
    direction: str | None = None  # forward | backward
    cross: bool = False  # the edge is a cross-KG link

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"node": str(self.ref), "kg": self.ref.kg, "id": self.ref.node, "name": self.name,
                             "type": self.type}
        if self.edge_type is not None:
            d["edge"] = {"type": self.edge_type, "direction": self.direction, "cross_kg": self.cross}
        return d


@dataclass(frozen=True)
class CrossPath:
    source: str
    target: str
    found: bool
    length: int | None
    path: tuple[CrossStep, ...]
    max_depth: int
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"found": self.found, "length": self.length, "source": self.source, "target": self.target,
                "max_depth": self.max_depth, "path": [s.to_dict() for s in self.path], "notes": list(self.notes),
                "kgs": list(dict.fromkeys(s.ref.kg for s in self.path))}


def parse_ref(text: Any) -> Ref:
    """``"demo:goal:cost_reduction"`` -> Ref("demo", "goal:cost_reduction")."""
    from .workspace import check_db_id
    if not isinstance(text, str) or ":" not in text:
        raise InvalidArgument(f"{text!r} is not KG:NODE (the KG's db_id, a colon, then a node id or name)")
    kg, _, node = text.partition(":")
    if not node.strip():
        raise InvalidArgument(f"{text!r} names no node after '{kg}:'")
    return Ref(check_db_id(kg), node)


class CrossLinks:
    """The cross-KG edges of a workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.conn: Any = workspace.shared  # workspace.db or PostgreSQL
        self._lock = threading.RLock()

    def resolve(self, text: str) -> Ref:
        """The ref with its node resolved (by id, or an unambiguous name) in an existing KG."""
        ref = parse_ref(text)
        return Ref(ref.kg, self.ws.kg(ref.kg).resolve(ref.node).id)

    def add(self, source: str, target: str, type: str, weight: float = 1.0,
            properties: dict[str, Any] | None = None) -> CrossEdge:
        """Add (or update: weight = max, properties merged) the link ``source -[type]-> target``."""
        a, b = self.resolve(source), self.resolve(target)
        if a.kg == b.kg:
            raise InvalidArgument(f"both ends are in '{a.kg}': add an ordinary edge instead "
                                  f"(kg.add_edge, POST /api/kg/{a.kg}/edges)")
        _check_type(type)
        weight = _weight(weight)
        props = dict(properties or {})
        check_properties(props)
        with write_transaction(self.conn, self._lock) as conn:
            conn.execute(
                "INSERT INTO cross_edges VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (source_kg, source_node, target_kg, target_node, type) DO UPDATE SET "
                "weight = max(cross_edges.weight, excluded.weight), "
                "properties = json_patch(cross_edges.properties, excluded.properties)",
                (a.kg, a.node, b.kg, b.node, type, weight, json.dumps(props), now_iso()))
        return self.get(a, b, type)

    def get(self, a: Ref, b: Ref, type: str) -> CrossEdge:
        row = self.conn.execute(f"SELECT {_COLS} FROM cross_edges WHERE source_kg = ? AND source_node = ? AND "
                                "target_kg = ? AND target_node = ? AND type = ?",
                                (a.kg, a.node, b.kg, b.node, type)).fetchone()
        if row is None:
            raise EdgeNotFound(f"no cross-KG edge {a} -[{type}]-> {b}")
        return _edge(row)

    def delete(self, source: str, target: str, type: str) -> None:
        a, b = parse_ref(source), parse_ref(target)
        with write_transaction(self.conn, self._lock) as conn:
            if conn.execute("DELETE FROM cross_edges WHERE source_kg = ? AND source_node = ? AND target_kg = ? AND "
                            "target_node = ? AND type = ?", (a.kg, a.node, b.kg, b.node, type)).rowcount == 0:
                raise EdgeNotFound(f"no cross-KG edge {a} -[{type}]-> {b}")

    def list(self, kg: str | None = None, limit: int = 1_000) -> list[CrossEdge]:
        sql = f"SELECT {_COLS} FROM cross_edges" + (" WHERE source_kg = ? OR target_kg = ?" if kg else "")
        args: tuple[Any, ...] = (kg, kg) if kg else ()
        return [_edge(r) for r in self.conn.execute(sql + " ORDER BY created_at LIMIT ?", (*args, limit))]

    def touching(self, ref: Ref) -> Iterator[tuple[Ref, str, str]]:
        """(the other end, edge type, forward|backward) of every link at ``ref``."""
        for row in self.conn.execute("SELECT target_kg, target_node, type FROM cross_edges WHERE source_kg = ? AND "
                                     "source_node = ?", (ref.kg, ref.node)):
            yield Ref(row[0], row[1]), row[2], "forward"
        for row in self.conn.execute("SELECT source_kg, source_node, type FROM cross_edges WHERE target_kg = ? AND "
                                     "target_node = ?", (ref.kg, ref.node)):
            yield Ref(row[0], row[1]), row[2], "backward"

    # -- tracing ---------------------------------------------------------------------------------------------
    def trace(self, source: str, target: str, max_depth: int = 5) -> CrossPath:
        """The shortest path (edges of either direction, links included) from ``source`` to ``target``."""
        if not 1 <= max_depth <= MAX_DEPTH:
            raise InvalidArgument(f"max_depth must be between 1 and {MAX_DEPTH}, not {max_depth}")
        a, b = self.resolve(source), self.resolve(target)
        kgs: dict[str, KG] = {}
        parents = self._search(a, b, max_depth, kgs)
        if parents is None:
            return CrossPath(str(a), str(b), False, None, (), max_depth, (f"gave up after {MAX_VISITED:,} nodes",))
        if b not in parents:
            return CrossPath(str(a), str(b), False, None, (), max_depth)
        steps = self._steps(parents, b, kgs)
        return CrossPath(str(a), str(b), True, len(steps) - 1, steps, max_depth)

    def _search(self, a: Ref, b: Ref, max_depth: int,
                kgs: dict[str, KG]) -> dict[Ref, tuple[Ref, str, str, bool] | None] | None:
        parents: dict[Ref, tuple[Ref, str, str, bool] | None] = {a: None}
        frontier, depth = deque([a]), 0
        while frontier and depth < max_depth and b not in parents:
            depth += 1
            nxt: deque[Ref] = deque()
            for ref in frontier:
                for other, etype, direction, cross in self._around(ref, kgs):
                    if other not in parents:
                        parents[other] = (ref, etype, direction, cross)
                        nxt.append(other)
                if len(parents) > MAX_VISITED:
                    return None
            frontier = nxt
        return parents

    def _around(self, ref: Ref, kgs: dict[str, KG]) -> Iterator[tuple[Ref, str, str, bool]]:
        kg = self._kg(ref.kg, kgs)
        for nb in kg.neighbors(ref.node, direction="both"):
            yield Ref(ref.kg, nb.node.id), nb.edge.type, "forward" if nb.direction == "outgoing" else "backward", False
        for other, etype, direction in self.touching(ref):
            if self.ws.exists(other.kg):
                yield other, etype, direction, True

    def _kg(self, db_id: str, kgs: dict[str, KG]) -> KG:
        if db_id not in kgs:
            kgs[db_id] = self.ws.kg(db_id)
        return kgs[db_id]

    def _steps(self, parents: dict[Ref, tuple[Ref, str, str, bool] | None], end: Ref,
               kgs: dict[str, KG]) -> tuple[CrossStep, ...]:
        out: list[CrossStep] = []
        ref: Ref | None = end
        while ref is not None:
            node = self._kg(ref.kg, kgs).node(ref.node)
            came = parents[ref]
            out.append(CrossStep(ref, node.name, node.type, *(came[1:] if came else (None, None, False))))
            ref = came[0] if came else None
        return tuple(reversed(out))


_COLS = "source_kg, source_node, target_kg, target_node, type, weight, properties, created_at"


def _edge(row: tuple[Any, ...]) -> CrossEdge:
    return CrossEdge(Ref(row[0], row[1]), Ref(row[2], row[3]), row[4], float(row[5]), json.loads(row[6]), row[7])


def _check_type(type: Any) -> None:
    if not isinstance(type, str) or not type.strip() or len(type) > 64 or not type.replace("_", "").isalnum():
        raise InvalidArgument(f"edge type must be 1-64 letters, digits or '_', not {type!r}")


def _weight(weight: Any) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < float(weight) <= 1e6:
        raise InvalidArgument(f"weight must be a number in (0, 1e6], not {weight!r}")
    return float(weight)
