"""Context injection (spec/002 "Context Injection (NEXUS Integration)").

1. Entity search with relevance scoring: exact match 1.0, partial match 0.7, word match 0.5.
   - exact: the entity's name (or an accepted alias) equals the query;
   - partial: the name appears in the query as a whole phrase ("what does meshalyzer use"), or the
     query appears in the name;
   - word: the name shares a content word with the query.
   A first-person query ("what do I prefer?") also matches the user at 0.5.
2. Neighbourhood expansion: the 1-hop edges of the matched entities, both directions, sorted by weight
   descending (by decayed weight when a half-life is set), best-matching entity first.
3. Capping: at most ``max_edges`` (20) relationships and ``max_chars`` (1,500) characters, with
   shown/total counts, in exactly spec/002's format:

```
=== Knowledge Graph Context ===

Entities (5/10):
  [project] Meshalyzer (Score: 1.0)
  [tool] Python (Score: 0.7)

Relationships (8/15):
  [project] Meshalyzer --[uses]--> [tool] Python (weight: 0.9)
  User --[works_on]--> [project] Meshalyzer (weight: 0.9)

Evidence IDs: mem_abc123, mem_def456
```
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..model import Node, normalize_name
from .extract import USER_ID
from .graph import as_list
from .temporal import decayed_weight, last_evidence
from .vocabulary import FIRST_PERSON, STOPWORDS

EXACT, PARTIAL, WORD = 1.0, 0.7, 0.5
HEADER = "=== Knowledge Graph Context ==="
FETCH_PER_ENTITY = 500  # neighbours read per matched entity and direction (hubs like the user are large)
CANDIDATES_PER_WORD = 200  # LIKE matches read per query word: "Entities (shown/total)" counts up to this
_WORD_RE = re.compile(r"[\w.+#'-]+")


@dataclass(frozen=True)
class ScoredEntity:
    id: str
    name: str
    type: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "type": self.type, "score": self.score}


@dataclass(frozen=True)
class ContextEdge:
    source_id: str
    source_name: str
    source_type: str
    type: str
    target_id: str
    target_name: str
    target_type: str
    weight: float            # as stored
    effective_weight: float  # after decay (equal to weight when decay is off)
    memory_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"source_id": self.source_id, "source_name": self.source_name, "source_type": self.source_type,
                "type": self.type, "target_id": self.target_id, "target_name": self.target_name,
                "target_type": self.target_type, "weight": self.weight,
                "effective_weight": round(self.effective_weight, 4), "memory_ids": list(self.memory_ids)}


@dataclass(frozen=True)
class MemoryContext:
    """What stage 2/4 of the expert chat loop injects: ``text`` plus the structure behind it."""

    query: str
    text: str
    entities: tuple[ScoredEntity, ...] = ()  # the ones shown
    edges: tuple[ContextEdge, ...] = ()      # the ones shown
    entities_total: int = 0
    edges_total: int = 0
    evidence_ids: tuple[str, ...] = ()
    truncated: bool = False  # a cap hid something
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.text

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "text": self.text, "entities": [e.to_dict() for e in self.entities],
                "edges": [e.to_dict() for e in self.edges], "entities_total": self.entities_total,
                "edges_total": self.edges_total, "evidence_ids": list(self.evidence_ids),
                "truncated": self.truncated, **self.extras}


# -- 1. entity search -------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return [w.strip(".'-") for w in _WORD_RE.findall(normalize_name(text)) if w.strip(".'-")]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def relevance(query: str, name: str, aliases: Iterable[str] = ()) -> float:
    """spec/002's score of one name for a query: 1.0 exact, 0.7 partial, 0.5 word, 0 none."""
    q = _words(query)
    q_content = {w for w in q if w not in STOPWORDS and len(w) > 1}
    best = 0.0
    for candidate in (name, *aliases):
        n = _words(candidate)
        if not n:
            continue
        if n == q:
            return EXACT
        if not q_content or not set(n) - STOPWORDS:  # "the" does not match "The Project"
            continue
        if _contains(q, n) or _contains(n, q):
            best = max(best, PARTIAL)
        elif set(n) & q_content:
            best = max(best, WORD)
    return best


def search_entities(store: Any, query: str, limit: int = 10, type: str | None = None,
                    aliases: Mapping[str, list[str]] | None = None) -> tuple[list[ScoredEntity], int]:
    """Scored entities for a query, best first, and how many matched in all."""
    candidates = _candidates(store, query, aliases or {})
    scored = []
    for node in candidates.values():
        if type is not None and node.type != type:
            continue
        names = as_list(node.properties.get("aliases")) + (aliases or {}).get(node.id, [])
        score = relevance(query, node.name, [a for a in names if isinstance(a, str)])
        if node.id == USER_ID and _first_person(query):
            score = max(score, WORD)
        if score > 0:
            scored.append(ScoredEntity(node.id, node.name, node.type, score))
    scored.sort(key=lambda e: (-e.score, len(e.name), e.name))
    return scored[:limit], len(scored)


def _first_person(query: str) -> bool:
    return bool(set(_words(query)) & FIRST_PERSON)


def _candidates(store: Any, query: str, aliases: Mapping[str, list[str]]) -> dict[str, Node]:
    """Nodes that may score: exact names of the query's n-grams (indexed lookups) and LIKE matches of
    the query and of each content word (spec/002: "LIKE queries with indexes")."""
    words = _words(query)
    found: dict[str, Node] = {}
    for phrase in _ngrams(words, 4):
        found.update((n.id, n) for n in store.find_nodes(phrase, limit=20))
    for text in [" ".join(words), *{w for w in words if w not in STOPWORDS and len(w) > 2}]:
        if text:
            found.update((n.id, n) for n in store.search_names(text, limit=CANDIDATES_PER_WORD))
    alias_hits = [node_id for node_id, names in aliases.items() if any(relevance(query, a) for a in names)]
    found.update(store.get_nodes(alias_hits))
    if _first_person(query) and (user := store.get_node(USER_ID)) is not None:
        found[USER_ID] = user
    return found


def _ngrams(words: list[str], longest: int) -> list[str]:
    grams = {" ".join(words[i:i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)}
    return [g for g in grams if g not in STOPWORDS]


# -- 2. expansion -----------------------------------------------------------------------------------
def expand(store: Any, seeds: list[ScoredEntity], half_life_days: float | None = None,
           now: datetime | None = None, keep: Callable[[ContextEdge], bool] | None = None,
           need: int | None = None) -> list[ContextEdge]:
    """1-hop edges of the seeds, deduplicated; best seed first, each seed's edges by weight.
    ``keep`` filters edges (e.g. to one expert's memories). ``need``: only the first ``need`` edges
    will be shown, so (stored weights being the order) each seed's best ``need`` + already-seen
    edges per direction are enough; hubs such as the user are then not read whole."""
    seen: set[tuple[str, str, str]] = set()
    out: list[ContextEdge] = []
    for seed in seeds:
        edges = []
        limit = FETCH_PER_ENTITY if need is None else min(FETCH_PER_ENTITY, need + len(seen))
        for direction in ("outgoing", "incoming"):
            for nb in store.neighbors(seed.id, direction, limit=limit):
                key = (nb.edge.source, nb.edge.type, nb.edge.target)
                if key not in seen:
                    seen.add(key)
                    edge = _context_edge(seed, nb, half_life_days, now)
                    if keep is None or keep(edge):
                        edges.append(edge)
        out += sorted(edges, key=lambda e: (-e.effective_weight, e.source_name, e.target_name))
    return out


def count_edges(store: Any, seeds: list[ScoredEntity]) -> int:
    """How many distinct edges touch the seeds: the "total" of "Relationships (shown/total)"."""
    if not seeds:
        return 0
    if getattr(store, "conn", None) is None:  # not a SQLite file (PostgreSQL): the same count through the store
        return len({(nb.edge.source, nb.edge.target, nb.edge.type) for s in seeds
                    for nb in store.neighbors(s.id, "both")})
    rowids = [store.rowid(s.id) for s in seeds]
    marks = ",".join("?" * len(rowids))
    sql = f"SELECT count(*) FROM edges WHERE source IN ({marks}) OR target IN ({marks})"
    return store.conn.execute(sql, (*rowids, *rowids)).fetchone()[0]


def _context_edge(seed: ScoredEntity, nb: Any, half_life: float | None,
                  now: datetime | None) -> ContextEdge:
    here = (seed.id, seed.name, seed.type)
    there = (nb.node.id, nb.node.name, nb.node.type)
    source, target = (here, there) if nb.direction == "outgoing" else (there, here)
    weight = nb.edge.weight
    effective = decayed_weight(weight, last_evidence(nb.edge.properties), half_life, now) if half_life else weight
    ids = [e.get("memory_id") for e in reversed(as_list(nb.edge.properties.get("evidence"))) if isinstance(e, dict)]
    return ContextEdge(*source, nb.edge.type, *target, weight, effective,
                       tuple(dict.fromkeys(i for i in ids if isinstance(i, str))))


# -- 3. capping and formatting ----------------------------------------------------------------------
def _num(x: float) -> str:
    return str(round(x, 2))


def entity_line(e: ScoredEntity) -> str:
    return f"  [{e.type}] {e.name} (Score: {_num(e.score)})"


def _end(name: str, type: str) -> str:
    return "User" if type == "user" else f"[{type}] {name}"


def edge_line(e: ContextEdge) -> str:
    return (f"  {_end(e.source_name, e.source_type)} --[{e.type}]--> {_end(e.target_name, e.target_type)} "
            f"(weight: {_num(e.effective_weight)})")


def render(query: str, entities: list[ScoredEntity], entities_total: int, edges: list[ContextEdge],
           max_edges: int, max_chars: int, edges_total: int | None = None) -> MemoryContext:
    """The capped context block. Every line either fits whole or is left out; the counts say so."""
    total = len(edges) if edges_total is None else max(edges_total, len(edges))
    if not entities:
        return MemoryContext(query, "", entities_total=entities_total)
    budget = _Budget(max_chars, len(HEADER) + 1)
    ent_head = f"Entities ({entities_total}/{entities_total}):"
    rel_head = f"Relationships ({total}/{total}):"
    if not budget.take(len(ent_head) + 2 + len(rel_head) + 2):
        return MemoryContext(query, "", entities_total=entities_total, edges_total=total, truncated=True)
    shown_entities = [e for e in entities if budget.take(len(entity_line(e)) + 1)]
    shown_edges = [e for e in edges[:max_edges] if budget.take(len(edge_line(e)) + 1)]
    evidence = _evidence(shown_edges, budget)
    lines = [HEADER, "", f"Entities ({len(shown_entities)}/{entities_total}):", *map(entity_line, shown_entities),
             "", f"Relationships ({len(shown_edges)}/{total}):", *map(edge_line, shown_edges)]
    if evidence:
        lines += ["", "Evidence IDs: " + ", ".join(evidence)]
    truncated = len(shown_entities) < entities_total or len(shown_edges) < total
    return MemoryContext(query, "\n".join(lines), tuple(shown_entities), tuple(shown_edges), entities_total,
                         total, tuple(evidence), truncated)


class _Budget:
    def __init__(self, limit: int, used: int) -> None:
        self.left = limit - used

    def take(self, n: int) -> bool:
        if n > self.left:
            return False
        self.left -= n
        return True


def _evidence(edges: list[ContextEdge], budget: _Budget) -> list[str]:
    ids = list(dict.fromkeys(i for e in edges for i in e.memory_ids))
    if not ids or not budget.take(len("\nEvidence IDs: ") + 1):
        return []
    return [i for n, i in enumerate(ids) if budget.take(len(i) + (2 if n else 0))]
