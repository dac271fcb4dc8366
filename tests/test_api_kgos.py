"""/api/kgos (spec/000 section 10) with the spec's request and response shapes, plus /api/health,
/openapi.json and the error shapes of unknown routes."""

from __future__ import annotations

import pytest
from api_helpers import add_tiny, client, error

import kgos
from kgos.data import load_demo


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kgos")
    ws = kgos.Workspace(folder / "home")
    load_demo(ws, embedder=None)
    add_tiny(ws, folder)
    yield client(ws)
    ws.close()


def test_query_has_the_spec_shape(api):
    body = {"query": "How do I reduce API costs?",
            "config": {"alpha": 0.35, "beta": 0.40, "gamma": 0.15, "delta": 0.10, "limit": 10, "methods": ["hybrid", "intent"]}}
    d = api.post("/api/kgos/query/demo", json=body).json()
    assert d["intent"] == {"category": "cost_optimization", "score": 1.3}
    assert d["query"] == body["query"] and d["total"] == len(d["results"]) == 10 and d["composition_plan"] is None
    hit = d["results"][0]
    assert {"node", "score", "method", "edge_annotations", "components"} <= set(hit)
    assert {"id", "name", "type", "properties"} <= set(hit["node"]) and "aliases" in hit["node"]["properties"]
    assert all({"type", "target"} <= set(a) for a in hit["edge_annotations"])
    assert d["weights"]["gamma"] > 0 and "want_to" in d["routes"]  # explicit weights (renormalised without vectors)


def test_query_methods_map_to_routes(api):
    plain = api.post("/api/kgos/query/demo", json={"query": "How do I reduce API costs?", "config": {"methods": ["hybrid"]}}).json()
    assert plain["routes"] == [] and plain["weights"]["method"] == 0.0
    named = api.post("/api/kgos/query/demo", json={"query": "read CSV data and generate a report",
                                                   "config": {"methods": ["compose_for"], "limit": 3}}).json()
    assert named["routes"] == ["compose_for"] and named["composition_plan"]["steps"] and len(named["results"]) <= 3
    default = api.post("/api/kgos/query/tiny", json={"query": "prompt caching"}).json()
    assert default["results"][0]["node"]["id"] == "feature:prompt_caching"


@pytest.mark.parametrize("body", [
    {"query": ""}, {"query": "  "}, {"query": "x", "config": {"alpha": -0.1}}, {"query": "x", "config": {"limit": 0}},
    {"query": "x", "config": {"alpha": 0, "beta": 0}}, {"query": "x", "config": {"methods": ["magic"]}},
    {"query": "x", "config": {"limt": 5}}, {"query": "x", "config": {"alpha": "lots"}},
])
def test_query_rejects(api, body):
    error(api.post("/api/kgos/query/demo", json=body), 422, "ValidationError")


def test_query_unknown_or_bad_kg(api):
    error(api.post("/api/kgos/query/nope", json={"query": "x"}), 404, "KGNotFound")
    error(api.post("/api/kgos/query/Nope!", json={"query": "x"}), 422)


def test_impact(api):
    d = api.post("/api/kgos/impact/demo/concept:api_key_authentication", json={"direction": "backward", "max_depth": 3}).json()
    assert d["node_id"] == "concept:api_key_authentication" and d["direction"] == "backward" and d["total_impacted"] == 107
    assert set(d["risk_by_depth"]) == {"1", "2", "3"}
    first = d["risk_by_depth"]["1"][0]
    assert {"id", "name"} <= set(first["node"]) and 0 < first["risk"] <= 1
    assert all(isinstance(x, str) for x in d["critical_path"]) and d["critical_path"][0] == d["node_id"]
    assert [n["id"] for n in d["critical_path_nodes"]] == d["critical_path"]
    forward = api.post("/api/kgos/impact/tiny/src/app.py", json={}).json()  # spec default: forward, depth 3
    assert forward["direction"] == "forward" and forward["total_impacted"] == 1
    body = error(api.post("/api/kgos/impact/demo/no_such_node_here", json={}), 404, "NodeNotFound")
    assert isinstance(body.get("suggestions", []), list)
    error(api.post("/api/kgos/impact/demo/feature:batch_api", json={"max_depth": 0}), 422)
    error(api.post("/api/kgos/impact/demo/feature:batch_api", json={"direction": "up"}), 422)


def test_compose(api):
    goal = "read CSV data, analyze trends, and generate a report"
    d = api.post("/api/kgos/compose/demo", json={"goal": goal, "max_tools": 5}).json()
    assert d["goal"] == goal and isinstance(d["is_valid"], bool) and d["steps"]
    step = d["steps"][0]
    assert step["order"] == 1 and {"tool", "action", "node_id"} <= set(step)
    for edge in d["edges"]:
        assert {"from", "to", "type", "validated"} <= set(edge) and edge["validated"] == (edge["status"] in ("direct", "via"))
    assert isinstance(d["prerequisites"], list) and isinstance(d["warnings"], list)
    error(api.post("/api/kgos/compose/demo", json={"goal": ""}), 422)
    error(api.post("/api/kgos/compose/demo", json={"goal": "x", "max_tools": 0}), 422)


def test_similar(api):
    d = api.post("/api/kgos/similar/demo/feature:prompt_caching", json={"k": 4}).json()
    assert d["source_node"]["id"] == "feature:prompt_caching" and len(d["similar"]) == 4
    row = d["similar"][0]
    assert {"node", "score", "jaccard", "type_match", "name_overlap"} <= set(row)
    assert abs(row["score"] - (0.7 * row["jaccard"] + 0.2 * row["type_match"] + 0.1 * row["name_overlap"])) < 1e-4
    assert api.post("/api/kgos/similar/tiny/src/app.py", json={}).json()["source_node"]["id"] == "src/app.py"
    error(api.post("/api/kgos/similar/demo/feature:prompt_caching", json={"k": -1}), 422)
    error(api.post("/api/kgos/similar/demo/feature:prompt_cachin", json={}), 404, "NodeNotFound")


def test_dimensions_catalog(api):
    d = api.get("/api/kgos/dimensions").json()
    assert d["total"] == len(d["dimensions"]) == 56
    assert d["categories"] == {"Performance & Cost": 8, "Complexity & Effort": 6, "Interaction Patterns": 7,
                               "Data Characteristics": 6, "API Capabilities": 8, "Problem Domains": 7,
                               "Architectural Patterns": 5, "NLKE Meta-Dimensions": 3, "CLI Tool Characteristics": 6}
    assert d["dimensions"][0] == {"name": "latency_sensitivity", "category": "Performance & Cost",
                                  "description": "How sensitive the tool/pattern is to response time",
                                  "low_description": "Tolerant of delays",
                                  "high_description": "Requires sub-second responses", "range": [0.0, 1.0]}


def test_classify(api):
    d = api.get("/api/kgos/classify", params={"query": "what depends on the auth module?"}).json()
    assert d["intent"]["category"] == "impact" and "impact_analysis" in d["routes"] and d["retrieval_intent"]
    error(api.get("/api/kgos/classify", params={"query": " "}), 422)
    error(api.get("/api/kgos/classify"), 422)


def test_health_openapi_and_unknown_routes(api):
    h = api.get("/api/health").json()
    assert h == {"status": "ok", "version": kgos.__version__, "kgs": 3, "busy": False}
    spec = api.get("/openapi.json").json()
    paths = spec["paths"]
    for path in ("/api/kgos/query/{db_id}", "/api/kgos/impact/{db_id}/{node_id}", "/api/kgos/compose/{db_id}",
                 "/api/kgos/similar/{db_id}/{node_id}", "/api/kgos/dimensions", "/api/kg", "/api/kg/{db_id}/search"):
        assert path in paths, path
    assert paths["/api/kg/{db_id}/search"]["post"]["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"}
    assert api.get("/docs").status_code == 200
    assert "no route" in error(api.get("/api/nothing/here"), 404, "NotFound")["detail"]
    assert "not allowed" in error(api.put("/api/kgos/dimensions"), 405, "MethodNotAllowed")["detail"]
    body = error(api.post("/api/kg/demo/search", content=b"{not json", headers={"content-type": "application/json"}), 422)
    assert body["errors"][0]["type"] == "json_invalid"
