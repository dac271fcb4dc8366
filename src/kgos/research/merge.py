"""Merge: entity deduplication, claim corroboration and conflict detection, integration with provenance.

Knowledge is JSON-shaped and accumulates over iterations::

    {"entities": {key: {"key", "name", "type", "aliases", "sources", "first_iteration"}},
     "claims":   {id:  {..., "sources": [{"source", "doc", "span", "iteration"}], "first_iteration"}},
     "conflicts": [{"kind": "number"|"negation", "claims": [a, b], "resolution": {...} | None}],
     "relations": [{"source", "target", "type"}]}

- **Entities** are the same when their normalised names match, their stemmed names match, one's name is
  another's alias, or (with an embedder) their name vectors have cosine >= ``entity_similarity``.
- **Claims** saying the same thing (one frame: content tokens less numbers and negations, stemmed; same
  numbers; same polarity) from different sources become one claim with several sources: that is
  corroboration, which raises confidence.
- **Conflicts** are claims with one frame, about one subject (or naming a common entity), whose numbers differ ("100K QPS" vs "50K QPS") or whose polarity
  differs ("does compress" vs "does not compress"). A conflict is resolved by source authority, then
  recency; equal on both, it stays open for the reasoner.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..index.text import make_stemmer
from ..model import normalize_name
from .conflicts import find_conflicts, same_quantities
from .extract import claim_frame

__all__ = ["AUTHORITY", "empty_knowledge", "integrate"]

#: spec/004 "Source authority (official > blog > forum)"
AUTHORITY = {"official": 1.0, "documentation": 0.9, "blog": 0.6, "forum": 0.4, "unknown": 0.5}
_stem = make_stemmer("porter")
#: texts -> one vector per text (an ``Embedder.embed``), for entity-name similarity
Embed = Callable[[list[str]], np.ndarray]


def empty_knowledge() -> dict[str, Any]:
    return {"entities": {}, "claims": {}, "conflicts": [], "relations": []}


def integrate(known: Mapping[str, Any], extracted: Mapping[str, Any], iteration: int,
              entity_similarity: float = 0.92, embed: Embed | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Merge ``extracted`` (claims, entities, relations) into a copy of ``known``; returns (knowledge,
    stats) where stats counts what is new (``new_info`` = new items / all items)."""
    kn = copy.deepcopy(dict(known)) if known else empty_knowledge()
    alias = _alias_table(kn["entities"])
    new_entities = sum(_add_entity(kn, alias, e, iteration, entity_similarity, embed)
                       for e in extracted.get("entities", []))
    remap = {e["key"]: alias.get(e["key"], e["key"]) for e in extracted.get("entities", [])}
    frames = {_frame_key(c): cid for cid, c in kn["claims"].items()}
    new_claims = corroborated = 0
    for claim in extracted.get("claims", []):
        added = _add_claim(kn, frames, claim, remap, iteration)
        new_claims += added == "new"
        corroborated += added == "corroborated"
    _add_relations(kn, extracted.get("relations", []), remap)
    kn["conflicts"] = detect_conflicts(kn["claims"])
    total = len(kn["claims"]) + len(kn["entities"])
    stats = {"new_claims": new_claims, "new_entities": new_entities, "corroborated": corroborated,
             "claims": len(kn["claims"]), "entities": len(kn["entities"]), "conflicts": len(kn["conflicts"]),
             "new_info": round((new_claims + new_entities) / total, 6) if total else 0.0}
    return kn, stats


def detect_conflicts(claims: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pairs of claims with one frame from different sources that disagree on numbers or polarity."""
    by_frame: dict[tuple[str, ...], list[str]] = {}
    for cid in sorted(claims):
        frame = _stemmed(claims[cid]["text"])
        if len(frame) >= 2:
            by_frame.setdefault(frame, []).append(cid)
    out = []
    for ids in by_frame.values():
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                kind = _disagreement(claims[a], claims[b])
                if kind:
                    out.append({"kind": kind, "claims": [a, b], "resolution": _resolve(claims[a], claims[b])})
    # claims phrased differently (issue 29): facts of one entity that disagree (research/conflicts.py)
    paired = {tuple(sorted(c["claims"])) for c in out}
    for c in find_conflicts(claims):
        if tuple(sorted(c["claims"])) not in paired:
            paired.add(tuple(sorted(c["claims"])))
            a, b = c["claims"]
            out.append({**c, "resolution": _resolve(claims[a], claims[b])})
    return out


def _disagreement(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    if {s["source"] for s in a["sources"]} & {s["source"] for s in b["sources"]}:
        return None  # one source qualifying itself is not a conflict between sources
    if a.get("subject") != b.get("subject") and not set(a.get("entities", [])) & set(b.get("entities", [])):
        return None  # "the default level is 6" of zip and "... is 9" of gzip speak of different things
    if a["numbers"] and b["numbers"] and a["numbers"] != b["numbers"] and not same_quantities(a["text"], b["text"]):
        return "number"
    if a["negated"] != b["negated"]:
        return "negation"
    return None


def _resolve(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any] | None:
    """Authority first, then recency (fewer days old), as spec/004's conservative reasoner prefers."""
    ra, rb = AUTHORITY.get(a["authority"], 0.5), AUTHORITY.get(b["authority"], 0.5)
    if ra != rb:
        return {"winner": a["id"] if ra > rb else b["id"], "by": "authority"}
    da, db = a.get("age_days"), b.get("age_days")
    if da is not None and db is not None and da != db:
        return {"winner": a["id"] if da < db else b["id"], "by": "recency"}
    return None


def _frame_key(claim: Mapping[str, Any]) -> tuple[Any, ...]:
    return (_stemmed(claim["text"]), tuple(claim["numbers"]), bool(claim["negated"]))


def _stemmed(text: str) -> tuple[str, ...]:
    return tuple(_stem(t) for t in claim_frame(text))


def _add_claim(kn: dict[str, Any], frames: dict[tuple[Any, ...], str], claim: Mapping[str, Any],
               remap: Mapping[str, str], iteration: int) -> str:
    source = {"source": claim["source"], "doc": claim["doc"], "span": list(claim["span"]), "iteration": iteration}
    if claim["id"] in kn["claims"]:
        return "seen"
    key = _frame_key(claim)
    same = frames.get(key) if len(key[0]) >= 2 else None
    if same is None and len(key[0]) >= PREFIX:
        same = _prefix_match(frames, key)
    if same is not None:
        target = kn["claims"][same]
        if all(s["source"] != source["source"] or s["span"] != source["span"] for s in target["sources"]):
            if any(s["source"] == source["source"] for s in target["sources"]):
                return "seen"  # the same sentence twice in one source is not corroboration
            target["sources"].append(source)
            return "corroborated"
        return "seen"
    c = {k: copy.deepcopy(v) for k, v in claim.items() if k not in ("source", "doc", "span")}
    c["entities"] = sorted({remap.get(e, e) for e in claim["entities"]})
    c["subject"] = remap.get(claim["subject"], claim["subject"])
    c.update(sources=[source], first_iteration=iteration)
    kn["claims"][claim["id"]] = c
    frames[key] = claim["id"]
    return "new"


PREFIX = 8  # content tokens: a claim cut short (a KG description truncated mid-sentence) still matches


def _prefix_match(frames: Mapping[tuple[Any, ...], str], key: tuple[Any, ...]) -> str | None:
    """A known claim of the same polarity whose frame starts like this one and one of the two frames
    is a prefix of the other: the same sentence, one copy truncated."""
    frame = key[0]
    for other, cid in frames.items():
        short, long_ = sorted((other[0], frame), key=len)
        if other[2] == key[2] and len(short) >= PREFIX and long_[:len(short)] == short:
            return cid
    return None


def _alias_table(entities: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    table: dict[str, str] = {}
    for key, e in entities.items():
        table[key] = key
        table.setdefault(_stem_key(key), key)
        for a in e.get("aliases", []):
            table.setdefault(normalize_name(a), key)
    return table


def _stem_key(key: str) -> str:
    return "~" + " ".join(_stem(t) for t in key.split())


def _add_entity(kn: dict[str, Any], alias: dict[str, str], e: Mapping[str, Any], iteration: int,
                threshold: float, embed: Embed | None) -> bool:
    key = e["key"]
    target = alias.get(key) or alias.get(_stem_key(key)) or next(
        (alias[normalize_name(a)] for a in e.get("aliases", []) if normalize_name(a) in alias), None)
    if target is None and embed is not None:
        target = _similar(kn["entities"], e["name"], threshold, embed)
    if target is not None:
        alias[key] = target
        ent = kn["entities"][target]
        ent["aliases"] = sorted(set(ent["aliases"]) | ({e["name"]} if e["name"] != ent["name"] else set())
                                | set(e.get("aliases", [])))
        for a in ent["aliases"]:
            alias.setdefault(normalize_name(a), target)
        return False
    kn["entities"][key] = {"key": key, "name": e["name"], "type": e.get("type", "term"),
                           "aliases": sorted(set(e.get("aliases", []))), "first_iteration": iteration}
    alias[key] = key
    alias.setdefault(_stem_key(key), key)
    for a in e.get("aliases", []):
        alias.setdefault(normalize_name(a), key)
    return True


def _similar(entities: Mapping[str, Mapping[str, Any]], name: str, threshold: float,
             embed: Embed | None) -> str | None:
    keys = [k for k, v in entities.items() if v.get("type") != "option"]
    if not keys or name.startswith("-"):
        return None
    vecs = embed([name] + [entities[k]["name"] for k in keys])
    sims = vecs[1:] @ vecs[0]
    best = int(np.argmax(sims))
    return keys[best] if float(sims[best]) >= threshold else None


def _add_relations(kn: dict[str, Any], relations: Sequence[Mapping[str, Any]], remap: Mapping[str, str]) -> None:
    seen = {(r["source"], r["target"], r["type"]) for r in kn["relations"]}
    for r in relations:
        rel = {"source": remap.get(r["source"], r["source"]), "target": remap.get(r["target"], r["target"]),
               "type": r["type"]}
        key = (rel["source"], rel["target"], rel["type"])
        if key not in seen:
            seen.add(key)
            kn["relations"].append(rel)
