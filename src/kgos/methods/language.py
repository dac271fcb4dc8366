"""The little English the query methods need: goal keywords, intent verbs, action verbs, clause
splitting (methods 2, 3 and 4 of spec/000 section 6).

Everything here is rules, deliberately conservative: a goal is split into sub-goals only at a
conjunction (or comma) that is followed by an action verb, so "read CSV and Excel files" stays one
step while "read CSV data, analyze trends and generate a report" becomes three.

>>> decompose("read CSV data, analyze trends and generate a report")
['read CSV data', 'analyze trends', 'generate a report']
>>> decompose("read CSV and Excel files then chart the totals")
['read CSV and Excel files', 'chart the totals']
>>> decompose("generate a report after analyzing the trends")
['analyzing the trends', 'generate a report']
>>> goal_keywords("I want to reduce my API costs")
(['reduce', 'api', 'costs'], ['reduce', 'costs'])
"""

from __future__ import annotations

import re

from ..index.text import STOPWORDS, tokenize
from ..retrieval.intents import KEYWORD_BOOST, keyword_weight

# Words that carry no goal: the text index's stopwords plus how people phrase wishes and questions.
FILLER = STOPWORDS | frozenset("""want wants wanted need needs would like please help let lets able possible
should could way ways something thing things just also really get got im id ive us any some it""".split())

# spec/000 method 2: "reduce", "build", "optimize", "secure" and their kin get 5x BM25 weight.
INTENT_VERBS = frozenset("""reduce lower cut save minimize minimise decrease shrink build create make develop
optimize optimise improve speed accelerate boost increase maximize maximise scale secure protect prevent
avoid harden automate fix debug deploy monitor""".split())

# Verbs that start a sub-goal (method 4). Nouns that double as verbs ("report", "plot") are included:
# they only split a goal when they follow a conjunction, where they are nearly always verbs.
ACTION_VERBS = frozenset("""read load import parse extract fetch download upload ingest scrape crawl collect
gather open analyze analyse summarize summarise generate create build write produce make draft plot chart
visualize visualise clean transform convert filter sort merge join aggregate group validate verify check
test run execute deploy search find query retrieve look classify categorize label tag translate send email
notify publish post share store save persist index embed train tune finetune evaluate compare rank score
monitor track log refactor edit modify update fix debug review cache batch reduce optimize optimise improve
stream render format export encode decode compress split chunk tokenize detect identify predict forecast
recommend answer call invoke process prepare schedule automate migrate backup restore sync transcribe
describe explain plan design implement integrate connect secure encrypt authenticate compute calculate
count measure report present display show print use apply add remove delete insert replace""".split())

_CLAUSE_RE = re.compile(r"\s*(?:[,;]|->|→|\band then\b|\bthen\b|\band\b|\bafter\b|\bbefore\b|\bfinally\b|"
                        r"\bnext\b|\bafterwards\b)\s*", re.IGNORECASE)
_PREFIX_RE = re.compile(r"^\s*(?:(?:i|we)\s+(?:want|need|would like|'d like)\s+to|how\s+(?:do|can|could|should)\s+"
                        r"(?:i|we|you)|help\s+me(?:\s+to)?|please|can\s+you|i'd\s+like\s+to)\s+", re.IGNORECASE)
_QUESTION_RE = re.compile(r"^\s*(?:can|could|does|do|is|are|will|would)\s+(?:it|you|this|they|the\s+\w+|\w+)\s+"
                          r"(?:be\s+able\s+to|able\s+to|support|handle|manage\s+to|possibly)?\s*", re.IGNORECASE)


def lemma(token: str) -> str:
    """The action verb a token inflects, or the token: ``analyzing`` -> ``analyze``, ``reads`` -> ``read``."""
    t = token.lower()
    if t in ACTION_VERBS or t in INTENT_VERBS:
        return t
    for suffix, repl in (("ying", "y"), ("ing", "e"), ("ing", ""), ("ied", "y"), ("ed", "e"), ("ed", ""),
                         ("ies", "y"), ("es", ""), ("s", "")):
        if t.endswith(suffix) and len(t) - len(suffix) >= 2:
            base = t[: -len(suffix)] + repl
            if base in ACTION_VERBS or base in INTENT_VERBS:
                return base
            doubled = suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]
            if doubled and base[:-1] in ACTION_VERBS:  # running -> run
                return base[:-1]
    return t


def is_action_verb(token: str) -> bool:
    return lemma(token) in ACTION_VERBS


def goal_keywords(goal: str) -> tuple[list[str], list[str]]:
    """(keywords, intent keywords): the goal's words minus filler, and those weighted 5x
    (intent verbs and the goal_based keywords of spec/001 1.4, e.g. cost, save, fast)."""
    words = [t for t in tokenize(strip_prefix(goal)) if t not in FILLER]
    keywords = list(dict.fromkeys(words))
    return keywords, [w for w in keywords if intent_weight(w) > 1.0]


def intent_weight(token: str) -> float:
    """5.0 for intent verbs and goal keywords, else 1.0 (spec/000 method 2, spec/001 1.4)."""
    if lemma(token) in INTENT_VERBS:
        return KEYWORD_BOOST
    return keyword_weight(token, "goal_based")


def strip_prefix(text: str) -> str:
    """Drop "I want to", "how do I", "help me", "please" from the front of a goal."""
    return _PREFIX_RE.sub("", text.strip())


def capability_text(question: str) -> str:
    """The capability a question asks about: "Can it edit binary files?" -> "edit binary files"."""
    text = question.strip().rstrip("?!. ")
    text = _QUESTION_RE.sub("", strip_prefix(text), count=1)
    return re.sub(r"^\s*to\s+", "", text) or question.strip()


def decompose(goal: str) -> list[str]:
    """Sub-goals in execution order: split at conjunctions, commas and "then", keep a clause as a new
    sub-goal only when an action verb leads it (else it rejoins the previous one), and put the
    clause after "after" first ("X after Y" runs Y, then X)."""
    text = strip_prefix(goal)
    parts = _CLAUSE_RE.split(text)
    joiners = [m.group(0) for m in _CLAUSE_RE.finditer(text)]
    clauses: list[str] = []
    after_at: list[int] = []
    for i, part in enumerate(parts):
        part = part.strip()
        joiner = joiners[i - 1] if i > 0 else ""
        if not part:
            continue
        if clauses and not leads_with_verb(part):
            clauses[-1] = f"{clauses[-1]}{joiner.rstrip() if joiner.strip() in (',', ';') else ' ' + joiner.strip()} {part}"
            continue
        if joiner.strip().lower() == "after" and clauses:
            after_at.append(len(clauses))
        clauses.append(part)
    for pos in after_at:  # "X after Y": Y runs first
        clauses[pos - 1], clauses[pos] = clauses[pos], clauses[pos - 1]
    return clauses


def leads_with_verb(clause: str) -> bool:
    words = [t for t in tokenize(clause) if t not in ("also", "then", "to", "i", "we", "finally", "please")]
    return bool(words) and is_action_verb(words[0])


def has_action_verb(text: str) -> bool:
    return any(is_action_verb(t) for t in tokenize(text))
