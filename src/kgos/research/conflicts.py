"""Conflicts between claims however they are phrased (issue 29, goal 3).

``merge.detect_conflicts`` compared only claims with one stemmed frame, so "100K QPS on a single node
according to the vendor benchmark" and "In our tests Qdrant handles 50K QPS on a single node" were
never compared. Here each claim is read into *facts* and two claims from different sources conflict
when they speak of one entity and:

- **number**: one quantity (the same unit family, sharing a content word besides the entity and the
  unit) with values that disagree: scales normalised (100K = 100,000 = 1e5 = 100 thousand; 2.5M;
  1.5 GB = 1536 MB; 2 s = 2000 ms; 30% = 0.3), ranges ("10-20 ms" agrees with 15 ms, not with 50 ms),
  values within ``TOLERANCE`` of each other agree;
- **date**: one event word ("released", "founded", "deprecated", ...) with different years;
- **comparative**: "A is faster than B" vs "A is slower than B" or "B is faster than A" (antonym
  pairs normalised to one direction);
- **negation**: the same statement (stemmed content-word overlap >= ``NEGATION_OVERLAP``) with
  opposite polarity.

Entities are the names the extractor found (capitalised names, options, the question's terms);
pairs are only formed within one entity's claims, and at most ``MAX_PAIRS`` per run, so 5,000
near-duplicate documents stay within the run's caps.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..index.text import STOPWORDS, fold, make_stemmer, tokenize

__all__ = ["Fact", "conflict_between", "facts_of", "find_conflicts", "quantities", "same_quantities"]

TOLERANCE = 0.10  # relative: 100K vs 105K is the same measurement, rounded
NEGATION_OVERLAP = 0.6
MAX_PAIRS = 200_000
MAX_BUCKET = 400  # claims per entity compared pairwise (the most specific first)
_stem = make_stemmer("porter")

SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9,
          "t": 1e12, "trillion": 1e12, "hundred": 1e2}
# unit -> (family, factor to the family's base)
UNITS = {
    "qps": ("rate", 1.0), "rps": ("rate", 1.0), "tps": ("rate", 1.0), "queries per second": ("rate", 1.0),
    "requests per second": ("rate", 1.0), "req/s": ("rate", 1.0), "queries/s": ("rate", 1.0),
    "ms": ("time", 1e-3), "millisecond": ("time", 1e-3), "milliseconds": ("time", 1e-3),
    "s": ("time", 1.0), "sec": ("time", 1.0), "second": ("time", 1.0), "seconds": ("time", 1.0),
    "us": ("time", 1e-6), "µs": ("time", 1e-6), "microseconds": ("time", 1e-6),
    "minute": ("time", 60.0), "minutes": ("time", 60.0), "min": ("time", 60.0),
    "hour": ("time", 3600.0), "hours": ("time", 3600.0), "day": ("time", 86400.0), "days": ("time", 86400.0),
    "b": ("bytes", 1.0), "bytes": ("bytes", 1.0), "kb": ("bytes", 1024.0), "kib": ("bytes", 1024.0),
    "mb": ("bytes", 1024.0 ** 2), "mib": ("bytes", 1024.0 ** 2), "gb": ("bytes", 1024.0 ** 3),
    "gib": ("bytes", 1024.0 ** 3), "tb": ("bytes", 1024.0 ** 4), "tib": ("bytes", 1024.0 ** 4),
    "%": ("ratio", 0.01), "percent": ("ratio", 0.01), "per cent": ("ratio", 0.01),
    "x": ("times", 1.0), "times": ("times", 1.0),
    "$": ("usd", 1.0), "usd": ("usd", 1.0), "dollars": ("usd", 1.0),
    "tokens": ("tokens", 1.0), "token": ("tokens", 1.0), "dimensions": ("dims", 1.0), "dims": ("dims", 1.0),
    "nodes": ("nodes", 1.0), "cores": ("cores", 1.0), "threads": ("threads", 1.0), "users": ("users", 1.0),
    "languages": ("count", 1.0), "files": ("files", 1.0), "connections": ("connections", 1.0),
    "vectors": ("vectors", 1.0), "documents": ("documents", 1.0), "rows": ("rows", 1.0),
}
_UNIT_WORDS = sorted(UNITS, key=len, reverse=True)
_NUM = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
_SCALE = r"(?:\s*(thousand|million|billion|trillion|hundred|mn|bn|[kKmMbBtT])(?![a-zA-Z]))?"
_UNIT = r"(?:\s*(" + "|".join(re.escape(u) for u in _UNIT_WORDS) + r")(?![a-zA-Z]))?"
_QUANTITY = re.compile(r"(?<![\w.])(\$)?" + _NUM + _SCALE + r"(?:\s*(?:-|–|to)\s*" + _NUM + _SCALE + r")?" + _UNIT,
                       re.IGNORECASE)
_BETWEEN = re.compile(r"\bbetween\s+" + _NUM + _SCALE + r"\s+and\s+" + _NUM + _SCALE + _UNIT, re.IGNORECASE)
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
EVENTS = ("releas", "launch", "found", "introduc", "deprec", "publish", "announc", "acquir", "discontinu",
          "born", "die", "ship", "debut", "creat", "invent")
# comparative -> (dimension, direction)
COMPARATIVES = {
    "faster": ("speed", 1), "quicker": ("speed", 1), "slower": ("speed", -1),
    "cheaper": ("cost", -1), "costlier": ("cost", 1), "pricier": ("cost", 1),
    "larger": ("size", 1), "bigger": ("size", 1), "smaller": ("size", -1),
    "better": ("quality", 1), "worse": ("quality", -1),
    "higher": ("level", 1), "lower": ("level", -1), "more": ("amount", 1), "less": ("amount", -1),
    "fewer": ("amount", -1), "heavier": ("weight", 1), "lighter": ("weight", -1),
    "safer": ("safety", 1), "riskier": ("safety", -1), "newer": ("age", -1), "older": ("age", 1),
    "stronger": ("strength", 1), "weaker": ("strength", -1), "easier": ("difficulty", -1), "harder": ("difficulty", 1),
}
_MORE_X = re.compile(r"\b(more|less)\s+(expensive|accurate|reliable|secure|efficient|scalable|memory|latency)\b")
_MORE_MAP = {"expensive": "cost", "accurate": "accuracy", "reliable": "reliability", "secure": "safety",
             "efficient": "efficiency", "scalable": "scalability", "memory": "memory", "latency": "latency"}
_THAN = re.compile(r"\bthan\s+(?:the\s+|a\s+|an\s+)?([\w.+-]+(?:\s+[A-Z][\w.+-]*){0,2})")
NEGATIONS = frozenset({"not", "no", "never", "cannot", "can't", "don't", "doesn't", "isn't", "aren't", "won't",
                       "wasn't", "weren't", "didn't", "hasn't", "haven't", "without", "neither", "nor", "none",
                       "lacks", "lack", "unsupported", "unable", "fails", "fail"})


@dataclass(frozen=True)
class Quantity:
    family: str
    low: float
    high: float
    text: str
    near: frozenset[str] = frozenset()  # the stemmed content words around it: what it measures

    def agrees(self, other: Quantity) -> bool:
        """Overlapping ranges (each widened by the tolerance) say the same."""
        lo, hi = self.low * (1 - TOLERANCE), self.high * (1 + TOLERANCE)
        return other.high >= lo and other.low <= hi


@dataclass(frozen=True)
class Fact:
    """What one claim asserts, read for comparison."""

    claim: str
    entities: frozenset[str]
    words: frozenset[str]  # stemmed content words, entity and unit words removed
    quantities: tuple[Quantity, ...]
    years: tuple[int, ...]
    events: frozenset[str]
    comparisons: tuple[tuple[str, int, str], ...]  # (dimension, direction, other side)
    negated: bool
    source: frozenset[str]


def _number(raw: str, scale: str | None) -> float:
    value = float(raw.replace(",", ""))
    return value * SCALES.get((scale or "").lower(), 1.0)


def quantities(text: str, skip: frozenset[str] = frozenset()) -> list[Quantity]:
    """Every number with a unit in ``text``, normalised to its unit family's base (ranges kept); a
    number before a plural noun counts that noun ("1e6 repositories"). ``skip``: words that are not
    what a quantity measures (the claim's entities)."""
    out, taken = [], []
    for m in _BETWEEN.finditer(text):
        unit = UNITS.get((m.group(5) or "").lower())
        if unit:
            a, b = _number(m.group(1), m.group(2)) * unit[1], _number(m.group(3), m.group(4)) * unit[1]
            out.append(Quantity(unit[0], min(a, b), max(a, b), m.group(0), _near(text, m.span(), skip)))
            taken.append(m.span())
    for m in _QUANTITY.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue  # the upper bound of a "between ... and ..." range already read
        dollar, n1, s1, n2, s2, unit_word = m.groups()
        unit = UNITS.get("$") if dollar else UNITS.get((unit_word or "").lower())
        if unit is None:
            noun = _NOUN.match(text, m.end())
            if noun is None or (_YEAR.fullmatch(n1) and not s1):
                continue
            unit = (_stem(noun.group(1).lower()), 1.0)
        elif _YEAR.fullmatch(n1) and not unit_word and not dollar:
            continue
        a = _number(n1, s1 or s2) * unit[1]
        b = _number(n2, s2) * unit[1] if n2 else a
        out.append(Quantity(unit[0], min(a, b), max(a, b), m.group(0).strip(), _near(text, m.span(), skip)))
    return out


_NOUN = re.compile(r"\s+([a-z]{3,}s)\b")  # a plural noun right after a bare number
_UNIT_STEMS = frozenset(_stem(t) for u in UNITS for t in re.findall(r"[a-z]+", u))


def _near(text: str, span: tuple[int, int], skip: frozenset[str], width: int = 3) -> frozenset[str]:
    """The ``width`` nearest content words on each side of a quantity, stemmed."""
    def content(part: str) -> list[str]:
        return [w for w in (_stem(t) for t in tokenize(part) if t not in STOPWORDS and not t[0].isdigit())
                if w not in skip and w not in _UNIT_STEMS and w not in SCALE_STEMS]
    return frozenset(content(text[:span[0]])[-width:] + content(text[span[1]:])[:width])


SCALE_STEMS = frozenset(_stem(w) for w in SCALES)
_CAPITAL = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:[.+-][A-Za-z0-9]+)*\b")
MONTHS = frozenset("january february march april may june july august september october november december".split())


def entities_of(claim: Mapping[str, Any]) -> frozenset[str]:
    """The claim's names: the extractor's entities and every capitalised word (a name at the start of
    a sentence too), less stopwords, units and months, normalised."""
    names = {normalize(e) for e in claim.get("entities", []) if e}
    for word in _CAPITAL.findall(claim["text"]):
        low = word.lower()
        if low not in STOPWORDS and low not in MONTHS and low not in UNITS and low not in SCALES:
            names.add(normalize(word))
    return frozenset(n for n in names if n and n not in _UNIT_STEMS)


def facts_of(claim: Mapping[str, Any]) -> Fact:
    sources = frozenset(s["source"] for s in claim.get("sources", [])) or frozenset({claim.get("source", "")})
    return replace(_read(claim["text"], tuple(claim.get("entities", ()))), claim=claim["id"], source=sources)


@functools.lru_cache(maxsize=65_536)  # a claim's text is read once per run, not once per iteration
def _read(text: str, extracted: tuple[str, ...]) -> Fact:
    entities = entities_of({"text": text, "entities": extracted})
    skip = frozenset(t for e in entities for t in e.split())
    words = frozenset(_stem(t) for t in tokenize(text) if t not in STOPWORDS and t not in NEGATIONS
                      and not t[0].isdigit() and t not in COMPARATIVES) - skip - _UNIT_STEMS
    lowered = fold(text)
    # polarity by parity: "cannot run without a GPU" is two negations, the same as "runs with one"
    negations = sum(w in NEGATIONS or w.endswith("n't") for w in re.findall(r"[a-z']+", lowered))
    return Fact(claim="", entities=entities, words=words, quantities=tuple(quantities(text, skip)),
                years=tuple(int(y) for y in _YEAR.findall(text)),
                events=frozenset(w for w in words if w.startswith(EVENTS)),
                comparisons=tuple(_comparisons(lowered)), negated=negations % 2 == 1, source=frozenset())


def _comparisons(text: str) -> list[tuple[str, int, str]]:
    out = []
    than = _THAN.search(text)
    other = normalize(than.group(1)) if than else ""
    for m in _MORE_X.finditer(text):
        out.append((_MORE_MAP[m.group(2)], 1 if m.group(1) == "more" else -1, other))
    for word in re.findall(r"[a-z]+", text):
        if word in COMPARATIVES and word not in ("more", "less") and (than or word in ("faster", "slower")):
            dim, direction = COMPARATIVES[word]
            out.append((dim, direction, other))
    return out


def normalize(name: str) -> str:
    return " ".join(_stem(t) for t in tokenize(name))


def conflict_between(a: Fact, b: Fact) -> tuple[str, str] | None:
    """(kind, what disagrees) when two facts of different sources contradict each other, else None."""
    if a.source & b.source or not (a.entities & b.entities):
        return None
    for qa in a.quantities:
        for qb in b.quantities:
            if qa.family == qb.family and qa.near & qb.near and not qa.agrees(qb) and _same_measure(a, b, qa, qb):
                return "number", f"{qa.text} vs {qb.text}"
    if a.years and b.years and a.events & b.events and not set(a.years) & set(b.years):
        return "date", f"{a.years[0]} vs {b.years[0]}"
    for da in a.comparisons:
        for db in b.comparisons:
            if da[0] == db[0] and _opposite(a, b, da, db):
                return "comparative", f"{da[0]}: {da[1]:+d} vs {db[1]:+d}"
    if a.negated != b.negated and _overlap(a.words, b.words) >= NEGATION_OVERLAP and not a.quantities + b.quantities:
        return "negation", "stated and denied"
    return None


def _same_measure(a: Fact, b: Fact, qa: Quantity, qb: Quantity) -> bool:
    """One claim may hold several quantities: compare those of one family only when each claim has
    one of that family (else "2 GB for 1M vectors, 8 GB for 10M" would disagree with itself)."""
    return (sum(q.family == qa.family for q in a.quantities) == 1
            and sum(q.family == qb.family for q in b.quantities) == 1)


def _opposite(a: Fact, b: Fact, da: tuple[str, int, str], db: tuple[str, int, str]) -> bool:
    """A faster than B vs A slower than B (same other side, opposite direction), or vs B faster than
    A (other sides swapped, same direction)."""
    if da[2] and db[2] and da[2] == db[2]:
        return da[1] != db[1]
    if da[2] and db[2]:
        swapped = any(normalize(e) == db[2] for e in a.entities) and any(normalize(e) == da[2] for e in b.entities)
        return swapped and da[1] == db[1]
    return da[1] != db[1] and not (da[2] or db[2])


def _candidates(facts: list[Fact]) -> Iterator[tuple[str, str]]:
    """The pairs that could disagree at all: both with quantities, both with years, both comparing,
    or of opposite polarity (most claims of a corpus are none of these: not compared)."""
    for has in (lambda f: f.quantities, lambda f: f.years, lambda f: f.comparisons):
        yield from itertools.combinations(sorted(f.claim for f in facts if has(f)), 2)
    negated = [f.claim for f in facts if f.negated]
    affirmed = [f.claim for f in facts if not f.negated]
    for a in negated:
        for b in affirmed:
            yield (a, b) if a < b else (b, a)


def _display(text: str, a: Fact, b: Fact) -> str:
    """The shared name as written ("Qdrant"), preferring a capitalised one; "" when none is shown."""
    shared = a.entities & b.entities
    return next((w for w in _CAPITAL.findall(text) if normalize(w) in shared), "")


def same_quantities(a: str, b: str) -> bool:
    """Both texts measure something (numbers with units) and every measure of one family agrees
    ("100K QPS in run 75" and "101K QPS in run 78": the same figure, rounded; the run ids are not)."""
    qa, qb = quantities(a), quantities(b)
    pairs = [(x, y) for x in qa for y in qb if x.family == y.family]
    return bool(pairs) and all(x.agrees(y) for x, y in pairs)


def _overlap(x: frozenset[str], y: frozenset[str]) -> float:
    return len(x & y) / max(min(len(x), len(y)), 1)


def find_conflicts(claims: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every contradicting pair among ``claims`` (merge's knowledge shape), compared within each
    shared entity, at most ``MAX_PAIRS`` comparisons; each as {kind, claims, about, detail}."""
    facts = {cid: facts_of(c) for cid, c in sorted(claims.items())}
    buckets: dict[str, list[str]] = {}
    for cid, f in facts.items():
        for e in f.entities:
            buckets.setdefault(e, []).append(cid)
    seen: set[tuple[str, str]] = set()
    out, budget = [], MAX_PAIRS
    for entity, ids in sorted(buckets.items(), key=lambda kv: len(kv[1])):
        for a, b in _candidates([facts[i] for i in ids[:MAX_BUCKET]]):
            if (a, b) in seen or budget <= 0:
                continue
            seen.add((a, b))
            budget -= 1
            found = conflict_between(facts[a], facts[b])
            if found:
                out.append({"kind": found[0], "claims": [a, b], "about": _display(claims[a]["text"], facts[a], facts[b]),
                            "detail": found[1]})
    return out
