"""The graph's value types: nodes, edges and neighbours, as frozen dataclasses.

These are what every layer passes around and what the API serialises: ``to_dict()`` gives the
JSON shape of the node-link format (DESIGN.md section 4).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal

Direction = Literal["outgoing", "incoming", "both"]
DIRECTIONS: tuple[str, ...] = ("outgoing", "incoming", "both")

_SLUG_RE = re.compile(r"[^a-z0-9]+")


def normalize_name(name: str) -> str:
    """The lookup key of a name: NFKC, stripped, lower-cased (spec/002 normalisation)."""
    return unicodedata.normalize("NFKC", name).strip().lower()


def slugify(text: str) -> str:
    """``"Prompt Caching!"`` -> ``"prompt_caching"``; used to mint readable node ids."""
    return _SLUG_RE.sub("_", normalize_name(text)).strip("_") or "node"


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    name: str
    type: str = "entity"
    description: str = ""
    properties: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None

    def to_dict(self, timestamps: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type,
                             "description": self.description, "properties": self.properties}
        if timestamps:
            d["created_at"], d["updated_at"] = self.created_at, self.updated_at
        return d


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    type: str
    weight: float = 1.0
    properties: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    created_at: str | None = None

    def to_dict(self, timestamps: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "target": self.target, "type": self.type,
                             "weight": self.weight, "properties": self.properties}
        if self.id is not None:
            d["id"] = self.id
        if timestamps:
            d["created_at"] = self.created_at
        return d


@dataclass(frozen=True, slots=True)
class Neighbor:
    """A node reached over one edge; ``direction`` is as seen from the node asked about."""

    node: Node
    edge: Edge
    direction: Literal["outgoing", "incoming"]

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node.to_dict(), "edge": self.edge.to_dict(), "direction": self.direction}
