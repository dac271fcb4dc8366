"""The research loop's stage payloads, typed: what each stage reads and what it returns.

Each stage module names its input and output type (``input_type`` / ``output_type``, kgos.pipeline);
the pipeline derives a JSON Schema from each (pydantic) and validates the stage's data against it on
every call, so a stage that gets or returns the wrong shape fails with the field named instead of a
``KeyError`` three stages later. ``kgos research modules --json`` and ``GET /api/research/modules``
show the schemas. An input type lists the keys the stage reads (those it can do without are
``NotRequired``), an output type what it returns; extra keys are allowed (a stage passes on what it
does not read). Nested records whose shape belongs to one module
(``kgos.research.merge``'s knowledge, ``kgos.research.plan``'s intent) are typed as JSON objects here.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import NotRequired, TypedDict  # pydantic reads TypedDicts from here on Python < 3.12

__all__ = ["Chunk", "Document", "ExtractIn", "ExtractOut", "Hit", "IngestIn", "IngestOut", "Knowledge", "MergeIn",
           "MergeOut", "OutputIn", "OutputOut", "QueryIn", "QueryOut", "ReasonIn", "ReasonOut", "SearchIn",
           "SearchOut", "StoreIn", "StoreOut"]

JSON = dict[str, Any]


class Knowledge(TypedDict):
    """Everything merged so far (kgos.research.merge.empty_knowledge): by id, with provenance."""

    entities: dict[str, Any]  # by key (the shapes are kgos.research.merge's; not re-checked per item)
    claims: dict[str, Any]
    conflicts: list[Any]
    relations: list[Any]


class QueryIn(TypedDict, total=False):
    question: str  # an empty one is refused by the stage (InvalidArgument)
    refinement: JSON | None  # what the reasoner asked the next iteration to change


class QueryOut(TypedDict):
    """The plan (kgos.research.plan.plan_query)."""

    question: str
    text: str
    intent: JSON
    entities: list[str]
    relations: list[str]
    subtopics: list[JSON]
    queries: list[str]
    refinement: JSON


class SearchIn(TypedDict, total=False):
    """The plan (QueryOut) and what to search."""

    queries: list[str]
    refinement: JSON  # require_terms, authority_first
    sources: JSON  # {"kgs": {db_id: version}, "corpus": fingerprint}


class Hit(TypedDict):
    id: str
    backend: str
    kind: str
    source: str
    title: str
    text: str
    score: float
    authority: str
    rank: NotRequired[int]
    span: NotRequired[list[int]]
    node: NotRequired[JSON]
    aliases: NotRequired[list[str]]


class SearchOut(TypedDict):
    queries: list[str]
    strategy: str
    hits: list[Hit]
    total_candidates: int
    per_backend: dict[str, list[str]]


class IngestIn(TypedDict, total=False):
    hits: list[Hit]


class Chunk(TypedDict):
    start: int
    text: str
    hit: str


class Document(TypedDict):
    id: str
    title: str
    source: str
    kind: str | None
    authority: str
    aliases: list[str]
    node: JSON | None
    chunks: list[Chunk]


class IngestOut(TypedDict):
    documents: list[Document]


class ExtractIn(TypedDict, total=False):
    documents: list[Document]
    entities: list[str]  # the plan's entities: names to look for


class ExtractOut(TypedDict):
    claims: list[JSON]
    entities: list[JSON]
    relations: list[Any]


class MergeIn(TypedDict, total=False):
    extracted: JSON  # an ExtractOut
    known: Knowledge | None
    iteration: int


class MergeOut(TypedDict):
    knowledge: Knowledge
    stats: JSON  # new_claims, new_entities, corroborated, ... and new_info (a share)


class StoreIn(TypedDict, total=False):
    knowledge: Knowledge
    iteration: int
    run_id: str
    target: str | None  # the KG to write into; None: only return the delta


class StoreOut(TypedDict):
    delta: JSON  # node-link: {"nodes": [...], "edges": [...]}
    mode: str
    target: str | None


class ReasonIn(TypedDict):
    iteration: int
    plan: JSON  # a QueryOut
    knowledge: Knowledge
    merge_stats: JSON  # MergeOut's stats
    search: JSON  # {"total_candidates": int, "hits": [hit ids]}
    history: NotRequired[list[JSON]]
    budget: NotRequired[JSON]
    answers: NotRequired[list[str]]  # the answers a person gave to the run's questions so far


class ReasonOut(TypedDict):
    assessment: JSON
    decision: JSON


class OutputIn(TypedDict):
    question: str
    knowledge: Knowledge
    answer_claims: NotRequired[list[str]]
    subtopics: NotRequired[list[JSON]]
    entities: NotRequired[list[str]]
    kg_delta_sha256: NotRequired[str]


class OutputOut(TypedDict):
    answer: str
    sentences: list[JSON]
    citations: list[JSON]
    mode: str  # extractive | llm
    question: NotRequired[str]
    conflicts: NotRequired[list[JSON]]
    withheld: NotRequired[list[JSON]]  # candidate claims left out as untrusted text
    kg_delta_sha256: NotRequired[str | None]
