"""Probe files: JSON Lines (optionally gzipped) of ``{"id", "query", "relevant", "lenient", "level"}``.

A probe is a strict hit at k when a ``relevant`` id is in the top k, a lenient hit when a
``relevant`` or ``lenient`` id is (DESIGN.md section 4, bench/README.md).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidArgument


@dataclass(frozen=True)
class Probe:
    id: str
    query: str
    relevant: frozenset[str]
    lenient: frozenset[str]
    level: str = ""


def load_probes(path: str | Path) -> list[Probe]:
    """Read a probe file; a malformed line is an error that names the line."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    probes = []
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                if line.strip():
                    probes.append(_probe(json.loads(line), f"{path.name}:{line_no}"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, EOFError) as exc:
        raise InvalidArgument(f"cannot read probes from {path}: {exc}") from None
    if not probes:
        raise InvalidArgument(f"{path} holds no probes")
    return probes


def _probe(d: object, where: str) -> Probe:
    if not isinstance(d, dict) or not isinstance(d.get("query"), str) or not d["query"].strip():
        raise InvalidArgument(f"{where}: a probe needs a non-empty 'query'")
    relevant = d.get("relevant")
    if not isinstance(relevant, list) or not relevant:
        raise InvalidArgument(f"{where}: a probe needs a non-empty 'relevant' list of node ids")
    return Probe(id=str(d.get("id", where)), query=d["query"], relevant=frozenset(map(str, relevant)),
                 lenient=frozenset(map(str, d.get("lenient") or [])), level=str(d.get("level", "")))
