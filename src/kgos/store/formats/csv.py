"""CSV: a folder holding ``nodes.csv`` and ``edges.csv`` (either may be gzipped, ``*.csv.gz``).

``nodes.csv`` needs the columns ``id`` and ``name``; ``type``, ``description``, ``properties`` (a JSON
object in one cell), ``created_at`` and ``updated_at`` are optional. ``edges.csv`` needs ``source``,
``target`` and ``type``; ``weight``, ``properties``, ``id`` and ``created_at`` are optional. Any other
column becomes a property, typed back from its text (integers, decimals, true/false, JSON arrays and
objects; anything else stays text). An empty cell means "absent". The path may be the folder, its
``nodes.csv`` (``edges.csv`` beside it is optional) or any single ``.csv`` file of nodes.
Records are located as ``nodes.csv:<line>``; the writer puts all properties in the JSON cell, so a
KG round-trips losslessly.
"""

from __future__ import annotations

import csv
import json
import math
import re
import zlib
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import IO, Any

from ...errors import ImportFailed, InvalidArgument, PropertiesTooLarge
from ..base import GraphStore
from ..bounds import MAX_STRING_BYTES
from ..limits import parse_json
from . import Record, Source, open_binary, open_text_out, parse_error

NODE_COLUMNS = ("id", "name", "type", "description", "properties")
EDGE_COLUMNS = ("source", "target", "type", "weight", "properties", "id")
_NODE_FIELDS = {"id", "name", "type", "description", "properties", "created_at", "updated_at"}
_EDGE_FIELDS = {"source", "target", "type", "weight", "properties", "id", "created_at"}
_NODE_REQUIRED = ("id", "name")
_EDGE_REQUIRED = ("source", "target", "type")
# Leading zeros ("007", a zip code) stay text: turning them into 7 would lose information.
_INT_RE = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT_RE = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_BOOLS = {"true": True, "false": False}

# a JSON properties cell can be large, but not unbounded: one cell, like one line, is at most 16 MiB
csv.field_size_limit(MAX_STRING_BYTES)


# -- reading ---------------------------------------------------------------------------------------
def read(path: Path) -> Source:
    """A ``Source`` over a CSV folder (or its ``nodes.csv``); checks both headers now."""
    nodes_path, edges_path = _locate(path)
    _header(nodes_path, _NODE_REQUIRED)
    if edges_path is not None:
        _header(edges_path, _EDGE_REQUIRED)
    return Source("csv", {}, lambda: _rows(nodes_path, _NODE_REQUIRED, _node_record),
                  lambda: _rows(edges_path, _EDGE_REQUIRED, _edge_record))


def _locate(path: Path) -> tuple[Path, Path | None]:
    """(nodes file, edges file or None) for a folder, a ``nodes.csv`` or an ``edges.csv`` path."""
    if path.is_file() and _base_name(path) != "edges.csv":
        return path, _first_existing(path.parent, "edges.csv")
    folder = path if path.is_dir() else path.parent
    nodes = _first_existing(folder, "nodes.csv")
    if nodes is None:
        raise InvalidArgument(f"no nodes.csv (or nodes.csv.gz) in {folder}: a CSV KG is a folder "
                              "holding nodes.csv and, optionally, edges.csv")
    return nodes, _first_existing(folder, "edges.csv")


def _base_name(path: Path) -> str:
    return path.name.lower().removesuffix(".gz")


def _first_existing(folder: Path, name: str) -> Path | None:
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _header(path: Path, required: tuple[str, ...]) -> list[str]:
    """The header row of ``path``, checked (see ``_check_header``)."""
    with open_binary(path) as f:
        return _check_header(path, next(_records(path, f), None), required)


def _check_header(path: Path, first: tuple[int, list[str]] | None, required: tuple[str, ...]) -> list[str]:
    where = f"{path.name}:{first[0] if first else 1}"
    if first is None:
        raise ImportFailed(f"{path.name} is empty: it needs a header row with {', '.join(required)}",
                           record=where)
    header = [h.strip() for h in first[1]]
    missing = [c for c in required if c not in header]
    if missing:
        raise ImportFailed(f"missing column {', '.join(map(repr, missing))}: the header must name "
                           f"{', '.join(required)} (found {', '.join(header) or 'nothing'})", record=where)
    duplicated = sorted({h for h in header if header.count(h) > 1})
    if duplicated:
        raise ImportFailed(f"column {', '.join(map(repr, duplicated))} appears more than once in the "
                           "header; rename or remove the copies", record=where)
    return header


def _rows(path: Path | None, required: tuple[str, ...],
          convert: Callable[[str, dict[str, str]], dict[str, Any]]) -> Iterator[Record]:
    if path is None:  # a folder without edges.csv: a KG of nodes only
        return
    with open_binary(path) as f:
        records = _records(path, f)
        header = _check_header(path, next(records, None), required)
        for line, row in records:
            where = f"{path.name}:{line}"
            if len(row) != len(header):
                raise ImportFailed(f"{len(row)} cells but the header has {len(header)} columns; quote "
                                   "cells that contain commas, quotes or line breaks", record=where)
            yield where, convert(where, dict(zip(header, row)))


def _records(path: Path, f: IO[bytes]) -> Iterator[tuple[int, list[str]]]:
    """(first line of the record, cells) for each non-blank CSV record."""
    lines = _Lines(path, f)
    try:
        reader = csv.reader(lines, strict=True)
        start = 1
        for row in reader:
            if row:
                yield start, row
            start = lines.count + 1
    except csv.Error as exc:
        raise ImportFailed(f"{path.name} is not valid CSV ({exc}); check the quoting near this line",
                           record=f"{path.name}:{lines.count}") from None
    except (EOFError, OSError, zlib.error) as exc:
        raise parse_error(path, exc, where=f"{path.name}:{lines.count + 1}") from None


class _Lines:
    """Decoded lines of a byte stream, counted, so a decode error names its exact line."""

    def __init__(self, path: Path, f: IO[bytes]) -> None:
        # readline with a limit: a file without line breaks is not read into memory whole
        self.path, self.lines, self.count = path, iter(partial(f.readline, MAX_STRING_BYTES + 1), b""), 0

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        raw = next(self.lines)
        self.count += 1
        if len(raw) > MAX_STRING_BYTES:
            raise ImportFailed(f"{self.path.name} is refused: the line is longer than {MAX_STRING_BYTES:,} bytes; "
                               "one record is far smaller: store large content in a file",
                               record=f"{self.path.name}:{self.count}")
        try:
            # utf-8-sig on the first line only: a BOM elsewhere is data, not a marker.
            return raw.decode("utf-8-sig" if self.count == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise parse_error(self.path, exc, where=f"{self.path.name}:{self.count}") from None


def _node_record(where: str, cells: dict[str, str]) -> dict[str, Any]:
    return _record(where, cells, _NODE_FIELDS)


def _edge_record(where: str, cells: dict[str, str]) -> dict[str, Any]:
    rec = _record(where, cells, _EDGE_FIELDS)
    if "weight" in rec:
        rec["weight"] = _weight(where, rec["weight"])
    return rec


def _record(where: str, cells: dict[str, str], fields: set[str]) -> dict[str, Any]:
    """Known columns as fields, the rest as typed properties; empty cells are left out."""
    rec: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for column, cell in cells.items():
        if cell == "":
            continue
        if column in fields:
            rec[column] = cell
        else:
            extras[column] = _typed_cell(where, column, cell)
    if "properties" in rec:
        rec["properties"] = _json_cell(where, rec["properties"])
    if extras:  # the JSON cell wins over a column of the same name, as it is the explicit one
        props = rec.get("properties", {})
        rec["properties"] = {**extras, **props} if isinstance(props, dict) else props
    return rec


def _json_cell(where: str, cell: str) -> Any:
    try:
        return parse_json(cell, "the 'properties' cell")
    except PropertiesTooLarge as exc:
        raise ImportFailed(str(exc), record=where) from None
    except ValueError as exc:
        raise ImportFailed(f"the 'properties' cell is not valid JSON ({exc}); write a JSON object such "
                           'as {"year": 2024} or leave the cell empty', record=where) from None


def _weight(where: str, cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        raise ImportFailed(f"weight {cell!r} is not a number; write a number such as 0.5 or leave the "
                           "cell empty for 1.0", record=where) from None


def _typed_cell(where: str, column: str, cell: str) -> Any:
    try:
        return typed(cell)
    except PropertiesTooLarge as exc:
        raise ImportFailed(str(exc), record=where) from None


def typed(cell: str) -> Any:
    """A property value from its CSV text: int, float, bool, JSON array/object, else the text."""
    if _INT_RE.fullmatch(cell):
        return int(cell)
    if _FLOAT_RE.fullmatch(cell):
        value = float(cell)
        return value if math.isfinite(value) else cell
    if cell.lower() in _BOOLS:
        return _BOOLS[cell.lower()]
    if cell[0] in "[{" and cell[-1] in "]}":
        try:
            return parse_json(cell, "a JSON cell")
        except PropertiesTooLarge:
            raise
        except ValueError:
            pass  # text that merely looks like JSON, e.g. "[citation needed]"
    return cell


# -- writing ---------------------------------------------------------------------------------------
def write(store: GraphStore, path: Path, progress: Callable[[str, int], None] | None = None) -> None:
    """Write ``nodes.csv`` and ``edges.csv`` into the folder ``path`` (or beside ``path/nodes.csv``)."""
    nodes_path, edges_path = _out_paths(path)
    _write_file(nodes_path, NODE_COLUMNS, (_node_row(n) for n in store.iter_nodes()), "nodes", progress)
    _write_file(edges_path, EDGE_COLUMNS, (_edge_row(e) for e in store.iter_edges()), "edges", progress)


def _out_paths(path: Path) -> tuple[Path, Path]:
    if _base_name(path).endswith(".csv"):  # a file name: edges.csv goes beside it, same compression
        return path, path.parent / ("edges.csv.gz" if path.suffix == ".gz" else "edges.csv")
    path.mkdir(parents=True, exist_ok=True)
    return path / "nodes.csv", path / "edges.csv"


def _write_file(path: Path, columns: tuple[str, ...], rows: Iterator[list[Any]], label: str,
                progress: Callable[[str, int], None] | None) -> None:
    n = 0
    with open_text_out(path) as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for n, row in enumerate(rows, 1):
            writer.writerow(row)
            if progress and n % 10000 == 0:
                progress(label, n)
    if progress:
        progress(label, n)


def _node_row(node: Any) -> list[Any]:
    return [node.id, node.name, node.type, node.description, _props_cell(node.properties)]


def _edge_row(edge: Any) -> list[Any]:
    # repr() of a float is the shortest text that parses back to the same float.
    return [edge.source, edge.target, edge.type, repr(float(edge.weight)), _props_cell(edge.properties),
            "" if edge.id is None else edge.id]


def _props_cell(props: dict[str, Any]) -> str:
    return json.dumps(props, ensure_ascii=False, separators=(",", ":")) if props else ""
