"""The studio's graph explorer as a person sees it, in the system's headless Chromium against a real
server on loopback: at the default view every node in focus (the centre and its neighbours) is
named, no two drawn labels overlap and each is at least 11 px; zooming in names more nodes; the
pointer on a node highlights its neighbours; edge colours have a legend; names of 5,000 characters,
right-to-left and emoji names, hostile names and a KG without edges stay legible text.

The label boxes are Cytoscape's own rendered boxes, published on ``window.kgosExplorer.labels``.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from conftest import write_nodelink
from studio_browser import missing, open_view

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

EVIL = "<img src=x onerror=alert(1)>"
HUGE = "N" * 5000
RTL = "שלום עולם مرحبا بالعالم"
EMOJI = "🚀 Launch 🔥 rocket 🧪"


def populate(ws, folder):
    nodes = [{"id": "hub", "name": "Hub", "type": "thing"}, {"id": "evil", "name": EVIL, "type": "<b>t</b>"},
             {"id": "huge", "name": HUGE, "type": "thing"}, {"id": "rtl", "name": RTL, "type": "thing"},
             {"id": "emoji", "name": EMOJI, "type": "thing"}]
    edges = [{"source": "hub", "target": n["id"], "type": "relates_to"} for n in nodes[1:]]
    ws.import_file("odd", write_nodelink(folder / "odd.json", nodes, edges, name="Odd names"))
    lonely = [{"id": f"n{i}", "name": f"Lonely node {i}", "type": "thing"} for i in range(12)]
    ws.import_file("noedges", write_nodelink(folder / "noedges.json", lonely, [], name="No edges"))
    ws.import_file("big", write_nodelink(folder / "big.json", *clustered(30, 200), name="Big"))
    star = [{"id": "sun", "name": "Sun", "type": "star"}] + [{"id": f"p{i}", "name": f"Planet {i}", "type": f"kind{i % 3}"} for i in range(300)]
    ws.import_file("star", write_nodelink(folder / "star.json", star, [{"source": "sun", "target": f"p{i}", "type": "orbits"} for i in range(300)], name="Star"))


def clustered(groups: int, size: int) -> tuple[list[dict], list[dict]]:
    """``groups`` dense clusters of ``size`` nodes (a ring plus chords), joined in a ring by one edge."""
    nodes = [{"id": f"g{g}n{i}", "name": f"Group {g} member {i}", "type": f"kind{g % 5}"} for g in range(groups) for i in range(size)]
    edges = [{"source": f"g{g}n{i}", "target": f"g{g}n{(i + step) % size}", "type": "near"}
             for g in range(groups) for i in range(size) for step in (1, 7)]
    edges += [{"source": f"g{g}n0", "target": f"g{(g + 1) % groups}n0", "type": "bridge"} for g in range(groups)]
    return nodes, edges


def api(server, path):
    return json.loads(urllib.request.urlopen(f"{server.url}/api/{path}", timeout=30).read())


def drawn(page):
    return page.evaluate("window.kgosExplorer")


def overlapping(labels):
    return [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[:i]
            if a["x1"] < b["x2"] and b["x1"] < a["x2"] and a["y1"] < b["y2"] and b["y1"] < a["y2"]]


def assert_legible(state):
    labels = state["labels"]
    assert labels, "no label drawn"
    assert overlapping(labels) == []
    assert min(label["font_px"] for label in labels) >= 11
    inside = [label for label in labels if label["x1"] >= -1 and label["y1"] >= -1
              and label["x2"] <= state["width"] + 1 and label["y2"] <= state["height"] + 1]
    assert len(inside) == len(labels)


@pytest.mark.parametrize("view", ["/explore/demo", "/explore/demo?node=feature:prompt_caching&depth=2&max_nodes=300"])
def test_default_view_names_every_node_in_focus_without_overlap(server, page, view):
    open_view(page, server.url, view)
    state = drawn(page)
    assert_legible(state)
    assert state["focus_unnamed"] == []
    named = {label["id"] for label in state["labels"]}
    centre = state["center"]["id"]
    neighbours = api(server, f"kg/demo/nodes/{centre}/neighbors?limit=500")["neighbors"]
    assert {centre} | {n["node"]["id"] for n in neighbours} <= named
    assert len(named) > len(neighbours) + 1  # nodes further out are named where there is room
    assert state["layout"] == "force" and page.errors == []


def test_zooming_in_names_more_nodes_and_keeps_them_apart(server, page):
    open_view(page, server.url, "/explore/demo")
    before = drawn(page)
    page.get_by_role("button", name="zoom in").click()
    page.get_by_role("button", name="zoom in").click()
    page.wait_for_timeout(800)  # labels are placed again once the zoom settles
    after = drawn(page)
    assert after["zoom"] > before["zoom"] * 1.5
    assert_legible(after)
    share = lambda s: len(s["labels"]) / s["on_screen"]  # noqa: E731
    assert share(after) > share(before)  # fewer nodes on screen, a larger share of them named
    assert page.errors == []


def test_pointer_on_a_node_highlights_its_neighbours(server, page):
    open_view(page, server.url, "/explore/demo?node=goal:cost_reduction&depth=2")
    state = drawn(page)
    box = page.locator("#graph").bounding_box()
    page.mouse.move(box["x"] + state["center"]["x"], box["y"] + state["center"]["y"])
    page.wait_for_function("() => window.kgosExplorer.hover && window.kgosExplorer.hover.id === 'goal:cost_reduction'", timeout=5000)
    hover = drawn(page)["hover"]
    expected = {n["node"]["id"] for n in api(server, "kg/demo/nodes/goal:cost_reduction/neighbors?limit=500")["neighbors"]}
    assert set(hover["neighbours"]) == expected
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    page.wait_for_function("() => window.kgosExplorer.hover === null", timeout=5000)


def test_legend_has_a_colour_per_node_type_and_edge_type(server, page):
    open_view(page, server.url, "/explore/demo?node=feature:prompt_caching&depth=1")
    expected = api(server, "kg/demo/neighborhood?node=feature:prompt_caching&depth=1")
    edge_types = {e["type"] for e in expected["edges"]}
    node_types = {n["type"] for n in expected["nodes"]}
    lines = page.locator("#legend i.line")
    assert lines.count() == len(edge_types)
    colours = {lines.nth(i).evaluate("e => e.style.background") for i in range(lines.count())}
    assert len(colours) == min(len(edge_types), 8)
    assert page.locator("#legend i:not(.line)").count() == len(node_types)


def test_odd_names_stay_text_and_legible(server, page):
    open_view(page, server.url, "/explore/odd?node=hub&depth=1")
    state = drawn(page)
    assert_legible(state)
    texts = {label["id"]: label["text"] for label in state["labels"]}
    assert texts["evil"] == EVIL and texts["rtl"] == RTL and texts["emoji"] == EMOJI
    assert texts["huge"].endswith("…") and len(texts["huge"]) <= 40
    assert page.locator("#view img").count() == 0 and page.errors == []


def test_a_kg_without_edges_draws_its_nodes(server, page):
    open_view(page, server.url, "/explore/noedges?depth=1")
    state = drawn(page)
    assert state["edges"] == 0 and state["nodes"] >= 1
    assert_legible(state)
    assert page.errors == []


def test_a_large_kg_opens_on_its_communities_and_a_click_drills_in(server, page):
    open_view(page, server.url, "/explore/big")
    state = drawn(page)
    assert state["overview"] is True
    communities = api(server, "kg/big/communities/map?k=40")
    assert state["nodes"] == len(communities["communities"]) >= 20 and state["edges"] == len(communities["links"]) > 0
    assert "Community overview" in page.locator("#overview-note").inner_text()
    assert_legible(state)
    assert state["focus_unnamed"] == []  # every community is named
    page.locator("#node-panel table a").first.click()  # drill into the largest community's hub
    page.wait_for_selector("#panel-name")
    inside = drawn(page)
    hub = communities["communities"][0]["top"][0]["id"]
    expected = api(server, f"kg/big/neighborhood?node={hub}&depth=2&max_nodes=300")
    assert inside["overview"] is False and inside["center"]["id"] == hub and inside["nodes"] == len(expected["nodes"])
    assert_legible(inside)
    assert page.errors == []


def test_a_big_neighbourhood_paints_its_view_first_then_every_node_it_was_sent(server, page):
    open_view(page, server.url, "/explore/big?node=g0n0&depth=10&max_nodes=2000&layout=rings", timeout=120_000)
    state, sent = drawn(page), api(server, "kg/big/neighborhood?node=g0n0&depth=10&max_nodes=2000")
    assert state["layout"] == "rings"
    assert state["nodes"] == len(sent["nodes"]) and state["edges"] == len(sent["edges"])
    assert state["nodes"] + state["edges"] > 3000  # a big view (1,099 nodes + 1,972 edges)
    timing = state["timing"]
    assert timing["first_elements"] < (state["nodes"] + state["edges"]) / 4  # only what the default view shows
    assert timing["complete_ms"] > timing["since_navigation_ms"] and timing["max_block_ms"] > 0  # the rest came in chunks
    assert_legible(state)
    assert state["focus_unnamed"] == [] and page.errors == []


def test_many_neighbours_of_the_centre_fill_a_disc_with_names_next_to_their_dots(server, page):
    open_view(page, server.url, "/explore/star?node=sun&depth=1&max_nodes=400&layout=rings")
    state = drawn(page)
    centre, points = state["center"], state["points"]
    radii = sorted(((x - centre["x"]) ** 2 + (y - centre["y"]) ** 2) ** 0.5 for node, (x, y) in points.items() if node != "sun")
    assert len(radii) == 300 and radii[-1] > 2 * radii[0]  # a disc, not one ring
    assert_legible(state)
    assert len(state["labels"]) >= 40
    for label in state["labels"]:  # each name within 60 px of its own dot (a far place for a focus node)
        x, y = points[label["id"]]
        dx, dy = max(label["x1"] - x, 0, x - label["x2"]), max(label["y1"] - y, 0, y - label["y2"])
        assert (dx * dx + dy * dy) ** 0.5 <= 60, label["text"]
    assert page.errors == []
