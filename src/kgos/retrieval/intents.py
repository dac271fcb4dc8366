"""The 8 retrieval intents of spec/001 section 1.3: a regex priority cascade that picks the weight
profile (1.2), the query keywords boosted 5x in BM25 (1.4) and the edge types of the intent-edge
signal (1.7). The 14 KG-OS categories that route query methods live with the methods.

>>> classify("fix the crash in streaming").name
'debugging'
>>> classify("Claude vs Gemini for coding").name
'comparison'
>>> classify('"context caching"').name
'exact_match'
>>> classify("browse the caching options").name, classify("the browser agent times out on popups").name
('exploratory', 'goal_based')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument
from ..index.text import spec_stem
from .vocabulary import INTENTS

# Cascade order of spec/001 1.3: first match wins, "ordered by specificity". The exact_match
# patterns are about the query's shape (CamelCase, snake-or-kebab, file.ext), so they are matched
# case-sensitively; the word lists of the others case-insensitively. The spec closes stems such as
# "automat", "reduc" or "improv" with \b, which would never match "automate" or "improve": here stems
# match as word prefixes and whole words keep their boundary.
# The spec's exploratory stems name the verbs (explore, browse); as prefixes they also caught the nouns
# "browser" and "explorer" ("the browser agent breaks...", "run on a browser which supports JavaScript"),
# which ask for a thing, not a tour: verb forms only (python-stdlib dev: 2 of 5 such probes 2nd -> 1st,
# none lower; docs/defaults.md "Demo probes and exact names").
_EXPLORE_VERBS = r"\b(explor(e|es|ed|ing|ation)|brows(e|es|ed|ing))\b"
_CASCADE: list[tuple[str, list[re.Pattern[str]]]] = [
    ("exact_match", [re.compile(p) for p in (r'^"[^"]+"$', r"^[A-Z][a-zA-Z]+$", r"^[a-z]+[-_][a-z]+",
                                            r"^\w+\.\w+$")]),
    ("debugging", [re.compile(r"\b(error|fail|debug|fix|broken|issue|crash|bug|exception|traceback)\b", re.I)]),
    ("capability_check", [re.compile(p, re.I) for p in (r"\bcan\s+(it|you|this)\b", r"\bdoes\s+\w+\s+support\b",
                                                         r"\bis\s+\w+\s+(able|capable)\b")]),
    ("workflow", [re.compile(p, re.I) for p in (r"\b(pipeline|workflow|step.by.step|chain)s?\b",
                                                 r"\b(automat|sequenc)\w*", r"^how\s+(to|do\s+I)\b")]),
    ("comparison", [re.compile(p, re.I) for p in (r"\b(vs|versus|which\s+is\s+better|alternatives?)\b",
                                                   r"\b(compar|differ)\w*")]),
    ("goal_based", [re.compile(p, re.I) for p in (r"\b(I\s+want\s+to|how\s+do\s+I)\b", r"\b(reduc|improv|achiev|optim)\w*",
                                                   r"\b(increase|decrease|minimize|maximize)\b")]),
    ("exploratory", [re.compile(p, re.I) for p in (r"\b(list|show\s+me|what\s+are|overview)\b", _EXPLORE_VERBS,
                                                    r"^tell\s+me\s+about\b")]),
]
SEMANTIC_MIN_WORDS = 11  # "query > 10 words" (spec/001 1.3 step 2)

# Weight profiles (alpha embedding, beta text, gamma graph, delta intent), spec/001 1.2.
PROFILES: dict[str, tuple[float, float, float, float]] = {
    "exact_match": (0.15, 0.65, 0.10, 0.10),
    "capability_check": (0.30, 0.55, 0.10, 0.05),
    "debugging": (0.30, 0.45, 0.20, 0.05),
    "workflow": (0.30, 0.25, 0.30, 0.15),
    "comparison": (0.35, 0.30, 0.25, 0.10),
    "goal_based": (0.40, 0.25, 0.15, 0.20),
    "exploratory": (0.45, 0.20, 0.25, 0.10),
    "semantic": (0.55, 0.15, 0.15, 0.15),
}
NO_MATCH_WEIGHTS = (0.40, 0.45, 0.15, 0.0)  # spec/001 1.2 "default profile (no match)"

# KG-OS's default profiles: fitted on the dev probes of bench/cli-man and bench/go together (each
# dataset weighted equally), per intent with >= 30 probes, "_default" for the rest, on a 0.05 grid;
# 5-fold held-out MRR@10 vs the spec profiles: go 0.437 -> 0.501, cli-man 0.329 -> 0.328
# (docs/quality.md). The spec's table stays selectable: SearchOptions(profiles="spec").
KGOS_PROFILES: dict[str, tuple[float, float, float, float]] = {
    "_default": (0.70, 0.25, 0.00, 0.05),
    "comparison": (0.75, 0.05, 0.10, 0.10),
    # exact_match follows no edge types, so its intent signal is 0 on every node: the 0.45 the fit put on
    # delta only shrank the weighted sum against the name signal. It goes to text, where an exact term
    # is (issue 32; benchmarks/exact_match_profile.py, MRR@10 of the exact_match dev probes: go (271)
    # 0.509 -> 0.518, recall@10 0.768 -> 0.804; demo (6) 0.917 -> 1.000; demo-extra (5) 0.867 -> 1.000;
    # cli-man (2) 0.500 = 0.500).
    "exact_match": (0.50, 0.50, 0.00, 0.00),
    "exploratory": (0.30, 0.20, 0.05, 0.45),
    "goal_based": (0.65, 0.30, 0.05, 0.00),
    "semantic": (0.60, 0.40, 0.00, 0.00),
}
EXPERT_DEFAULT_WEIGHTS = (0.35, 0.40, 0.15, 0.10)  # spec/000 section 7, default of a new expert

# Keywords boosted 5x in the BM25 query, in the stemmed forms of spec/001 1.4 (its 18-suffix stemmer).
KEYWORDS: dict[str, frozenset[str]] = {
    "debugging": frozenset("error fail debug fix broken issu crash bug except traceback".split()),
    "goal_based": frozenset("cost reduc improv optim fast cheap save effici increas decreas".split()),
    "workflow": frozenset("step pipelin flow chain sequenc automat process how".split()),
    "capability_check": frozenset("support compat handl enabl provid capabl".split()),
    "comparison": frozenset("compar differ vs better altern versus".split()),
    "exploratory": frozenset("explor brows list show discov overview".split()),
    "exact_match": frozenset(),
    "semantic": frozenset(),
}
KEYWORD_BOOST = 5.0

# Edge types each intent's delta signal follows, spec/001 1.7.
INTENT_EDGE_TYPES: dict[str, tuple[str, ...]] = {
    "exact_match": (),
    "capability_check": ("supports", "has_capability", "enables", "has_limitation"),
    "debugging": ("has_limitation", "has_workaround", "causes", "fixes"),
    "workflow": ("feeds_into", "requires", "followed_by", "depends_on", "enables"),
    "comparison": ("similar_to", "alternative_to", "complements"),
    "goal_based": ("enables", "supports", "implements", "provides", "solves", "used_for"),
    "exploratory": ("relates_to", "contains", "part_of"),
    "semantic": ("relates_to", "similar_to", "part_of"),
}
TWO_HOP_INTENTS = frozenset({"workflow", "exploratory"})  # spec/001 1.6 step 3

# Issue 13 lever 0: the edges that answer a goal, a benefit or a problem. A query that restates the
# problem finds the problem's node; the fix is one hop away. "in": the answer is the edge's source
# (feature --enables--> benefit, workaround --fixes--> limitation); "out": its target
# (limitation --has_workaround--> workaround, capability --requires--> feature). Each type was kept by
# measurement on the demo KG's probes (docs/defaults.md: dropping requires, alternative_to or
# contributes_to, or leaving out used_for, each lost 0.003-0.016 MRR@10).
SOLUTION_EDGES_IN = ("enables", "reduces", "fixes", "solves", "optimizes", "achieves", "mitigates", "prevents",
                     "improves", "addresses", "resolves", "contributes_to", "used_for", "alternative_to")
SOLUTION_EDGES_OUT = ("has_workaround", "solved_by", "fixed_by", "mitigated_by", "achieved_by", "addressed_by",
                      "requires", "alternative_to")
# How much of a seed's score each solution edge passes on (SearchOptions.solution_edges; unlisted
# solution edges weigh 1.0). "graded": the edges that lead to a prerequisite, a part or a substitute
# rather than to the fix itself weigh half (docs/defaults.md "Solution hop re-measured").
SOLUTION_EDGE_WEIGHTS: dict[str, dict[str, float]] = {
    "uniform": {},
    "graded": {"requires": 0.5, "contributes_to": 0.5, "used_for": 0.5, "alternative_to": 0.5},
}

# Edge-type weights of the graph signal, spec/001 1.6; unlisted types weigh as relates_to (0.5).
EDGE_TYPE_WEIGHTS: dict[str, float] = {
    "implements": 1.0, "provides": 1.0, "enables": 0.9, "used_for": 0.9, "depends_on": 0.8,
    "requires": 0.8, "feeds_into": 0.8, "followed_by": 0.7, "part_of": 0.7, "similar_to": 0.6,
    "complements": 0.6, "relates_to": 0.5, "has_workaround": 0.4, "alternative_to": 0.4,
    "has_limitation": 0.3,
}
DEFAULT_EDGE_TYPE_WEIGHT = EDGE_TYPE_WEIGHTS["relates_to"]


@dataclass(frozen=True)
class Intent:
    """A classified retrieval intent. ``source``: pattern, length, default or explicit."""

    name: str
    source: str
    score: float

    @property
    def matched(self) -> bool:
        return self.source != "default"

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.name, "score": self.score, "source": self.source}


def classify(query: str) -> Intent:
    """Run the cascade: first matching pattern family, else > 10 words -> semantic, else goal_based."""
    text = query.strip()
    for name, patterns in _CASCADE:
        if any(p.search(text) for p in patterns):
            return Intent(name, "pattern", 1.0)
    if len(text.split()) >= SEMANTIC_MIN_WORDS:
        return Intent("semantic", "length", 0.5)
    return Intent("goal_based", "default", 0.0)


def explicit(name: str) -> Intent:
    if name not in PROFILES:
        raise InvalidArgument(f"unknown intent {name!r}; choose one of: {', '.join(INTENTS)}")
    return Intent(name, "explicit", 1.0)


def keyword_weight(token: str, intent: str) -> float:
    """5.0 when the token is one of the intent's keywords (spec/001 1.4), else 1.0.

    >>> keyword_weight("optimization", "goal_based"), keyword_weight("tar", "goal_based")
    (5.0, 1.0)

    A keyword matches when the token's spec stem equals it or extends it (``reduce`` -> ``reduc``).
    """
    keywords = KEYWORDS.get(intent, frozenset())
    stem = spec_stem(token)
    return KEYWORD_BOOST if stem in keywords or any(stem.startswith(k) for k in keywords if len(k) >= 4) else 1.0
