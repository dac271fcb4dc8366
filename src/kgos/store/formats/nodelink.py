"""Node-link JSON (``kgos-node-link/1``, networkx's node-link data) and the spec/002 memory snapshot.

Both are one JSON object holding two arrays; ijson streams each array so memory stays bounded
however large the file. The snapshot (``entities`` / ``edges`` with ``subject_id``, ``predicate``,
``object_id``) is detected by its ``entities`` key and mapped onto nodes and edges.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path
from typing import IO, Any

import ijson

from ..base import GraphStore
from ...errors import InputTooLarge
from . import Record, Source, open_binary, open_json, open_text_out, parse_error
from .array_chunks import array_start, document_items, fast_items, ijson_array_items

FORMAT = "kgos-node-link/1"
_META_KEYS = ("format", "name", "description", "version")
_ARRAYS = {"nodes", "edges", "links", "entities"}


def read(path: Path) -> Source:
    meta, arrays = _scan_head(path)
    if "entities" in arrays:
        return Source("snapshot", meta, lambda: _stream(path, "entities", "entities", _entity, stop=True),
                      lambda: _stream(path, "edges", "edges", _snapshot_edge))
    return Source("nodelink", meta, lambda: _stream(path, "nodes", "nodes", _plain, stop=True),
                  lambda: _edge_stream(path, arrays))


def _edge_stream(path: Path, arrays: set[str]) -> Iterator[Record]:
    """``edges``, or networkx's ``links`` when the file has no ``edges`` array. The head scan stops at
    the node array, so an edge array after it is only known here: ``links`` is then read when
    ``edges`` gave nothing (a second pass, for files without edges or with ``links``)."""
    if "links" in arrays and "edges" not in arrays:
        yield from _stream(path, "links", "edges", _plain)
        return
    empty = True
    for record in _stream(path, "edges", "edges", _plain):
        empty = False
        yield record
    if empty and "edges" not in arrays:
        yield from _stream(path, "links", "edges", _plain)


def _scan_head(path: Path) -> tuple[dict[str, str], set[str]]:
    """Top-level scalars and array names, reading events only until the node array starts (each
    event passes through Python here: scanning the node array too cost 3 s per million nodes)."""
    meta: dict[str, str] = {}
    arrays: set[str] = set()
    key = None
    try:
        with open_json(path) as f:
            for prefix, event, value in ijson.parse(f, use_float=True):
                if prefix == "" and event == "map_key":
                    key = value
                elif prefix == key and event in ("string", "number") and key in _META_KEYS:
                    meta[key] = str(value)
                elif prefix == key and event == "start_array" and key in _ARRAYS:
                    arrays.add(key)
                    if arrays & {"nodes", "entities"}:
                        break
                elif prefix == "" and event == "start_array":
                    raise ValueError("top level is an array, expected an object with nodes and edges")
    except InputTooLarge as exc:  # deep nesting in the head: the streams name the record it is in
        arrays = arrays or _keys_in_head(path)
        if not arrays:
            raise parse_error(path, exc, where="the document head") from None
    except (ijson.JSONError, ValueError, UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
        if not arrays:
            raise parse_error(path, exc) from None
    if not arrays & {"nodes", "entities"}:
        raise parse_error(path, ValueError("no 'nodes' (or 'entities') array found"))
    return meta, arrays


def _keys_in_head(path: Path) -> set[str]:
    """The record arrays named in the first MB (no parse): enough to pick the reader whose stream then
    refuses the over-deep record by its location."""
    with open_binary(path) as f:
        head = f.read(1 << 20)
    return {"entities"} if b'"entities"' in head else {"nodes"} if b'"nodes"' in head else set()


def _stream(path: Path, key: str, label: str, convert: Callable[[Any], Any], stop: bool = False) -> Iterator[Record]:
    """The items of the top-level array ``key``; ``stop``: parse no further than its end."""
    counter = count()  # zip draws the next index before the next item: an error is at the last drawn
    try:
        with open_json(path) as f:
            # the edge stream reads the whole document, as ijson.items(f, "edges.item") did
            items = _array_items(f, key) if stop else document_items(f, lambda: open_json(path), key)
            # zip and map iterate in C: no Python frame per record on the way to the importer
            yield from zip(map(f"{label}[{{}}]".format, counter), items if convert is _plain else map(convert, items))
    except (ijson.JSONError, ValueError, UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
        raise parse_error(path, exc, where=f"{label}[{max(next(counter) - 1, 0)}]") from None


def _array_items(f: IO[bytes], key: str) -> Iterator[Any]:
    """The items of the first top-level array ``key``, parsed no further than its end: by orjson
    in chunks (array_chunks), or by ijson when the head of the file is not the plain case."""
    start = array_start(f, key)
    if start is not None:
        return fast_items(f, key, start)
    f.seek(0)  # the node stream then stops at the end of the node array, not parsing the edges
    return ijson_array_items(f, key)


def _plain(item: Any) -> Any:
    return item


def _entity(e: Any) -> Any:
    if not isinstance(e, dict):
        return e
    return {"id": e.get("id"), "name": e.get("name"), "type": e.get("type", "entity"),
            "description": e.get("description", ""), "properties": e.get("metadata") or {},
            "created_at": e.get("created_ts"), "updated_at": e.get("updated_ts")}


def _snapshot_edge(e: Any) -> Any:
    if not isinstance(e, dict):
        return e
    props = {"evidence": e["evidence"]} if e.get("evidence") else {}
    return {"source": e.get("subject_id"), "target": e.get("object_id"), "type": e.get("predicate"),
            "weight": e.get("weight", 1.0), "properties": props, "id": e.get("id"),
            "created_at": e.get("created_ts")}


def write(store: GraphStore, path: Path, progress: Callable[[str, int], None] | None = None) -> None:
    """Stream the KG out as node-link JSON, one node or edge per line."""
    meta = store.meta()
    head = {"format": FORMAT, "name": meta.get("name", store.db_id), "description": meta.get("description", "")}
    with open_text_out(path) as f:
        f.write(json.dumps(head, ensure_ascii=False)[:-1] + ',\n"nodes": [\n')
        _write_items(f, (n.to_dict() for n in store.iter_nodes()), "nodes", progress)
        f.write('],\n"edges": [\n')
        _write_items(f, (e.to_dict() for e in store.iter_edges()), "edges", progress)
        f.write("]}\n")


def _write_items(f: Any, items: Iterator[dict[str, Any]], label: str,
                 progress: Callable[[str, int], None] | None) -> None:
    n = 0
    for n, item in enumerate(items, 1):
        f.write((",\n" if n > 1 else "") + json.dumps(item, ensure_ascii=False))
        if progress and n % 10000 == 0:
            progress(label, n)
    f.write("\n")
    if progress:
        progress(label, n)
