"""Query understanding: the question's intent, expected entities and relations, and the subtopics a
good answer covers (spec/004 "Coverage Calculation": subtopics derived from query intent).

| intent type | subtopics |
|---|---|
| comparison | products, benchmarks, pros/cons (spec/004) |
| how_to | steps, prerequisites, examples (spec/004) |
| what_is | definition, uses, alternatives (spec/004) |
| factual | answer, details |

plus one ``about:<entity>`` subtopic per expected entity. A subtopic is addressed when a claim shows one
of its cues (and, for ``about:``, names the entity). The KG-OS intent categories of
``kgos.classify_intent`` and its retrieval intent ride along in the plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..index.text import STOPWORDS, fold, tokenize
from ..methods.intent import classify_intent

__all__ = ["SUBTOPICS", "addressed", "intent_type", "plan_query"]

SUBTOPICS: dict[str, dict[str, Sequence[str]]] = {
    "comparison": {"products": (), "benchmarks": ("faster", "slower", "speed", "size", "performance", "#"),
                   "pros_cons": ("better", "worse", "advantage", "unlike", "instead", "but", "however", "whereas",
                                 "only", "more", "less")},
    "how_to": {"steps": ("use", "run", "specify", "option", "-"), "prerequisites": (
        "require", "need", "must", "install", "before", "first", "permission"),
        "examples": ("example", "e.g", "for instance", "such as", "$ ")},
    "what_is": {"definition": (" is a ", " is an ", " is the ", " are ", " - "), "uses": (
        "used", "use", "allow", "lets", "can ", "for "), "alternatives": (
        "alternative", "instead", "similar", "see also", "other", "replace")},
    "factual": {"answer": (), "details": ()},
}
_QUESTION_WORDS = frozenset("""what which who whom whose why how when where difference differences between
compare versus vs best way ways use using used explain describe tell show list give get make about better
good""".split())
_COMPARISON = re.compile(r"\b(vs\.?|versus|compare[ds]?|comparison|difference|differ|better than|or)\b", re.IGNORECASE)
_HOW_TO = re.compile(r"^\s*(how\b|steps?\b|ways? to\b)|\bhow (do|can|to|should)\b", re.IGNORECASE)
_WHAT_IS = re.compile(r"^\s*(what|who)\s+(is|are)\b|\bdefin", re.IGNORECASE)


def intent_type(question: str) -> str:
    """comparison | how_to | what_is | factual, from the question's form."""
    if _COMPARISON.search(question) and len(entities_of(question)) >= 2:
        return "comparison"
    if _HOW_TO.search(question):
        return "how_to"
    if _WHAT_IS.search(question):
        return "what_is"
    return "factual"


def entities_of(question: str) -> list[str]:
    """The question's content words (quoted phrases and option-like words kept whole)."""
    quoted = re.findall(r"[\"'`]([^\"'`]{2,60})[\"'`]", question)
    options = re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", question)
    rest = re.sub(r"[\"'`][^\"'`]{2,60}[\"'`]|(?<![\w-])--?[a-zA-Z][\w-]*", " ", question)
    words = [t for t in tokenize(rest) if t not in STOPWORDS and t not in _QUESTION_WORDS and len(t) > 1]
    return list(dict.fromkeys([*quoted, *options, *words]))


def plan_query(question: str, refinement: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The Query stage's output: intent, entities, relations, subtopics and the queries to search."""
    refinement = dict(refinement or {})
    text = question if not refinement.get("answer") else f"{question} {refinement['answer']}"
    kind = intent_type(text)
    cls = classify_intent(text)
    entities = entities_of(text)
    subtopics = [{"id": name, "label": name.replace("_", "/"), "cues": list(cues)}
                 for name, cues in SUBTOPICS[kind].items()]
    subtopics += [{"id": f"about:{e}", "label": f"about {e}", "cues": [], "entity": e} for e in entities[:6]]
    relations = {"comparison": ["differs_from"], "how_to": ["used_for", "requires"],
                 "what_is": ["is_a", "used_for"], "factual": ["relates_to"]}[kind]
    return {"question": question, "text": text,
            "intent": {"type": kind, "categories": [m.category for m in cls.intents],
                       "retrieval_intent": cls.retrieval_intent},
            "entities": entities, "relations": relations, "subtopics": subtopics,
            "queries": _queries(text, entities, refinement), "refinement": refinement}


def _queries(text: str, entities: Sequence[str], refinement: Mapping[str, Any]) -> list[str]:
    queries = [str(q) for q in refinement.get("queries", []) if str(q).strip()]
    if not queries or refinement.get("keep_original", True):
        queries.insert(0, text)
    return list(dict.fromkeys(q.strip() for q in queries))[:8]


def addressed(subtopic: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], entities: Sequence[str]) -> bool:
    """Whether ``claims`` address ``subtopic`` (cue words; ``products``: two entities each with a claim)."""
    if subtopic.get("entity"):
        e = fold(subtopic["entity"])
        return any(e in c.get("entities", []) or e == c.get("subject") or e in fold(c["text"]) for c in claims)
    if subtopic["id"] == "products":
        return sum(any(fold(e) in fold(c["text"]) for c in claims) for e in entities) >= min(2, len(entities))
    if subtopic["id"] == "details":
        return len(claims) >= 3
    if not subtopic["cues"]:
        return bool(claims)
    return any(_cued(subtopic["cues"], c) for c in claims)


def _cued(cues: Sequence[str], claim: Mapping[str, Any]) -> bool:
    text = f" {fold(claim['text'])} "
    return any((cue == "#" and claim.get("numbers")) or (cue != "#" and cue in text) for cue in cues)
