"""File formats a KG is imported from and exported to.

A reader turns a path into a ``Source``: metadata plus two one-shot record streams (nodes, then
edges). Records are ``(location, fields)`` pairs; the location (``nodes[12]``, ``edges.csv:7``) is
what an import error names. Readers only parse; the importer checks values.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ...errors import ImportFailed, InputTooLarge, InvalidArgument
from ...plugins import add_builtin, entries, hookimpl

Record = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Source:
    format: str
    meta: dict[str, str] = field(default_factory=dict)
    nodes: Callable[[], Iterator[Record]] = lambda: iter(())
    edges: Callable[[], Iterator[Record]] = lambda: iter(())


def open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading, transparently gunzipping ``*.gz``."""
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def open_json(path: Path) -> IO[bytes]:
    """``open_binary`` with every read checked against the nesting and string bounds of
    ``store.bounds``, before any JSON parser sees the bytes."""
    from ..bounds import BoundedReader
    return BoundedReader(open_binary(path))  # type: ignore[return-value]


def open_text_out(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "wt", encoding="utf-8")
    return open(path, "w", encoding="utf-8", newline="")


def detect_format(path: Path) -> str:
    """The format name for a path, from its name (and for ``.json``, nothing more is needed)."""
    name = path.name.lower().removesuffix(".gz")
    if path.is_dir() or name.endswith(".csv"):
        return "csv"
    for suffix, fmt in ((".json", "nodelink"), (".jsonl", "jsonl"), (".ndjson", "jsonl"),
                        (".graphml", "graphml"), (".xml", "graphml")):
        if name.endswith(suffix):
            return fmt
    raise InvalidArgument(f"cannot tell the format of {path.name!r}: use .json[.gz] (node-link), "
                          ".jsonl[.gz], .graphml[.gz], a folder with nodes.csv + edges.csv, or --format")


@dataclass(frozen=True)
class Format:
    """One file format: ``read(path) -> Source`` and ``write(store, path, ...)`` (see nodelink.py)."""

    read: Callable[[Path], Source]
    write: Callable[..., Any]


@hookimpl
def register_formats() -> dict[str, Format]:
    """The built-in formats, through the hook third-party packages answer too (kgos.plugins)."""
    from . import csv, graphml, jsonl, nodelink  # they import this package: loaded on first use
    return {m.__name__.rsplit(".", 1)[1]: Format(m.read, m.write) for m in (nodelink, jsonl, csv, graphml)}


def _registry() -> tuple[dict[str, Callable[[Path], Source]], dict[str, Callable[..., Any]]]:
    found = {e.name: e.value for e in entries("formats") if isinstance(e.value, Format)}
    return {k: f.read for k, f in found.items()}, {k: f.write for k, f in found.items()}


def formats() -> list[str]:
    return sorted(_registry()[0])


def open_source(path: Path | str, format: str | None = None) -> Source:
    """A ``Source`` for the file (or CSV folder) at ``path``."""
    path = Path(path)
    if not path.exists():
        raise InvalidArgument(f"no such file: {path}")
    fmt = format or detect_format(path)
    readers = _registry()[0]
    if fmt not in readers:
        raise InvalidArgument(f"unknown format {fmt!r}; known: {', '.join(sorted(readers))}")
    return readers[fmt](path)


def writer_for(path: Path, format: str | None = None) -> Callable[..., Any]:
    fmt = format or detect_format(path)
    writers = _registry()[1]
    if fmt not in writers:
        raise InvalidArgument(f"unknown format {fmt!r}; known: {', '.join(sorted(writers))}")
    return writers[fmt]


def parse_error(path: Path, exc: Exception, where: str | None = None) -> ImportFailed:
    """Turn a parser's exception into an ImportFailed that says what to check."""
    if isinstance(exc, InputTooLarge):  # a bound, not a malformed file: its own message says which
        return ImportFailed(f"{path.name} is refused: {exc}", record=where)
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, UnicodeDecodeError):
        detail = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    return ImportFailed(f"{path.name} is malformed or truncated: {detail}", record=where)


add_builtin(sys.modules[__name__], "kgos.store.formats")
