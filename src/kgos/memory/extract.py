"""Deterministic extraction (spec/002 "Phase 1: Deterministic Extraction (Always On)").

Text in, entities and ``user --[predicate]--> object`` relations out, with spec/002's pattern families
and weights:

| family      | cues                                                | edge                         | weight |
|-------------|-----------------------------------------------------|------------------------------|--------|
| project     | "working on X", "project X", "X project"            | (entity; title-cased)        |        |
| tool        | the known-tools list, word boundaries               | (entity)                     |        |
| file        | ``/``, ``./``, ``../``, ``~/``; ``C:\\``, ``\\\\host`` | (entity)                     |        |
| preference  | "I prefer / like / enjoy X" (also "love")           | user --[prefers]--> X        | 1.0    |
| decision    | "decided to X", "choosing X", "going with X"        | user --[decided]--> decision | 1.0    |
| work        | "working on / building / developing X"              | user --[works_on]--> project | 0.9    |
| work        | "I'm / we're / I've been building X" (one word)     | user --[works_on]--> project | 0.9    |
| usage       | "using X", "with X", "via X"                        | user --[uses]--> tool        | 0.8    |
| usage       | "I (always) use X" (spec's "strong implication")    | user --[uses]--> tool        | 0.9    |
| context     | project and tool in one sentence                    | project --[uses]--> tool     | 0.7    |
| context     | project or decision and file in one sentence        | X --[references]--> file     | 0.7    |

"building X with Y" (a work cue and a usage cue in one sentence) gives ``project --[uses]--> tool``
at the usage weight 0.8. Precision rules, because "with X" and "via X" are noisy: captured phrases
are 1-4 words (decisions up to 8) and stop at punctuation, stopwords and pronouns; "with"/"via"
only accept known tools; "using" also accepts a name-like phrase (capitalised or technical);
"building"/"developing" need a determiner or a name ("building a parser", not "developing
countries"). E-mails, URLs, phone numbers and addresses are masked out of the text first and every
candidate passes the PII filter, so nothing personal becomes an entity. Home-directory user names in
paths are replaced by ``~`` for the same reason.

Extraction is linear in the text (token lookups, anchored regexes with bounded tails) and bounded
by the ``max_entities`` / ``max_relations`` caps.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..model import normalize_name
from . import pii
from .vocabulary import CLAUSE_BREAKS, DETERMINERS, GENERIC, PRONOUNS, STOPWORDS, cased_tools, known_tools

EXPLICIT, STRONG, USAGE, CONTEXTUAL = 1.0, 0.9, 0.8, 0.7  # spec/002 "Weight Semantics"
ENTITY_TYPES = ("user", "project", "tool", "file", "concept", "decision")
PREDICATES = ("prefers", "decided", "works_on", "uses", "references")
USER_ID = "entity:user:primary"
USER_NAME = "Primary User"


@dataclass(frozen=True, slots=True)
class EntityRef:
    """An entity as extraction names it; the KG identifies it by (normalised name, type)."""

    name: str
    type: str

    @property
    def key(self) -> tuple[str, str]:
        return normalize_name(self.name), self.type

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "type": self.type}


USER = EntityRef(USER_NAME, "user")


@dataclass(frozen=True, slots=True)
class Relation:
    """``subject --[predicate]--> object`` with its weight and the pattern (or "llm") that found it."""

    subject: EntityRef
    predicate: str
    object: EntityRef
    weight: float
    pattern: str | None
    src: str = "deterministic"

    @property
    def key(self) -> tuple[tuple[str, str], str, tuple[str, str]]:
        return self.subject.key, self.predicate, self.object.key

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject.to_dict(), "predicate": self.predicate,
                "object": self.object.to_dict(), "weight": self.weight, "pattern": self.pattern,
                "src": self.src}


@dataclass(frozen=True)
class Extraction:
    entities: tuple[EntityRef, ...] = ()
    relations: tuple[Relation, ...] = ()
    truncated: bool = False  # a cap was reached; later mentions were ignored

    def to_dict(self) -> dict[str, Any]:
        return {"entities": [e.to_dict() for e in self.entities],
                "relations": [r.to_dict() for r in self.relations], "truncated": self.truncated}

    def plus(self, other: Extraction) -> Extraction:
        """Both extractions, first occurrence of each entity and relation kept."""
        entities = {e.key: e for e in (*other.entities, *self.entities)}
        relations = {r.key: r for r in (*other.relations, *self.relations)}
        return Extraction(tuple(_ordered(entities, self.entities + other.entities)),
                          tuple(_ordered(relations, self.relations + other.relations)),
                          self.truncated or other.truncated)


def _ordered(table: dict[Any, Any], items: tuple[Any, ...]) -> Iterator[Any]:
    seen: set[Any] = set()
    for item in items:
        if item.key not in seen:
            seen.add(item.key)
            yield table[item.key]


# -- tokens and phrases ------------------------------------------------------------------------------
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|[\r\n]+|;\s+|\s+-{1,2}\s+")
_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w.+#'’-]*")
_TAIL_LEN = 160
_TAIL_STOP = re.compile(r"[,;:!?()\[\]{}\"“”<>|\x1f]")
_LIST_STOP = re.compile(r"[;:!?()\[\]{}\"“”<>|\x1f]")
_LIST_SPLIT = re.compile(r",|\s&\s|\band\b|\bor\b|\bas well as\b")
_QUOTES = "\"'“”‘’`"
_TECHNICAL = re.compile(r"[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]|[.+#_]\w")
_POSSESSIVE = re.compile(r"['’]s$")
_VERSION = re.compile(r"^(.*?[A-Za-z+#])(\d{1,2})(?:\.\d+)*$")
_TOOLS = known_tools()
_CASED = set(cased_tools())
_MULTI = max(len(name.split()) for name in _TOOLS)


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_RE.split(text) if s and s.strip()]


def title(phrase: str) -> str:
    """Capitalise each word, keeping inner capitals ("PhD research" -> "PhD Research")."""
    return " ".join(w[:1].upper() + w[1:] for w in phrase.split())


def _words(tail: str) -> Iterator[tuple[str, bool]]:
    """Words of a tail with quotes trimmed, and whether the word ends the sentence."""
    for raw in tail.split():
        word = raw.strip(_QUOTES)
        ends = word.endswith(".")
        word = word.rstrip(".").strip(_QUOTES)
        base = _POSSESSIVE.sub("", word)
        yield base, ends or base != word  # "Milton's parser": the name ends at the possessive


def bound_phrase(tail: str, max_words: int = 4) -> str | None:
    """The entity phrase at the start of ``tail``: leading determiners dropped, ended by a stopword,
    a pronoun, a number or punctuation, at most ``max_words`` words. None if nothing is left."""
    words: list[str] = []
    for word, ends in _words(_TAIL_STOP.split(tail[:_TAIL_LEN], 1)[0]):
        low = word.lower()
        if not words and low in DETERMINERS:
            continue
        if not word or (low in STOPWORDS and word not in _CASED) or low in PRONOUNS \
                or not any(c.isalpha() for c in word):
            break
        words.append(word)
        if ends or len(words) == max_words:
            break
    return " ".join(words) if words and _acceptable(words) else None


def _acceptable(words: list[str]) -> bool:
    phrase = " ".join(words)
    return len(phrase) >= 2 and pii.pii_reason(phrase) is None


def clause_phrase(tail: str, max_words: int = 8) -> str | None:
    """A decision's verb phrase: up to a clause break ("because", "but", punctuation)."""
    words: list[str] = []
    for word, ends in _words(_TAIL_STOP.split(tail[:_TAIL_LEN], 1)[0]):
        if not word or word.lower() in CLAUSE_BREAKS:
            break
        words.append(word)
        if ends or len(words) == max_words:
            break
    content = [w for w in words if w.lower() not in STOPWORDS and w.lower() not in PRONOUNS]
    return " ".join(words) if content and _acceptable(words) else None


def name_like(phrase: str) -> bool:
    """Capitalised or technical-looking (FastAPI, Node.js, gpt-4): how names differ from prose."""
    first = phrase.split()[0]
    return first[:1].isupper() or bool(_TECHNICAL.search(first))


def is_path(text: str) -> bool:
    return bool(_FILE_RE.match(text) or _WIN_RE.match(text))


# -- tools -------------------------------------------------------------------------------------------
def _tool_name(token: str, first: bool) -> str | None:
    if token in _CASED:
        return None if first else token
    name = _TOOLS.get(token.lower())
    if name is not None:
        return name
    m = _VERSION.match(token)  # "python3" -> "Python3": its own entity, proposed as an alias of Python
    if m and (base := _TOOLS.get(m.group(1).lower())) is not None and " " not in base:
        return base + m.group(2)
    return None


def find_tools(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, canonical name) of each known tool in a sentence; multi-word names first."""
    tokens = [(m.start(), m.end(), _POSSESSIVE.sub("", m.group()).rstrip(".'’-"))
              for m in _TOKEN_RE.finditer(sentence)]
    found, i = [], 0
    while i < len(tokens):
        for n in range(min(_MULTI, len(tokens) - i), 0, -1):
            span = tokens[i:i + n]
            text = " ".join(t[2] for t in span)
            name = _TOOLS.get(text.lower()) if n > 1 else _tool_name(text, first=i == 0)
            if name is not None:
                found.append((span[0][0], span[-1][1], name))
                i += n
                break
        else:
            i += 1
    return found


def tool_at_start(phrase: str) -> str | None:
    """The known tool a phrase starts with ("Python scripts" -> "Python")."""
    hits = find_tools("x " + phrase)  # the prefix keeps the phrase's first word off sentence start
    return hits[0][2] if hits and hits[0][0] == 2 else None


# -- files -------------------------------------------------------------------------------------------
_SEG = r"[\w.@+~%-]{1,255}"
_FILE_RE = re.compile(rf"(?<![\w:/.~\\-])(?:\.\.?/|~/|/)(?:{_SEG}/){{0,32}}{_SEG}/?")
_WIN_RE = re.compile(r"(?<![\w])(?:[A-Za-z]:\\|\\\\[\w.$-]{1,64}\\)(?:[^\\/:*?\"<>|\s,;]{1,255}\\){0,32}"
                     r"[^\\/:*?\"<>|\s,;]{0,255}")
_HOME_RE = re.compile(r"^(?:/home/|/Users/)[^/]+(?=/|$)|^[A-Za-z]:\\Users\\[^\\]+(?=\\|$)", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\""


def find_files(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, path) of Unix and Windows paths; user names in home folders become ``~``."""
    found = []
    for pattern in (_FILE_RE, _WIN_RE):
        for m in pattern.finditer(sentence):
            path = m.group().rstrip(_TRAILING)
            if _is_file_like(path) and pii.pii_reason(path) is None:
                found.append((m.start(), m.start() + len(path), _redact_home(path)))
    return found


def _is_file_like(path: str) -> bool:
    # A bare "/word" is usually prose ("and/or" is excluded by the look-behind; "/s" is slang).
    if path.startswith(("./", "../", "~/", "\\\\")) or path[1:3] == ":\\":
        return len(path) > 3
    return path.count("/") >= 2 or "." in path.rsplit("/", 1)[-1]


def _redact_home(path: str) -> str:
    return _HOME_RE.sub("~", path)


def _mask_spans(sentence: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, _ in sorted(spans, reverse=True):
        sentence = sentence[:start] + pii.MASK + sentence[end:]
    return sentence


# -- pattern families (each: sentence -> relations with the user as subject) -------------------------
def _after(regex: re.Pattern[str], sentence: str) -> Iterator[tuple[re.Match[str], str]]:
    for m in regex.finditer(sentence):
        yield m, sentence[m.end():m.end() + _TAIL_LEN]


def _items(tail: str, phrase: Callable[[str], str | None]) -> Iterator[tuple[int, str]]:
    """The phrases of the list a cue governs: "Python, Docker and Git for ..." -> Python, Docker, Git.
    The list goes on only while each item is exactly its phrase ("Milton using Python and Docker"
    is one item: Docker belongs to "using")."""
    for i, item in enumerate(_LIST_SPLIT.split(_LIST_STOP.split(tail, 1)[0])):
        found = phrase(item)
        if found is None:
            return
        yield i, found
        if _squash(found) != _squash(item):
            return


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", _POSSESSIVE.sub("", text.strip())).lower()


def _tool_or_concept(phrase: str) -> EntityRef:
    tool = tool_at_start(phrase)
    return EntityRef(tool, "tool") if tool else EntityRef(title(phrase), "concept")


_PREFER_RE = re.compile(
    r"\bI(?:'d|’d|\s+would)\s+(prefer)\s+|\bI\s+(?:really\s+|also\s+|still\s+|much\s+|generally\s+|"
    r"usually\s+|strongly\s+|definitely\s+|do\s+|mostly\s+|always\s+)?(prefer|like|enjoy|love)\s+",
    re.IGNORECASE)
_PREFER_LEAD = re.compile(r"^(?:to\s+use|using|to\s+work\s+with|working\s+with|to\s+code\s+in|coding\s+in|"
                          r"to\s+write\s+in|writing\s+in|to\s+program\s+in|programming\s+in)\s+", re.IGNORECASE)


def preferences(sentence: str) -> list[Relation]:
    """"I prefer/like/enjoy X" -> user --[prefers]--> X (1.0); X is a tool if known, else a concept."""
    out = []
    for m, tail in _after(_PREFER_RE, sentence):
        verb = (m.group(1) or m.group(2)).lower()
        tail = _PREFER_LEAD.sub("", tail.lstrip())
        if re.match(r"(?i)to\s", tail):  # "I like to run": an activity, not a thing
            continue
        for i, phrase in _items(tail, bound_phrase):
            if i and tool_at_start(phrase) is None:
                break
            out.append(Relation(USER, "prefers", _tool_or_concept(phrase), EXPLICIT, f"{verb}s_x"))
    return out


_DECIDE_RE = re.compile(r"\b(decided\s+to|decided\s+on|choosing|chose|opted\s+for|settled\s+on|going\s+with)\s+",
                        re.IGNORECASE)
_OPEN_CHOICE = {"between", "whether", "which", "what", "how", "where", "when", "who"}


def decisions(sentence: str) -> list[Relation]:
    """"decided to X", "choosing X", "going with X" -> decision X, user --[decided]--> X (1.0)."""
    out = []
    for m, tail in _after(_DECIDE_RE, sentence):
        cue = re.sub(r"\s+", "_", m.group(1).lower())
        phrase = clause_phrase(tail)
        if phrase is None or phrase.split()[0].lower() in _OPEN_CHOICE:
            continue
        # Only "decided to" announces a decision by itself; the others need a name in the phrase
        # ("going with Postgres", not "going with my friends").
        if cue != "decided_to" and not (find_tools("x " + phrase) or _has_name(phrase)):
            continue
        name = phrase[:1].upper() + phrase[1:]
        out.append(Relation(USER, "decided", EntityRef(name, "decision"), EXPLICIT, f"{cue}_x"))
    return out


def _has_name(phrase: str) -> bool:
    return any(name_like(w) for w in phrase.split() if w.lower() not in DETERMINERS | PRONOUNS)


_WORK_RE = re.compile(r"\b(working\s+on|work\s+on|building|developing)\s+", re.IGNORECASE)


# "I'm / I am / we're / I've been (currently) building X": the speaker names their own work, so a
# one-word lowercase name counts ("I'm developing quokkadb"), where bare "developing countries" does not.
_FIRST_PERSON_RE = re.compile(
    r"\b(?:I(?:'m|’m|\s+am|\s+was|'ve\s+been|’ve\s+been|\s+have\s+been|\s+had\s+been)|"
    r"we(?:'re|’re|\s+are|\s+were|'ve\s+been|’ve\s+been|\s+have\s+been))\s+"
    r"(?:(?:currently|now|still|also|actively|mostly|really|just|slowly)\s+)?$", re.IGNORECASE)


def work(sentence: str) -> list[Relation]:
    """"working on / building / developing X" -> project X, user --[works_on]--> X (0.9)."""
    out = []
    for m, tail in _after(_WORK_RE, sentence):
        cue = m.group(1).lower().split()[0]
        determined = tail.split(" ", 1)[0].lower() in DETERMINERS
        own = bool(_FIRST_PERSON_RE.search(sentence[max(0, m.start() - 40):m.start()]))
        for i, phrase in _items(tail, _project_phrase):
            one_word = own and not i and " " not in phrase
            if cue in ("building", "developing") and not (determined or name_like(phrase) or one_word):
                break
            if i and not name_like(phrase):
                break
            tool = tool_at_start(phrase)
            if tool and normalize_name(tool) == normalize_name(phrase):  # "working on Django": usage
                out.append(Relation(USER, "uses", EntityRef(tool, "tool"), USAGE, f"{cue}_tool"))
            else:
                out.append(Relation(USER, "works_on", EntityRef(title(phrase), "project"), STRONG, f"{cue}_x"))
    return out


def _project_phrase(tail: str, max_words: int = 4) -> str | None:
    phrase = bound_phrase(tail, max_words)
    if phrase is None:
        return None
    words = phrase.split()
    while words and words[0].lower() in GENERIC:
        words.pop(0)
    if len(words) > 1 and words[-1].lower() in ("project", "projects"):  # "the Milton project"
        words.pop()
    if not words or (words[0].endswith("ing") and words[0].islower()):  # "working on improving ...": a task
        return None
    return " ".join(words)


_USING_RE = re.compile(r"\b(using|with|via)\s+", re.IGNORECASE)
_I_USE_RE = re.compile(r"\bI\s+(?:always\s+|usually\s+|mostly\s+|often\s+|also\s+|still\s+|now\s+|mainly\s+|"
                       r"primarily\s+|only\s+|just\s+|generally\s+|regularly\s+)?use\s+", re.IGNORECASE)


def usage(sentence: str) -> list[Relation]:
    """"using / with / via X" -> tool X, user --[uses]--> X (0.8); "I (always) use X" (0.9)."""
    out = []
    for regex, weight in ((_USING_RE, USAGE), (_I_USE_RE, STRONG)):
        for m, tail in _after(regex, sentence):
            cue = m.group(1).lower() if regex is _USING_RE else "i_use"
            out += _used_tools(tail, cue, weight)
    return out


def _used_tools(tail: str, cue: str, weight: float) -> list[Relation]:
    out = []
    for i, phrase in _items(tail, lambda item: bound_phrase(item, 3)):
        tool = tool_at_start(phrase)
        # "with"/"via" (and later list items) only take known tools: "with my team", "via John".
        if tool is None and (i or cue in ("with", "via") or not name_like(phrase)):
            break
        out.append(Relation(USER, "uses", EntityRef(tool or phrase, "tool"), weight, f"{cue}_x"))
    return out


USER_PATTERNS: tuple[Callable[[str], list[Relation]], ...] = (preferences, decisions, work, usage)


# -- project mentions ("project X", "X project") -----------------------------------------------------
_PROJECT_AFTER = re.compile(r"\bproject\s+", re.IGNORECASE)
_PROJECT_BEFORE = re.compile(
    r"\b(?:(?i:the|my|our|a|an|this|that|his|her|their|your)\s+((?:[\w.+#'’-]+\s+){1,3}?)"
    r"|((?:[A-Z][\w.+#'’-]*\s+){1,3}))[Pp]roject\b")


def projects(sentence: str) -> list[EntityRef]:
    found = []
    for _, tail in _after(_PROJECT_AFTER, sentence):
        phrase = bound_phrase(tail, 3)
        if phrase and name_like(phrase) and not tool_at_start(phrase):
            found.append(EntityRef(title(phrase), "project"))
    for m in _PROJECT_BEFORE.finditer(sentence):
        found += _project_before(m)
    return found


def _project_before(m: re.Match[str]) -> list[EntityRef]:
    words = (m.group(1) or m.group(2) or "").split()
    while words and words[0].lower() in GENERIC | DETERMINERS:
        words.pop(0)
    if not words or any(w.lower() in STOPWORDS or w.lower() in PRONOUNS for w in words):
        return []
    phrase = " ".join(words)
    return [EntityRef(title(phrase), "project")] if _acceptable(words) else []


# -- the pipeline ------------------------------------------------------------------------------------
@dataclass
class _Acc:
    max_entities: int
    max_relations: int
    entities: dict[tuple[str, str], EntityRef] = field(default_factory=dict)
    relations: dict[Any, Relation] = field(default_factory=dict)
    truncated: bool = False

    def entity(self, e: EntityRef) -> bool:
        if e.key in self.entities or e.type == "user":
            return True
        if len(self.entities) >= self.max_entities:
            self.truncated = True
            return False
        self.entities[e.key] = e
        return True

    def relation(self, r: Relation) -> None:
        if r.key in self.relations:
            return
        if len(self.relations) >= self.max_relations:
            self.truncated = True
        elif self.entity(r.subject) and self.entity(r.object):
            self.relations[r.key] = r

    def result(self) -> Extraction:
        return Extraction(tuple(self.entities.values()), tuple(self.relations.values()), self.truncated)


def extract(text: str, *, about_user: bool = True, max_entities: int = 64, max_relations: int = 64,
            time_budget: float = 2.0) -> Extraction:
    """Entities and relations in ``text`` (spec/002 phase 1).

    ``about_user=False`` (e.g. an assistant's chat turn) keeps the entities and the project/decision
    edges but drops every ``user --[...]-->`` edge: "I prefer X" there is not the user speaking.
    ``time_budget`` (seconds) stops a pathological text between sentences (marked ``truncated``).
    """
    acc = _Acc(max_entities, max_relations)
    deadline = time.monotonic() + time_budget
    for sentence in sentences(pii.mask(text)):
        _sentence(sentence, acc, about_user)
        if acc.truncated or time.monotonic() > deadline:
            acc.truncated = True
            break
    return acc.result()


def _sentence(sentence: str, acc: _Acc, about_user: bool) -> None:
    files = find_files(sentence)
    prose = _mask_spans(sentence, files)
    tools = [EntityRef(name, "tool") for _, _, name in find_tools(prose)]
    user_relations = [r for family in USER_PATTERNS for r in family(prose)]
    mentioned = projects(prose)
    for entity in (*[EntityRef(p, "file") for _, _, p in files], *tools, *mentioned):
        acc.entity(entity)
    if about_user:
        for relation in user_relations:
            acc.relation(relation)
    _context_edges(acc, user_relations, mentioned, tools, [EntityRef(p, "file") for _, _, p in files], about_user)


def _context_edges(acc: _Acc, user_relations: list[Relation], mentioned: list[EntityRef],
                   tools: list[EntityRef], files: list[EntityRef], about_user: bool) -> None:
    """Edges between things named in one sentence (spec/002's 0.7 "contextual inference")."""
    worked = [r.object for r in user_relations if r.predicate == "works_on"] if about_user else []
    decided = [r.object for r in user_relations if r.predicate == "decided"] if about_user else []
    used = {r.object.key for r in user_relations if r.predicate == "uses" and r.pattern != "i_use_x"}
    all_tools = {t.key: t for t in tools}
    all_tools.update({r.object.key: r.object for r in user_relations if r.predicate == "uses"})
    for project in dict.fromkeys([*worked, *mentioned]):
        for key, tool in all_tools.items():
            strong = project in worked and key in used
            acc.relation(Relation(project, "uses", tool, USAGE if strong else CONTEXTUAL,
                                  "project_uses_x" if strong else "project_tool_cooccurrence"))
    for subject in dict.fromkeys([*worked, *mentioned, *decided]):
        for file in files:
            acc.relation(Relation(subject, "references", file, CONTEXTUAL, "references_file"))
