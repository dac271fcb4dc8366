"""The exact-name check of issue 13: a query that is a node's name ranks that node first.

Sample node names of a KG, search each one as typed, and count how often the first hit is a node
whose name or alias is that query (normalised as ``index.names.exact_key``: case, accents and
punctuation aside). Where several nodes share the name, any of them counts.

>>> # check = exact_name_check(kg, 1000); check.rate, check.misses[:3]
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..index.names import exact_key
from ..retrieval import hybrid


@dataclass(frozen=True)
class NameCheck:
    """``hits`` of ``total`` sampled names ranked a node of that name first; ``misses``: (query, first hit id)."""

    hits: int
    total: int
    vectors: bool
    misses: tuple[tuple[str, str], ...] = ()

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "total": self.total, "rate": self.rate, "vectors": self.vectors,
                "misses": [list(m) for m in self.misses]}


def sample_names(names: list[str], n: int, seed: int = 13) -> list[str]:
    """``n`` distinct non-empty names, a fixed random sample."""
    pool = sorted({name for name in names if name and name.strip()})
    return sorted(random.Random(seed).sample(pool, min(n, len(pool))))


def exact_name_check(kg: Any, n: int = 1000, vectors: bool = True, seed: int = 13,
                     options: hybrid.SearchOptions | None = None) -> NameCheck:
    """Search ``n`` sampled names of ``kg`` (default hybrid search; ``vectors=False`` leaves the
    embedding signal out, as for a KG never embedded) and count first hits that bear the name."""
    engine = kg.engine
    snap = engine.snapshot()
    embed = engine.embed_query if vectors else None
    keys_of = _keys_by_row(snap)
    hits, misses = 0, []
    for name in sample_names(snap.names, n, seed):
        res = hybrid.search(snap, kg.store, name, k=1, options=options or engine.options, embed_query=embed)
        top = snap.index[res.results[0].node.id] if res.results else -1
        if exact_key(name) in keys_of.get(top, ()):
            hits += 1
        else:
            misses.append((name, res.results[0].node.id if res.results else ""))
    return NameCheck(hits, hits + len(misses), vectors, tuple(misses))


def _keys_by_row(snap: Any) -> dict[int, set[str]]:
    """Every exact key (name and aliases) of every node, by snapshot row."""
    exact = snap.name_index.exact
    out: dict[int, set[str]] = {}
    for i, key in enumerate(exact.keys):
        for row in exact.rows[exact.ptr[i]:exact.ptr[i + 1]]:
            out.setdefault(int(row), set()).add(key)
    return out
