"""Tier 3 (optional, off by default): an LLM extracts concepts, goals, capabilities and limitations with
their relations from document chunks and module docstrings, under a strict JSON schema.

spec/002's rules for LLM extraction apply, with the memory layer's code: the answer is parsed and
validated by ``kgos.memory.enrich.parse_output`` (unknown keys and wrong types refused), edges under
the 0.5 weight threshold are dropped, at most ``max_edges`` (10) per text are kept (heaviest first),
names failing the PII filter (``kgos.memory.pii``) are dropped with their edges, and every item must
quote its evidence from the text (a quote not found there is rejected: no invented facts). Any failure
(provider error, timeout, bad JSON) is counted and skipped: tiers 1 and 2 never wait on it.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..llm.base import ChatProvider, Message
from ..memory.enrich import parse_output
from ..memory.pii import pii_reason
from ..model import slugify
from .facts import Facts, clean_text

log = logging.getLogger("kgos.ingest")

MIN_WEIGHT = 0.5  # spec/002 "Weight threshold"
MAX_EDGES = 10  # spec/002 "Edge cap"
MIN_CHARS = 200  # shorter texts carry too little to be worth a call
SYSTEM_PROMPT = """You extract knowledge from one passage of technical documentation.
Answer with ONE JSON object and nothing else, in exactly this shape:
{"concepts": [{"name": "...", "type": "concept|goal|capability|limitation", "evidence": "exact quote"}],
 "edges": [{"subject": "...", "predicate": "enables|requires|has_limitation|has_workaround|feeds_into|alternative_to",
            "object": "...", "weight": 0.0, "evidence": "exact quote"}]}
Rules:
- Only what the passage states. "evidence" is a short exact quote from the passage.
- "subject" and "object" are names from "concepts".
- weight: 1.0 stated outright, 0.8 clearly implied, 0.5 weak.
- Never output personal data. At most {max_edges} edges."""


class _Concept(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=2, max_length=120)
    type: Literal["concept", "goal", "capability", "limitation"]
    evidence: str = Field(min_length=1, max_length=500)


class _Edge(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    subject: str = Field(min_length=1, max_length=120)
    predicate: Literal["enables", "requires", "has_limitation", "has_workaround", "feeds_into", "alternative_to"]
    object: str = Field(min_length=1, max_length=120)
    weight: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    evidence: str = Field(min_length=1, max_length=500)


class SemanticOutput(BaseModel):
    """The JSON schema the model must answer in."""

    model_config = ConfigDict(extra="forbid", strict=True)
    concepts: list[_Concept] = Field(default_factory=list, max_length=50)
    edges: list[_Edge] = Field(default_factory=list, max_length=100)


@dataclass
class SemanticStats:
    calls: int = 0
    failed: int = 0
    nodes: int = 0
    edges: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "failed": self.failed, "nodes": self.nodes, "edges": self.edges,
                "rejected": dict(self.rejected), "errors": self.errors[:5]}


class SemanticExtractor:
    def __init__(self, provider: ChatProvider, max_calls: int = 50, max_edges: int = MAX_EDGES,
                 timeout: float = 30.0) -> None:
        self.provider, self.max_calls, self.max_edges, self.timeout = provider, max_calls, max_edges, timeout
        self.stats = SemanticStats()

    def enrich(self, facts: Facts) -> None:
        """Add the model's nodes and edges to ``facts`` (the file's own group). Never raises."""
        for n in list(facts.nodes):
            if n["type"] in ("chunk", "module", "package") and len(n["description"]) >= MIN_CHARS:
                if self.stats.calls >= self.max_calls:
                    return
                self._one(facts, n)

    def _one(self, facts: Facts, node: dict[str, Any]) -> None:
        text = node["description"]
        self.stats.calls += 1
        try:
            answer = self.provider.complete([Message("user", f"Passage:\n<<<\n{text}\n>>>")],
                                            system=SYSTEM_PROMPT.replace("{max_edges}", str(self.max_edges)),
                                            max_tokens=1024, timeout=self.timeout)
            output: SemanticOutput = parse_output(answer, SemanticOutput)
        except Exception as exc:  # noqa: BLE001 - any provider failure: keep tiers 1-2, count it
            self.stats.failed += 1
            self.stats.errors.append(f"{node['id']}: {type(exc).__name__}: {exc}"[:300])
            log.warning("ingest LLM tier failed on %s (%s)", node["id"], exc)
            return
        self._add(facts, node, text, output)

    def _add(self, facts: Facts, node: dict[str, Any], text: str, output: SemanticOutput) -> None:
        lowered = text.lower()
        ids: dict[str, str] = {}
        for c in output.concepts:
            reason = _rejected(c.name, c.evidence, lowered)
            if reason:
                self.stats.rejected[reason] += 1
                continue
            nid = f"{c.type}:{slugify(c.name)[:80]}"
            ids[c.name.strip().lower()] = nid
            facts.node(nid, c.name.strip(), c.type, "", tier=3, evidence=clean_text(c.evidence, 300),
                       evidence_span=_span(c.evidence, lowered), from_node=node["id"])
            facts.edge(node["id"], nid, "mentions", 0.8, source_file=facts.group, tier=3)
            self.stats.nodes += 1
        kept: list[tuple[str, str, _Edge]] = []
        for e in sorted(output.edges, key=lambda e: -e.weight):
            s, o = ids.get(e.subject.strip().lower()), ids.get(e.object.strip().lower())
            reason = ("low_weight" if e.weight < MIN_WEIGHT else "unknown_concept" if not (s and o) or s == o
                      else _rejected(e.subject, e.evidence, lowered))
            if reason or not (s and o):
                self.stats.rejected[reason or "unknown_concept"] += 1
                continue
            kept.append((s, o, e))
        if len(kept) > self.max_edges:
            self.stats.rejected["over_edge_cap"] += len(kept) - self.max_edges
            kept = kept[:self.max_edges]
        for s, o, e in kept:
            facts.edge(s, o, e.predicate, float(e.weight), source_file=facts.group, tier=3,
                       evidence=clean_text(e.evidence, 300), evidence_span=_span(e.evidence, lowered),
                       confidence=float(e.weight))
            self.stats.edges += 1


def _rejected(name: str, evidence: str, lowered: str) -> str | None:
    if pii_reason(name) is not None:
        return "pii"
    if " ".join(evidence.lower().split()) not in " ".join(lowered.split()):
        return "evidence_not_in_text"
    return None


def _span(evidence: str, lowered: str) -> list[int] | None:
    start = lowered.find(evidence.lower())
    return [start, start + len(evidence)] if start >= 0 else None
