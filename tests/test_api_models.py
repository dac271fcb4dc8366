"""The API's response models are derived from the library's result types (one definition each):
every route sends exactly the library's ``to_dict()`` document, and a field added to a result type
reaches the API and its OpenAPI schema without a second copy to update."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from api_helpers import add_tiny, client
from pydantic import BaseModel

import kgos
from kgos.api import models as m
from kgos.api.schemas import response_model
from kgos.data import load_demo
from kgos.methods.results import NodeRef, Record

NODE = "feature:prompt_caching"

# (route, request body, the library call whose document the route must send); GET routes have no body
CALLS: list[tuple[str, dict[str, Any] | None, Any]] = [
    ("/kg/demo/search", {"query": "reduce my API costs", "k": 5},
     lambda kg: kg.search("reduce my API costs", k=5)),
    ("/kg/demo/intent-search", {"query": "how do I stream tokens to the user"},
     lambda kg: kg.intent_search("how do I stream tokens to the user")),
    ("/kg/demo/want-to", {"goal": "reduce costs", "k": 5}, lambda kg: kg.want_to("reduce costs", k=5)),
    ("/kg/demo/can-it", {"capability": "stream responses"}, lambda kg: kg.can_it("stream responses")),
    ("/kg/demo/compose", {"goal": "read a PDF and answer with citations"},
     lambda kg: kg.compose_for("read a PDF and answer with citations")),
    ("/kg/demo/similar", {"node": NODE, "k": 5}, lambda kg: kg.similar_to(NODE, k=5)),
    ("/kg/demo/alternatives", {"node": NODE}, lambda kg: kg.alternatives(NODE)),
    ("/kg/demo/why-not", {"node": NODE}, lambda kg: kg.why_not(NODE)),
    ("/kg/demo/impact", {"node": NODE, "per_depth": 20}, lambda kg: kg.impact_analysis(NODE, per_depth=20)),
    ("/kg/demo/trace", {"source": NODE, "target": "feature:streaming"},
     lambda kg: kg.trace_path(NODE, "feature:streaming")),
    ("/kg/demo/explore", {"node": NODE, "per_level": 15}, lambda kg: kg.explore_smart(NODE, per_level=15)),
    ("/kg/demo/keyword", {"query": "cache prompt"}, lambda kg: kg.keyword_match("cache prompt")),
    ("/kg/demo/boost", {"seeds": [NODE]}, lambda kg: kg.edge_type_boost([NODE])),
    ("/kg/demo/dimension-filter", {"filters": {"batch_suitability": {"min": 0.5}}},
     lambda kg: kg.dimension_filter({"batch_suitability": {"min": 0.5}})),
    ("/kg/demo/dims/infer", {"dry_run": True}, lambda kg: kg.infer_dimensions(dry_run=True)),
    (f"/kg/demo/nodes/{NODE}/dims", None, lambda kg: kg.dimensions(NODE)),
    ("/kg/demo/analyze/centrality", None, lambda kg: kg.analytics.centrality()),
    ("/kg/demo/analyze/communities", None, lambda kg: kg.analytics.communities()),
    ("/kg/demo/analyze/gaps", None, lambda kg: kg.analytics.gaps()),
    ("/kg/demo/validate", None, lambda kg: kg.validate()),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    ws = kgos.Workspace(folder / "home")
    load_demo(ws, embedder="hash")
    add_tiny(ws, folder)
    yield ws, client(ws)
    ws.close()


def without_timing(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: without_timing(v) for k, v in doc.items() if k not in ("took_ms", "seconds")}
    if isinstance(doc, list):
        return [without_timing(v) for v in doc]
    return doc


@pytest.mark.parametrize(("route", "body", "call"), CALLS, ids=[c[0].rsplit("/", 1)[-1] for c in CALLS])
def test_each_route_sends_the_library_document(served, route, body, call):
    ws, api = served
    response = api.post(f"/api{route}", json=body) if body is not None else api.get(f"/api{route}")
    assert response.status_code == 200, response.text
    assert without_timing(response.json()) == without_timing(call(ws.kg("demo")).to_dict())


def test_kg_documents_match_the_library(served):
    ws, api = served
    detail = api.get("/api/kg/tiny").json()
    assert without_timing(detail.pop("stats")) == ws.kg("tiny").stats().to_dict()
    assert detail == ws.info("tiny").to_dict()


@dataclass(frozen=True)
class _Probe(Record):
    """A result type made up for this test."""

    node: NodeRef
    scores: dict[int, float]
    tags: tuple[str, ...] = ()
    extra: float | None = None


def test_a_field_added_to_a_result_type_reaches_the_model_and_its_schema():
    model = response_model(_Probe, "ProbeOut")
    assert list(model.model_fields) == ["node", "scores", "tags", "extra"]
    assert model.__doc__ == "A result type made up for this test."
    doc = _Probe(NodeRef("a", "A", "t"), {1: 0.5}, ("x",)).to_dict()
    assert model.model_validate(doc).model_dump(exclude_unset=True) == doc  # int keys arrive as str
    schema = model.model_json_schema()
    assert set(schema["required"]) == {"node", "scores", "tags", "extra"}
    assert schema["properties"]["tags"]["type"] == "array"


def test_response_models_are_derived_not_copied():
    """No hand-written response model repeats the fields of a library result type."""
    import dataclasses

    from kgos import model
    from kgos.kg import workspace
    from kgos.methods import results
    from kgos.retrieval import results as search_results
    from kgos.store import importer, stats, validation

    library = {frozenset(f.name for f in dataclasses.fields(v)): v.__name__
               for module in (model, results, search_results, stats, validation, importer, workspace)
               for v in vars(module).values() if isinstance(v, type) and dataclasses.is_dataclass(v)}
    written = [v for v in vars(m).values() if isinstance(v, type) and issubclass(v, BaseModel)
               and getattr(v, "__kgos_source__", None) is None]
    copies = {v.__name__: library[frozenset(v.model_fields)] for v in written if frozenset(v.model_fields) in library}
    assert copies == {}
    derived = [v for v in vars(m).values() if getattr(v, "__kgos_source__", None) is not None]
    assert len(derived) >= 45
    assert m.CapabilityOut.__kgos_source__.__name__ == "CapabilityResult"
    assert m.SearchOut.__kgos_source__.__name__ == "SearchResult"
