"""The research stages' typed payloads (kgos.research.contracts): each stage declares what it reads and
returns, the registry shows the JSON Schemas, and a payload of the wrong shape fails the stage with the
field named (the runs of test_research*.py check every real payload against them on the way)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kgos.errors import PipelineError
from kgos.pipeline import REGISTRY, ProcessContext, StageInput, StageOutput
from kgos.research.stages import IngestModule, QueryModule

STAGE_CATEGORIES = {"query", "search", "ingest", "extract", "merge", "store", "reason", "output"}


def test_every_research_stage_declares_its_payloads() -> None:
    described = [m for m in REGISTRY.describe() if REGISTRY.get(m["id"]).__module__.startswith("kgos.research")]
    assert {m["category"] for m in described} == STAGE_CATEGORIES
    for m in described:
        assert m["input_schema"]["type"] == "object" and m["output_schema"]["type"] == "object", m["id"]
        json.dumps(m["input_schema"]), json.dumps(m["output_schema"])
    search = next(m for m in described if m["id"] == "search.multi")
    assert search["output_schema"]["properties"]["hits"]["items"]["$ref"] == "#/$defs/Hit"
    assert set(search["output_schema"]["required"]) == {"queries", "strategy", "hits", "total_candidates",
                                                        "per_backend"}


def test_a_stage_given_the_wrong_shape_names_the_field() -> None:
    with pytest.raises(PipelineError, match=r"ingest.documents: its input is not a IngestIn: hits: 'not a list'"):
        asyncio.run(IngestModule().process(StageInput({"hits": "not a list"}), ProcessContext()))
    hit = {"id": "h1", "backend": "bm25", "kind": "corpus", "source": "a.txt", "title": "A", "text": "alpha",
           "score": 1.0, "authority": "official"}
    out = asyncio.run(IngestModule().process(StageInput({"hits": [hit]}), ProcessContext()))
    assert out.data["documents"][0]["chunks"] == [{"start": 0, "text": "alpha", "hit": "h1"}]


class BrokenQuery(QueryModule):
    """Returns a plan whose queries are not a list: the pipeline must catch it, not the Search stage."""

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        out = await super().run(input, context, config)
        return StageOutput({**out.data, "queries": "one string"})


def test_a_stage_returning_the_wrong_shape_fails_there() -> None:
    plan = asyncio.run(QueryModule().process(StageInput({"question": "what is gzip?"}), ProcessContext()))
    assert isinstance(plan.data["queries"], list)  # the real stage's output is a QueryOut
    with pytest.raises(PipelineError, match=r"query.intent: its output is not a QueryOut: queries: "):
        asyncio.run(BrokenQuery().process(StageInput({"question": "what is gzip?"}), ProcessContext()))
