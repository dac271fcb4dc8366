"""KG.nodes_page: counted pages of nodes, by type, on native and attached KGs."""

from __future__ import annotations

from api_helpers import TINY_NODES, add_tiny, attach_readonly


def test_pages_cover_every_node_once(ws, tmp_path):
    add_tiny(ws, tmp_path)
    kg = ws.kg("tiny")
    total, first = kg.nodes_page(limit=4)
    _, rest = kg.nodes_page(limit=4, offset=4)
    assert total == len(TINY_NODES) and len(first) == 4 and len(rest) == len(TINY_NODES) - 4
    assert sorted(n.id for n in first + rest) == sorted(n["id"] for n in TINY_NODES)
    files_total, files = kg.nodes_page(type="file")
    assert files_total == 2 and {n.id for n in files} == {"src/app.py", "src/db.py"}
    assert kg.nodes_page(type="x' OR 1=1 --") == (0, [])  # a value, never SQL


def test_attached_kg_pages(ws, tmp_path):
    attach_readonly(ws, tmp_path)
    total, nodes = ws.kg("mem").nodes_page(limit=1)
    assert total == 2 and len(nodes) == 1 and nodes[0].name in ("Alpha", "Beta")
