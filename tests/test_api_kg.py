"""/api/kg over real SQLite through real HTTP (TestClient): KGs, nodes, edges, import/export,
search and every query method, each with its happy path and its bad inputs."""

from __future__ import annotations

import gzip
import io
import json
import time
import zipfile

import pytest
from api_helpers import SCRIPT, TINY_EDGES, TINY_NODES, add_tiny, attach_readonly, client, error

import kgos
from kgos.data import load_demo


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """A read-mostly workspace: the demo KGs (hash embeddings), the tiny KG, an attached read-only KG."""
    folder = tmp_path_factory.mktemp("api")
    ws = kgos.Workspace(folder / "home")
    load_demo(ws, embedder="hash")
    add_tiny(ws, folder)
    attach_readonly(ws, folder)
    yield client(ws)
    ws.close()


@pytest.fixture
def fresh(tmp_path):
    """A workspace to change: the tiny KG and an attached read-only KG."""
    ws = kgos.Workspace(tmp_path / "home")
    add_tiny(ws, tmp_path)
    attach_readonly(ws, tmp_path)
    yield client(ws, headers=SCRIPT)
    ws.close()


# -- KGs -------------------------------------------------------------------------------------------------
def test_list_create_get_validate_delete(fresh):
    assert {k["db_id"]: k["kind"] for k in fresh.get("/api/kg").json()} == {"tiny": "native", "mem": "attached"}
    r = fresh.post("/api/kg", json={"db_id": "notes", "name": "My notes", "description": "scratch"})
    assert r.status_code == 201 and r.json()["name"] == "My notes" and r.json()["nodes"] == 0
    error(fresh.post("/api/kg", json={"db_id": "notes"}), 409, "KGExists")
    d = fresh.get("/api/kg/tiny").json()
    assert d["nodes"] == 6 and d["stats"]["edges"] == 3 and d["stats"]["node_types"]["file"] == 2
    v = fresh.get("/api/kg/tiny/validate").json()
    assert v["db_id"] == "tiny" and isinstance(v["ok"], bool) and len(v["rules"]) == 12
    assert fresh.delete("/api/kg/notes").json() == {"db_id": "notes", "result": "deleted"}
    assert fresh.delete("/api/kg/mem").json()["result"] == "detached"
    assert [k["db_id"] for k in fresh.get("/api/kg").json()] == ["tiny"]


def test_bad_and_unknown_kg_names(api):
    body = error(api.get("/api/kg/nope"), 404, "KGNotFound")
    assert "no KG named 'nope'" in body["detail"] and "demo" in body["detail"]
    for path in ("/api/kg/Bad!", "/api/kg/UPPER/nodes", "/api/kg/-x/search"):
        body = error(api.get(path) if "search" not in path else api.post(path, json={"query": "x"}), 422)
        assert "invalid KG name" in body["detail"] and body["errors"][0]["loc"] == ["path", "db_id"]
    body = error(api.post("/api/kg", json={"db_id": "No Spaces"}), 422)
    assert "invalid KG name" in body["detail"] and body["errors"][0]["loc"] == ["body", "db_id"]
    error(api.post("/api/kg", json={"db_id": "ok", "extra": 1}), 422)
    error(api.delete("/api/kg/nope"), 404, "KGNotFound")


# -- nodes ----------------------------------------------------------------------------------------------------
def test_node_pages(api):
    page = api.get("/api/kg/demo/nodes", params={"limit": 5, "offset": 2}).json()
    assert page["total"] == 350 and page["limit"] == 5 and len(page["nodes"]) == 5
    first = api.get("/api/kg/demo/nodes", params={"limit": 7}).json()["nodes"]
    assert [n["id"] for n in first[2:]] == [n["id"] for n in page["nodes"]]
    goals = api.get("/api/kg/demo/nodes", params={"type": "goal", "limit": 1000}).json()
    assert goals["total"] == len(goals["nodes"]) > 0 and {n["type"] for n in goals["nodes"]} == {"goal"}
    assert api.get("/api/kg/mem/nodes").json()["total"] == 2  # attached (foreign schema) KGs page too
    assert api.get("/api/kg/demo/nodes", params={"offset": 10_000}).json()["nodes"] == []
    error(api.get("/api/kg/demo/nodes", params={"limit": 0}), 422)
    error(api.get("/api/kg/demo/nodes", params={"offset": -1}), 422)


def test_get_node_with_colons_and_slashes(api):
    node = api.get("/api/kg/tiny/nodes/src/app.py").json()
    assert node["id"] == "src/app.py" and node["type"] == "file" and node["created_at"]
    assert api.get("/api/kg/tiny/nodes/goal:cost_reduction").json()["name"] == "Cost reduction"
    hop = api.get("/api/kg/tiny/nodes/src/app.py/neighbors").json()
    assert hop["node"]["id"] == "src/app.py"
    assert [(n["node"]["id"], n["edge"]["type"], n["direction"]) for n in hop["neighbors"]] == [("src/db.py", "requires", "outgoing")]
    assert api.get("/api/kg/tiny/nodes/src/db.py/neighbors", params={"direction": "outgoing"}).json()["neighbors"] == []
    typed = api.get("/api/kg/tiny/nodes/benefit:token_savings/neighbors", params={"type": "enables"}).json()
    assert [n["node"]["id"] for n in typed["neighbors"]] == ["feature:prompt_caching"]
    error(api.get("/api/kg/tiny/nodes/src/app.py/neighbors", params={"direction": "up"}), 422)


def test_unknown_node_suggests(api):
    body = error(api.get("/api/kg/demo/nodes/feature:prompt_cachng"), 404, "NodeNotFound")
    assert "feature:prompt_caching" in body["suggestions"] and "did you mean" in body["detail"]
    body = error(api.get("/api/kg/tiny/nodes/src/ap.py/neighbors"), 404, "NodeNotFound")
    assert "src/app.py" in body["suggestions"]
    error(api.post("/api/kg/demo/similar", json={"node": "no such thing at all"}), 404, "NodeNotFound")


def test_node_writes(fresh):
    r = fresh.post("/api/kg/tiny/nodes", json={"name": "Batch API", "type": "feature", "properties": {"x": 1}})
    assert r.status_code == 201 and r.json()["id"] == "feature:batch_api"
    error(fresh.post("/api/kg/tiny/nodes", json={"name": "Again", "id": "feature:batch_api"}), 400, "InvalidArgument")
    up = fresh.post("/api/kg/tiny/nodes/docs/readme.md", json={"name": "Readme", "type": "file"})
    assert up.status_code == 200 and up.json()["id"] == "docs/readme.md"
    again = fresh.post("/api/kg/tiny/nodes/docs/readme.md", json={"name": "README", "properties": {"lang": "en"}})
    assert again.json()["name"] == "README" and again.json()["properties"] == {"lang": "en"}
    patched = fresh.patch("/api/kg/tiny/nodes/feature:batch_api", json={"description": "Half price", "properties": {"y": 2}})
    assert patched.json()["description"] == "Half price" and patched.json()["properties"] == {"x": 1, "y": 2}
    replaced = fresh.patch("/api/kg/tiny/nodes/feature:batch_api", json={"properties": {"z": 3}, "replace_properties": True})
    assert replaced.json()["properties"] == {"z": 3} and replaced.json()["name"] == "Batch API"
    error(fresh.patch("/api/kg/tiny/nodes/feature:batch_api", json={"name": "  "}), 422)
    error(fresh.patch("/api/kg/tiny/nodes/nope", json={"name": "x"}), 404, "NodeNotFound")
    assert fresh.delete("/api/kg/tiny/nodes/src/app.py").json() == {"deleted": "src/app.py", "edges_removed": 1}
    error(fresh.get("/api/kg/tiny/nodes/src/app.py"), 404)
    error(fresh.delete("/api/kg/tiny/nodes/src/app.py"), 404, "NodeNotFound")
    error(fresh.post("/api/kg/tiny/nodes/a/neighbors", json={"name": "x"}), 400, "InvalidArgument")
    error(fresh.post("/api/kg/tiny/nodes", json={"name": "x", "id": "b/dims"}), 400, "InvalidArgument")
    error(fresh.post("/api/kg/tiny/nodes", json={"type": "feature"}), 422)


def test_read_only_attached_kg_refuses_writes(fresh):
    assert fresh.get("/api/kg/mem/nodes/a").json()["name"] == "Alpha"
    for response in (fresh.post("/api/kg/mem/nodes", json={"name": "New"}),
                     fresh.post("/api/kg/mem/nodes/a", json={"name": "Renamed"}),
                     fresh.patch("/api/kg/mem/nodes/a", json={"name": "Renamed"}),
                     fresh.delete("/api/kg/mem/nodes/a"),
                     fresh.post("/api/kg/mem/edges", json={"source": "b", "target": "a", "type": "uses"}),
                     fresh.delete("/api/kg/mem/edges", params={"source": "a", "target": "b", "type": "uses"}),
                     fresh.put("/api/kg/mem/nodes/a/dims", json={"values": {"pricing_tier": 0.5}})):
        assert "read-only" in error(response, 409, "ReadOnlyKG")["detail"]
    assert fresh.get("/api/kg/mem/nodes/a").json()["name"] == "Alpha"
    error(fresh.post("/api/kg/mem/import", files={"file": ("x.json", b"{}")}, params={"mode": "merge"}), 400)


# -- edges ---------------------------------------------------------------------------------------------------------
def test_edges(fresh):
    r = fresh.post("/api/kg/tiny/edges", json={"source": "lonely", "target": "src/db.py", "type": "uses", "weight": 0.5})
    assert r.status_code == 201 and r.json()["weight"] == 0.5
    assert fresh.post("/api/kg/tiny/edges", json={"source": "lonely", "target": "src/db.py", "type": "uses",
                                                  "weight": 0.9}).json()["weight"] == 0.9
    page = fresh.get("/api/kg/tiny/edges", params={"type": "uses"}).json()
    assert [(e["source"], e["target"]) for e in page["edges"]] == [("lonely", "src/db.py")]
    assert len(fresh.get("/api/kg/tiny/edges", params={"limit": 2, "offset": 1}).json()["edges"]) == 2
    gone = fresh.delete("/api/kg/tiny/edges", params={"source": "lonely", "target": "src/db.py", "type": "uses"})
    assert gone.json()["deleted"] is True
    error(fresh.delete("/api/kg/tiny/edges", params={"source": "lonely", "target": "src/db.py", "type": "uses"}),
          404, "EdgeNotFound")
    error(fresh.delete("/api/kg/tiny/edges", params={"source": "lonely"}), 422)
    error(fresh.post("/api/kg/tiny/edges", json={"source": "lonely", "target": "nowhere", "type": "uses"}), 404, "NodeNotFound")
    error(fresh.post("/api/kg/tiny/edges", json={"source": "lonely", "target": "src/db.py", "type": ""}), 422)
    nan = '{"source": "lonely", "target": "src/db.py", "type": "uses", "weight": NaN}'
    error(fresh.post("/api/kg/tiny/edges", content=nan, headers={"content-type": "application/json"}), 422)


# -- import / export ---------------------------------------------------------------------------------------------------
def nodelink(nodes, edges) -> bytes:
    return json.dumps({"format": "kgos-node-link/1", "nodes": nodes, "edges": edges}).encode()


def test_import_modes(fresh):
    data = nodelink([{"id": "x", "name": "X"}, {"id": "y", "name": "Y"}], [{"source": "x", "target": "y", "type": "rel"}])
    r = fresh.post("/api/kg/up/import", files={"file": ("up.json", data)})
    assert r.status_code == 200 and r.json()["nodes"] == 2 and r.json()["mode"] == "create"
    error(fresh.post("/api/kg/up/import", files={"file": ("up.json", data)}), 409, "KGExists")
    more = nodelink([{"id": "z", "name": "Z"}], [])
    assert fresh.post("/api/kg/up/import", params={"mode": "merge"}, files={"file": ("m.json", more)}).json()["nodes"] == 1
    assert fresh.get("/api/kg/up").json()["nodes"] == 3
    gz = gzip.compress(more)
    assert fresh.post("/api/kg/up/import", params={"mode": "replace"}, files={"file": ("r.json.gz", gz)}).json()["nodes"] == 1
    assert fresh.get("/api/kg/up").json()["nodes"] == 1
    lines = b'{"kind": "node", "id": "j", "name": "J"}\n'
    r = fresh.post("/api/kg/jl/import", params={"format": "jsonl"}, files={"file": ("anything", lines)})
    assert r.status_code == 200 and r.json()["format"] == "jsonl"
    error(fresh.post("/api/kg/up/import", params={"mode": "sideways"}, files={"file": ("m.json", more)}), 422)
    error(fresh.post("/api/kg/up/import"), 422)


def test_bad_upload_leaves_the_kg_unchanged(fresh):
    before = fresh.get("/api/kg/tiny/export").content
    dangling = nodelink([{"id": "q", "name": "Q"}], [{"source": "q", "target": "missing", "type": "rel"}])
    for mode in ("merge", "replace"):
        body = error(fresh.post("/api/kg/tiny/import", params={"mode": mode}, files={"file": ("bad.json", dangling)}),
                     400, "ImportFailed")
        assert body["record"] == "edges[0]" and "edges[0]" in body["detail"]
        truncated = fresh.post("/api/kg/tiny/import", params={"mode": mode}, files={"file": ("t.json", dangling[:30])})
        assert "malformed" in error(truncated, 400, "ImportFailed")["detail"]
    assert fresh.get("/api/kg/tiny/export").content == before
    assert "cannot tell the format" in error(fresh.post("/api/kg/new/import", files={"file": ("kg.txt", b"x")}), 400)["detail"]
    error(fresh.post("/api/kg/new/import", files={"file": ("kg.zip", b"PK\x03\x04broken")}), 400, "ImportFailed")
    assert fresh.get("/api/kg/new").status_code == 404


def _upload_and_search(client, db_id: str, **params) -> tuple[dict, list[dict]]:
    """Upload the tiny KG, wait for its background embedding job (if any; its end state goes into
    ``embedding["job"]``), then search it."""
    r = client.post(f"/api/kg/{db_id}/import", params=params, files={"file": ("t.json", nodelink(TINY_NODES, TINY_EDGES))})
    assert r.status_code == 200, r.text
    embedding = r.json()["embedding"]
    for _ in range(500):
        if not embedding["job_id"]:
            break
        embedding["job"] = client.get(f"/api/jobs/{embedding['job_id']}").json()
        if embedding["job"]["finished"]:
            break
        time.sleep(0.02)
    hits = client.post(f"/api/kg/{db_id}/search", json={"query": "prompt caching cost", "k": 3}).json()["results"]
    return embedding, hits


def test_an_upload_is_embedded_in_the_background(fresh):
    embedding, hits = _upload_and_search(fresh, "up")
    assert embedding["skipped"] is None and embedding["error"] is None and embedding["job"]["status"] == "complete"
    assert embedding["job"]["result"]["fast"]["embedded"] == 6  # hash is cheap: embedded directly
    assert hits and max(hit["components"]["embedding"] for hit in hits) > 0  # vectors are there


def test_an_upload_with_embed_none_stays_vectorless(fresh):
    embedding, hits = _upload_and_search(fresh, "up", embed="none")
    assert embedding["fast"] is None and embedding["skipped"] == "disabled" and "kgos embed up" in embedding["note"]
    assert embedding["job_id"] is None
    assert hits and all(hit["components"]["embedding"] == 0 for hit in hits)
    error(fresh.post("/api/kg/up2/import", params={"embed": "full"}, files={"file": ("t.json", b"{}")}), 422)


def test_an_embedder_failure_leaves_the_upload_in_place(fresh, monkeypatch):
    monkeypatch.setenv("KGOS_EMBEDDER", "openai:some-model")
    monkeypatch.setenv("KGOS_FAST_EMBEDDER", "none")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    embedding, hits = _upload_and_search(fresh, "up")
    assert embedding["job"]["status"] == "failed" and embedding["job"]["error"]
    assert fresh.get("/api/kg/up").json()["nodes"] == 6 and hits


def test_export_formats_round_trip(fresh):
    doc = fresh.get("/api/kg/tiny/export")
    assert doc.status_code == 200 and doc.headers["content-type"].startswith("application/json")
    assert 'filename="tiny.json"' in doc.headers["content-disposition"] and len(doc.json()["nodes"]) == 6
    gz = fresh.get("/api/kg/tiny/export", params={"format": "jsonl", "gzip": True})
    assert gz.headers["content-type"] == "application/gzip" and gzip.decompress(gz.content).count(b"\n") >= 9
    assert fresh.get("/api/kg/tiny/export", params={"format": "graphml"}).content.startswith(b"<?xml")
    archive = fresh.get("/api/kg/tiny/export", params={"format": "csv"})
    assert sorted(zipfile.ZipFile(io.BytesIO(archive.content)).namelist()) == ["edges.csv", "nodes.csv"]
    back = fresh.post("/api/kg/copy/import", files={"file": ("tiny.zip", archive.content)})
    assert back.status_code == 200 and (back.json()["nodes"], back.json()["edges"]) == (6, 3)
    assert fresh.get("/api/kg/copy/nodes/src/app.py").json()["description"] == "The web app's entry point."
    error(fresh.get("/api/kg/tiny/export", params={"format": "pdf"}), 422)
    error(fresh.get("/api/kg/nope/export"), 404, "KGNotFound")


# -- search ---------------------------------------------------------------------------------------------------------------
def test_search(api):
    d = api.post("/api/kg/demo/search", json={"query": "reduce my API costs", "k": 3}).json()
    assert d["kg"] == "demo" and len(d["results"]) == 3 and d["results"][0]["rank"] == 1
    hit = d["results"][0]
    assert {"embedding", "text", "graph", "intent"} <= set(hit["components"]) and hit["node"]["properties"] is not None
    assert set(d["weights"]) == {"alpha", "beta", "gamma", "delta", "source"} and d["intent"]["category"]
    fixed = api.post("/api/kg/demo/search", json={"query": "prompt caching", "weights": [0, 1, 0, 0]}).json()
    assert fixed["weights"]["beta"] == 1.0 and fixed["weights"]["source"] == "explicit"
    named = api.post("/api/kg/demo/search", json={"query": "prompt caching", "weights": {"beta": 2, "gamma": 2}}).json()
    assert named["weights"]["beta"] == named["weights"]["gamma"] == 0.5
    brief = api.post("/api/kg/demo/search", json={"query": "prompt caching", "explain": False, "mode": "bm25"}).json()
    assert brief["mode"] == "bm25" and brief["results"][0]["components"] is None
    assert api.post("/api/kg/tiny/search", json={"query": "caching", "intent": "debugging"}).json()["intent"]["category"] == "debugging"


@pytest.mark.parametrize("body, field", [
    ({"query": ""}, "query"), ({"query": "   "}, "query"), ({}, "query"), ({"query": "x", "k": 0}, "k"),
    ({"query": "x", "k": 1001}, "k"), ({"query": "x", "weights": [-0.1, 1, 0, 0]}, "weights"),
    ({"query": "x", "weights": {"alpha": -1}}, "weights"), ({"query": "x", "weights": [0, 0, 0, 0]}, "weights"),
    ({"query": "x", "weights": [1, 2]}, "weights"), ({"query": "x", "weights": {"omega": 1}}, "weights"),
    ({"query": "x", "mode": "magic"}, "mode"), ({"query": "x", "intent": "vibes"}, "intent"), ({"query": 5}, "query"),
])
def test_search_rejects(api, body, field):
    err = error(api.post("/api/kg/demo/search", json=body), 422, "ValidationError")
    assert err["errors"][0]["loc"][:2] == ["body", field] and f"body.{field}" in err["detail"]


def test_search_many_kgs(api):
    d = api.post("/api/search", json={"db_ids": ["demo", "tiny"], "query": "prompt caching", "k": 5}).json()
    assert d["kg"] == "demo,tiny" and {h["source_kg"] for h in d["results"]} <= {"demo", "tiny"}
    assert len({h["node"]["name"].lower() for h in d["results"]}) == len(d["results"])
    error(api.post("/api/search", json={"db_ids": [], "query": "x"}), 422)
    error(api.post("/api/search", json={"db_ids": ["demo", "nope"], "query": "x"}), 404, "KGNotFound")
    error(api.post("/api/search", json={"db_ids": ["Bad"], "query": "x"}), 422)


# -- query methods -----------------------------------------------------------------------------------------------------------
def test_intent_search(api):
    d = api.post("/api/kg/demo/intent-search", json={"query": "How do I reduce API costs?", "config": {"k": 5}}).json()
    assert d["intent"]["category"] == "cost_optimization" and "want_to" in d["routes"] and len(d["nodes"]) == 5
    only = api.post("/api/kg/demo/intent-search", json={"query": "prompt caching", "config": {
        "methods": ["similar_to"], "weights": {"beta": 1}, "method_weight": 0.5}}).json()
    assert only["routes"] == ["similar_to"] and only["weights"]["beta"] == 1.0
    error(api.post("/api/kg/demo/intent-search", json={"query": "x", "config": {"methods": ["nope"]}}), 422)
    error(api.post("/api/kg/demo/intent-search", json={"query": "x", "config": {"method_weight": 2}}), 422)
    bad_dim = api.post("/api/kg/demo/intent-search", json={"query": "x", "config": {"dimension_filters": {"Bad Name": {"min": 0.1}}}})
    assert "dimension name" in error(bad_dim, 400, "InvalidName")["detail"]


def test_goal_capability_compose(api):
    d = api.post("/api/kg/demo/want-to", json={"goal": "I want to reduce my API costs", "k": 5}).json()
    assert d["results"][0]["node"]["id"] == "goal:cost_reduction" and len(d["results"]) == 5
    c = api.post("/api/kg/demo/can-it", json={"capability": "can it edit binary files?"}).json()
    assert c["status"] in ("yes", "yes_with_limitations", "no", "unknown") and c["query"]
    p = api.post("/api/kg/demo/compose", json={"goal": "read CSV data, analyze trends and generate a report", "max_tools": 3}).json()
    assert 0 < len(p["steps"]) <= 3 and isinstance(p["valid"], bool)
    error(api.post("/api/kg/demo/compose", json={"goal": "x", "max_tools": 21}), 422)
    error(api.post("/api/kg/demo/want-to", json={"goal": ""}), 422)
    error(api.post("/api/kg/demo/can-it", json={}), 422)


def test_structural_methods(api):
    s = api.post("/api/kg/demo/similar", json={"node": "prompt caching", "k": 3}).json()
    assert s["node"]["id"] == "feature:prompt_caching" and len(s["results"]) == 3
    a = api.post("/api/kg/demo/alternatives", json={"node": "feature:prompt_caching"}).json()
    assert a["node"]["id"] == "feature:prompt_caching"
    w = api.post("/api/kg/demo/why-not", json={"node": "feature:batch_api"}).json()
    assert w["node"]["id"] == "feature:batch_api" and isinstance(w["reasons"], list)
    i = api.post("/api/kg/demo/impact", json={"node": "concept:api_key_authentication", "direction": "backward"}).json()
    assert i["counts_by_depth"] == {"1": 16, "2": 38, "3": 53} and i["total_impacted"] == 107
    t = api.post("/api/kg/demo/trace", json={"source": "prompt_caching", "target": "cost_reduction"}).json()
    assert t["found"] is True and t["length"] == 2 and t["path"][0]["node"] == "feature:prompt_caching"
    none = api.post("/api/kg/tiny/trace", json={"source": "lonely", "target": "src/db.py"}).json()
    assert none["found"] is False and none["path"] == []
    e = api.post("/api/kg/demo/explore", json={"node": "feature:prompt_caching", "depth": 1, "per_level": 3}).json()
    assert e["root"]["id"] == "feature:prompt_caching" and len(e["levels"][1]["nodes"]) == 3
    b = api.post("/api/kg/tiny/boost", json={"seeds": ["feature:prompt_caching"], "boost_types": ["enables"]}).json()
    assert [x["node"]["id"] for x in b["scores"]] == ["benefit:token_savings"]
    kw = api.post("/api/kg/demo/keyword", json={"query": "batch discount", "limit": 3}).json()
    assert kw["terms"] and len(kw["results"]) <= 3
    error(api.post("/api/kg/demo/impact", json={"node": "feature:batch_api", "max_depth": 11}), 422)
    error(api.post("/api/kg/demo/impact", json={"node": "feature:batch_api", "direction": "sideways"}), 422)
    error(api.post("/api/kg/demo/explore", json={"node": "feature:batch_api", "depth": 0}), 422)
    error(api.post("/api/kg/demo/trace", json={"source": "prompt_caching"}), 422)
    error(api.post("/api/kg/demo/boost", json={"seeds": []}), 422)


def test_dimensions(fresh):
    d = fresh.get("/api/kg/tiny/nodes/feature:prompt_caching/dims").json()
    given = {v["name"]: v["value"] for v in d["values"] if not v["inferred"]}  # the import infers others, marked
    assert given == {"pricing_tier": 0.2, "cache_effectiveness": 0.9}
    s = fresh.put("/api/kg/tiny/nodes/src/app.py/dims", json={"values": {"latency_sensitivity": 0.7}}).json()
    assert s["node"]["id"] == "src/app.py" and s["values"][0]["value"] == 0.7
    f = fresh.post("/api/kg/tiny/dimension-filter", json={"filters": {"pricing_tier": {"max": 0.3}}}).json()
    assert f["total"] == 1 and f["results"][0]["node"]["id"] == "feature:prompt_caching"
    assert "catalog" in error(fresh.put("/api/kg/tiny/nodes/lonely/dims", json={"values": {"my_dim": 0.5}}), 400)["detail"]
    assert fresh.put("/api/kg/tiny/nodes/lonely/dims", json={"values": {"my_dim": 0.5}, "custom": True}).status_code == 200
    error(fresh.put("/api/kg/tiny/nodes/lonely/dims", json={"values": {"pricing_tier": 1.5}}), 422)
    error(fresh.put("/api/kg/tiny/nodes/lonely/dims", json={"values": {}}), 422)
    error(fresh.post("/api/kg/tiny/dimension-filter", json={"filters": {"pricing_tier": {"min": 0.9, "max": 0.1}}}), 400)
    error(fresh.post("/api/kg/tiny/dimension-filter", json={"filters": {"pricing_tier": {"around": 0.5}}}), 422)
    inferred = fresh.post("/api/kg/tiny/dims/infer", json={"dry_run": True}).json()
    assert inferred["dry_run"] is True and inferred["nodes"] == 6


def test_analytics(api):
    c = api.get("/api/kg/demo/analyze/centrality", params={"metric": "pagerank", "k": 5}).json()
    assert c["metric"] == "pagerank" and len(c["results"]) == 5
    assert api.get("/api/kg/demo/analyze/bottlenecks", params={"k": 3}).json()["results"][0]["articulation"] is True
    comm = api.get("/api/kg/demo/analyze/communities", params={"k": 2}).json()
    assert comm["count"] >= 2 and len(comm["communities"]) == 2
    gaps = api.get("/api/kg/tiny/analyze/gaps").json()
    assert "lonely" in [n["id"] for n in gaps["orphans"]]
    error(api.get("/api/kg/demo/analyze/centrality", params={"metric": "vibes"}), 422)
    error(api.get("/api/kg/demo/analyze/communities", params={"k": 0}), 422)
