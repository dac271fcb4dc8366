"""What an extractor returns for one file: nodes, edges and the references still to resolve.

Everything is JSON-shaped (plain dicts and lists) so a file's facts can be cached in the KG, compared by
hash, and passed between pipeline modules (spec/004 stage data). Node and edge dicts have the node-link
shape of DESIGN.md section 4. ``refs`` are names the file uses but does not define (a call, a base class,
an import, a mention): the linker resolves them against every file's definitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..memory.pii import redact_secrets

MAX_TEXT = 2000  # characters of a docstring or chunk kept as a node description


@dataclass
class Facts:
    """One file's extraction. ``group`` is the provenance key (the file's ``rel``) every node and edge
    carries, so a re-ingest replaces exactly this file's output."""

    group: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    refs: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # set when the file could not be parsed: it is skipped with this reason
    llm: bool = False  # tier 3 already ran on this file's text (its results are among nodes and edges)

    def node(self, id: str, name: str, type: str, description: str = "", **props: Any) -> str:
        props["source"] = self.group
        self.nodes.append({"id": id, "name": name[:500] or id, "type": type,
                           "description": clean_text(description), "properties": props})
        return id

    def edge(self, source: str, target: str, type: str, weight: float = 1.0, **props: Any) -> None:
        props.setdefault("source_file", self.group)
        props.setdefault("tier", 1)
        self.edges.append({"source": source, "target": target, "type": type, "weight": weight,
                           "properties": props})

    def ref(self, source: str, kind: str, name: str, **extra: Any) -> None:
        self.refs.append({"source": source, "kind": kind, "name": name, **extra})

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "nodes": self.nodes, "edges": self.edges, "refs": self.refs,
                "error": self.error, "llm": self.llm}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Facts:
        return cls(d["group"], list(d.get("nodes") or []), list(d.get("edges") or []),
                   list(d.get("refs") or []), d.get("error"), bool(d.get("llm")))


_SPACE_RE = re.compile(r"[ \t]+")


def clean_text(text: str, limit: int = MAX_TEXT) -> str:
    """Text fit to store: secrets redacted (memory/pii.py), runs of blanks squeezed, cut at ``limit``."""
    if not text:
        return ""
    text = _SPACE_RE.sub(" ", text.strip())[:limit]
    return redact_secrets(text)


def unique_id(taken: set[str], base: str) -> str:
    """``base``, or ``base#2``, ``base#3`` ... when a file defines the same name twice."""
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}#{n}"
    taken.add(candidate)
    return candidate
