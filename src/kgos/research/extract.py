"""Documents -> chunks -> entities, relations and claims: the research pipeline's own extractor.

Scoped to what research needs (there is no general ingestion layer to reuse yet): every sentence of a
document worth citing becomes a claim with its source span; the entities are the names research
already expects (the question's terms, the titles of the documents and KG nodes it found) plus
command-line options and capitalised names; relations are ``X is a Y`` definitions and ``mentions``
between a claim and its entities. Deterministic: the same documents give the same output.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..index.text import STOPWORDS, fold, tokenize
from ..model import normalize_name
from .untrusted import clean

__all__ = ["NEGATIONS", "claim_frame", "extract_document", "numbers_in", "sentences"]

# a sentence ends at . ! ? and a space (not after e.g., i.e., etc., vs. or a one-letter initial), at a
# blank line, or before a list bullet; man pages start sentences with lower-case command names
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\b[A-Za-z]\.)"
                           r"\s+(?=\S)|\n\s*\n|\n(?=\s*[-*•]\s)")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)\s*(%|[kKMGT]i?B|[kKM]?\b|ms\b|s\b|x\b)?")
_OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-zA-Z0-9]+(?:\s+[A-Z][a-zA-Z0-9]+){0,3})\b")
_DEFINITION = re.compile(r"^\s*(?:the\s+)?([\w.+-]+(?:\s[\w.+-]+){0,3})\s+(?:is|are|-)\s+(?:an?\s+|the\s+)?"
                         r"([\w-]+(?:\s[\w-]+){0,3})", re.IGNORECASE)
NEGATIONS = frozenset({"not", "no", "never", "cannot", "can't", "don't", "doesn't", "isn't", "aren't", "won't",
                       "without", "neither", "nor", "none"})
MIN_WORDS, MAX_CHARS = 4, 480


# Document markup that is not prose (issue 29, goal 2): fenced code, code lines, shell sessions,
# tables and box drawing (not indented blocks: man pages indent all their prose). Blanked out with
# spaces (newlines kept), so every claim's span still points at its place in the document.
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_NOT_PROSE_LINE = re.compile(
    r"^[ \t]*(?:[$#>%][ \t]+\S.*"                        # shell prompts: $ kgos trace ..., # apt-get ..., > ...
    r"|\|.*\|[ \t]*"                                     # table rows | a | b |
    r"|[|+:\- \t]*-{3,}[|+:\- \t]*"                        # table rules |---|:--:| and +-----+
    r"|.*[\u2500-\u257f\u2580-\u259f].*"                   # box-drawing and block characters
    r"|[\w./-]+(?:\([^)]*\))?\s*[{};]\s*"                  # a code line ending in { } or ;
    r"|<[^>\n]+>\s*"                                      # a line that is only a tag
    r")$", re.MULTILINE)
_SYMBOLS = re.compile(r"[^\w\s.,;:!?'\"()%$-]")


def prose_only(text: str) -> str:
    """``text`` with its non-prose markup replaced by spaces (same length, newlines kept)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    return _NOT_PROSE_LINE.sub(blank, _FENCE.sub(blank, text))


def is_prose(sentence: str) -> bool:
    """A sentence worth quoting as a claim: mostly words, not symbols left over from markup."""
    return len(_SYMBOLS.findall(sentence)) <= max(2, len(sentence) // 20)


def sentences(text: str) -> list[tuple[int, int]]:
    """Spans of the sentences of ``text`` (also cut at blank lines and list bullets)."""
    spans, pos = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    return [(s + len(text[s:e]) - len(text[s:e].lstrip()), e - (len(text[s:e]) - len(text[s:e].rstrip())))
            for s, e in spans if text[s:e].strip()]


def numbers_in(text: str) -> list[str]:
    """The numbers of a sentence with their unit (``"100K QPS"`` -> ``["100k"]``), normalised."""
    return [(n.replace(",", "") + (u or "")).lower() for n, u in _NUMBER.findall(text)]


def claim_frame(text: str) -> tuple[str, ...]:
    """What a claim says, without its numbers and negations: the content tokens in order. Two claims
    with one frame say the same thing about the same attribute."""
    return tuple(t for t in tokenize(text) if t not in STOPWORDS and t not in NEGATIONS and not t[0].isdigit())


def is_negated(text: str) -> bool:
    """An odd number of negations: "cannot run without a GPU" (two) affirms what "runs with a GPU" does."""
    return sum(w in NEGATIONS for w in re.findall(r"[a-z']+", fold(text))) % 2 == 1


def extract_document(doc: Mapping[str, Any], known: Sequence[str], max_claims: int = 40) -> dict[str, Any]:
    """Claims, entities and relations of one ingested document (``id``, ``title``, ``source``,
    ``chunks`` of ``{"text", "start"}``); ``known`` are entity names to look for."""
    patterns = _name_patterns([doc.get("title", ""), *known])
    claims, entities, relations = [], {}, []
    for chunk in doc.get("chunks", []):
        prose = prose_only(chunk["text"])
        for s, e in sentences(prose):
            text = " ".join(prose[s:e].split())
            if len(text.split()) < MIN_WORDS or len(text) > MAX_CHARS or not is_prose(text):
                continue
            text, marks = clean(text)  # secrets never stored; instructions and markup flagged (untrusted.py)
            claim = _claim(doc, text, chunk["start"] + s, chunk["start"] + e, patterns, entities)
            if marks:
                claim["flags"] = list(marks)
            claims.append(claim)
            relations.extend(_relations(claim, text))
            if len(claims) >= max_claims:
                break
    return {"claims": claims, "entities": sorted(entities.values(), key=lambda x: x["key"]),
            "relations": relations}


def _claim(doc: Mapping[str, Any], text: str, start: int, end: int, patterns: list[tuple[str, re.Pattern[str]]],
           entities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    names = [name for name, rx in patterns if rx.search(text)]
    names += [o for o in _OPTION.findall(text)]
    names += [c for c in _CAPITALISED.findall(text) if fold(c) not in STOPWORDS]
    mentioned = []
    for name in dict.fromkeys(names):
        key = normalize_name(name)
        kind = "option" if name.startswith("-") else "term"
        entities.setdefault(key, {"key": key, "name": name, "type": kind, "aliases": []})
        mentioned.append(key)
    subject = normalize_name(doc.get("title", "")) or (mentioned[0] if mentioned else "")
    cid = hashlib.sha256(f"{doc['source']}|{start}|{text}".encode()).hexdigest()[:16]
    return {"id": f"c:{cid}", "text": text, "source": doc["source"], "doc": doc["id"], "span": [start, end],
            "subject": subject, "entities": mentioned, "numbers": numbers_in(text), "negated": is_negated(text),
            "authority": doc.get("authority", "unknown"), "age_days": doc.get("age_days")}


def _relations(claim: Mapping[str, Any], text: str) -> list[dict[str, Any]]:
    out = [{"source": claim["id"], "target": e, "type": "mentions"} for e in claim["entities"]]
    m = _DEFINITION.match(text)
    if m and not claim["negated"]:
        out.append({"source": normalize_name(m.group(1)), "target": normalize_name(m.group(2)), "type": "is_a",
                    "claim": claim["id"]})
    return out


def _name_patterns(names: Iterable[str]) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for name in dict.fromkeys(n.strip() for n in names if n and n.strip()):
        if len(name) < 2 or fold(name) in STOPWORDS:
            continue
        out.append((name, re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", re.IGNORECASE)))
    return out
