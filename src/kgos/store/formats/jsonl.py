"""JSON Lines (``.jsonl``, ``.jsonl.gz``, ``.ndjson``): one node, edge or meta object per line.

A line is ``{"kind": "node", ...}`` / ``{"kind": "edge", ...}``, or, without ``kind``, an edge when
it has both ``source`` and ``target`` and a node otherwise. An optional first line
``{"kind": "meta", "name": ..., "description": ...}`` names the KG. Nodes and edges may interleave:
``nodes()`` and ``edges()`` are two passes over the file, so memory stays bounded. Records are
located as ``<file>:<line>``.
"""

from __future__ import annotations

import json
import sys
import zlib
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from ...errors import ImportFailed
from ..base import GraphStore
from ..bounds import MAX_STRING_BYTES
from ..limits import too_deep
from . import Record, Source, open_binary, open_text_out, parse_error

FORMAT = "kgos-jsonl/1"
_META_KEYS = ("format", "name", "description", "version")
_KINDS = ("node", "edge", "meta")
_BOM = b"\xef\xbb\xbf"
_READ_ERRORS = (EOFError, OSError, zlib.error)

def read(path: Path) -> Source:
    """A ``Source`` over a JSON Lines file; reads only the first line now."""
    meta = _read_meta(path)
    # The node pass notes where the first edge is, so the edge pass need not parse lines before it.
    first_edge: list[int] = []
    return Source("jsonl", meta, lambda: _nodes(path, first_edge), lambda: _edges(path, first_edge))


def _read_meta(path: Path) -> dict[str, str]:
    for _, kind, obj in _objects(path):
        if kind != "meta" or obj is None:
            return {}
        return {k: str(obj[k]) for k in _META_KEYS if isinstance(obj.get(k), (str, int, float))}
    return {}


def _nodes(path: Path, first_edge: list[int]) -> Iterator[Record]:
    seen_edge = 0
    for lineno, kind, obj in _objects(path, skip_kind="edge"):
        if kind == "node" and obj is not None:
            yield f"{path.name}:{lineno}", obj
        elif kind == "edge" and not seen_edge:
            seen_edge = lineno
    first_edge[:] = [seen_edge or sys.maxsize]


def _edges(path: Path, first_edge: list[int]) -> Iterator[Record]:
    skip_before = first_edge[0] if first_edge else 0
    for lineno, kind, obj in _objects(path, skip_kind="node", skip_before=skip_before):
        if kind == "edge" and obj is not None:
            yield f"{path.name}:{lineno}", obj


def _objects(path: Path, skip_kind: str = "",
             skip_before: int = 0) -> Iterator[tuple[int, str, dict[str, Any] | None]]:
    """(line number, kind, fields without ``kind``) for every non-blank line.

    Lines that start exactly as our writer starts a ``skip_kind`` line are not parsed (fields
    ``None``): the other pass parses them, and reports them if they are broken.
    """
    prefix = f'{{"kind":"{skip_kind}"'.encode() if skip_kind else None
    lineno = 0
    try:
        with open_binary(path) as f:
            # readline with a limit: one endless line cannot be read into memory whole
            for lineno, raw in enumerate(iter(partial(f.readline, MAX_STRING_BYTES + 1), b""), 1):
                if len(raw) > MAX_STRING_BYTES:
                    raise ImportFailed(f"{path.name} is refused: the line is longer than {MAX_STRING_BYTES:,} "
                                       "bytes; one record is far smaller: store large content in a file",
                                       record=f"{path.name}:{lineno}")
                if lineno < skip_before:
                    continue
                if prefix and raw.startswith(prefix):
                    yield lineno, skip_kind, None
                    continue
                line = raw.removeprefix(_BOM).strip() if lineno == 1 else raw.strip()
                if line:
                    yield lineno, *_classify(path, lineno, _parse(path, lineno, line))
    except _READ_ERRORS as exc:
        raise parse_error(path, exc, where=f"{path.name}:{lineno + 1}") from None


def _parse(path: Path, lineno: int, line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise ImportFailed(str(too_deep("the line")), record=f"{path.name}:{lineno}") from None
        cause: Exception = exc
        try:  # orjson's message for bad bytes is cryptic; decoding names the offending byte
            line.decode("utf-8")
        except UnicodeDecodeError as bad:
            cause = bad
        raise parse_error(path, cause, where=f"{path.name}:{lineno}") from None


def _classify(path: Path, lineno: int, obj: Any) -> tuple[str, dict[str, Any]]:
    where = f"{path.name}:{lineno}"
    if not isinstance(obj, dict):
        raise ImportFailed(f"expected a JSON object per line, found a {type(obj).__name__}", record=where)
    kind = obj.pop("kind", None)
    if kind is None:
        return ("edge" if "source" in obj and "target" in obj else "node"), obj
    if kind not in _KINDS:
        raise ImportFailed(f"unknown kind {kind!r}; use 'node', 'edge' or 'meta'", record=where)
    if kind == "meta" and lineno != 1:
        raise ImportFailed("a meta line must be the first line of the file", record=where)
    return kind, obj


def write(store: GraphStore, path: Path, progress: Callable[[str, int], None] | None = None) -> None:
    """Write the KG as JSON Lines: a meta line, then one line per node, then one per edge."""
    meta = store.meta()
    head = {"kind": "meta", "format": FORMAT, "name": meta.get("name", store.db_id),
            "description": meta.get("description", "")}
    with open_text_out(path) as f:
        f.write(_dumps(head))
        _write_items(f, ({"kind": "node", **n.to_dict()} for n in store.iter_nodes()), "nodes", progress)
        _write_items(f, ({"kind": "edge", **e.to_dict()} for e in store.iter_edges()), "edges", progress)


def _dumps(item: dict[str, Any]) -> str:
    # json (not orjson) because properties may hold integers wider than 64 bits.
    return json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n"


def _write_items(f: Any, items: Iterator[dict[str, Any]], label: str,
                 progress: Callable[[str, int], None] | None) -> None:
    n = 0
    for n, item in enumerate(items, 1):
        f.write(_dumps(item))
        if progress and n % 10000 == 0:
            progress(label, n)
    if progress:
        progress(label, n)
