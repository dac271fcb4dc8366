"""Learning from conversations (spec/000 section 14, "Real-time KG learning from expert
conversations"): what a person states in a chat turn is matched against the expert's KGs, and what is
new is proposed to the review queue with the conversation as evidence. Nothing reaches a KG without a
reviewer accepting it.

A **statement** is a sentence naming two things joined by a relation cue: "the Batch API requires an
async workflow", "RAG is an alternative to fine-tuning", "Qdrant is an alternative to Pinecone".
Things are found as **mentions** of the KG's node names and aliases (longest match, whole words,
case-insensitive); a relation cue between two mentions (at most 6 words apart) gives the edge type:

>>> [(c.relation, c.negated) for c in cues("requires an")]
[('requires', False)]
>>> [(c.relation, c.negated) for c in cues("does not require")]
[('requires', True)]

- both ends are nodes and the edge is not in the KG -> an **edge proposal** (origin ``conversation``);
- one end is a node and the other a name-like phrase the KG lacks (capitalised or technical, 1-4
  words, not personal data) -> a **node proposal** for it, the relation kept in its evidence;
- a negated statement ("X does not require Y") about an edge the KG has -> a **correction** in the
  report (the queue holds additions; removing an edge stays a person's decision).

Questions are not statements (a sentence ending in "?" or opening with a question word is skipped):
what the KG lacks for a question is the gap report's part. Sentences are redacted of secrets before
they are kept as evidence, and every phrase passes the memory PII filter.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from ..index.names import alias_strings
from ..index.text import tokenize
from ..memory.pii import is_pii, redact_secrets
from ..model import slugify
from ..store.proposals import ProposalDraft

if TYPE_CHECKING:
    from ..kg import KG

ORIGIN = "conversation"
STATED_SCORE = 0.6  # a person's word in a chat: worth a review, not a fact
MAX_GAP_WORDS = 6
MAX_MENTION_WORDS = 8
MAX_SENTENCES = 50
MAX_NODES_FOR_MENTIONS = 300_000  # a bigger KG is matched by the exact name of the phrase only

# (relation, cue) in the order tried; a cue is a regex over the words between two mentions
_CUES: tuple[tuple[str, str], ...] = (
    ("conflicts_with", r"conflicts? with|(?:is|are) incompatible with|clash(?:es)? with"),
    ("alternative_to", r"(?:is|are) (?:an? )?alternatives? to|can replace|replaces?|(?:is|are) used instead of"),
    ("similar_to", r"(?:is|are) similar to|(?:is|are) like"),
    ("depends_on", r"depends? on|relies on|rely on"),
    ("requires", r"requires?|needs?|(?:is|are) required (?:by|for)|only works with"),
    ("enables", r"enables?|allows?|lets?|makes? possible"),
    ("reduces", r"reduces?|lowers?|cuts?|decreases?"),
    ("optimizes", r"improves?|optimi[sz]es?|speeds? up"),
    ("fixes", r"fix(?:es)?|solves?|resolves?|(?:is|are) the fix for"),
    ("causes", r"causes?|leads? to|results? in"),
    ("part_of", r"(?:is|are) (?:a )?part of|belongs? to"),
    ("used_for", r"(?:is|are) used for|(?:is|are) (?:good|great|meant) for|helps? with"),
    ("feeds_into", r"feeds? into"),
    ("contributes_to", r"contributes? to"),
    ("implements", r"implements?"),
    ("supports", r"supports?"),
)
_NEGATION = re.compile(r"\b(?:not|never|no longer|doesn't|don't|isn't|aren't|cannot|can't|won't)\b")
_FILLER = re.compile(r"^(?:the|a|an|also|really|actually|definitely|always|usually|often|does|do|did|can|will|"
                     r"should|must|only|just|still|typically|generally|in fact)$")
_QUESTION = re.compile(r"^\s*(?:how|what|which|why|when|where|who|whom|whose|can|could|should|would|is|are|"
                       r"does|do|did|will)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_NAME_LIKE = re.compile(r"^(?:[A-Z][\w.+#-]*|[\w.+#-]*\d[\w.+#-]*|[\w]+[.+#-][\w.+#-]+)$")


@dataclass(frozen=True)
class Cue:
    relation: str
    negated: bool


def cues(between: str) -> list[Cue]:
    """The relation cue of the words between two mentions (empty when none, or not only a cue)."""
    text = " ".join(between.lower().split())
    negated = bool(_NEGATION.search(text))
    text = _NEGATION.sub(" ", text)
    words = [w for w in text.split() if not _FILLER.match(w)]
    if not words or len(words) > MAX_GAP_WORDS:
        return []
    rest = " ".join(words)
    for relation, pattern in _CUES:
        if re.fullmatch(rf"(?:{pattern})(?: (?:the|a|an|to|by|for|with|of))?", rest):
            return [Cue(relation, negated)]
    if negated and re.fullmatch(r"(?:work|works|play|plays) (?:well )?(?:with|together with)", rest):
        return [Cue("conflicts_with", False)]  # "X does not work with Y"
    return []


@dataclass(frozen=True)
class Learned:
    """One thing a turn taught: an edge or node to propose, or a correction of an edge."""

    kind: str  # edge | node | correction
    source: str
    target: str
    relation: str
    sentence: str
    new_name: str | None = None
    proposal_id: int | None = None
    status: str = "proposed"  # proposed | known (already in the KG) | rejected_before

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "target": self.target, "relation": self.relation,
                "sentence": self.sentence, "new_name": self.new_name, "proposal_id": self.proposal_id,
                "status": self.status}


@dataclass(frozen=True)
class LearnReport:
    kg: str
    statements: int
    learned: tuple[Learned, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"kg": self.kg, "statements": self.statements, "learned": [x.to_dict() for x in self.learned]}


# -- mentions -------------------------------------------------------------------------------------------
class Gazetteer:
    """Every node's name and aliases as token tuples -> node id (names that are ambiguous are dropped)."""

    def __init__(self, entries: dict[tuple[str, ...], str]) -> None:
        self.entries = entries

    @classmethod
    def of(cls, kg: KG) -> Gazetteer:
        seen: dict[tuple[str, ...], str | None] = {}
        for node in kg.nodes():
            for name in (node.name, *alias_strings(node.properties or {})):
                key = tuple(tokenize(name))
                if key and len(key) <= MAX_MENTION_WORDS and not (len(key) == 1 and len(key[0]) < 3):
                    seen[key] = node.id if seen.get(key, node.id) == node.id else None
        return cls({k: v for k, v in seen.items() if v is not None})

    def mentions(self, tokens: Sequence[str]) -> list[tuple[int, int, str]]:
        """(start, end, node id) of the longest names found left to right, not overlapping."""
        out, i = [], 0
        while i < len(tokens):
            for n in range(min(MAX_MENTION_WORDS, len(tokens) - i), 0, -1):
                node = self.entries.get(tuple(tokens[i:i + n]))
                if node is not None:
                    out.append((i, i + n, node))
                    i += n
                    break
            else:
                i += 1
        return out


_CACHE: OrderedDict[tuple[str, str], Gazetteer] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def gazetteer(kg: KG) -> Gazetteer:
    """The KG's gazetteer for its current version (built once per version; 8 kept)."""
    key = (kg.db_id, kg.store.version())
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    built = Gazetteer.of(kg) if kg.node_count() <= MAX_NODES_FOR_MENTIONS else Gazetteer({})
    with _CACHE_LOCK:
        _CACHE[key] = built
        while len(_CACHE) > 8:
            _CACHE.popitem(last=False)
    return built


# -- statements ------------------------------------------------------------------------------------------
def sentences(text: str) -> list[str]:
    """The statements of a turn: its sentences that are not questions (at most ``MAX_SENTENCES``)."""
    out = []
    for s in _SENTENCE_END.split(text or ""):
        s = s.strip()
        if s and not s.endswith("?") and not _QUESTION.match(s):
            out.append(s)
    return out[:MAX_SENTENCES]


def read_statements(kg: KG, text: str) -> list[Learned]:
    """What ``text`` states about ``kg``'s nodes (nothing is written)."""
    gaz, found = gazetteer(kg), []
    for sentence in sentences(text):
        words = sentence.split()
        tokens, spans = _tokens_with_spans(words)
        ms = gaz.mentions(tokens)
        found += _between_mentions(ms, spans, words, sentence)
        found += [_known(kg, x) for x in _with_new_names(ms, tokens, spans, words, sentence, gaz)]
    found = [x for x in found if x.source != x.target]
    return list({(x.kind, x.source, x.target, x.relation, x.new_name): x for x in found}.values())


def _known(kg: KG, x: Learned) -> Learned:
    """A "new" name that is a node's name in other words ("RAG" for "Retrieval-augmented generation
    (RAG)"): the text search's best hit whose name holds the phrase as whole words -> an edge."""
    phrase = tokenize(x.new_name or "")
    holding = [h.node for h in kg.search(x.new_name or "", k=5, mode="text").results
               if _holds(tokenize(h.node.name), phrase)]
    # an acronym in parentheses is that node's other name: "Retrieval-augmented generation (RAG)"
    defined = [n for n in holding if f"({(x.new_name or '').lower()})" in n.name.lower()]
    node = (defined or holding or [None])[0]
    if node is None:
        return x
    src, dst = (node.id, x.target) if x.source == "new" else (x.source, node.id)
    return Learned("edge", src, dst, x.relation, x.sentence)


def _holds(name: list[str], phrase: list[str]) -> bool:
    return bool(phrase) and any(name[i:i + len(phrase)] == phrase for i in range(len(name) - len(phrase) + 1))


def _tokens_with_spans(words: list[str]) -> tuple[list[str], list[int]]:
    """The folded tokens of the sentence, and for each the index of the word it came from."""
    tokens, spans = [], []
    for i, w in enumerate(words):
        for t in tokenize(w):
            tokens.append(t)
            spans.append(i)
    return tokens, spans


def _between_mentions(ms: list[tuple[int, int, str]], spans: list[int], words: list[str],
                      sentence: str) -> list[Learned]:
    out = []
    for (_, a_end, a), (b_start, _, b) in pairwise(ms):
        if a == b:
            continue
        gap = words[spans[a_end - 1] + 1:spans[b_start]]  # whole words: "doesn't" stays one
        for cue in cues(" ".join(w.strip(",.:;!\"()") for w in gap)):
            out.append(Learned("correction" if cue.negated else "edge", a, b, cue.relation, sentence))
    return out


def _with_new_names(ms: list[tuple[int, int, str]], tokens: list[str], spans: list[int], words: list[str],
                    sentence: str, gaz: Gazetteer) -> list[Learned]:
    """"Qdrant is an alternative to Pinecone" with only Pinecone in the KG: a node proposal for Qdrant
    (a name-like run opening the sentence before the one mention, or closing it after)."""
    if len(ms) != 1:
        return []
    start, end, node = ms[0]
    first, last = spans[start], spans[end - 1] + 1  # the mention's words
    clean = [w.strip(",.:;!\"'()") for w in words]
    out = []
    head = _name_run(clean[:first])
    if head:
        out += _new(head, " ".join(clean[len(head.split()):first]), "new", node, sentence, gaz)
    tail = _name_run(clean[last:][::-1])
    if tail:
        n = len(tail.split())
        out += _new(" ".join(tail.split()[::-1]), " ".join(clean[last:len(clean) - n]), node, "new", sentence, gaz)
    return out


def _name_run(words: list[str]) -> str | None:
    """The name-like words (1-4) at the start of ``words``, if words remain after them."""
    run = []
    for w in words:
        if not w or not _NAME_LIKE.match(w) or len(run) == 4:
            break
        run.append(w)
    return " ".join(run) if run and len(run) < len(words) else None


def _new(name: str, gap: str, source: str, target: str, sentence: str, gaz: Gazetteer) -> list[Learned]:
    if is_pii(name) or tuple(tokenize(name)) in gaz.entries:
        return []
    return [Learned("node", source, target, c.relation, sentence, new_name=name) for c in cues(gap) if not c.negated]


# -- proposing ------------------------------------------------------------------------------------------------
def learn(kg: KG, text: str, evidence: dict[str, Any]) -> LearnReport:
    """Propose what ``text`` states that ``kg`` lacks (see the module docstring); ``evidence`` (turn,
    conversation, expert) goes with every proposal."""
    found = read_statements(kg, text)
    if kg.read_only or not found:
        return LearnReport(kg.db_id, len(sentences(text)), tuple(found))
    out = [_checked(kg, x) for x in found]
    drafts = [_draft(kg, x, evidence) for x in out if x.status == "proposed" and x.kind != "correction"]
    if drafts:
        kg.proposals.propose(drafts)
        ids = _ids(kg, drafts)
        out = [_with_id(kg, x, ids) for x in out]
    return LearnReport(kg.db_id, len(sentences(text)), tuple(out))


def _checked(kg: KG, x: Learned) -> Learned:
    if x.kind == "node":
        return x
    has = kg.store.get_edge(x.source, x.target, x.relation) is not None
    if x.kind == "correction":
        return Learned(x.kind, x.source, x.target, x.relation, x.sentence, status="known" if has else "not_in_kg")
    return x if not has else Learned(x.kind, x.source, x.target, x.relation, x.sentence, status="known")


def _draft(kg: KG, x: Learned, evidence: dict[str, Any]) -> ProposalDraft:
    said = {**evidence, "sentence": redact_secrets(x.sentence)[:300], "relation": x.relation}
    if x.kind == "edge":
        return ProposalDraft(x.source, x.target, x.relation, ORIGIN, STATED_SCORE, {"stated": STATED_SCORE}, said)
    said["other"] = x.target if x.source == "new" else x.source
    node_type = _node_type(kg, x)
    payload = {"name": x.new_name, "description": "", "properties": {}}
    return ProposalDraft(_new_id(x.new_name or "", node_type), "", node_type, ORIGIN, STATED_SCORE,
                         {"stated": STATED_SCORE}, said, payload, kind="node")


def _node_type(kg: KG, x: Learned) -> str:
    """A new peer ("an alternative to X") takes X's type; anything else is a concept."""
    known = x.target if x.source == "new" else x.source
    return kg.node(known).type if x.relation in ("alternative_to", "similar_to", "conflicts_with") else "concept"


def _new_id(name: str, node_type: str) -> str:
    return f"{slugify(node_type)}:{slugify(name)}"[:120]


def _ids(kg: KG, drafts: Iterable[ProposalDraft]) -> dict[tuple[str, str], int]:
    """(kind, id of the node or "source>type>target" of the edge) -> the queue's id."""
    wanted = {_key(d.kind, d.source, d.target, d.type) for d in drafts}
    _, rows = kg.proposals.list(status=None, origin=ORIGIN, limit=10_000)
    return {k: p.id for p in rows if (k := _key(p.kind, p.source, p.target, p.type)) in wanted}


def _key(kind: str, source: str, target: str, type: str) -> tuple[str, str]:
    return (kind, source if kind == "node" else f"{source}>{type}>{target}")


def _with_id(kg: KG, x: Learned, ids: dict[tuple[str, str], int]) -> Learned:
    if x.kind == "edge":
        key = _key("edge", x.source, x.target, x.relation)
    elif x.kind == "node":
        key = _key("node", _new_id(x.new_name or "", _node_type(kg, x)), "", "")
    else:
        return x
    return Learned(x.kind, x.source, x.target, x.relation, x.sentence, x.new_name, ids.get(key), x.status)
