"""GraphML (``.graphml``, ``.graphml.gz``, ``.xml``) as networkx, Gephi, Cytoscape and yEd write it.

Reading streams the XML with ``ElementTree.iterparse`` (each node and edge is dropped once read), once
for ``nodes()`` and once more for ``edges()``. ``<key>`` declarations give each ``<data>`` its name,
type (string, int, long, float, double, boolean) and default. Node data ``name`` (else ``label``),
``type`` and ``description`` fill those fields. Edge data ``type`` (else ``relation``, else
``interaction``, else ``label``; with none of them the type is ``relates_to``) and ``weight`` fill
those, and the edge's ``id`` attribute its id. Everything else becomes a property, typed by its key.
yEd's node and edge labels count as ``label``. A DOCTYPE is refused: entity declarations can expand
without bound. Records are located as ``<file>:nodes[i]`` / ``<file>:edges[i]`` (parse errors as
``<file>:<line>``).

Typing conventions, so a KG round-trips exactly through our own writer:
- a property whose values are all booleans, all integers, all numbers or all strings gets a key of
  type boolean, long, double or string; a ``double`` value written without a decimal point or
  exponent ("3") reads back as an int, so integers in a mixed int/float property stay integers;
- any other property (nested objects, lists, nulls, mixed types) gets a string key marked
  ``kgos.encoding="json"``, each value JSON-encoded; the reader decodes such keys;
- a property named like a mapped attribute (nodes: ``name``, ``label``, ``type``, ``description``;
  edges: ``type``, ``label``, ``relation``, ``interaction``, ``weight``) or starting with
  ``properties.`` is written as ``properties.<name>``; the reader strips that prefix.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree as ET
from xml.parsers import expat
from xml.sax.saxutils import escape, quoteattr

from ...errors import ImportFailed, InputTooLarge, PropertiesTooLarge
from ...model import Edge, Node
from ..base import GraphStore
from ..bounds import MAX_DOCUMENT_DEPTH, open_xml
from ..limits import parse_json
from . import Record, Source, open_text_out, parse_error

NS = "http://graphml.graphdrawing.org/xmlns"
JSON_MARK = "kgos.encoding"
PREFIX = "properties."
_NODE_FIELDS = (("name", ("name", "label")), ("type", ("type",)), ("description", ("description",)))
# "interaction" is Cytoscape's name for an edge's relation.
_EDGE_FIELDS = (("type", ("type", "relation", "interaction", "label")), ("weight", ("weight",)))
_RESERVED = {"node": {"name", "label", "type", "description"},
             "edge": {"type", "label", "relation", "interaction", "weight"}}
_BOOLS = {"true": True, "false": False, "1": True, "0": False}
_INT_RE = re.compile(r"\s*[-+]?[0-9]+\s*")
_READ_ERRORS = (EOFError, OSError, zlib.error)
_META = ("name", "description")


@dataclass(frozen=True)
class _Key:
    """One ``<key>`` declaration."""

    name: str
    domain: str = "all"
    type: str = "string"
    default: str | None = None
    json: bool = False
    yfiles: str | None = None

    def applies_to(self, domain: str) -> bool:
        return self.domain in (domain, "all")


# -- reading ---------------------------------------------------------------------------------------
def read(path: Path) -> Source:
    """A ``Source`` over a GraphML file; reads the head now (refusing a DTD) for the graph's name."""
    meta = _read_head(path)
    return Source("graphml", meta, lambda: _records(path, "node"), lambda: _records(path, "edge"))


class _Refused(Exception):
    """A document refused before its records are read; the message says why."""


class _HeadDone(Exception):
    pass


class _Head:
    """Expat handlers that refuse a DTD and collect the graph's ``name`` and ``description`` data.

    Expat rather than iterparse because it can stop at the DOCTYPE before any entity is declared,
    and because it is several times faster when the whole file must be scanned: networkx writes
    graph data after the nodes and edges, so the scan stops at the first node or edge only when
    no declared graph name/description is still missing.
    """

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self.meta: dict[str, str] = {}
        self.depth = 0
        self.capture: tuple[str, int] | None = None
        self.text: list[str] = []

    def doctype(self, *_: Any) -> None:
        raise _Refused("it declares a DTD (<!DOCTYPE ...>), which is refused because its entities can "
                       "expand without bound; remove the DOCTYPE and any entities")

    def start(self, name: str, attrs: dict[str, str]) -> None:
        tag, self.depth = _local(name), self.depth + 1
        if self.depth > MAX_DOCUMENT_DEPTH:
            raise _Refused(f"elements nest deeper than {MAX_DOCUMENT_DEPTH} levels; GraphML needs 4 or 5")
        if self.depth == 1 and tag != "graphml":
            raise _Refused(f"it is not GraphML: the root element is <{tag}>, expected <graphml>")
        if tag == "key" and attrs.get("for") == "graph" and attrs.get("attr.name") in _META:
            self.keys[attrs.get("id", "")] = attrs["attr.name"]
        elif tag in ("node", "edge") and set(self.keys.values()) <= set(self.meta):
            raise _HeadDone()
        elif tag == "data" and self.depth == 3 and attrs.get("key") in self.keys:
            self.capture, self.text = (self.keys[attrs["key"]], self.depth), []

    def end(self, name: str) -> None:
        if self.capture and self.capture[1] == self.depth:
            self.meta[self.capture[0]] = "".join(self.text)
            self.capture = None
        self.depth -= 1

    def chars(self, data: str) -> None:
        if self.capture:
            self.text.append(data)


def _read_head(path: Path) -> dict[str, str]:
    head = _Head()
    parser = expat.ParserCreate(namespace_separator="}")
    parser.StartDoctypeDeclHandler = head.doctype
    parser.StartElementHandler, parser.EndElementHandler = head.start, head.end
    parser.CharacterDataHandler = head.chars
    try:
        with open_xml(path) as f:
            parser.ParseFile(f)
    except _HeadDone:
        pass
    except _Refused as exc:
        raise ImportFailed(f"{path.name} cannot be read: {exc}",
                           record=f"{path.name}:{parser.CurrentLineNumber}") from None
    except expat.ExpatError as exc:
        raise parse_error(path, exc, where=f"{path.name}:{exc.lineno}") from None
    except InputTooLarge as exc:
        raise parse_error(path, exc, where=f"{path.name}:{parser.CurrentLineNumber}") from None
    except _READ_ERRORS as exc:
        raise parse_error(path, exc, where=path.name) from None
    return head.meta


@contextmanager
def _parsing(path: Path) -> Iterator[IO[bytes]]:
    """The open file; parser and read errors become an ImportFailed naming the line."""
    try:
        with open_xml(path) as f:
            yield f
    except ET.ParseError as exc:
        raise parse_error(path, exc, where=f"{path.name}:{exc.position[0]}") from None
    except InputTooLarge as exc:
        raise parse_error(path, exc, where=path.name) from None
    except _READ_ERRORS as exc:
        raise parse_error(path, exc, where=path.name) from None


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


@dataclass(frozen=True)
class _Tags:
    """Full tag names in the document's namespace: comparing them beats stripping every tag."""

    node: str
    edge: str
    hyperedge: str
    data: str
    key: str
    graph: str

    @classmethod
    def of(cls, root_tag: str) -> _Tags:
        ns = root_tag[:root_tag.rfind("}") + 1]
        return cls(*(ns + name for name in ("node", "edge", "hyperedge", "data", "key", "graph")))


def _parse_key(elem: ET.Element) -> _Key:
    default = next((child for child in elem if _local(child.tag) == "default"), None)
    return _Key(name=elem.get("attr.name") or elem.get("id", ""), domain=elem.get("for", "all"),
                type=(elem.get("attr.type") or "string").lower(),
                default=None if default is None else default.text or "",
                json=elem.get(JSON_MARK) == "json", yfiles=elem.get("yfiles.type"))


def _records(path: Path, want: str) -> Iterator[Record]:
    """Every ``want`` element (node or edge) as a record, in file order, at any nesting depth."""
    keys: dict[str, _Key] = {}
    defaults: dict[str, _Key] = {}  # the keys with a default that applies to ``want``
    graphs: list[ET.Element] = []  # open <graph> elements; a node's or edge's parent is the last
    count = depth = 0
    convert = _node_record if want == "node" else _edge_record
    with _parsing(path) as f:
        events = ET.iterparse(f, events=("start", "end"))
        tags = _Tags.of(next(events)[1].tag)
        wanted = tags.node if want == "node" else tags.edge
        for event, elem in events:
            tag = elem.tag
            if event == "start":
                depth += 1  # the tree builder keeps every open element: the depth bounds its memory
                if depth > MAX_DOCUMENT_DEPTH:
                    raise ImportFailed(f"{path.name} is refused: elements nest deeper than {MAX_DOCUMENT_DEPTH} "
                                       f"levels (GraphML needs 4 or 5)", record=f"{path.name}:{want}s[{count}]")
                if tag == tags.graph:
                    graphs.append(elem)
                continue
            depth -= 1
            if tag == tags.data:
                continue  # read with its node or edge
            elif tag == wanted:
                where = f"{path.name}:{want}s[{count}]"
                count += 1
                yield where, convert(elem, _attributes(elem, keys, defaults, tags.data), where)
                _drop(elem, graphs)
            elif tag in (tags.node, tags.edge, tags.hyperedge):
                _drop(elem, graphs)
            elif tag == tags.key:
                key_id, key = elem.get("id", ""), _parse_key(elem)
                keys[key_id] = key
                if key.default is not None and key.applies_to(want):
                    defaults[key_id] = key
            elif tag == tags.graph:
                graphs.pop()


def _drop(elem: ET.Element, graphs: list[ET.Element]) -> None:
    # Without this the parent graph would keep every node and edge read so far.
    elem.clear()
    if graphs:
        del graphs[-1][:]


def _attributes(elem: ET.Element, keys: dict[str, _Key], defaults: dict[str, _Key],
                data_tag: str) -> dict[str, tuple[_Key, str]]:
    """attr.name -> (key, text) for the element's data, then the defaults of keys it lacks."""
    found: dict[str, tuple[_Key, str]] = {}
    seen: set[str] = set()
    for child in elem:
        if child.tag != data_tag:
            continue
        key_id = child.get("key", "")
        seen.add(key_id)
        key = keys.get(key_id) or _Key(name=key_id)  # undeclared: a string named by its id
        text = _yfiles_label(child) if key.yfiles else child.text or ""
        if text is not None:
            found[key.name if not key.yfiles else "label"] = (key, text)
    for key_id, key in defaults.items():
        if key_id not in seen:
            found.setdefault(key.name, (key, key.default))  # type: ignore[arg-type]
    return found


def _yfiles_label(data: ET.Element) -> str | None:
    """yEd keeps a node's or edge's label inside its graphics data: the first NodeLabel/EdgeLabel."""
    for sub in data.iter():
        if _local(sub.tag) in ("NodeLabel", "EdgeLabel") and (sub.text or "").strip():
            return sub.text.strip()  # type: ignore[union-attr]
    return None


def _split(attrs: dict[str, tuple[_Key, str]],
           fields: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, str]:
    """Take the mapped fields out of ``attrs`` (first alias present wins), as raw text."""
    core: dict[str, str] = {}
    for field, aliases in fields:
        for alias in aliases:
            if alias in attrs:
                core[field] = attrs.pop(alias)[1]
                break
    return core


def _node_record(elem: ET.Element, attrs: dict[str, tuple[_Key, str]], where: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": elem.get("id")}
    rec.update((k, v) for k, v in _split(attrs, _NODE_FIELDS).items() if v)
    rec["properties"] = _properties(attrs, where)
    return rec


def _edge_record(elem: ET.Element, attrs: dict[str, tuple[_Key, str]], where: str) -> dict[str, Any]:
    core = _split(attrs, _EDGE_FIELDS)
    rec: dict[str, Any] = {"source": elem.get("source"), "target": elem.get("target"),
                           "type": core.get("type") or "relates_to"}
    if core.get("weight", "").strip():
        rec["weight"] = _weight(core["weight"], where)
    rec["properties"] = _properties(attrs, where)
    if elem.get("id"):
        rec["id"] = elem.get("id")
    return rec


def _properties(attrs: dict[str, tuple[_Key, str]], where: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name, (key, text) in attrs.items():
        if text.strip() or key.type == "string":  # an empty number or boolean is absent, not ""
            props[name.removeprefix(PREFIX)] = _typed(key, name, text, where)
    return props


def _typed(key: _Key, name: str, text: str, where: str) -> Any:
    """The value of ``text`` per the key's attr.type (or its JSON mark)."""
    if key.json:
        try:
            return parse_json(text, f"attribute '{name}'")
        except PropertiesTooLarge as exc:
            raise ImportFailed(str(exc), record=where) from None
        except ValueError as exc:
            raise _bad_value(name, text, "JSON value", where, exc) from None
    if key.type in ("int", "long", "float", "double"):
        return _number(text, name, key.type, where)
    if key.type == "boolean":
        if text.strip().lower() not in _BOOLS:
            raise _bad_value(name, text, "boolean (true or false)", where)
        return _BOOLS[text.strip().lower()]
    return text


def _number(text: str, name: str, attr_type: str, where: str) -> int | float:
    # An integral text reads as int even for float/double keys (see the module docstring).
    try:
        return int(text) if _INT_RE.fullmatch(text) else float(text)
    except ValueError:
        raise _bad_value(name, text, "integer" if attr_type in ("int", "long") else "number",
                         where) from None


def _weight(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _bad_value("weight", text, "number", where) from None


def _bad_value(name: str, text: str, expected: str, where: str, exc: Exception | None = None) -> ImportFailed:
    detail = f" ({exc})" if exc else ""
    return ImportFailed(f"attribute '{name}' = {text[:80]!r} is not a valid {expected}{detail}; fix the "
                        "value or declare its <key> with attr.type=\"string\"", record=where)


# -- writing ---------------------------------------------------------------------------------------
_HEADER = ('<?xml version="1.0" encoding="UTF-8"?>\n'
           f'<graphml xmlns="{NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
           f'xsi:schemaLocation="{NS} {NS}/1.0/graphml.xsd">\n')
# Characters XML 1.0 cannot carry at all, not even as character references.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_REPLACEMENT = "\ufffd"
# \r would come back as \n (XML normalises line ends), so it is written as a character reference.
_TEXT_ENTITIES = {"\r": "&#13;"}


@dataclass(frozen=True)
class _OutKey:
    id: str
    domain: str
    name: str
    type: str

    def declaration(self) -> str:
        mark = f' {JSON_MARK}="json"' if self.type == "json" else ""
        attr_type = "string" if self.type == "json" else self.type
        return (f'  <key id={_attr(self.id)} for="{self.domain}" attr.name={_attr(self.name)} '
                f'attr.type="{attr_type}"{mark}/>\n')


def write(store: GraphStore, path: Path, progress: Callable[[str, int], None] | None = None) -> None:
    """Write the KG as a directed GraphML graph with typed keys (one pass to type them, one to write)."""
    node_keys, edge_keys = _property_keys(store)
    meta = store.meta()
    with open_text_out(path) as f:
        f.write(_HEADER)
        for key in (*_CORE_KEYS, *node_keys.values(), *edge_keys.values()):
            f.write(key.declaration())
        f.write('  <graph id="G" edgedefault="directed">\n')
        f.write(f'    {_data("g_name", meta.get("name", store.db_id))}'
                f'{_data("g_description", meta.get("description", ""))}\n')
        _write_items(f, (_node_xml(n, node_keys) for n in store.iter_nodes()), "nodes", progress)
        _write_items(f, (_edge_xml(e, edge_keys) for e in store.iter_edges()), "edges", progress)
        f.write("  </graph>\n</graphml>\n")


_CORE_KEYS = (_OutKey("g_name", "graph", "name", "string"),
              _OutKey("g_description", "graph", "description", "string"),
              _OutKey("n_name", "node", "name", "string"), _OutKey("n_type", "node", "type", "string"),
              _OutKey("n_description", "node", "description", "string"),
              _OutKey("e_type", "edge", "type", "string"), _OutKey("e_weight", "edge", "weight", "double"))


def _property_keys(store: GraphStore) -> tuple[dict[str, _OutKey], dict[str, _OutKey]]:
    """One key per property name and domain, typed across all its values."""
    node_types: dict[str, str] = {}
    for node in store.iter_nodes():
        _merge_types(node_types, node.properties)
    edge_types: dict[str, str] = {}
    for edge in store.iter_edges():
        _merge_types(edge_types, edge.properties)
    return _out_keys("node", "np", node_types), _out_keys("edge", "ep", edge_types)


def _merge_types(types: dict[str, str], props: dict[str, Any]) -> None:
    for name, value in props.items():
        kind = _kind(value)
        old = types.setdefault(name, kind)
        if old != kind:
            types[name] = "double" if {old, kind} <= {"long", "double"} else "json"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string" if isinstance(value, str) else "json"


def _out_keys(domain: str, prefix: str, types: dict[str, str]) -> dict[str, _OutKey]:
    return {name: _OutKey(f"{prefix}{i}", domain, _out_name(domain, name), kind)
            for i, (name, kind) in enumerate(types.items())}


def _out_name(domain: str, name: str) -> str:
    """Escape property names a reader would take for a mapped field (see the module docstring)."""
    return PREFIX + name if name in _RESERVED[domain] or name.startswith(PREFIX) else name


def _node_xml(node: Node, keys: dict[str, _OutKey]) -> str:
    parts = [_data("n_name", node.name), _data("n_type", node.type)]
    if node.description:
        parts.append(_data("n_description", node.description))
    parts += [_data(keys[k].id, _text(keys[k].type, v)) for k, v in node.properties.items()]
    return f"    <node id={_attr(node.id)}>{''.join(parts)}</node>\n"


def _edge_xml(edge: Edge, keys: dict[str, _OutKey]) -> str:
    parts = [_data("e_type", edge.type), _data("e_weight", repr(float(edge.weight)))]
    parts += [_data(keys[k].id, _text(keys[k].type, v)) for k, v in edge.properties.items()]
    edge_id = "" if edge.id is None else f" id={_attr(edge.id)}"
    return (f"    <edge{edge_id} source={_attr(edge.source)} target={_attr(edge.target)}>"
            f"{''.join(parts)}</edge>\n")


def _text(kind: str, value: Any) -> str:
    if kind == "json":
        return json.dumps(value, ensure_ascii=False)
    if kind == "boolean":
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _data(key_id: str, text: str) -> str:
    return f'<data key="{key_id}">{escape(_NOT_XML.sub(_REPLACEMENT, text), _TEXT_ENTITIES)}</data>'


def _attr(text: str) -> str:
    return quoteattr(_NOT_XML.sub(_REPLACEMENT, text))


def _write_items(f: IO[str], items: Iterator[str], label: str,
                 progress: Callable[[str, int], None] | None) -> None:
    n = 0
    for n, item in enumerate(items, 1):
        f.write(item)
        if progress and n % 10000 == 0:
            progress(label, n)
    if progress:
        progress(label, n)
