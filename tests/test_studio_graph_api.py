"""The community overview endpoint the explorer draws for large KGs, and the vendored graph-layout
files (version in the name, licence beside), over the ASGI client on real SQLite."""

from __future__ import annotations

import pytest
from api_helpers import client, error
from conftest import write_nodelink

import kgos
from kgos.api.studio import STUDIO


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    folder = tmp_path_factory.mktemp("graph")
    ws = kgos.Workspace(folder / "ws")
    # three triangles: a-b-c, d-e-f, g-h-i; a-d and d-g join them (two links), h has a parallel edge
    nodes = [{"id": x, "name": x.upper(), "type": "thing"} for x in "abcdefghi"]
    pairs = ["ab", "bc", "ca", "de", "ef", "fd", "gh", "hi", "ig", "ad", "dg", "hg"]
    edges = [{"source": p[0], "target": p[1], "type": "rel"} for p in pairs]
    ws.import_file("tri", write_nodelink(folder / "tri.json", nodes, edges, name="Triangles"))
    ws.create("empty")
    yield client(ws)
    ws.close()


def test_community_map_has_every_community_and_the_edges_between_them(c):
    body = c.get("/api/kg/tri/communities/map").json()
    assert body["count"] == 3 and body["nodes"] == 9
    members = [sorted(t["id"] for t in com["top"]) for com in body["communities"]]
    assert sorted(members) == [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]]
    by_member = {t["id"]: com["id"] for com in body["communities"] for t in com["top"]}
    links = {frozenset((link["source"], link["target"])): link["edges"] for link in body["links"]}
    assert links == {frozenset((by_member["a"], by_member["d"])): 1, frozenset((by_member["d"], by_member["g"])): 1}


def test_community_map_k_limits_communities_and_their_links(c):
    body = c.get("/api/kg/tri/communities/map", params={"k": 1}).json()
    assert len(body["communities"]) == 1 and body["links"] == [] and body["count"] == 3


def test_community_map_bad_input_is_a_clear_4xx(c):
    assert c.get("/api/kg/tri/communities/map", params={"k": 0}).status_code == 422
    assert c.get("/api/kg/tri/communities/map", params={"k": 201}).status_code == 422
    error(c.get("/api/kg/nope/communities/map"), 404, "KGNotFound")
    body = c.get("/api/kg/empty/communities/map").json()
    assert body["communities"] == [] and body["links"] == [] and body["nodes"] == 0


def test_vendored_layout_files_carry_version_and_licence():
    vendor = STUDIO / "vendor"
    for name in ("layout-base-2.0.1", "cose-base-2.2.0", "cytoscape-fcose-2.2.0"):
        assert (vendor / f"{name}.js").stat().st_size > 10_000
        assert "Permission is hereby granted" in (vendor / f"{name}.LICENSE").read_text()
        assert name in (vendor / "README.md").read_text()
    # load order: Cytoscape with the page, before the studio's modules; the explorer loads the fcose
    # bundle after cose-base, which needs layout-base (scripts inserted together run in that order)
    index = (STUDIO / "index.html").read_text()
    assert index.index("vendor/cytoscape-3.34.4") < index.index("js/app.js")
    explore = (STUDIO / "js" / "views" / "explore.js").read_text()
    order = [explore.index(f"{n}.js") for n in ("layout-base-2.0.1", "cose-base-2.2.0", "cytoscape-fcose-2.2.0")]
    assert order == sorted(order) and "el.async = false" in (STUDIO / "js" / "dom.js").read_text()
