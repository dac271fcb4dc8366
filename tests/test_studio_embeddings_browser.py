"""The studio's embeddings page in the system's headless Chromium against a real server on loopback:
the KG's models listed with their coverage, one query searched with two models side by side (each
column the API's ranking with that model's vectors), and an embedding job started from the page
with its progress shown; the models endpoint over the API."""

from __future__ import annotations

import json
import urllib.request

import pytest
from studio_browser import missing, open_view

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

SPECS = ["hash:128", "hash:256"]
MODELS = ["hash-128", "hash-256"]  # the names the vectors are stored under


def populate(ws, folder):
    for spec in SPECS:
        ws.kg("demo").embed_side(spec)


def call(server, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{server.url}/api/{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json", "X-KGOS-Client": "studio"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())


def test_models_endpoint_lists_the_stored_models(server):
    info = call(server, "GET", "kg/demo/embedding/models")
    assert info["nodes"] == 350 and set(MODELS) <= set(info["models"])
    assert all(info["models"][m] == 350 for m in MODELS)
    assert [info["specs"][m] for m in MODELS] == SPECS


def test_one_query_side_by_side_and_an_embedding_job_with_progress(server, context):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_view(page, server.url, "/embeddings/demo")
        assert page.locator("#models tbody tr").count() == len(call(server, "GET", "kg/demo/embedding/models")["models"])
        for spec in SPECS:
            page.locator(f"input[aria-label='compare {spec}']").check()
        page.fill("#embed-query", "reduce my API costs")
        page.click("#embed-run")
        page.wait_for_selector("#embed-compare .col ol li")
        for spec in SPECS:
            expected = call(server, "POST", "kg/demo/search", {"query": "reduce my API costs", "k": 10, "mode": "embedding", "model": spec})
            column = page.locator(f"#embed-compare .col[data-model='{spec}'] li a")
            assert [column.nth(i).get_attribute("title") for i in range(column.count())] == [r["node"]["id"] for r in expected["results"]]
        page.click("#embed-start")
        page.wait_for_selector("#embed-job-status")
        assert page.locator("#embed-job-status").inner_text().split(" ")[0] in {"queued", "running", "complete", "failed", "cancelled"}
        assert errors == []
    finally:
        page.close()
