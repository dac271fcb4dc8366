"""KG gap detection from chat failures (spec/000 section 14, "Automatic KG gap detection from chat
failures").

A **failure** is an expert turn over the KG that got a thumbs down, whose answer admits it found
nothing, or whose question lies off the KG. That last test needs an absolute measure, because search
scores are normalised per query (the best hit of an off-topic question still scores near 1): the
**evidence** of a question is the raw cosine of its best node (with the KG's search vectors) and the
share of its content terms the KG's text holds.

The thresholds are **calibrated on the KG** against random "questions" made of its own words: 200
bags of five content words drawn from the node texts (seeded). A question whose best node is less
similar than 95% of those bags is **off the KG** (``off_kg``, the bags' 5th percentile); a node less
similar than half of them (``weak``, their median) does not match a question however it ranks. On the
demo KG with the default model: 100% of go's questions fall below ``off_kg`` and 2% of the demo's
own probes (docs/learning.md has the table).

Each failure gets a **cause**, from the turn's question re-run with three weightings (the intent's
profile, text-heavy, embedding-heavy: the node at least two of them rank first, else the profile's):

- ``no_matching_node``: off the KG, or that node is no closer than ``weak``;
- ``retrieval_misconfigured``: that node was not among the nodes the turn used; the report names it,
  its rank under the expert's weights, and which weighting ranks it in the top 3;
- ``content_insufficient``: the turn used that node, yet failed: the KG has the node but not what the
  person needed from it.

Failures are clustered by topic (greedy: a failure joins the first topic whose queries it resembles),
and each topic of unmatched questions becomes a **node proposal** in the KG's review queue (source
``gaps``, the questions as evidence), so the report's suggestions are reviewed like any other.
Proposal ids are stable per topic, so a second report merges into the same proposals.

Questions are user text: they are redacted of secrets before they are stored anywhere and are never
turned into edges or instructions, only into a proposed node's name (from its content words) and quoted
evidence.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..index.nearest import cosine_all
from ..index.text import STOPWORDS, tokenize
from ..memory.pii import is_pii
from ..model import slugify
from ..store.proposals import ProposalDraft
from .turnlog import expert_configs, turns

if TYPE_CHECKING:
    from ..kg import KG, Workspace

ADMISSION_RE = re.compile(
    r"(?i)\b(?:i found nothing|found nothing in the knowledge graph|nothing in the knowledge graph|"
    r"i (?:do not|don't|cannot|can't) (?:have|know|find|answer)|no information (?:about|on)|"
    r"(?:is|are) not in the knowledge graph|(?:could|can)(?:\s?not|n't) find|"
    r"the knowledge graph (?:does not|doesn't) (?:contain|hold|say|cover|mention))")
#: words of how people ask, not of what they ask about (kept out of topic labels and term coverage)
QUESTION_WORDS = frozenset(["how", "what", "which", "why", "when", "where", "who", "whom", "whose", "can", "could", "should", "would", "will", "do", "does", "did", "done", "doing", "i", "me", "my", "we", "our", "you", "your", "use", "using", "get", "make", "way", "ways", "best", "good", "better", "need", "want", "help", "tell", "explain", "show", "give", "find", "know", "there", "here", "about", "any", "some", "much", "many", "more", "most", "less", "need", "really"])
VARIANTS: dict[str, tuple[float, float, float, float] | None] = {
    "intent profile": None, "text-heavy": (0.1, 0.8, 0.1, 0.0), "embedding-heavy": (0.8, 0.1, 0.1, 0.0)}
BAGS, BAG_WORDS, OFF_KG_PERCENTILE, WEAK_PERCENTILE = 200, 5, 5, 50
TOPIC_COSINE, TOPIC_JACCARD = 0.6, 0.34
GAPS_ORIGIN = "gaps"


@dataclass(frozen=True)
class Calibration:
    """Percentiles of the best cosine of random bags of the KG's own words: below ``off_kg`` a question
    is off the KG; below ``weak`` a node does not match it."""

    off_kg: float | None
    weak: float | None
    sample: int
    model: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"off_kg": _r(self.off_kg), "weak": _r(self.weak), "sample": self.sample, "model": self.model,
                "rule": f"off_kg = {OFF_KG_PERCENTILE}th and weak = {WEAK_PERCENTILE}th percentile of the best "
                        f"cosine of {BAGS} bags of {BAG_WORDS} words drawn from the KG's node texts"}


@dataclass(frozen=True)
class Evidence:
    """Absolute (not per-query normalised) support of a question in the KG."""

    best_cosine: float | None
    best_node: str | None
    coverage: float  # share of the question's content terms that occur in the KG's text

    def to_dict(self) -> dict[str, Any]:
        return {"best_cosine": _r(self.best_cosine), "best_node": self.best_node, "coverage": _r(self.coverage)}


@dataclass(frozen=True)
class Failure:
    turn_id: str
    expert_id: str
    query: str
    reasons: tuple[str, ...]  # negative_feedback | admitted_no_answer | off_kg
    cause: str  # no_matching_node | retrieval_misconfigured | content_insufficient
    evidence: Evidence
    found: Mapping[str, Any] | None = None  # the matching node that was not used, and what ranks it
    comment: str = ""
    topic: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"turn_id": self.turn_id, "expert_id": self.expert_id, "query": self.query,
                "reasons": list(self.reasons), "cause": self.cause, "evidence": self.evidence.to_dict(),
                "found": dict(self.found) if self.found else None, "comment": self.comment, "topic": self.topic}


@dataclass(frozen=True)
class Topic:
    id: int
    label: str
    failures: int
    cause: str  # the most common cause of its failures
    queries: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "failures": self.failures, "cause": self.cause,
                "queries": list(self.queries)}


@dataclass(frozen=True)
class Suggestion:
    """A node to add (a proposal in the queue) or a retrieval change to make (for a person)."""

    kind: str  # node (a proposal) | retrieval | content (advice for a person)
    topic: int
    text: str
    proposal_id: int | None = None
    node: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic": self.topic, "text": self.text, "proposal_id": self.proposal_id,
                "node": dict(self.node) if self.node else None}


@dataclass(frozen=True)
class GapReport:
    kg: str
    turns: int  # turns over this KG that were examined
    calibration: Calibration
    failures: tuple[Failure, ...]
    topics: tuple[Topic, ...]
    suggestions: tuple[Suggestion, ...]
    proposed: bool  # whether node suggestions were written to the review queue

    def causes(self) -> dict[str, int]:
        return dict(Counter(f.cause for f in self.failures))

    def to_dict(self) -> dict[str, Any]:
        return {"kg": self.kg, "turns": self.turns, "calibration": self.calibration.to_dict(),
                "causes": self.causes(), "failures": [f.to_dict() for f in self.failures],
                "topics": [t.to_dict() for t in self.topics], "suggestions": [s.to_dict() for s in self.suggestions],
                "proposed": self.proposed}


@dataclass(frozen=True)
class _Turn:
    turn_id: str
    expert_id: str
    query: str
    answer: str
    used: frozenset[str]
    rating: int | None = None
    comment: str = ""
    weights: tuple[float, float, float, float] | None = None


@dataclass
class _Probe:
    """What one KG answers about a question: its vector, cosines and terms (computed once)."""

    kg: KG
    vectors: np.ndarray | None
    node_ids: tuple[str, ...]
    calibration: Calibration
    vocab: Mapping[str, int]
    analyzer: Any
    kg_index: dict[str, int] = field(default_factory=dict)


class GapDetector:
    """``GapDetector(ws).report("demo")``: the failures of the experts that answer from a KG."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace

    def report(self, db_id: str, *, limit: int = 200, propose: bool = True) -> GapReport:
        if not 1 <= limit <= 1_000:
            raise InvalidArgument(f"limit must be between 1 and 1,000, not {limit}")
        kg = self.ws.kg(db_id)
        turns = self._turns(db_id)
        probe = _probe(kg)
        failures = [f for t in turns if (f := _failure(probe, t)) is not None][:limit]
        failures, topics = _cluster(probe, failures)
        suggestions = _suggestions(probe, failures, topics)
        if propose and not kg.read_only:
            suggestions = _propose(kg, failures, suggestions)
        return GapReport(db_id, len(turns), probe.calibration, tuple(failures), tuple(topics), tuple(suggestions),
                         propose and not kg.read_only)

    # -- the failure log ---------------------------------------------------------------------------------
    def _turns(self, db_id: str) -> list[_Turn]:
        weights = {eid: c.retrieval.weights() for eid, c in expert_configs(self.ws).items()}
        return [_Turn(t.turn_id, t.expert_id, t.query, t.answer, frozenset(t.metadata.get("kg_nodes_used") or ()),
                      t.rating, t.comment, weights.get(t.expert_id)) for t in turns(self.ws, db_id)]


# -- evidence ---------------------------------------------------------------------------------------------
def _probe(kg: KG) -> _Probe:
    snap = kg.engine.snapshot()
    vectors = snap.vectors
    if vectors is not None:
        has = snap.vector_rows
        vectors = np.where(has[:, None], vectors, 0.0).astype(np.float32) if not has.all() else vectors
    from ..index.text import Analyzer
    probe = _Probe(kg, vectors, snap.node_ids, Calibration(None, None, 0, snap.embedder), snap.text.vocab,
                   Analyzer(snap.text.config))
    probe.kg_index = {nid: i for i, nid in enumerate(snap.node_ids)}
    probe.calibration = calibrate(probe)
    return probe


def calibrate(probe: _Probe, bags: int = BAGS, seed: int = 13) -> Calibration:
    """Best cosines of ``bags`` random bags of the KG's own content words (see the module docstring)."""
    model = probe.calibration.model
    if probe.vectors is None:
        return Calibration(None, None, 0, model)
    rng = random.Random(seed)
    nodes = rng.sample(range(len(probe.node_ids)), min(2_000, len(probe.node_ids)))
    words = [w for i in nodes for w in _words(probe.kg.get_node(probe.node_ids[i]))]
    if len(words) < BAG_WORDS * 4:
        return Calibration(None, None, 0, model)
    best = [b for _ in range(bags) if (b := evidence(probe, " ".join(rng.sample(words, BAG_WORDS)))[0].best_cosine)
            is not None]
    if not best:
        return Calibration(None, None, 0, model)
    return Calibration(float(np.percentile(best, OFF_KG_PERCENTILE)), float(np.percentile(best, WEAK_PERCENTILE)),
                       len(best), model)


def _words(node: Any) -> list[str]:
    if node is None:
        return []
    return [w for w in tokenize(f"{node.name} {node.description or ''}") if w not in STOPWORDS and len(w) > 2
            and not w.isdigit()]


def _content_terms(probe: _Probe, query: str) -> list[str]:
    words = [w for w in tokenize(query) if w not in STOPWORDS and w not in QUESTION_WORDS and len(w) > 1]
    return [probe.analyzer.stem(w) for w in words]


def evidence(probe: _Probe, query: str) -> tuple[Evidence, np.ndarray | None]:
    terms = _content_terms(probe, query)
    coverage = sum(t in probe.vocab for t in terms) / len(terms) if terms else 0.0
    sims = None
    if probe.vectors is not None:
        q = probe.kg.engine.embed_query(query)
        if q is not None and q.shape[0] == probe.vectors.shape[1]:
            sims = cosine_all(probe.vectors, q)
    if sims is None or not len(sims):
        return Evidence(None, None, coverage), None
    best = int(np.argmax(sims))
    return Evidence(float(sims[best]), probe.node_ids[best], coverage), sims


def _failure(probe: _Probe, turn: _Turn) -> Failure | None:
    ev, sims = evidence(probe, turn.query)
    reasons = []
    if turn.rating == -1:
        reasons.append("negative_feedback")
    if ADMISSION_RE.search(turn.answer or ""):
        reasons.append("admitted_no_answer")
    if _off_kg(probe.calibration, ev):
        reasons.append("off_kg")
    if not reasons:
        return None
    cause, found = ("no_matching_node", None) if "off_kg" in reasons else _cause(probe, turn, ev, sims)
    return Failure(turn.turn_id, turn.expert_id, turn.query, tuple(reasons), cause, ev, found, turn.comment)


def _off_kg(cal: Calibration, ev: Evidence) -> bool:
    if ev.best_cosine is not None and cal.off_kg is not None:
        return ev.best_cosine < cal.off_kg
    return ev.coverage < 0.5  # no vectors: half the content words unknown to the KG


def _cause(probe: _Probe, turn: _Turn, ev: Evidence, sims: np.ndarray | None) -> tuple[str, dict[str, Any] | None]:
    """The node the weightings agree on (see the module docstring) decides the cause."""
    ranked = {name: _ranked(probe.kg, turn.query, w) for name, w in VARIANTS.items()}  # each search once
    votes = Counter(ids[0] for ids in ranked.values() if ids)
    if not votes:
        return "no_matching_node", None
    node_id, count = votes.most_common(1)[0]
    profile = ranked["intent profile"]
    node_id = node_id if count >= 2 or not profile else profile[0]
    cosine = float(sims[probe.kg_index[node_id]]) if sims is not None and node_id in probe.kg_index else None
    weak = probe.calibration.weak
    if (cosine is not None and weak is not None and cosine < weak) or (cosine is None and ev.coverage < 1.0):
        return "no_matching_node", None
    found = _ranks(probe.kg, turn, node_id, cosine, ranked)
    return ("content_insufficient" if node_id in turn.used else "retrieval_misconfigured"), found


def _ranked(kg: KG, query: str, weights: Sequence[float] | None) -> list[str]:
    """The ids of the best 50 hits, best first."""
    return [h.node.id for h in kg.search(query, k=50, weights=weights).results]


def _ranks(kg: KG, turn: _Turn, node_id: str, cosine: float | None,
           ranked: Mapping[str, list[str]]) -> dict[str, Any]:
    ranks = {name: _position(ids, node_id) for name, ids in ranked.items()}
    fixed_by = next((name for name, r in ranks.items() if r is not None and r <= 3), None)
    return {"node": node_id, "name": kg.node(node_id).name, "cosine": _r(cosine),
            "rank": _position(_ranked(kg, turn.query, turn.weights), node_id), "ranks": ranks, "fixed_by": fixed_by}


def _position(ids: list[str], node_id: str) -> int | None:
    return ids.index(node_id) + 1 if node_id in ids else None


# -- topics and suggestions -----------------------------------------------------------------------------
def _cluster(probe: _Probe, failures: list[Failure]) -> tuple[list[Failure], list[Topic]]:
    """Greedy leader clustering: a failure joins the first topic whose leader it resembles (query
    vectors' cosine >= 0.6, or content-term Jaccard >= 0.34 without vectors)."""
    leaders: list[tuple[np.ndarray | None, set[str]]] = []
    members: list[list[int]] = []
    for i, f in enumerate(failures):
        vec, terms = _query_vector(probe, f.query), set(_content_terms(probe, f.query))
        for t, (lvec, lterms) in enumerate(leaders):
            if _similar(vec, lvec, terms, lterms):
                members[t].append(i)
                break
        else:
            leaders.append((vec, terms))
            members.append([i])
    out = list(failures)
    topics = []
    for t, idx in enumerate(members, start=1):
        for i in idx:
            out[i] = replace(out[i], topic=t)
        group = [failures[i] for i in idx]
        cause = Counter(f.cause for f in group).most_common(1)[0][0]
        topics.append(Topic(t, _label(f.query for f in group), len(group), cause,
                            tuple(dict.fromkeys(f.query for f in group))[:5]))
    return out, topics


def _query_vector(probe: _Probe, query: str) -> np.ndarray | None:
    if probe.vectors is None:
        return None
    q = probe.kg.engine.embed_query(query)
    return None if q is None else np.asarray(q, np.float32)


def _similar(a: np.ndarray | None, b: np.ndarray | None, ta: set[str], tb: set[str]) -> bool:
    if a is not None and b is not None and float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-9)) >= TOPIC_COSINE:
        return True
    return bool(ta | tb) and len(ta & tb) / len(ta | tb) >= TOPIC_JACCARD


def _label(queries: Iterable[str]) -> str:
    """The topic's most frequent content words (first-seen order breaks ties), at most three."""
    counts: Counter[str] = Counter()
    for q in queries:
        counts.update(list(dict.fromkeys(w for w in tokenize(q) if w not in STOPWORDS and w not in QUESTION_WORDS
                                         and len(w) > 1 and not w.isdigit() and not is_pii(w))))
    words = [w for w, _ in counts.most_common(3)]
    return " ".join(words).capitalize() if words else "Unnamed topic"


def _suggestions(probe: _Probe, failures: list[Failure], topics: list[Topic]) -> list[Suggestion]:
    out = []
    for t in topics:
        group = [f for f in failures if f.topic == t.id]
        if t.cause == "no_matching_node":
            out.append(Suggestion("node", t.id, f"add a node about “{t.label}”: {t.failures} question(s) found "
                                                f"no matching node", node=_node_draft(probe, t, group)))
            continue
        out += [_advice(t.id, f) for f in group if f.found]
    return list({(s.kind, s.text): s for s in out}.values())  # a question asked twice: one suggestion


def _advice(topic: int, f: Failure) -> Suggestion:
    found = f.found or {}
    name = f"{found['name']} ({found['node']})"
    if f.cause == "content_insufficient":
        return Suggestion("content", topic, f"“{f.query}”: {name} was used but the answer failed; add what it "
                                            "lacks (details, prerequisites, alternatives) or its missing edges")
    fixed_by = found.get("fixed_by")
    fix = f"the {fixed_by} weighting ranks it {found['ranks'][fixed_by]}" if fixed_by else \
        "no weighting tried ranks it in the top 3 (check its name and description)"
    return Suggestion("retrieval", topic, f"“{f.query}”: {name} matches but ranked {found['rank'] or '>50'} "
                                          f"with the expert's weights; {fix}")


def _node_draft(probe: _Probe, topic: Topic, group: Sequence[Failure]) -> dict[str, Any]:
    nearest = list(dict.fromkeys(f.evidence.best_node for f in group if f.evidence.best_node))[:3]
    example = topic.queries[0][:200]
    return {"id": f"gap:{slugify(topic.label)}"[:120], "name": topic.label, "type": "concept",
            "description": f"Asked {topic.failures} time(s) without a matching node, e.g. “{example}”.",
            "nearest": nearest}


def _propose(kg: KG, failures: list[Failure], suggestions: list[Suggestion]) -> list[Suggestion]:
    """Node suggestions into the review queue (origin ``gaps``); the ids they got come back."""
    drafts, where = [], []
    for i, s in enumerate(suggestions):
        if s.kind != "node" or not s.node:
            continue
        group = [f for f in failures if f.topic == s.topic]
        evidence = {"queries": [f.query[:300] for f in group[:5]], "turn_ids": [f.turn_id for f in group[:20]],
                    "reasons": sorted({r for f in group for r in f.reasons}), "nearest": s.node["nearest"]}
        payload = {"name": s.node["name"], "description": s.node["description"], "properties": {}}
        drafts.append(ProposalDraft(s.node["id"], "", s.node["type"], GAPS_ORIGIN, min(1.0, len(group) / 5),
                                    {"failures": float(len(group))}, evidence, payload, kind="node"))
        where.append(i)
    if not drafts:
        return suggestions
    kg.proposals.propose(drafts)
    ids = _proposal_ids(kg, {d.source for d in drafts})
    out = list(suggestions)
    for i, d in zip(where, drafts, strict=True):
        out[i] = replace(out[i], proposal_id=ids.get(d.source))
    return out


def _proposal_ids(kg: KG, node_ids: set[str]) -> dict[str, int]:
    """The queue ids of these node proposals (new, merged into a pending one, or decided before)."""
    _, found = kg.proposals.list(status=None, origin=GAPS_ORIGIN, limit=1_000)
    return {p.source: p.id for p in found if p.kind == "node" and p.source in node_ids}


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
