"""Import/export formats: round trips, networkx interop and bad input, on real files in tmp_path."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from kgos.errors import ImportFailed, InvalidArgument
from kgos.store.formats import Source, open_source, writer_for
from kgos.store.importer import bulk_load
from kgos.store.native import NativeStore

NESTED = {"evidence": [{"doc": "a.pdf", "page": 3}], "scores": {"f1": 0.91, "ok": True}}


# -- helpers ---------------------------------------------------------------------------------------
def build_kg(path: Path) -> NativeStore:
    """A small KG exercising unicode, nested/mixed properties and fractional weights."""
    kg = NativeStore.create(path, "src", name="Sample KG", description="für Tests — ✓")
    kg.add_node("Zürich", "city", "Größte Stadt\r\nder Schweiz", id="zurich",
                properties={"population": 421878, "area": 87.88, "capital": False, "tags": ["a", "b"],
                            "meta": NESTED, "code": "007", "mixed": 1, "name": "shadow"})
    kg.add_node("東京", "city", properties={"population": 13960000, "area": 2194.07, "capital": True,
                                            "mixed": 2.5, "note": None, "label": "Tōkyō"}, id="tokyo")
    kg.add_node("Ünïcødé \"quoted\", comma", "concept", id="u,1")
    kg.add_node("emoji 🚀", "concept", "line1\nline2 <&> 'x'", id="rocket",
                properties={"properties.x": 1, "empty": "", "list": []})
    kg.add_edge("zurich", "tokyo", "flight_to", 0.1 + 0.2, {"airline": "LX", "stops": 0, "mixed": "x"})
    kg.add_edge("tokyo", "zurich", "flight_to", 1e-9, {"nested": NESTED, "type": "shadow"}, id="e-1")
    kg.add_edge("zurich", "u,1", "relates_to", 3.0)
    kg.add_edge("rocket", "rocket", "self_loop", 2.5, {"weight": 7})
    return kg


def snapshot(kg: NativeStore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = sorted((n.to_dict() for n in kg.iter_nodes()), key=lambda d: d["id"])
    edges = sorted((e.to_dict() for e in kg.iter_edges()),
                   key=lambda d: (d["source"], d["target"], d["type"]))
    return nodes, edges


def load(tmp_path: Path, path: Path, fmt: str | None = None, name: str = "copy") -> NativeStore:
    bulk_load(tmp_path / f"{name}.db", open_source(path, fmt), name)
    return NativeStore(tmp_path / f"{name}.db", name)


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_fails(path: Path, *fragments: str, fmt: str | None = None) -> str:
    """Import must fail (at open or while loading) with every fragment in the message."""
    with pytest.raises(ImportFailed) as info:
        bulk_load(path.parent / f"fail-{path.name}.db", open_source(path, fmt), "fail")
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# -- round trips -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["kg.jsonl", "kg.jsonl.gz", "kg.ndjson", "csvdir", "kg.graphml",
                                  "kg.graphml.gz", "kg.json"])
def test_round_trip_is_exact(tmp_path: Path, name: str) -> None:
    kg = build_kg(tmp_path / "src.db")
    out = tmp_path / name
    fmt = "csv" if name == "csvdir" else None
    writer_for(out, fmt)(kg, out)
    copy = load(tmp_path, out, fmt)
    assert snapshot(copy) == snapshot(kg)
    if fmt != "csv":  # CSV has nowhere to keep the KG's name
        assert copy.meta()["name"] == "Sample KG" and copy.meta()["description"] == "für Tests — ✓"


def test_round_trip_keeps_value_types(tmp_path: Path) -> None:
    """1 stays int and 87.88 float (== alone would accept 1.0 for 1)."""
    kg = build_kg(tmp_path / "src.db")
    for name, fmt in (("t.jsonl", None), ("csvdir", "csv"), ("t.graphml", None)):
        writer_for(tmp_path / name, fmt)(kg, tmp_path / name)
        copy = load(tmp_path, tmp_path / name, fmt, name=name.replace(".", "-"))
        props = copy.get_node("zurich").properties
        assert [type(props[k]) for k in ("population", "area", "capital", "mixed")] == [int, float, bool, int]


def test_writers_report_progress(tmp_path: Path) -> None:
    kg = build_kg(tmp_path / "src.db")
    for name, fmt in (("p.jsonl", None), ("pcsv", "csv"), ("p.graphml", None)):
        seen: list[tuple[str, int]] = []
        writer = writer_for(tmp_path / name, fmt)
        writer(kg, tmp_path / name, progress=lambda stage, n, out=seen: out.append((stage, n)))
        assert seen == [("nodes", 4), ("edges", 4)]


# -- JSON Lines ------------------------------------------------------------------------------------
def test_jsonl_without_kind_interleaved(tmp_path: Path) -> None:
    path = write_text(tmp_path / "g.jsonl", """{"kind": "meta", "name": "Lines"}
{"id": "a", "name": "A", "color": "red"}
{"source": "a", "target": "b", "type": "knows", "weight": 2}

{"id": "b", "name": "B"}
{"kind": "edge", "source": "b", "target": "a", "type": "knows"}
""")
    source = open_source(path)
    assert source.meta == {"name": "Lines"}
    assert [loc for loc, _ in source.nodes()] == ["g.jsonl:2", "g.jsonl:5"]
    assert [loc for loc, _ in source.edges()] == ["g.jsonl:3", "g.jsonl:6"]
    kg = load(tmp_path, path)
    assert kg.meta()["name"] == "Lines"
    assert kg.get_node("a").properties == {"color": "red"}
    assert kg.get_edge("a", "b", "knows").weight == 2.0


def test_jsonl_edge_pass_sees_edges_before_nodes(tmp_path: Path) -> None:
    path = write_text(tmp_path / "g.jsonl", '{"source": "a", "target": "a", "type": "t"}\n'
                                            '{"id": "a", "name": "A"}\n')
    source = open_source(path)
    assert len(list(source.nodes())) == 1 and len(list(source.edges())) == 1


# -- CSV -------------------------------------------------------------------------------------------
def test_csv_extra_columns_become_typed_properties(tmp_path: Path) -> None:
    folder = tmp_path / "kg"
    (folder).mkdir()
    (folder / "nodes.csv").write_bytes(
        "id,name,type,year,score,flag,tags,zip,note,properties\n"
        'a,Älpler,person,1999,0.5,TRUE,"[1, 2]",007,[citation needed],"{""year"": 2000}"\n'
        "b,B,,,,,,,,\n".encode("utf-8-sig"))
    write_text(folder / "edges.csv", "source,target,type,since\na,b,knows,2001\n")
    kg = load(tmp_path, folder)
    assert kg.get_node("a").properties == {"year": 2000, "score": 0.5, "flag": True, "tags": [1, 2],
                                           "zip": "007", "note": "[citation needed]"}
    assert kg.get_node("b").type == "entity" and kg.get_node("b").properties == {}
    edge = kg.get_edge("a", "b", "knows")
    assert (edge.weight, edge.properties) == (1.0, {"since": 2001})


def test_csv_accepts_nodes_file_and_gzip(tmp_path: Path) -> None:
    kg = build_kg(tmp_path / "src.db")
    out = tmp_path / "gz" / "nodes.csv.gz"
    out.parent.mkdir()
    writer_for(out)(kg, out)
    assert (tmp_path / "gz" / "edges.csv.gz").exists()
    assert snapshot(load(tmp_path, out)) == snapshot(kg)
    lone = write_text(tmp_path / "lone" / "people.csv", "id,name\np,P\n")
    assert [n.id for n in load(tmp_path, lone, name="lone").iter_nodes()] == ["p"]


# -- GraphML and networkx --------------------------------------------------------------------------
def test_networkx_graphml_imports(tmp_path: Path) -> None:
    g = nx.DiGraph(name="From networkx")
    g.add_node("a", label="Alpha", type="person", age=42, height=1.8, active=True)
    g.add_node("b", name="Beta", extra="x")
    g.add_edge("a", "b", weight=2.5, relation="knows", since=2001)
    g.add_edge("b", "a")
    nx.write_graphml(g, tmp_path / "nx.graphml")
    kg = load(tmp_path, tmp_path / "nx.graphml")
    a, b = kg.get_node("a"), kg.get_node("b")
    assert (a.name, a.type, a.properties) == ("Alpha", "person", {"age": 42, "height": 1.8, "active": True})
    assert (b.name, b.type, b.properties) == ("Beta", "entity", {"extra": "x"})
    knows = kg.get_edge("a", "b", "knows")
    assert (knows.weight, knows.properties) == (2.5, {"since": 2001})
    assert kg.get_edge("b", "a", "relates_to").weight == 1.0
    assert kg.meta()["name"] == "From networkx"


def test_our_graphml_reads_in_networkx(tmp_path: Path) -> None:
    kg = build_kg(tmp_path / "src.db")
    writer_for(tmp_path / "out.graphml")(kg, tmp_path / "out.graphml")
    g = nx.read_graphml(tmp_path / "out.graphml")
    assert (g.number_of_nodes(), g.number_of_edges()) == (kg.node_count(), kg.edge_count())
    assert g.is_directed() and g.graph["name"] == "Sample KG"
    assert g.nodes["zurich"] == {"name": "Zürich", "type": "city",
                                 "description": "Größte Stadt\r\nder Schweiz", "population": 421878,
                                 "area": 87.88, "capital": False, "tags": '["a", "b"]',
                                 "meta": json.dumps(NESTED, ensure_ascii=False),
                                 "code": "007", "mixed": 1.0, "properties.name": "shadow"}
    assert g.nodes["tokyo"]["name"] == "東京" and g.nodes["tokyo"]["capital"] is True
    assert g.edges["zurich", "tokyo"] == {"type": "flight_to", "weight": 0.1 + 0.2, "airline": "LX",
                                          "stops": 0, "mixed": "x"}
    assert g.nodes["tokyo"]["note"] == "null"  # a null gets a JSON-encoded string key
    assert g.edges["tokyo", "zurich"]["id"] == "e-1"


def test_graphml_defaults_undeclared_keys_and_yed_labels(tmp_path: Path) -> None:
    path = write_text(tmp_path / "y.graphml", """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:y="http://www.yworks.com/xml/graphml">
  <key id="d0" for="node" attr.name="color" attr.type="string"><default>grey</default></key>
  <key id="d1" for="node" yfiles.type="nodegraphics"/>
  <key id="d2" for="edge" attr.name="w" attr.type="int"/>
  <graph edgedefault="undirected">
    <node id="n0"><data key="d1"><y:ShapeNode><y:NodeLabel>First</y:NodeLabel></y:ShapeNode></data></node>
    <node id="n1"><data key="d0">blue</data><data key="undeclared">text</data>
      <graph id="inner"><node id="n2"/></graph></node>
    <edge source="n0" target="n2"><data key="d2">3</data></edge>
  </graph>
</graphml>""")
    kg = load(tmp_path, path)
    assert (kg.get_node("n0").name, kg.get_node("n0").properties) == ("First", {"color": "grey"})
    assert kg.get_node("n1").properties == {"color": "blue", "undeclared": "text"}
    assert kg.get_node("n2").name == "n2"
    assert kg.get_edge("n0", "n2", "relates_to").properties == {"w": 3}


def test_networkx_node_link_json_imports(tmp_path: Path) -> None:
    g = nx.DiGraph(name="NL")
    g.add_node(1, name="One", type="thing", color="red")
    g.add_node(2, name="Two")
    g.add_edge(1, 2, type="next", weight=0.5, since=2020)
    g.add_edge(2, 1)
    data = nx.node_link_data(g, edges="links")
    (tmp_path / "nl.json").write_text(json.dumps(data), encoding="utf-8")
    kg = load(tmp_path, tmp_path / "nl.json")
    one = kg.get_node("1")
    assert (one.name, one.type, one.properties) == ("One", "thing", {"color": "red"})
    edge = kg.get_edge("1", "2", "next")
    assert (edge.weight, edge.properties) == (0.5, {"since": 2020})
    assert kg.edge_count() == 2


# -- bad input -------------------------------------------------------------------------------------
def test_jsonl_truncated_line(tmp_path: Path) -> None:
    path = write_text(tmp_path / "t.jsonl", '{"id": "a", "name": "A"}\n{"id": "b", "na')
    assert_fails(path, "t.jsonl:2", "malformed or truncated")


def test_jsonl_truncated_gzip(tmp_path: Path) -> None:
    blob = gzip.compress(b'{"id": "a", "name": "A"}\n' * 2000)
    (tmp_path / "t.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    assert_fails(tmp_path / "t.jsonl.gz", "t.jsonl.gz:", "malformed or truncated")


def test_jsonl_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_bytes(b'{"id": "a", "name": "A"}\n{"id": "b", "name": "\xff"}\n')
    assert_fails(tmp_path / "b.jsonl", "b.jsonl:2", "not UTF-8")


def test_jsonl_non_object_and_unknown_kind(tmp_path: Path) -> None:
    assert_fails(write_text(tmp_path / "l.jsonl", '{"id": "a"}\n[1, 2]\n'), "l.jsonl:2", "JSON object")
    path = write_text(tmp_path / "k.jsonl", '{"kind": "vertex", "id": "a"}\n')
    assert_fails(path, "k.jsonl:1", "unknown kind")


def test_csv_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "nodes.csv").write_bytes(b"id,name\na,A\nb,caf\xe9\n")
    assert_fails(tmp_path / "c", "nodes.csv:3", "not UTF-8")


def test_csv_missing_id_column(tmp_path: Path) -> None:
    write_text(tmp_path / "c" / "nodes.csv", "key,name\na,A\n")
    assert_fails(tmp_path / "c", "nodes.csv:1", "missing column 'id'")


def test_csv_missing_edge_column(tmp_path: Path) -> None:
    write_text(tmp_path / "c" / "nodes.csv", "id,name\na,A\n")
    write_text(tmp_path / "c" / "edges.csv", "source,target\na,a\n")
    assert_fails(tmp_path / "c", "edges.csv:1", "missing column 'type'")


def test_csv_ragged_row(tmp_path: Path) -> None:
    write_text(tmp_path / "c" / "nodes.csv", 'id,name,description\na,A,"multi\nline"\nb,B,x,extra\n')
    assert_fails(tmp_path / "c", "nodes.csv:4", "4 cells but the header has 3 columns")


def test_csv_bad_weight(tmp_path: Path) -> None:
    write_text(tmp_path / "c" / "nodes.csv", "id,name\na,A\nb,B\n")
    write_text(tmp_path / "c" / "edges.csv", "source,target,type,weight\na,b,t,1\nb,a,t,heavy\n")
    assert_fails(tmp_path / "c", "edges.csv:3", "weight 'heavy' is not a number")


def test_csv_bad_properties_json(tmp_path: Path) -> None:
    write_text(tmp_path / "c" / "nodes.csv", 'id,name,properties\na,A,"{""x"": }"\n')
    assert_fails(tmp_path / "c", "nodes.csv:2", "'properties' cell is not valid JSON")


def test_csv_folder_without_nodes(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgument, match="no nodes.csv"):
        open_source(tmp_path / "empty")


def test_graphml_truncated(tmp_path: Path) -> None:
    kg = build_kg(tmp_path / "src.db")
    writer_for(tmp_path / "full.graphml")(kg, tmp_path / "full.graphml")
    text = (tmp_path / "full.graphml").read_text(encoding="utf-8")
    path = write_text(tmp_path / "cut.graphml", text[: text.index("<edge")])
    lines = text[: text.index("<edge")].count("\n") + 1
    assert_fails(path, f"cut.graphml:{lines}", "malformed or truncated")


def test_graphml_doctype_refused(tmp_path: Path) -> None:
    laughs = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    path = write_text(tmp_path / "bomb.graphml", f"""<?xml version="1.0"?>
<!DOCTYPE graphml [<!ENTITY l0 "ha">{laughs}]>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph>
<node id="a"><data key="d0">&l9;</data></node></graph></graphml>""")
    with pytest.raises(ImportFailed, match=r"bomb.graphml:2: .*DTD"):
        open_source(path)


def test_graphml_other_xml_refused(tmp_path: Path) -> None:
    path = write_text(tmp_path / "feed.xml", "<?xml version='1.0'?>\n<rss><channel/></rss>")
    with pytest.raises(ImportFailed, match=r"feed.xml:2: .*not GraphML: the root element is <rss>"):
        open_source(path)


def test_graphml_bad_typed_value(tmp_path: Path) -> None:
    path = write_text(tmp_path / "v.graphml", """<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
<key id="k" for="node" attr.name="age" attr.type="int"/><graph>
<node id="a"><data key="k">42</data></node><node id="b"><data key="k">old</data></node></graph></graphml>""")
    assert_fails(path, "v.graphml:nodes[1]", "'age' = 'old' is not a valid integer")


def test_edge_to_unknown_node(tmp_path: Path) -> None:
    path = write_text(tmp_path / "d.jsonl", '{"id": "a", "name": "A"}\n{"source": "a", "target": "zz", '
                                            '"type": "t"}\n')
    assert_fails(path, "d.jsonl:2", "target node 'zz' does not exist", "--skip-dangling")


def test_duplicate_node_ids(tmp_path: Path) -> None:
    write_text(tmp_path / "c" / "nodes.csv", "id,name\na,A\nb,B\na,Again\n")
    assert_fails(tmp_path / "c", "nodes.csv:4", "duplicate node id 'a'")


def test_source_streams_are_records(tmp_path: Path) -> None:
    """Readers hand over plain (location, dict) pairs; the importer does the checking."""
    kg = build_kg(tmp_path / "src.db")
    for name, fmt in (("r.jsonl", None), ("rcsv", "csv"), ("r.graphml", None)):
        writer_for(tmp_path / name, fmt)(kg, tmp_path / name)
        source: Source = open_source(tmp_path / name, fmt)
        nodes, edges = list(source.nodes()), list(source.edges())
        assert len(nodes) == 4 and len(edges) == 4
        assert all(isinstance(loc, str) and isinstance(rec, dict) for loc, rec in nodes + edges)
        assert "kind" not in nodes[0][1]
