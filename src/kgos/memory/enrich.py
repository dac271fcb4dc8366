"""Optional LLM enrichment (spec/002 "Phase 2: LLM Enrichment (Optional, Off by Default)").

The model gets the memory and what deterministic extraction already found, and is asked for more
entities and edges as JSON. Its answer is validated strictly (pydantic, unknown keys and wrong types
refused, enums for entity types and predicates, weights in [0, 1]), then filtered: edges under the
0.5 weight threshold are dropped, entities failing the PII filter are dropped with their edges, edges
must respect spec/002's predicate table (e.g. only the user ``prefers``), and at most ``max_edges``
(default 10) are kept, the heaviest first. Any failure (provider error or timeout, no JSON, schema
violation) returns an empty result with the reason: the caller keeps the deterministic extraction.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..llm.base import ChatProvider, Message
from ..model import normalize_name
from . import pii
from .extract import USER, EntityRef, Extraction, Relation

log = logging.getLogger("kgos.memory")

SYSTEM_PROMPT = """You extract a small knowledge graph from one memory note written by a user.
Answer with ONE JSON object and nothing else, in exactly this shape:
{"entities": [{"name": "...", "type": "project|tool|file|concept|decision"}],
 "edges": [{"subject": "...", "predicate": "prefers|decided|works_on|uses|references", "object": "...",
            "weight": 0.0}]}
Rules:
- Only extract what the note states explicitly. Do not hallucinate, infer or add general knowledge.
- "subject" and "object" are entity names from your "entities" list, or "user" for the note's author.
- Predicates: user prefers tool/concept; user decided decision; user works_on project;
  user or project uses tool; project or decision references file.
- weight: 1.0 explicit statement, 0.8 high confidence, 0.5 weak association.
- Never output personal data: no names of people, e-mail addresses, phone numbers or postal addresses.
- At most {max_edges} edges. If there is nothing to add, answer {"entities": [], "edges": []}."""

EntityType = Literal["project", "tool", "file", "concept", "decision"]
Predicate = Literal["prefers", "decided", "works_on", "uses", "references"]
# spec/002's predicate table: predicate -> (subject types, object types)
ALLOWED: dict[str, tuple[set[str], set[str]]] = {
    "prefers": ({"user"}, {"tool", "concept"}),
    "decided": ({"user"}, {"decision"}),
    "works_on": ({"user"}, {"project"}),
    "uses": ({"user", "project"}, {"tool"}),
    "references": ({"project", "decision"}, {"file"}),
}
_USER_NAMES = {"user", "i", "me", "the user", "primary user", "author"}


class _Entity(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=120)
    type: EntityType


class _Edge(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    subject: str = Field(min_length=1, max_length=120)
    predicate: Predicate
    object: str = Field(min_length=1, max_length=120)
    weight: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)


class LLMOutput(BaseModel):
    """The JSON schema the model must answer in."""

    model_config = ConfigDict(extra="forbid", strict=True)
    entities: list[_Entity] = Field(default_factory=list, max_length=100)
    edges: list[_Edge] = Field(default_factory=list, max_length=200)


@dataclass(frozen=True)
class Enrichment:
    ok: bool
    extraction: Extraction = field(default_factory=Extraction)
    error: str | None = None
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> count

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "error": self.error, "rejected": self.rejected,
                **self.extraction.to_dict()}


def build_prompt(content: str, known: Extraction, max_edges: int, max_chars: int = 6000) -> tuple[str, str]:
    """(system, user) messages. The note is cut at ``max_chars``: enrichment is for notes, not books."""
    found = ", ".join(f"[{e.type}] {e.name}" for e in known.entities) or "nothing"
    user = (f"Memory note:\n<<<\n{content[:max_chars]}\n>>>\n\nAlready extracted: {found}.\n"
            "Add only entities and edges that are stated explicitly and not already listed.")
    return SYSTEM_PROMPT.replace("{max_edges}", str(max_edges)), user


def parse_output(text: str, schema: type[BaseModel] = LLMOutput) -> Any:
    """The model answer validated against ``schema`` (default: this module's ``LLMOutput``; ingestion's
    semantic tier passes its own). Accepts a fenced ```json block; raises ValueError otherwise."""
    body = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith("{"):
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("the answer holds no JSON object")
        body = body[start:end + 1]
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc.msg} at {exc.pos})") from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"the answer breaks the schema at {where or 'top level'}: {first['msg']}") from None


class LLMEnricher:
    def __init__(self, provider: ChatProvider, max_edges: int = 10, min_weight: float = 0.5,
                 timeout: float = 20.0) -> None:
        self.provider = provider
        self.max_edges = max_edges
        self.min_weight = min_weight
        self.timeout = timeout

    def enrich(self, content: str, known: Extraction) -> Enrichment:
        """Extra entities/edges from the model, or ``ok=False`` with the reason. Never raises."""
        system, user = build_prompt(content, known, self.max_edges)
        try:
            answer = self.provider.complete([Message("user", user)], system=system, max_tokens=1024,
                                            timeout=self.timeout)
            output = parse_output(answer)
        except Exception as exc:  # noqa: BLE001 - any provider failure means: deterministic only
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("memory LLM enrichment failed, keeping deterministic extraction only (%s)", reason)
            return Enrichment(ok=False, error=reason[:500])
        return self.filter(output, known)

    def filter(self, output: LLMOutput, known: Extraction) -> Enrichment:
        rejected: Counter[str] = Counter()
        entities = self._entities(output, known, rejected)
        relations = sorted(self._relations(output, entities, rejected), key=lambda r: -r.weight)
        if len(relations) > self.max_edges:
            rejected["over_edge_cap"] += len(relations) - self.max_edges
            relations = relations[:self.max_edges]
        used = {r.object.key for r in relations} | {r.subject.key for r in relations}
        kept = tuple(e for e in entities.values() if e.key in used or e.key not in _keys(known))
        return Enrichment(ok=True, extraction=Extraction(kept, tuple(relations)), rejected=dict(rejected))

    def _entities(self, output: LLMOutput, known: Extraction, rejected: Counter[str]) -> dict[str, EntityRef]:
        """Name (normalised) -> entity: the model's entities that pass the PII filter, plus known ones."""
        table = {normalize_name(e.name): e for e in known.entities}
        for e in output.entities:
            name = re.sub(r"\s+", " ", e.name).strip()
            if not name or pii.pii_reason(name) is not None:
                rejected["pii"] += 1
                continue
            table.setdefault(normalize_name(name), EntityRef(name, e.type))
        return table

    def _relations(self, output: LLMOutput, entities: dict[str, EntityRef], rejected: Counter[str]) -> list[Relation]:
        out: dict[Any, Relation] = {}
        for edge in output.edges:
            if edge.weight < self.min_weight:
                rejected["low_weight"] += 1
                continue
            s, o = _resolve(edge.subject, entities), _resolve(edge.object, entities)
            if s is None or o is None:
                rejected["unknown_entity"] += 1
                continue
            subjects, objects = ALLOWED[edge.predicate]
            if s.type not in subjects or o.type not in objects:
                rejected["predicate_types"] += 1
                continue
            relation = Relation(s, edge.predicate, o, float(edge.weight), None, "llm")
            out.setdefault(relation.key, relation)
        return list(out.values())


def _resolve(name: str, entities: dict[str, EntityRef]) -> EntityRef | None:
    norm = normalize_name(name)
    return USER if norm in _USER_NAMES else entities.get(norm)


def _keys(extraction: Extraction) -> set[tuple[str, str]]:
    return {e.key for e in extraction.entities}
