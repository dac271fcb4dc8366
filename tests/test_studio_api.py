"""The JSON endpoints the studio reads (neighbourhood, degrees, memory, evaluation jobs) and how the
studio's files are served (CSP, no inline script, same-origin assets, vendored licences), over the
ASGI client on real SQLite. The browser tests are in test_studio_browser.py (slow)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from html.parser import HTMLParser
from urllib.parse import urljoin

import pytest
from api_helpers import BASE_URL, MEMORY_DDL, TINY_EDGES, TINY_NODES, add_tiny, client, error

import kgos
from kgos.api.studio import STUDIO
from kgos.memory import MemoryService
from kgos.methods import neighborhood as nb


def tiny_workspace(folder):
    workspace = kgos.Workspace(folder / "ws")
    add_tiny(workspace, folder)
    return workspace


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One workspace and client for the tests that only read (and the eval jobs, which only read KGs)."""
    workspace = tiny_workspace(tmp_path_factory.mktemp("studio"))
    yield workspace, client(workspace)
    workspace.close()


@pytest.fixture
def ws(shared):
    return shared[0]


@pytest.fixture
def c(shared):
    return shared[1]


@pytest.fixture
def own_ws(tmp_path):
    """A workspace of the test's own, for tests that write."""
    return tiny_workspace(tmp_path)


# -- neighbourhood ---------------------------------------------------------------------------------------
def test_neighborhood_of_a_node_holds_its_neighbours_and_the_edges_among_them(c):
    r = c.get("/api/kg/tiny/neighborhood", params={"node": "benefit:token_savings", "depth": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["center"] == "benefit:token_savings" and not body["truncated"] and body["message"] == ""
    depths = {n["id"]: n["depth"] for n in body["nodes"]}
    assert depths == {"benefit:token_savings": 0, "feature:prompt_caching": 1, "goal:cost_reduction": 1}
    assert {(e["source"], e["type"], e["target"]) for e in body["edges"]} == {
        ("feature:prompt_caching", "enables", "benefit:token_savings"),
        ("benefit:token_savings", "contributes_to", "goal:cost_reduction")}
    assert next(e for e in body["edges"] if e["type"] == "contributes_to")["weight"] == pytest.approx(0.8)


def test_neighborhood_resolves_names_and_defaults_to_the_best_connected_node(c):
    by_name = c.get("/api/kg/tiny/neighborhood", params={"node": "Token savings", "depth": 0}).json()
    assert [n["id"] for n in by_name["nodes"]] == ["benefit:token_savings"] and by_name["edges"] == []
    default = c.get("/api/kg/tiny/neighborhood").json()
    assert default["center"] == "benefit:token_savings"  # degree 2, the most in the tiny KG
    assert {n["id"] for n in default["nodes"]} == {"benefit:token_savings", "feature:prompt_caching", "goal:cost_reduction"}
    assert all(n["degree"] >= 1 for n in default["nodes"])


def test_neighborhood_budget_keeps_whole_levels_first_and_says_what_it_left_out(c):
    body = c.get("/api/kg/tiny/neighborhood", params={"node": "feature:prompt_caching", "depth": 2, "max_nodes": 2}).json()
    assert [n["depth"] for n in body["nodes"]] == [0, 1] and body["reachable"] == 3
    assert body["truncated"] and "3 nodes are within 2 hops; showing the 2 nearest" in body["message"]
    assert all({e["source"], e["target"]} <= {n["id"] for n in body["nodes"]} for e in body["edges"])


def test_a_request_above_the_server_cap_is_served_at_the_cap_with_a_message(c):
    body = c.get("/api/kg/tiny/neighborhood", params={"max_nodes": 50_000}).json()
    assert body["max_nodes"] == nb.MAX_NODES and body["truncated"]
    assert "max_nodes 50,000 is above the server's cap of 10,000" in body["message"]


def test_edge_cap_is_reported(ws):
    kg = ws.kg("tiny")
    result = nb.neighborhood(kg.store, kg.view(), "benefit:token_savings", 1, 10, max_edges=1)
    assert len(result.edges) == 1 and "2 edges join the shown nodes; showing 1" in result.message


def test_neighborhood_bad_input_is_a_clear_4xx(c):
    unknown = error(c.get("/api/kg/tiny/neighborhood", params={"node": "benefit:token_saving"}), 404, "NodeNotFound")
    assert "benefit:token_savings" in unknown["suggestions"]
    error(c.get("/api/kg/nope/neighborhood"), 404, "KGNotFound")
    error(c.get("/api/kg/tiny/neighborhood", params={"depth": 11}), 422)
    error(c.get("/api/kg/tiny/neighborhood", params={"max_nodes": 0}), 422)
    error(c.get("/api/kg/tiny/neighborhood", params={"node": "x" * 3000}), 422)


def test_neighborhood_of_an_empty_kg_says_so(own_ws):
    own_ws.create("empty")
    c = client(own_ws)
    assert "no nodes" in error(c.get("/api/kg/empty/neighborhood"), 400, "InvalidArgument")["detail"]


def test_degree_histogram_counts_every_node_once(c):
    body = c.get("/api/kg/tiny/degrees").json()
    assert body["bins"] == [0, 1, 2] and sum(body["counts"]) == len(TINY_NODES)
    assert body["counts"] == [1, 4, 1]  # lonely; four ends of one edge; token savings with two


# -- memory ------------------------------------------------------------------------------------------------
def test_memory_endpoints_read_without_creating_the_memory_kg(own_ws):
    ws, c = own_ws, client(own_ws)
    body = c.get("/api/memory").json()
    assert body == {"db_id": "memory", "exists": False, "stats": None, "recent": []}
    assert not ws.exists("memory")
    assert c.get("/api/memory/context", params={"q": "python"}).json()["text"] == ""


def test_memory_endpoints_show_memories_entities_and_context(own_ws):
    ws, c = own_ws, client(own_ws)
    MemoryService(ws).add("I'm working on meshalyzer using Python.")
    body = c.get("/api/memory").json()
    assert body["exists"] and body["stats"]["memories"] == 1
    assert body["recent"][0]["content"] == "I'm working on meshalyzer using Python."
    entities = c.get("/api/memory/entities", params={"q": "meshalyzer"}).json()
    assert entities["entities"][0]["name"] == "Meshalyzer" and entities["entities"][0]["score"] == 1.0
    context = c.get("/api/memory/context", params={"q": "meshalyzer"}).json()
    assert "Meshalyzer" in context["text"]
    error(c.get("/api/memory/entities", params={"q": ""}), 422)


# -- evaluation jobs -----------------------------------------------------------------------------------------
PROBES = "\n".join(json.dumps(p) for p in [
    {"id": "p1", "query": "prompt caching", "relevant": ["feature:prompt_caching"], "level": "literal"},
    {"id": "p2", "query": "database module", "relevant": ["src/db.py"], "level": "literal"},
    {"id": "p3", "query": "zebra crossing", "relevant": ["lonely"], "level": "hard"},
])


def wait(c, job_id: str) -> dict:
    for _ in range(400):
        job = c.get(f"/api/jobs/{job_id}").json()
        if job["status"] in ("complete", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError("the job did not finish")


def test_eval_job_reports_metrics_levels_and_failing_probes(c):
    started = c.post("/api/eval/jobs", json={"db_id": "tiny", "probes": "inline", "probes_jsonl": PROBES})
    assert started.status_code == 202 and started.json()["kind"] == "eval"
    job = wait(c, started.json()["job_id"])
    assert job["status"] == "complete", job
    assert job["progress"] == {"phase": "default", "done": 3, "total": 3}
    (report,) = job["result"]["reports"]
    assert report["label"] == "default" and report["n"] == 3 and job["result"]["db_id"] == "tiny"
    assert set(report["strict"]) == {"recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"}
    assert set(report["by_level"]) == {"literal", "hard"}
    assert [f["id"] for f in report["failing"]] == ["p3"] and report["failing"][0]["query"] == "zebra crossing"
    assert report["failing_total"] == 1


def test_eval_ablation_job_runs_every_configuration(c):
    job = wait(c, c.post("/api/eval/jobs", json={"db_id": "tiny", "probes": "inline", "probes_jsonl": PROBES,
                                                  "ablation": True, "limit": 2}).json()["job_id"])
    reports = job["result"]["reports"]
    assert job["status"] == "complete" and job["progress"]["done"] == job["progress"]["total"] == 2 * len(reports)
    from kgos.eval.ablation import ABLATION
    assert len(reports) == len(ABLATION) and reports[-1]["label"] == "adaptive (default)"


def test_eval_job_bad_input_is_a_clear_4xx(c):
    bad = error(c.post("/api/eval/jobs", json={"db_id": "tiny", "probes": "inline", "probes_jsonl": "not json"}),
                400, "InvalidArgument")
    assert "probes_jsonl" in bad["detail"] and "/tmp" not in bad["detail"]
    error(c.post("/api/eval/jobs", json={"db_id": "tiny", "probes": "inline"}), 400, "InvalidArgument")
    error(c.post("/api/eval/jobs", json={"db_id": "nope"}), 404, "KGNotFound")
    error(c.post("/api/eval/jobs", json={"db_id": "tiny", "k": 5}), 422)


# -- serving the studio -------------------------------------------------------------------------------------
class Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, dict]] = []
        self.inline: list[str] = []
        self._script = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.urls += [(tag, v, a) for k, v in attrs if k in ("src", "href") and v]
        self._script = tag == "script"
        if any(k.startswith("on") for k, _ in attrs):
            self.inline.append(tag)

    def handle_data(self, data):
        if self._script and data.strip():
            self.inline.append(data)


def test_root_serves_the_studio_with_a_strict_policy_and_same_origin_assets(c):
    page = c.get("/")
    assert page.status_code == 200 and "KG-OS Studio" in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe-eval" not in policy and "default-src 'none'" in policy
    refs = Refs()
    refs.feed(page.text)
    assert refs.inline == []
    assets = [(tag, urljoin(f"{BASE_URL}/", url), attrs) for tag, url, attrs in refs.urls
              if tag in ("script", "link") and not url.startswith("data:")]
    assert ("script", f"{BASE_URL}/studio/js/app.js", {"type": "module", "src": "studio/js/app.js"}) in assets
    for tag, url, _ in assets:
        asset = c.get(url)
        assert asset.status_code == 200, url
        assert ("javascript" if url.endswith(".js") else "text/css") in asset.headers["content-type"]
        assert "script-src 'self'" in asset.headers["content-security-policy"]


def test_every_studio_module_imports_only_files_that_exist(c):
    for module in (STUDIO / "js").rglob("*.js"):
        text = module.read_text()
        for target in re.findall(r'(?:from|import)\s*\(?\s*"(\.{1,2}/[^"]+)"', text):
            url = urljoin(f"{BASE_URL}/studio/{module.relative_to(STUDIO).as_posix()}", target)
            assert c.get(url).status_code == 200, (module.name, target)


def test_studio_scripts_never_write_html():
    """Untrusted text reaches the page only as text nodes (dom.js): no HTML-parsing sinks at all."""
    sinks = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\"on")
    for module in (STUDIO / "js").rglob("*.js"):
        code = "\n".join(line for line in module.read_text().splitlines() if not line.lstrip().startswith("//"))
        assert not sinks.search(code), module.name


def test_vendored_libraries_carry_version_and_licence():
    vendor = STUDIO / "vendor"
    names = {p.name for p in vendor.iterdir()}
    assert {"cytoscape-3.34.4.min.js", "cytoscape-3.34.4.LICENSE", "chart-4.6.1.umd.min.js", "chart-4.6.1.LICENSE.md",
            "README.md"} <= names
    assert "Permission is hereby granted" in (vendor / "cytoscape-3.34.4.LICENSE").read_text()
    assert "MIT License" in (vendor / "chart-4.6.1.LICENSE.md").read_text()
    assert "sourceMappingURL" not in (vendor / "chart-4.6.1.umd.min.js").read_text()
    assert {"marked-18.2.1.esm.js", "marked-18.2.1.LICENSE", "dompurify-3.5.0.es.js", "dompurify-3.5.0.LICENSE"} <= names
    assert "marked v18.2.1" in (vendor / "marked-18.2.1.esm.js").read_text()[:200]
    assert "3.5.0" in (vendor / "dompurify-3.5.0.es.js").read_text()[:200]
    assert not [n for n in ("marked-18.2.1.esm.js", "dompurify-3.5.0.es.js") if "sourceMappingURL" in (vendor / n).read_text()]


def test_studio_files_stay_in_their_folder_and_out_of_the_openapi_document(c):
    for path in ("/studio/../studio.py", "/studio/%2e%2e/studio.py", "/studio/..%2fstudio.py"):
        assert c.get(path).status_code == 404
    paths = c.get("/openapi.json").json()["paths"]
    assert not any(p.startswith("/studio") for p in paths)
    assert {"/api/kg/{db_id}/neighborhood", "/api/kg/{db_id}/degrees", "/api/memory", "/api/eval/jobs"} <= set(paths)
    assert "/api/eval/jobs/{job_id}" not in paths  # progress and results: the shared GET /api/jobs/{job_id}


def test_token_server_serves_the_studio_files_but_no_data_without_the_token(ws):
    """A browser opening the page sends no bearer header: the page and its files (no data) load, and
    the studio asks for the token for its API calls, which stay behind it."""
    c = client(ws, token="s3cret")
    for path in ("/", "/studio/js/app.js", "/studio/vendor/cytoscape-3.34.4.min.js"):
        assert c.get(path).status_code == 200 and c.head(path).status_code == 200, path
    for path in ("/api/kg", "/api/kg/tiny/neighborhood", "/studio-data", "/docs", "/openapi.json"):
        error(c.get(path), 401, "Unauthorized")
    error(c.post("/", json={}), 401, "Unauthorized")
    edges = c.get("/api/kg/tiny/neighborhood", headers={"Authorization": "Bearer s3cret"}).json()["edges"]
    assert len(edges) == 2 and TINY_EDGES[0]["type"] in {e["type"] for e in edges}


def test_chat_trace_carries_signals_edges_and_plan_per_answer(tmp_path):
    """The chat trace's score breakdown, edges followed and composition plan: additions to the spec's
    sources event (its type and ``nodes`` unchanged) and to the metadata stored with the answer."""
    from expert_helpers import parse_sse

    from kgos.data import load_demo

    workspace = kgos.Workspace(tmp_path / "ws")
    load_demo(workspace, embedder=None)
    c = client(workspace)
    events = parse_sse(c.post("/api/experts/demo/chat", json={"query": "How do I reduce my API costs by batching then caching?"}).text)
    sources = next(e for e in events if e["type"] == "sources")
    assert {"type", "nodes", "edges", "plan", "plan_warnings", "workarounds"} == set(sources)
    for node in sources["nodes"]:
        assert {"embedding", "text", "graph", "intent"} <= set(node["components"])
        assert all(0 <= v <= 1 for v in node["components"].values())
    top = sources["nodes"][0]
    assert top["id"] == "feature:batch_api" and top["components"]["text"] > 0
    assert {"source": "feature:batch_api", "target": "goal:cost_reduction", "type": "optimizes"} in top["edge_annotations"]
    assert sources["edges"] and all({"source", "target", "type", "source_kg"} <= set(e) for e in sources["edges"])
    assert [s["order"] for s in sources["plan"]] == list(range(1, len(sources["plan"]) + 1)) and len(sources["plan"]) >= 2
    cid, mid = events[0]["conversation_id"], events[-1]["message_id"]
    stored = next(m for m in c.get(f"/api/experts/demo/conversations/{cid}").json()["messages"] if m["id"] == mid)["metadata"]
    assert stored["retrieval_components"]["feature:batch_api"] == top["components"]
    assert stored["composition_plan"] == sources["plan"] and stored["edges_followed"] == sources["edges"]
    workspace.close()


# -- POST /api/kg/attach: a server-side file, only below KGOS_INGEST_ROOTS ----------------------------
def foreign_file(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(MEMORY_DDL)
    conn.close()
    return path


@pytest.fixture
def roots(tmp_path, monkeypatch):
    allowed = tmp_path / "allowed"
    monkeypatch.setenv("KGOS_INGEST_ROOTS", os.pathsep.join([str(allowed), str(tmp_path / "also")]))
    return allowed


def test_attach_a_file_below_the_roots_read_only(tmp_path, roots):
    c = client(tmp_path / "ws")
    assert c.get("/api/ingest/roots").json() == {"enabled": True, "roots": [str(roots.resolve()), str((tmp_path / "also").resolve())]}
    r = c.post("/api/kg/attach", json={"db_id": "mem", "path": str(foreign_file(roots / "sub" / "mem.sqlite"))})
    assert r.status_code == 201, r.text
    info = r.json()
    assert (info["db_id"], info["nodes"], info["edges"], info["profile"], info["read_only"]) == ("mem", 2, 1, "memory", True)
    assert "mem" in {k["db_id"] for k in c.get("/api/kg").json()}
    assert c.get("/api/kg/mem/nodes").json()["total"] == 2
    error(c.post("/api/kg/attach", json={"db_id": "mem", "path": str(roots / "sub" / "mem.sqlite")}), 409)


def test_attach_refuses_paths_outside_the_roots_and_says_how_to_enable_it(tmp_path, roots, monkeypatch):
    c = client(tmp_path / "ws")
    outside = foreign_file(tmp_path / "outside" / "mem.sqlite")
    body = error(c.post("/api/kg/attach", json={"db_id": "mem", "path": str(outside)}), 403, "IngestPathRefused")
    assert "outside the folders" in body["detail"] and "KGOS_INGEST_ROOTS" in body["detail"]
    (roots / "link.sqlite").parent.mkdir(parents=True, exist_ok=True)
    (roots / "link.sqlite").symlink_to(outside)  # a link below a root to a file outside it: still refused
    for path in (str(roots / ".." / "outside" / "mem.sqlite"), str(roots / "link.sqlite"), "/etc/passwd"):
        error(c.post("/api/kg/attach", json={"db_id": "mem", "path": path}), 403, "IngestPathRefused")
    monkeypatch.delenv("KGOS_INGEST_ROOTS")
    assert c.get("/api/ingest/roots").json() == {"enabled": False, "roots": []}
    body = error(c.post("/api/kg/attach", json={"db_id": "mem", "path": str(outside)}), 403, "IngestPathRefused")
    assert "KGOS_INGEST_ROOTS=" in body["detail"] and "kgos kg attach" in body["detail"]
    assert c.get("/api/kg").json() == []


def test_attach_of_an_unknown_or_foreign_file_and_bad_names(tmp_path, roots):
    c = client(tmp_path / "ws")
    body = error(c.post("/api/kg/attach", json={"db_id": "mem", "path": str(roots / "nope.sqlite")}), 400, "SchemaNotRecognized")
    assert "no such file" in body["detail"]
    (roots / "notes.txt").parent.mkdir(parents=True, exist_ok=True)
    (roots / "notes.txt").write_text("not a database")
    error(c.post("/api/kg/attach", json={"db_id": "notes", "path": str(roots / "notes.txt")}), 400)
    good = str(foreign_file(roots / "mem.sqlite"))
    for name in ("Bad Name", "", "a" * 65, "../x"):
        error(c.post("/api/kg/attach", json={"db_id": name, "path": good}), 422)
    error(c.post("/api/kg/attach", json={"db_id": "mem", "path": good, "profile": "nope"}), 400)
    error(c.post("/api/kg/attach", json={"db_id": "mem", "path": good, "writable": True}), 422)
    assert c.get("/api/kg").json() == []
