"""Writes that name the node version they were based on (``if_updated_at``, what the studio's
editor sends): the first wins, a later one based on the old version is a 409 NodeChanged and
writes nothing; without ``if_updated_at`` writes behave as before. Real SQLite, ASGI client."""

from __future__ import annotations

import pytest
from api_helpers import add_tiny, client, error

import kgos

NODE = "/api/kg/tiny/nodes/feature:prompt_caching"


@pytest.fixture
def c(tmp_path):
    ws = kgos.Workspace(tmp_path / "ws")
    add_tiny(ws, tmp_path)
    yield client(ws)
    ws.close()


def test_an_edit_based_on_the_current_version_is_saved_and_moves_the_version(c):
    before = c.get(NODE).json()
    r = c.patch(NODE, json={"description": "mine", "if_updated_at": before["updated_at"]})
    assert r.status_code == 200 and r.json()["description"] == "mine"
    assert r.json()["updated_at"] != before["updated_at"]


def test_a_second_edit_based_on_the_old_version_is_refused_and_writes_nothing(c):
    seen = c.get(NODE).json()["updated_at"]
    assert c.patch(NODE, json={"description": "first", "if_updated_at": seen}).status_code == 200
    body = error(c.patch(NODE, json={"description": "second", "properties": {"x": 1}, "if_updated_at": seen}), 409, "NodeChanged")
    assert "changed since it was read" in body["detail"] and "nothing was written" in body["detail"]
    now = c.get(NODE).json()
    assert now["description"] == "first" and "x" not in now["properties"]


def test_dimensions_and_delete_check_the_version_too(c):
    seen = c.get(NODE).json()["updated_at"]
    r = c.put(f"{NODE}/dims", json={"values": {"latency_sensitivity": 0.3}, "if_updated_at": seen})
    assert r.status_code == 200
    moved = c.get(NODE).json()["updated_at"]
    assert moved != seen  # a dimension write is a change of the node
    error(c.put(f"{NODE}/dims", json={"values": {"latency_sensitivity": 0.9}, "if_updated_at": seen}), 409, "NodeChanged")
    error(c.delete(NODE, params={"if_updated_at": seen}), 409, "NodeChanged")
    assert c.get(NODE).json()["properties"]["latency_sensitivity"] == 0.3
    assert c.delete(NODE, params={"if_updated_at": moved}).json()["deleted"] == "feature:prompt_caching"


def test_writes_without_a_version_behave_as_before(c):
    assert c.patch(NODE, json={"description": "a"}).status_code == 200
    assert c.patch(NODE, json={"description": "b"}).status_code == 200
    assert c.get(NODE).json()["description"] == "b"


def test_a_bad_version_or_an_unknown_node_is_a_clear_4xx(c):
    error(c.patch(NODE, json={"description": "z", "if_updated_at": "x" * 65}), 422)
    error(c.patch("/api/kg/tiny/nodes/nope", json={"description": "z", "if_updated_at": "2020"}), 404, "NodeNotFound")
