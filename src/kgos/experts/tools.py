"""KG-OS methods offered to a model as functions (spec/000 section 9, stage 6: TOOL EXEC).

Each tool runs one query method on one of the expert's KGs and returns the method's JSON, trimmed.
Nodes named in a tool's result become citable for the rest of the turn. Bad arguments from the
model come back to it as an error result, never as an exception out of the chat loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import KGOSError
from ..llm.base import ToolCall, ToolSpec
from .context import SourceNode

MAX_RESULT_CHARS = 8_000


def _spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": {"kg": {"type": "string", "description": "db_id of the KG "
              "(default: the expert's primary KG)"}, **props}, "required": required, "additionalProperties": False}
    return ToolSpec(name, description, schema)


_S, _I = {"type": "string"}, {"type": "integer", "minimum": 1, "maximum": 50}
TOOLS: dict[str, tuple[ToolSpec, Callable[[Any, Mapping[str, Any]], Any]]] = {
    "search_kg": (_spec("search_kg", "Hybrid search of the knowledge graph.", {"query": _S, "k": _I}, ["query"]),
                  lambda kg, a: kg.search(a["query"], k=int(a.get("k", 10)))),
    "want_to": (_spec("want_to", "Nodes that achieve a goal.", {"goal": _S}, ["goal"]),
                lambda kg, a: kg.want_to(a["goal"])),
    "can_it": (_spec("can_it", "Whether a capability exists, with limitations and workarounds.",
                     {"capability": _S}, ["capability"]), lambda kg, a: kg.can_it(a["capability"])),
    "compose_for": (_spec("compose_for", "A multi-step plan of connected tools for a goal.", {"goal": _S}, ["goal"]),
                    lambda kg, a: kg.compose_for(a["goal"])),
    "similar_to": (_spec("similar_to", "Structurally similar nodes.", {"node": _S, "k": _I}, ["node"]),
                   lambda kg, a: kg.similar_to(a["node"], k=int(a.get("k", 10)))),
    "impact_analysis": (_spec("impact_analysis", "What changes if a node changes.",
                              {"node": _S, "direction": {"enum": ["forward", "backward", "both"]},
                               "max_depth": {"type": "integer", "minimum": 1, "maximum": 5}}, ["node"]),
                        lambda kg, a: kg.impact_analysis(a["node"], a.get("direction", "both"),
                                                         int(a.get("max_depth", 3)))),
    "trace_path": (_spec("trace_path", "The shortest typed path between two nodes.",
                         {"source": _S, "target": _S}, ["source", "target"]),
                   lambda kg, a: kg.trace_path(a["source"], a["target"])),
    "explore_smart": (_spec("explore_smart", "The neighbourhood of a node, level by level.",
                            {"node": _S, "depth": {"type": "integer", "minimum": 1, "maximum": 3}}, ["node"]),
                      lambda kg, a: kg.explore_smart(a["node"], int(a.get("depth", 2)))),
}


@dataclass(frozen=True)
class ToolOutcome:
    call: ToolCall
    content: str
    nodes: tuple[SourceNode, ...]
    error: bool

    def to_dict(self) -> dict[str, Any]:
        return {**self.call.to_dict(), "error": self.error, "nodes": [n.cite for n in self.nodes]}


def tool_specs() -> list[ToolSpec]:
    return [spec for spec, _ in TOOLS.values()]


def run_tool(ws: Any, kgs: tuple[str, ...], call: ToolCall) -> ToolOutcome:
    """Run one call on the expert's KG; errors (unknown tool, bad arguments, unknown node) become
    an ``{"error": ...}`` result the model can read and correct."""
    try:
        if call.name not in TOOLS:
            raise KeyError(f"unknown tool {call.name!r}; available: {', '.join(TOOLS)}")
        args = dict(call.arguments)
        db_id = args.pop("kg", None) or kgs[0]
        if db_id not in kgs:
            raise KeyError(f"KG {db_id!r} is not one of this expert's KGs ({', '.join(kgs)})")
        result = TOOLS[call.name][1](ws.kg(db_id), args).to_dict()
    except (KGOSError, KeyError, TypeError, ValueError) as exc:
        return ToolOutcome(call, json.dumps({"error": str(exc).strip("'\"")}), (), True)
    text = json.dumps(result, ensure_ascii=False)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + "…(trimmed)"
    return ToolOutcome(call, text, tuple(_nodes(db_id, result)), False)


def _nodes(db_id: str, value: Any) -> list[SourceNode]:
    """Every {id, name, type} object in a result: the nodes the model was shown."""
    found: dict[str, SourceNode] = {}
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if isinstance(v.get("id"), str) and isinstance(v.get("name"), str) and isinstance(v.get("type"), str):
                found.setdefault(v["id"], SourceNode(db_id, v["id"], v["name"], v["type"], v.get("description", ""), 0.0))
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return list(found.values())
