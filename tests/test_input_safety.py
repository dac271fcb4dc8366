"""Input that must not break a KG: deeply nested or huge properties at every entry point (refused,
nothing stored), and paths and names (KGOS_HOME with URI characters, look-alike KG names, export
into a missing folder, temp files of killed imports)."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest
from api_helpers import client, error
from conftest import write_nodelink

import kgos
from kgos.errors import ImportFailed, InvalidArgument, InvalidName, PropertiesTooLarge
from kgos.store.limits import MAX_PROPERTY_BYTES, MAX_PROPERTY_DEPTH, check_properties


def nest(depth: int) -> dict:
    """A properties object ``depth`` levels deep: nest(1) == {"a": 1}."""
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value  # type: ignore[return-value]


def nest_text(depth: int) -> str:
    """The JSON text of nest(depth), for depths json.dumps itself cannot write."""
    return '{"a":' * depth + "1" + "}" * depth


class Deep:
    """Properties written to a test file as ``nest_text(depth)``: parsers get the full depth."""

    def __init__(self, depth: int) -> None:
        self.depth = depth


def dumps(value: object) -> str:
    """json.dumps, with each Deep value written at its depth."""
    if isinstance(value, Deep):
        return nest_text(value.depth)
    deep: list[Deep] = []

    def mark(v: object) -> str:
        assert isinstance(v, Deep)
        deep.append(v)
        return f"@@deep{len(deep) - 1}@@"
    text = json.dumps(value, default=mark)
    for i, d in enumerate(deep):
        text = text.replace(f'"@@deep{i}@@"', nest_text(d.depth))
    return text


TOO_DEEP = [MAX_PROPERTY_DEPTH + 1, 300]  # just over our limit, and over orjson's own (254)
HUGE = {"blob": "x" * (MAX_PROPERTY_BYTES + 10)}


@pytest.fixture
def kg(ws):
    kg = ws.create("t")
    kg.add_node("Alpha", id="a")
    kg.add_node("Beta", id="b")
    return kg


# -- the check itself ---------------------------------------------------------------------------------
def test_depth_at_the_limit_is_accepted_one_more_is_refused():
    assert json.loads(check_properties(nest(MAX_PROPERTY_DEPTH))) == nest(MAX_PROPERTY_DEPTH)
    with pytest.raises(PropertiesTooLarge, match=f"{MAX_PROPERTY_DEPTH} levels"):
        check_properties(nest(MAX_PROPERTY_DEPTH + 1))
    with pytest.raises(PropertiesTooLarge, match="levels"):
        deep_list: object = 1
        for _ in range(MAX_PROPERTY_DEPTH):
            deep_list = [deep_list]
        check_properties({"list": deep_list})


def test_size_over_the_limit_is_refused_and_says_what_to_do():
    with pytest.raises(PropertiesTooLarge) as caught:
        check_properties(HUGE, "properties of node 'x'")
    assert isinstance(caught.value, InvalidArgument)
    message = str(caught.value)
    assert "node 'x'" in message and f"{MAX_PROPERTY_BYTES:,}" in message and "store" in message


def test_wide_but_shallow_properties_pass():
    props = {f"k{i}": {"v": [i, {"w": i}]} for i in range(500)}
    assert json.loads(check_properties(props)) == props


def test_integers_wider_than_64_bits_still_store():
    assert json.loads(check_properties({"big": 2**70})) == {"big": 2**70}


# -- Python API -------------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", TOO_DEEP)
def test_python_node_writes_refuse_deep_properties_and_store_nothing(kg, depth):
    before = kg.store.version()
    with pytest.raises(PropertiesTooLarge):
        kg.add_node("Deep", properties=nest(depth))
    with pytest.raises(PropertiesTooLarge):
        kg.upsert_node("deep", "Deep", properties=nest(depth))
    with pytest.raises(PropertiesTooLarge):
        kg.upsert_entity("Deep", "entity", properties=nest(depth))
    with pytest.raises(PropertiesTooLarge):
        kg.update_node("a", properties=nest(depth))
    assert kg.store.node_count() == 2 and kg.node("a").properties == {}
    assert kg.store.version() == before


def test_python_edge_writes_refuse_deep_or_huge_properties(kg):
    for props in (nest(MAX_PROPERTY_DEPTH + 1), nest(300), HUGE):
        with pytest.raises(PropertiesTooLarge):
            kg.add_edge("a", "b", "rel", properties=props)
    assert kg.store.edge_count() == 0


def test_merged_properties_are_checked_too(kg):
    kg.update_node("a", properties={"half": "x" * (MAX_PROPERTY_BYTES // 2 + 10)})
    with pytest.raises(PropertiesTooLarge):
        kg.update_node("a", properties={"other": "y" * (MAX_PROPERTY_BYTES // 2 + 10)})
    assert set(kg.node("a").properties) == {"half"}


# -- HTTP API ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", TOO_DEEP)
def test_api_refuses_deep_properties_with_4xx_and_stays_readable(ws, kg, depth):
    c = client(ws)
    body = error(c.post("/api/kg/t/nodes", json={"name": "Deep", "properties": nest(depth)}), 400,
                 "PropertiesTooLarge")
    assert str(MAX_PROPERTY_DEPTH) in body["detail"]
    error(c.post("/api/kg/t/nodes/deep", json={"name": "Deep", "properties": nest(depth)}), 400)
    error(c.patch("/api/kg/t/nodes/a", json={"properties": nest(depth)}), 400)
    error(c.post("/api/kg/t/edges", json={"source": "a", "target": "b", "type": "r",
                                          "properties": nest(depth)}), 400)
    listed = c.get("/api/kg/t/nodes")
    assert listed.status_code == 200 and listed.json()["total"] == 2
    assert c.get("/api/kg/t/edges").json()["edges"] == []
    upload = {"file": ("deep.json", dumps({"nodes": [{"id": "x", "name": "X", "properties": Deep(depth)}],
                                           "edges": []}).encode())}
    for mode in ("create", "merge", "replace"):
        error(c.post(f"/api/kg/{'t' if mode != 'create' else 'fresh'}/import", params={"mode": mode},
                     files=upload, headers={"X-KGOS-Client": "test"}), 400, "ImportFailed")
    assert [kg["db_id"] for kg in c.get("/api/kg").json()] == ["t"]


# -- imports, every format --------------------------------------------------------------------------
def _nodelink(folder: Path, props: dict, on: str) -> Path:
    nodes = [{"id": "x", "name": "X"}, {"id": "y", "name": "Y"}]
    edges = [{"source": "x", "target": "y", "type": "r"}]
    (nodes if on == "node" else edges)[-1]["properties"] = props
    path = folder / "deep.json"
    path.write_text(dumps({"nodes": nodes, "edges": edges}), encoding="utf-8")
    return path


def _jsonl(folder: Path, props: dict, on: str) -> Path:
    lines = [{"kind": "node", "id": "x", "name": "X"}, {"kind": "node", "id": "y", "name": "Y"},
             {"kind": "edge", "source": "x", "target": "y", "type": "r"}]
    lines[1 if on == "node" else 2]["properties"] = props
    path = folder / "deep.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(dumps(line) + "\n" for line in lines)
    return path


def _csv(folder: Path, props: dict, on: str) -> Path:
    out = folder / "deep_csv"
    out.mkdir()
    cell = dumps(props)
    with open(out / "nodes.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["id", "name", "properties"], ["x", "X", ""],
                                 ["y", "Y", cell if on == "node" else ""]])
    with open(out / "edges.csv", "w", newline="", encoding="utf-8") as f:
        # an extra column holding a JSON object becomes a property too
        csv.writer(f).writerows([["source", "target", "type", "extra"],
                                 ["x", "y", "r", cell if on == "edge" else ""]])
    return out


def _graphml(folder: Path, props: dict, on: str) -> Path:
    text = dumps(props).replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    data = f'<data key="d0">{text}</data>'
    path = folder / "deep.graphml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        f'<key id="d0" for="{on}" attr.name="deep" attr.type="string" kgos.encoding="json"/>'
        '<graph edgedefault="directed">'
        f'<node id="x"/><node id="y">{data if on == "node" else ""}</node>'
        f'<edge source="x" target="y">{data if on == "edge" else ""}</edge></graph></graphml>',
        encoding="utf-8")
    return path


def _snapshot(folder: Path, props: dict, on: str) -> Path:
    entities = [{"id": "x", "name": "X", "type": "tool"}, {"id": "y", "name": "Y", "type": "tool",
                                                              **({"metadata": props} if on == "node" else {})}]
    edges = [{"subject_id": "x", "predicate": "uses", "object_id": "y",
              **({"evidence": [props]} if on == "edge" else {})}]
    path = folder / "snapshot.json"
    path.write_text(dumps({"entities": entities, "edges": edges}), encoding="utf-8")
    return path


WRITERS = {"nodelink": _nodelink, "jsonl": _jsonl, "csv": _csv, "graphml": _graphml, "snapshot": _snapshot}


@pytest.mark.parametrize("on", ["node", "edge"])
@pytest.mark.parametrize("fmt", sorted(WRITERS))
@pytest.mark.parametrize("depth", TOO_DEEP + [1200])
def test_every_import_format_refuses_deep_properties_and_stores_nothing(ws, kg, tmp_path, fmt, on, depth):
    path = WRITERS[fmt](tmp_path, Deep(depth), on)
    with pytest.raises(ImportFailed, match="levels") as caught:
        ws.import_file("fresh", path)
    assert caught.value.record, "the error names the offending record"
    assert not ws.exists("fresh")
    before = kg.store.version()
    for mode in ("merge", "replace"):
        with pytest.raises(ImportFailed):
            ws.import_file("t", path, mode=mode)
    assert kg.store.version() == before and ws.kg("t").store.node_count() == 2


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_import_format_refuses_huge_properties(ws, tmp_path, fmt):
    path = WRITERS[fmt](tmp_path, HUGE, "node")
    with pytest.raises(ImportFailed, match="bytes"):
        ws.import_file("fresh", path)
    assert not ws.exists("fresh")


def test_cli_import_of_deep_file_is_a_clean_error(tmp_path):
    from click.testing import CliRunner

    from kgos.cli import cli
    path = _nodelink(tmp_path, nest(300), "node")
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "kg", "import", "deep", str(path)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "levels" in result.output and isinstance(result.exception, SystemExit)


# -- memory -----------------------------------------------------------------------------------------
def test_memory_metadata_is_bounded_too(ws):
    from kgos.memory import MemoryService
    memory = MemoryService(ws)
    with pytest.raises(PropertiesTooLarge):
        memory.add("I like tea.", metadata=nest(MAX_PROPERTY_DEPTH + 1))
    assert memory.stats().to_dict()["memories"] == 0


def test_merge_import_checks_properties_once_merged(ws, kg, tmp_path):
    kg.update_node("a", properties={"half": "x" * (MAX_PROPERTY_BYTES // 2 + 10)})
    before = kg.store.version()
    path = tmp_path / "more.json"
    path.write_text(dumps({"nodes": [{"id": "a", "name": "Alpha", "properties": {
        "other": "y" * (MAX_PROPERTY_BYTES // 2 + 10)}}], "edges": []}), encoding="utf-8")
    with pytest.raises(ImportFailed, match="once merged"):
        ws.import_file("t", path, mode="merge")
    assert kg.store.version() == before and set(kg.node("a").properties) == {"half"}


# -- paths and names (point 5) ----------------------------------------------------------------------
@pytest.mark.parametrize("odd", ["hash#home", "query?home", "pct%41home", "all #?%20 of them"])
def test_a_home_with_uri_characters_keeps_every_file_inside_it(tmp_path, odd):
    home = tmp_path / odd
    with kgos.Workspace(home) as ws:
        ws.create("t").add_node("Alpha")
        assert ws.kg("t").store.node_count() == 1
    assert (home / "kgs" / "t.db").is_file() and (home / "workspace.db").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [odd], "nothing written beside the home"
    with kgos.Workspace(home) as again:
        assert again.kg("t").store.node_count() == 1


def test_kgos_home_from_the_environment_with_a_hash(tmp_path, monkeypatch):
    home = tmp_path / "a#b"
    monkeypatch.setenv("KGOS_HOME", str(home))
    with kgos.Workspace() as ws:
        ws.create("t")
    assert (home / "kgs" / "t.db").is_file() and not (tmp_path / "a").exists()


LOOK_ALIKES = ["kg\n", "kg\r\n", "\nkg", "kg ", "kg\t"]


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_kg_names_with_trailing_newlines_are_refused(ws, tmp_path, name):
    from kgos.kg.workspace import check_db_id
    with pytest.raises(InvalidName):
        check_db_id(name)
    with pytest.raises(InvalidName):
        ws.create(name)
    path = write_nodelink(tmp_path / "k.json", [{"id": "a", "name": "A"}], [])
    with pytest.raises(InvalidName):
        ws.import_file(name, path)
    assert ws.list() == []
    c = client(ws)
    assert c.post("/api/kg", json={"db_id": name}).status_code == 422
    assert c.get("/api/kg").json() == []


@pytest.mark.parametrize("check", ["expert id", "dimension", "playbook", "metadata key", "config name"])
def test_every_name_validator_refuses_a_trailing_newline(check, tmp_path):
    from pydantic import ValidationError

    from kgos.experts.config import Retrieval
    from kgos.experts.playbooks import PlaybookLibrary
    from kgos.experts.store import check_id
    from kgos.memory.store import MemoryFilter
    from kgos.methods.dimensions import check_name
    calls = {"expert id": (lambda v: check_id(v, "expert id"), InvalidArgument),
             "dimension": (check_name, InvalidName),
             "playbook": (PlaybookLibrary(tmp_path).path, InvalidArgument),
             "metadata key": (lambda v: MemoryFilter(metadata={v: 1}).where(), InvalidArgument),
             "config name": (lambda v: Retrieval(boost_types=[v]), ValidationError)}
    fn, error_type = calls[check]
    with pytest.raises(error_type):
        fn("cost\n")


def test_export_into_a_missing_folder_creates_it(tmp_path):
    from click.testing import CliRunner

    from kgos.cli import cli
    home = tmp_path / "home"
    with kgos.Workspace(home) as ws:
        ws.create("t").add_node("Alpha")
    target = tmp_path / "not" / "yet" / "there.json"
    result = CliRunner().invoke(cli, ["--home", str(home), "kg", "export", "t", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())["nodes"][0]["name"] == "Alpha"


def test_export_to_an_unwritable_place_is_a_clean_error(tmp_path):
    from click.testing import CliRunner

    from kgos.cli import cli
    home = tmp_path / "home"
    with kgos.Workspace(home) as ws:
        ws.create("t")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(cli, ["--home", str(home), "kg", "export", "t", str(blocker / "kg.json")])
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output and "cannot write" in result.output


def _dead_pid() -> int:
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_files_of_killed_imports_are_swept_when_the_workspace_opens(tmp_path):
    import os
    import subprocess
    import sys
    kgs = tmp_path / "home" / "kgs"
    kgs.mkdir(parents=True)
    dead = _dead_pid()
    stale = [kgs / f".big.db.importing-{dead}", kgs / f".big.db.importing-{dead}-wal",
             kgs / f".big.db.importing-{dead}-shm"]
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = [kgs / f".other.db.importing-{sleeper.pid}", kgs / f".mine.db.importing-{os.getpid()}"]
        for p in stale + live:
            p.write_bytes(b"x" * 1024)
        kgos.Workspace(tmp_path / "home").close()
        assert [p for p in stale if p.exists()] == []
        assert all(p.exists() for p in live), "a temp file a live process may be writing is kept"
    finally:
        sleeper.kill()
        sleeper.wait()


# -- KGs written before the limits existed ------------------------------------------------------------
@pytest.mark.parametrize("depth", [300, 1100])  # over orjson's limit (254), over the JSON parsers' (~1000)
def test_a_kg_holding_too_deep_properties_stays_readable_and_validate_names_the_node(ws, kg, tmp_path, depth):
    # An old version stored the value unchecked: write it straight into the file, as it did.
    kg.store.conn.execute("UPDATE nodes SET properties = ? WHERE id = 'a'", (nest_text(depth),))
    kg.store.conn.commit()
    c = client(ws)
    for path in ("/api/kg/t/nodes", "/api/kg/t/nodes/a", "/api/kg/t/nodes/b/neighbors"):
        assert c.get(path).status_code == 200, path
    node = c.get("/api/kg/t/nodes/a").json()
    assert "replace_properties=True" in node["properties"]["_kgos_error"]
    assert c.post("/api/kg/t/search", json={"query": "alpha"}).status_code == 200
    exported = c.get("/api/kg/t/export")
    assert exported.status_code == 200
    assert "_kgos_error" in json.dumps(exported.json()["nodes"])
    issue = next(i for i in kg.validate().issues if i.rule == 8)
    assert issue.count == 1 and issue.examples == (f"a (nests deeper than {MAX_PROPERTY_DEPTH} levels)",)
    with pytest.raises(PropertiesTooLarge, match="replace_properties=True"):
        kg.update_node("a", properties={"b": 1})  # a merge would silently store the marker
    error(c.patch("/api/kg/t/nodes/a", json={"properties": {"b": 1}}), 400, "PropertiesTooLarge")
    assert c.patch("/api/kg/t/nodes/a", json={"properties": {"b": 1}, "replace_properties": True}).status_code == 200
    assert kg.node("a").properties == {"b": 1} and kg.validate().ok


def test_cli_validate_names_a_node_with_too_deep_properties(tmp_path):
    from click.testing import CliRunner

    from kgos.cli import cli
    home = tmp_path / "home"
    with kgos.Workspace(home) as ws:
        kg = ws.create("t")
        kg.add_node("Alpha", id="a")
        kg.store.conn.execute("UPDATE nodes SET properties = ? WHERE id = 'a'", (nest_text(300),))
        kg.store.conn.commit()
    result = CliRunner().invoke(cli, ["--home", str(home), "kg", "validate", "t", "--json"])
    assert result.exit_code == 1, result.output  # an ERROR rule failed
    issue = next(i for i in json.loads(result.output)["issues"] if i["rule"] == 8)
    assert issue["examples"] == [f"a (nests deeper than {MAX_PROPERTY_DEPTH} levels)"]
