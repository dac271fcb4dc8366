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

from ..errors import InvalidArgument, KGOSError
from ..kg.catalogue import METHODS, Method
from ..llm.base import ToolCall, ToolSpec
from .context import SourceNode

MAX_RESULT_CHARS = 8_000


EXPERT_MAX = 50  # a count above this fills the model's context with one tool's answer
_KG = {"type": "string", "description": "db_id of the KG (default: the expert's primary KG)"}
Runner = Callable[[Any, Mapping[str, Any]], Any]


def _spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": {"kg": _KG, **props}, "required": required,
              "additionalProperties": False}
    return ToolSpec(name, description, schema)


def method_spec(method: Method) -> ToolSpec:
    """A catalogue method's tool spec: its parameter type's JSON Schema, counts capped at EXPERT_MAX."""
    schema = method.params.model_json_schema()
    props = {name: _capped(prop) for name, prop in schema["properties"].items()}
    return _spec(method.name, method.summary, _inline(props, schema.get("$defs", {})), list(schema.get("required", [])))


def _inline(value: Any, defs: Mapping[str, Any]) -> Any:
    """``$ref``s replaced by their definitions: some providers (Gemini) accept no references."""
    if isinstance(value, dict):
        if "$ref" in value:
            return _inline(defs[value["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _inline(v, defs) for k, v in value.items() if k != "title"}
    if isinstance(value, list):
        return [_inline(v, defs) for v in value]
    return value


def _capped(prop: dict[str, Any]) -> dict[str, Any]:
    prop = {k: v for k, v in prop.items() if k != "title"}
    if prop.get("type") == "integer" and "maximum" in prop:
        prop["maximum"] = min(int(prop["maximum"]), EXPERT_MAX)
    return prop


def _method_runner(method: Method) -> Runner:
    return lambda kg, args: method(kg, args)


_S, _I = {"type": "string"}, {"type": "integer", "minimum": 1, "maximum": EXPERT_MAX}
TOOLS: dict[str, tuple[ToolSpec, Runner]] = {
    # hybrid search is not a catalogue method (its options belong to the search engine)
    "search_kg": (_spec("search_kg", "Hybrid search of the knowledge graph.", {"query": _S, "k": _I}, ["query"]),
                  lambda kg, a: kg.search(a["query"], k=int(a.get("k", 10)))),
    **{m.name: (method_spec(m), _method_runner(m)) for m in METHODS if not m.writes},
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
    db_id = kgs[0]
    try:
        spec, method = _tool(call.name)
        args = _arguments(spec, call.arguments)
        db_id = args.pop("kg", None) or kgs[0]
        if db_id not in kgs:
            raise InvalidArgument(f"KG {db_id!r} is not one of this expert's KGs ({', '.join(kgs)})")
        result = method(ws.kg(db_id), args).to_dict()
    except KGOSError as exc:
        return ToolOutcome(call, json.dumps({"error": str(exc)}), (), True)
    text = json.dumps(result, ensure_ascii=False)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + "…(trimmed)"
    return ToolOutcome(call, text, tuple(_nodes(db_id, result)), False)


def _tool(name: str) -> tuple[ToolSpec, Runner]:
    if name not in TOOLS:
        raise InvalidArgument(f"unknown tool {name!r}; available: {', '.join(TOOLS)}")
    return TOOLS[name]


def _arguments(spec: ToolSpec, given: Mapping[str, Any]) -> dict[str, Any]:
    """The model's arguments checked against the tool's JSON schema (the model may ignore it)."""
    schema = spec.parameters
    props, args = schema["properties"], dict(given)
    unknown = sorted(set(args) - set(props))
    missing = [name for name in schema["required"] if args.get(name) in (None, "")]
    if unknown or missing:
        raise InvalidArgument(f"{spec.name}: " + "; ".join(
            ([f"unknown argument(s) {', '.join(unknown)}"] if unknown else [])
            + ([f"missing argument(s) {', '.join(missing)}"] if missing else []))
            + f" (takes {', '.join(props)})")
    return {name: _checked(spec.name, name, props[name], value) for name, value in args.items()}


def _checked(tool: str, name: str, prop: Mapping[str, Any], value: Any) -> Any:
    kind = prop.get("type")
    if "enum" in prop and value not in prop["enum"]:
        raise InvalidArgument(f"{tool}: {name} must be one of {', '.join(prop['enum'])}, not {value!r}")
    if kind == "string" and not isinstance(value, str):
        raise InvalidArgument(f"{tool}: {name} must be a string, not {value!r}")
    if kind == "integer":
        return _integer(tool, name, prop, value)
    return value


def _integer(tool: str, name: str, prop: Mapping[str, Any], value: Any) -> int:
    # Small models often send "5" or 5.0 for an integer; those are accepted, "five" and 5.5 are not.
    try:
        number = int(str(value).strip()) if not isinstance(value, float) else int(value)
        ok = not isinstance(value, bool) and number == float(value) and prop["minimum"] <= number <= prop["maximum"]
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidArgument(f"{tool}: {name} must be an integer from {prop['minimum']} to {prop['maximum']}, "
                              f"not {value!r}")
    return number


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
