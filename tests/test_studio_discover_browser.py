"""spec/003's explore page inside the studio's explorer, in the system's headless Chromium against a
real server on loopback (offline LLM): predicted edges are drawn dashed on the graph, one is
accepted from the graph (the KG gets the edge, with the proposal's provenance shown in the node's
edge list) and one rejected (never proposed again); the two-node validate mode scores a picked
pair and shows the LLM's verdict."""

from __future__ import annotations

import json
import urllib.request

import pytest
from studio_browser import missing, open_view

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

NODE = "feature:batch_api"


def call(server, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{server.url}/api/{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json", "X-KGOS-Client": "studio"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())


def state(page):
    return page.evaluate("window.kgosExplorer")


def click_at(page, x, y):
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + x, box["y"] + y)


def predicted_edges(page, server):
    open_view(page, server.url, f"/explore/demo?node={NODE}&depth=1")
    page.wait_for_selector("#discover-node")
    page.click("#discover-node")
    page.wait_for_function("() => window.kgosExplorer.predicted.length > 0", timeout=60_000)
    page.get_by_role("button", name="Fit all").click()
    page.wait_for_timeout(400)
    return state(page)["predicted"]


def test_a_predicted_edge_is_drawn_and_accepted_from_the_graph(server, page):
    expected = call(server, "POST", "kg/demo/predictions/discover", {"node": NODE, "k": 8})["predictions"]
    drawn = predicted_edges(page, server)
    assert {(p["source"], p["type"], p["target"]) for p in drawn} == {(p["source"], p["type"], p["target"]) for p in expected}
    first = drawn[0]
    click_at(page, first["x"], first["y"])
    page.wait_for_selector("#prediction-title")
    page.click("#accept-prediction")
    page.wait_for_selector("#explore-status :text('Accepted')", timeout=30_000)
    edges = call(server, "GET", f"kg/demo/nodes/{first['source']}/neighbors?limit=500")["neighbors"]
    made = [n["edge"] for n in edges if n["edge"]["type"] == first["type"] and n["edge"]["target"] == first["target"]]
    assert made and made[0]["properties"]["prediction_id"] >= 1 and made[0]["properties"]["source"] == "studio"
    accepted = call(server, "GET", "kg/demo/predictions?status=accepted")["proposals"]
    assert [(p["source"], p["type"], p["target"]) for p in accepted] == [(first["source"], first["type"], first["target"])]
    assert first["id"] not in [p["id"] for p in state(page)["predicted"]]  # now a plain edge
    page.wait_for_selector(f"#node-panel .provenance:text('prediction #{made[0]['properties']['prediction_id']}')")
    assert page.errors == []


def test_a_predicted_edge_rejected_from_the_graph_is_not_proposed_again(server, page):
    drawn = predicted_edges(page, server)
    target = drawn[-1]
    click_at(page, target["x"], target["y"])
    page.wait_for_selector("#prediction-title")
    page.click("#reject-prediction")
    page.wait_for_selector("#explore-status :text('Rejected')", timeout=30_000)
    rejected = call(server, "GET", "kg/demo/predictions?status=rejected")["proposals"]
    assert (target["source"], target["type"], target["target"]) in [(p["source"], p["type"], p["target"]) for p in rejected]
    again = call(server, "POST", "kg/demo/predictions", {"source": target["source"], "target": target["target"], "type": target["type"]})
    assert again["added"] == [] and again["skipped_rejected"] == 1
    assert page.errors == []


def test_two_node_validate_mode_scores_the_pair_and_shows_the_llm_verdict(server, page):
    best = call(server, "POST", "kg/demo/predictions/discover", {"node": NODE, "k": 200})["predictions"]
    other = next(p for p in best if p["source"] != p["target"] and {p["source"], p["target"]} != {NODE})
    pair = other["target"] if other["source"] == NODE else other["source"]
    open_view(page, server.url, f"/explore/demo?node={NODE}&depth=2&max_nodes=300")
    page.get_by_role("button", name="Fit all").click()
    page.wait_for_timeout(400)
    points = state(page)["points"]
    assert pair in points
    page.click("#validate-pair")
    click_at(page, *points[NODE])
    page.wait_for_selector("#explore-status :text('Now click the second node')")
    click_at(page, *points[pair])
    page.wait_for_selector("#pair-result", timeout=60_000)
    assert other["type"] in page.locator("#pair-result").inner_text()
    page.wait_for_selector("#verdict", timeout=60_000)
    assert "LLM verdict" in page.locator("#verdict").inner_text()
    assert any({p["source"], p["target"]} == {NODE, pair} for p in state(page)["predicted"])
    assert page.errors == []
