"""Tier 2: design patterns and anti-patterns from structure, typed relations from cue phrases.

Structure (read from the tier-1 node properties, no second parse):

| pattern        | rule                                                                       | confidence |
|----------------|----------------------------------------------------------------------------|------------|
| singleton      | a class attribute holding the instance + ``__new__`` or an ``instance()``   | 0.9 / 0.8  |
| factory        | ``create_/make_/build_/new_`` function returning a new instance; ``*Factory`` | 0.8 / 0.9 |
| registry       | ``register*`` storing into a mapping; a class with ``register*``; ``*Registry`` | 0.85 / 0.7 / 0.9 |
| decorator      | returns an inner function and uses ``functools.wraps`` (without: 0.6)       | 0.9        |
| adapter        | ``*Adapter`` / ``*Wrapper`` / ``*Proxy`` class; ``__getattr__`` delegation   | 0.8 / 0.7  |
| god class      | >= 20 methods and >= 500 lines (anti-pattern)                               | methods/40 |
| long function  | >= 80 lines (anti-pattern)                                                  | lines/160  |
| import cycle   | a strongly connected component of >= 2 modules in the import graph          | 1.0        |

Each instance gets ``pattern_instance_of`` to the pattern's node (``pattern:<name>``); related patterns
are linked by ``pattern_alternative_to``. Thresholds are the common static-analysis defaults (pylint's
too-many-public-methods is 20; a screenful-and-a-half for a long function).

Cue phrases (docstrings and document chunks, sentence by sentence): the relations of the seeds,
``requires``, ``enables``, ``has_limitation``, ``has_workaround``, ``feeds_into``, ``alternative_to``,
each with the sentence as ``evidence`` and a ``confidence`` (0.7 for an explicit verb, 0.6 for a
looser cue, 0.1 less when an end is a free phrase rather than a known symbol). The subject is the
symbol or phrase before the cue, or the text's owner (the documented function, the chunk's section)
when that is a pronoun; limitations and workarounds become nodes named by their clause.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from ..memory.extract import bound_phrase, sentences
from ..memory.pii import pii_reason
from ..memory.vocabulary import STOPWORDS
from ..model import slugify
from .facts import Facts

PATTERNS = "@patterns"
CONCEPTS = "@concepts"
CATALOG: dict[str, tuple[str, str]] = {  # name -> (node type, description)
    "singleton": ("pattern", "One shared instance of a class, created on first use."),
    "factory": ("pattern", "A function or class that creates objects, hiding which class is built."),
    "registry": ("pattern", "A mapping from names to implementations, filled by a register call or decorator."),
    "decorator": ("pattern", "A callable that wraps a function to add behaviour around it."),
    "adapter": ("pattern", "A class that wraps another object to give it a different interface."),
    "god_class": ("anti_pattern", "A class with too many methods and lines: many responsibilities in one place."),
    "long_function": ("anti_pattern", "A function too long to read at once (>= 80 lines)."),
    "import_cycle": ("anti_pattern", "Modules that import each other, directly or through others."),
}
ALTERNATIVES = (("factory", "registry"), ("decorator", "adapter"), ("singleton", "registry"))
GOD_METHODS, GOD_LINES, LONG_LINES = 20, 500, 80
CODE_TYPES = frozenset({"class", "function", "method"})


def pattern_nodes(used: set[str] | None = None) -> list[dict[str, Any]]:
    """The catalog's nodes; with ``used`` (ids of patterns with an instance) only those, so a KG holds
    no orphan pattern nodes (validation rule 6)."""
    return [{"id": f"pattern:{name}", "name": name.replace("_", " "), "type": t, "description": d,
             "properties": {"source": PATTERNS, "tier": 2}} for name, (t, d) in CATALOG.items()
            if used is None or f"pattern:{name}" in used]


def pattern_edges(used: set[str] | None = None) -> list[dict[str, Any]]:
    return [{"source": f"pattern:{a}", "target": f"pattern:{b}", "type": "pattern_alternative_to", "weight": 1.0,
             "properties": {"source_file": PATTERNS, "tier": 2}} for a, b in ALTERNATIVES
            if used is None or {f"pattern:{a}", f"pattern:{b}"} <= used]


def used_patterns(edges: dict[str, list[dict[str, Any]]]) -> set[str]:
    return {e["target"] for es in edges.values() for e in es if e["type"] == "pattern_instance_of"}


# -- structure ----------------------------------------------------------------------------------------
def structural(groups: dict[str, Facts], import_edges: Iterable[tuple[str, str, str]]) -> dict[str, list[dict[str, Any]]]:
    """``pattern_instance_of`` edges per group (file)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rel, facts in groups.items():
        for n in facts.nodes:
            if n["type"] in CODE_TYPES:
                for name, confidence, rule in _node_patterns(n):
                    out[rel].append(_instance(n["id"], name, confidence, rule, rel))
    for members, rel_of in _cycles(import_edges):
        for m in members:
            out[rel_of[m]].append(_instance(m, "import_cycle", 1.0, f"imports cycle through {len(members)} modules",
                                            rel_of[m], cycle=sorted(members)[:20]))
    return out


def _instance(node: str, pattern: str, confidence: float, rule: str, rel: str, **extra: Any) -> dict[str, Any]:
    return {"source": node, "target": f"pattern:{pattern}", "type": "pattern_instance_of",
            "weight": round(min(1.0, confidence), 2),
            "properties": {"source_file": rel, "tier": 2, "rule": rule, "confidence": round(min(1.0, confidence), 2), **extra}}


def _node_patterns(n: dict[str, Any]) -> list[tuple[str, float, str]]:
    p, name, t = n["properties"], n["name"], n["type"]
    feats = set(p.get("features") or ())
    found: list[tuple[str, float, str]] = []
    lines = int(p.get("lines") or 0)
    if t == "class":
        if "instance_attribute" in feats and feats & {"overrides_new", "instance_accessor"}:
            found.append(("singleton", 0.9 if "overrides_new" in feats else 0.8, "instance attribute + __new__/instance()"))
        for suffix, pattern in (("Factory", "factory"), ("Registry", "registry"), ("Adapter", "adapter"),
                                ("Wrapper", "adapter"), ("Proxy", "adapter"), ("Decorator", "decorator")):
            if name.endswith(suffix) and name != suffix:
                found.append((pattern, 0.9 if pattern != "adapter" else 0.8, f"class name ends with {suffix}"))
        if "register_method" in feats and not name.endswith("Registry"):
            found.append(("registry", 0.7, "class with a register method"))
        if "delegates_getattr" in feats and not any(f[0] == "adapter" for f in found):
            found.append(("adapter", 0.7, "delegates attribute access with __getattr__"))
        methods = int(p.get("methods") or 0)
        if methods >= GOD_METHODS and lines >= GOD_LINES:
            found.append(("god_class", methods / 40, f"{methods} methods, {lines} lines"))
        return found
    if "returns_new_instance" in feats and re.match(r"(create|make|build|new)_?[A-Za-z]", name):
        found.append(("factory", 0.8, "create/make/build function returning a new instance"))
    if name.lower().startswith("register") and "stores_in_mapping" in feats:
        found.append(("registry", 0.85, "register function storing into a mapping"))
    if "returns_inner_function" in feats:
        found.append(("decorator", 0.9 if "uses_wraps" in feats else 0.6, "returns an inner function"
                      + (" (functools.wraps)" if "uses_wraps" in feats else "")))
    if lines >= LONG_LINES:
        found.append(("long_function", lines / 160, f"{lines} lines"))
    return found


def _cycles(import_edges: Iterable[tuple[str, str, str]]) -> list[tuple[set[str], dict[str, str]]]:
    """Strongly connected components (Tarjan, iterative) of >= 2 modules; ``rel_of`` maps module -> file."""
    graph: dict[str, set[str]] = defaultdict(set)
    rel_of: dict[str, str] = {}
    for src, dst, rel in import_edges:
        graph[src].add(dst)
        rel_of.setdefault(src, rel)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    for start in list(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) >= 2 and all(m in rel_of for m in comp):
                    out.append((comp, rel_of))
    return out


# -- cue phrases --------------------------------------------------------------------------------------
# (relation, regex of the cue, confidence, object kind): "node" -> symbol or concept, else a clause node type
CUES: tuple[tuple[str, re.Pattern[str], float, str], ...] = (
    ("alternative_to", re.compile(r"\b(?:is an alternative to|as an alternative to|instead of|rather than)\s+", re.IGNORECASE), 0.6, "node"),
    ("requires", re.compile(r"\b(?:requires|depends on|relies on)\s+", re.IGNORECASE), 0.7, "node"),
    ("requires", re.compile(r"\b(?:needs)\s+", re.IGNORECASE), 0.6, "node"),
    ("enables", re.compile(r"\b(?:enables|makes it possible to)\s+", re.IGNORECASE), 0.7, "node"),
    ("enables", re.compile(r"\b(?:allows(?: you to)?|lets you)\s+", re.IGNORECASE), 0.6, "node"),
    ("feeds_into", re.compile(r"\b(?:feeds into|is fed (?:in)?to|is passed to|is piped (?:in)?to|pipes into)\s+", re.IGNORECASE), 0.7, "node"),
    ("has_limitation", re.compile(r"\b(?:cannot|can't|can not|does not support|doesn't support|is not supported|"
                                  r"is limited to|only supports|only works)\b", re.IGNORECASE), 0.7, "limitation"),
    ("has_workaround", re.compile(r"\b(?:as a workaround|to work around|workaround:)\s*", re.IGNORECASE), 0.7, "workaround"),
)
ANY_CUE = re.compile("|".join(f"(?:{c.pattern})" for _, c, _, _ in CUES), re.IGNORECASE)
PRONOUNS = frozenset({"it", "this", "that", "they", "these", "those", "which", "you", "we", "one"})
# words dropped from a subject phrase: articles and the imperative verbs of advice ("use X instead of Y")
FILLER = frozenset({"the", "a", "an", "and", "or", "to", "it", "use", "using", "prefer", "choose", "try", "pick"})
MAX_SENTENCES = 200  # per text node: a long chunk is scanned, a book is not


class CueExtractor:
    """Typed relations from the text of docstrings and chunks; ``symbol(text)`` resolves a phrase to a
    known node id (the linker's mention resolution) or None."""

    def __init__(self, symbol: Callable[[str, bool], str | None]) -> None:
        self.symbol = symbol
        self.concepts: dict[str, dict[str, Any]] = {}

    def run(self, groups: dict[str, Facts]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for rel, facts in groups.items():
            for n in facts.nodes:
                if n["description"] and n["type"] in ("chunk", "class", "function", "method", "module", "package"):
                    owner = n["id"] if n["type"] != "chunk" else n["id"].rsplit("/", 1)[0]
                    out[rel].extend(self._text(n["description"], owner, rel))
        return out

    def _text(self, text: str, owner: str, rel: str) -> Iterable[dict[str, Any]]:
        if not ANY_CUE.search(text):  # most texts hold no cue: one scan instead of a split and 8 per sentence
            return
        last_limitation = None
        for sentence in sentences(text)[:MAX_SENTENCES]:
            if not ANY_CUE.search(sentence):
                continue
            for relation, cue, confidence, kind in CUES:
                m = cue.search(sentence)
                if not m:
                    continue
                edge = self._relation(sentence, m, relation, confidence, kind, owner, rel, last_limitation)
                if edge:
                    if relation == "has_limitation":
                        last_limitation = edge["target"]
                    yield edge
                break  # one relation per sentence: the first cue in table order

    def _relation(self, sentence: str, m: re.Match[str], relation: str, confidence: float, kind: str, owner: str,
                  rel: str, last_limitation: str | None) -> dict[str, Any] | None:
        subject, s_known = self._subject(sentence[:m.start()], owner)
        if kind == "node":
            phrase = bound_phrase(sentence[m.end():])
            if not phrase:
                return None
            target, t_known = self._node(phrase)
        else:
            clause = _clause(sentence[m.start():] if kind == "limitation" else sentence[m.end():])
            if not clause:
                return None
            target, t_known = self._concept(clause, kind), False
            if kind == "workaround" and last_limitation:
                subject, s_known = last_limitation, True
        if not subject or not target or subject == target:
            return None
        conf = round(confidence - (0.1 if not (s_known and t_known) else 0.0), 2)
        return {"source": subject, "target": target, "type": relation, "weight": conf,
                "properties": {"source_file": rel, "tier": 2, "evidence": sentence.strip()[:300],
                               "confidence": conf, "cue": m.group(0).strip()}}

    def _subject(self, before: str, owner: str) -> tuple[str | None, bool]:
        words = re.findall(r"[\w.`()]+", before)[-4:]
        words = [w.strip("`") for w in words]
        if not words or words[-1].lower() in PRONOUNS or (len(words) >= 2 and words[-2].lower() in ("this", "the")
                                                            and words[-1].lower() in ("function", "method", "class", "module")):
            return owner, True
        for w in reversed(words):
            found = self.symbol(w, True)
            if found:
                return found, True
        tail: list[str] = []  # the noun phrase right before the cue: back to the first stopword
        for w in reversed(words):
            if w.lower() in STOPWORDS or w.lower() in PRONOUNS or w.lower() in FILLER:
                break
            tail.insert(0, w)
        phrase = " ".join(tail[-3:])
        return (self._concept(phrase, "concept"), False) if len(phrase) >= 3 else (owner, True)

    def _node(self, phrase: str) -> tuple[str | None, bool]:
        for w in phrase.split():
            found = self.symbol(w.strip("`"), True)
            if found:
                return found, True
        return self._concept(phrase, "concept"), False

    def _concept(self, phrase: str, kind: str) -> str | None:
        phrase = " ".join(phrase.split())[:120]
        if len(phrase) < 3 or pii_reason(phrase) is not None:
            return None
        nid = f"{kind}:{slugify(phrase)[:80]}"
        self.concepts.setdefault(nid, {"id": nid, "name": phrase, "type": kind, "description": "",
                                       "properties": {"source": CONCEPTS, "tier": 2}})
        return nid


def _clause(text: str, max_words: int = 10) -> str | None:
    words = re.split(r"\s+", re.split(r"[.;:!?()\[\]]", text.strip(), maxsplit=1)[0].strip())
    clause = " ".join(words[:max_words]).strip(" ,")
    return clause if len(clause) >= 4 else None
