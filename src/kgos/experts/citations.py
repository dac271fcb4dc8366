"""The citation check: every ``[Source: ...]`` of an answer against the nodes that were in its context.

A citation is ``[Source: <db_id>:<node>]``; one bracket may hold several, separated by ``;`` or
``,``. ``<node>`` may be the node's id, its name, the slug of its name, or its id without the type
prefix — all of them name the node unambiguously within the context. Anything else is *unknown*:
the model cited something it was not shown.

>>> from kgos.experts.context import SourceNode
>>> n = SourceNode("demo", "feature:prompt_caching", "Prompt caching", "feature", "", 1.0)
>>> r = check_citations("Cache it [Source: demo:feature:prompt_caching]. [Source: demo:warp_drive]", [n])
>>> r.valid, r.unknown
(('demo:feature:prompt_caching',), ('demo:warp_drive',))
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..model import normalize_name
from .context import SourceNode, node_aliases

CITATION_RE = re.compile(r"\[\s*Sources?\s*:\s*([^\]\n]{1,500})\]", re.IGNORECASE)


@dataclass(frozen=True)
class CitationReport:
    """``valid``: canonical keys (db:id) of the context nodes cited; ``unknown``: citations as written
    that match no context node; ``count``: citations found in all."""

    valid: tuple[str, ...]
    unknown: tuple[str, ...]
    count: int

    @property
    def ok(self) -> bool:
        return not self.unknown

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "valid": list(self.valid), "unknown": list(self.unknown), "ok": self.ok}


def citations(text: str) -> list[str]:
    """The references inside every ``[Source: ...]`` of ``text``, in order."""
    found = []
    for m in CITATION_RE.finditer(text):
        found += [part.strip() for part in re.split(r"[;,]", m.group(1)) if part.strip()]
    return found


def check_citations(text: str, nodes: Iterable[SourceNode]) -> CitationReport:
    index: dict[tuple[str, str], str] = {}
    for n in nodes:
        for alias in node_aliases(n):
            index.setdefault((n.db_id, alias), n.cite)
    valid, unknown = [], []
    refs = citations(text)
    for ref in refs:
        db, _, node = ref.partition(":")
        key = index.get((db.strip(), normalize_name(node.strip())))
        (valid if key else unknown).append(key or ref)
    return CitationReport(tuple(dict.fromkeys(valid)), tuple(dict.fromkeys(unknown)), len(refs))
