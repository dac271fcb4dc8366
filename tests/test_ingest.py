"""kgos ingest, tier 1 for Python and the incremental write: known answers on a small package."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest
from ingest_helpers import PKG, edges_of, run, write_tree

import kgos
from kgos.errors import IngestFailed, InvalidArgument
from kgos.ingest import writer


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "src", PKG)


def test_python_nodes_have_stable_ids_spans_signatures_and_docstrings(ws: kgos.Workspace, tree: Path) -> None:
    run(ws, [tree / "shop"])
    kg = ws.kg("code")
    total = kg.node("py:shop.orders.Order.total")
    assert total.type == "method" and total.name == "total"
    assert total.properties["source"] == "shop/orders.py"
    assert (total.properties["line_start"], total.properties["line_end"]) == (13, 15)
    assert total.properties["signature"] == "def total(self)" and total.description == "Sum of the items."
    assert kg.node("py:shop").type == "package" and kg.node("py:shop.orders").type == "module"
    assert kg.node("py:shop.util.logged.wrapper").type == "function"  # nested definitions are nodes too
    assert kg.node("py:shop.orders.Order.ship").properties["decorators"] == ["util.logged"]
    for node in kg.nodes():  # provenance on every node
        assert node.properties.get("source"), node.id


def test_every_def_and_class_is_a_node(ws: kgos.Workspace, tree: Path) -> None:
    run(ws, [tree / "shop"])
    expected = sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                   for p in (tree / "shop").glob("*.py") for n in ast.walk(ast.parse(p.read_text())))
    got = sum(1 for n in ws.kg("code").nodes() if n.type in ("class", "function", "method"))
    assert got == expected == 15


def test_calls_resolve_through_self_imports_super_and_bases(ws: kgos.Workspace, tree: Path) -> None:
    run(ws, [tree / "shop"])
    calls = edges_of(ws.kg("code"), "calls")
    resolved = {
        ("py:shop.orders.Order.total", "py:shop.util.add_all"),  # module alias: from . import util
        ("py:shop.orders.Order.store", "py:shop.base.Model.save"),  # self.save() found on the base class
        ("py:shop.orders.Order.ship", "py:shop.base.Model.save"),  # super().save()
        ("py:shop.orders.make_order", "py:shop.orders.Order"),  # instantiation
        ("py:shop.base.Model.save", "py:shop.base.Model.validate"),
    }
    for pair in resolved:
        assert calls[pair] == 1.0, pair
    # thing.reload(): not resolvable, name-matched to the one definition called reload, at a lower weight
    assert 0 < calls[("py:shop.util.refresh", "py:shop.cache.Store.reload")] < 1.0
    edge = ws.kg("code").store.get_edge("py:shop.util.refresh", "py:shop.cache.Store.reload", "calls")
    assert edge.properties["resolution"] == "name_matched" and edge.properties["source_file"] == "shop/util.py"
    assert ("py:shop.orders.Order.store", "py:json") not in calls  # json.dumps is outside: no edge


def test_inheritance_decorators_and_imports(ws: kgos.Workspace, tree: Path) -> None:
    run(ws, [tree / "shop"])
    kg = ws.kg("code")
    assert ("py:shop.orders.Order", "py:shop.base.Model") in edges_of(kg, "inherits")
    assert ("py:shop.orders.Order.ship", "py:shop.util.logged") in edges_of(kg, "decorated_by")
    imports = edges_of(kg, "imports")
    assert {("py:shop.orders", "py:shop.base"), ("py:shop.orders", "py:shop.util"),
            ("py:shop", "py:shop.orders"), ("py:shop.orders", "py:json")} <= set(imports)
    assert kg.node("py:json").type == "external_module"


def test_report_counts_files_types_validation_and_timings(ws: kgos.Workspace, tree: Path) -> None:
    report = run(ws, [tree / "shop"], validate=True)
    assert report.files == {"python": 5} and report.changed == 5 and report.unchanged == 0
    assert report.nodes["method"] == 7 and report.edges["calls"] >= 6
    assert report.validation is not None and report.validation["ok"] and report.validation["errors"] == 0
    assert {"read", "tier1", "write"} <= set(report.seconds)
    d = report.to_dict()
    assert d["writes"]["groups_written"] >= 5 and d["skipped"] == []


def test_unchanged_rerun_writes_nothing(ws: kgos.Workspace, tree: Path) -> None:
    run(ws, [tree / "shop"])
    version = ws.kg("code").store.version()
    again = run(ws, [tree / "shop"])
    assert again.changed == 0 and again.unchanged == 5 and again.writes.groups_written == 0
    assert ws.kg("code").store.version() == version


def test_changing_a_file_replaces_only_its_own_nodes_and_edges(ws: kgos.Workspace, tree: Path) -> None:
    run(ws, [tree / "shop"])
    kg = ws.kg("code")
    before = {e.source: e.properties.get("line") for e in kg.edges() if e.type == "calls"}
    util = tree / "shop/util.py"
    util.write_text(util.read_text().replace("def add_all(values):", "def add_all(values, start=0):")
                    .replace("def refresh(thing):\n    return thing.reload()\n", ""))
    report = run(ws, [tree / "shop"])
    assert report.changed == 1 and report.unchanged == 4
    kg = ws.kg("code")
    assert kg.get_node("py:shop.util.refresh") is None  # gone with its file's change
    assert kg.node("py:shop.util.add_all").properties["signature"] == "def add_all(values, start=0)"
    # the caller in the unchanged orders.py keeps its edge to the (rewritten, same-id) add_all
    assert ("py:shop.orders.Order.total", "py:shop.util.add_all") in edges_of(kg, "calls")
    assert ("py:shop.util.refresh", "py:shop.cache.Store.reload") not in edges_of(kg, "calls")
    assert {e.source for e in kg.edges() if e.type == "calls"} == set(before) - {"py:shop.util.refresh"}


def test_adding_and_deleting_files(ws: kgos.Workspace, tree: Path) -> None:
    run(ws, [tree / "shop"])
    (tree / "shop/extra.py").write_text("from .util import add_all\n\ndef twice(v):\n    return add_all(v) * 2\n")
    report = run(ws, [tree / "shop"])
    assert report.changed == 1
    assert ("py:shop.extra.twice", "py:shop.util.add_all") in edges_of(ws.kg("code"), "calls")
    (tree / "shop/util.py").unlink()
    report = run(ws, [tree / "shop"])
    assert report.deleted == 1
    kg = ws.kg("code")
    assert kg.get_node("py:shop.util") is None and kg.get_node("py:shop.util.add_all") is None
    assert not [e for e in kg.edges() if "shop.util" in e.target]  # edges into the deleted file went with it
    assert kg.get_node("py:shop.extra.twice") is not None


def test_a_second_root_leaves_the_first_roots_files_alone(ws: kgos.Workspace, tree: Path, tmp_path: Path) -> None:
    run(ws, [tree / "shop"])
    other = write_tree(tmp_path / "other" / "tools", {"cli.py": "from shop.util import add_all\n\ndef main():\n    add_all([1])\n"})
    run(ws, [other])
    kg = ws.kg("code")
    assert kg.get_node("py:shop.orders.Order") is not None  # not pruned: it belongs to another root
    assert ("py:cli.main", "py:shop.util.add_all") in edges_of(kg, "calls")  # linked across roots


def test_a_failed_write_leaves_the_kg_as_it_was(ws: kgos.Workspace, tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run(ws, [tree / "shop"])
    kg = ws.kg("code")
    state = (kg.node_count(), kg.edge_count(), kg.store.version())
    (tree / "shop/util.py").write_text("def other():\n    pass\n")

    def boom(*args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")
    monkeypatch.setattr(writer, "_insert_edges", boom)
    with pytest.raises(sqlite3.OperationalError):
        run(ws, [tree / "shop"])
    kg = ws.kg("code")
    assert (kg.node_count(), kg.edge_count(), kg.store.version()) == state
    assert kg.get_node("py:shop.util.add_all") is not None
    monkeypatch.undo()
    assert run(ws, [tree / "shop"]).changed == 1  # the failed run cached nothing: the change is seen again


def test_fatal_errors_are_refused_before_writing(ws: kgos.Workspace, tmp_path: Path) -> None:
    with pytest.raises(IngestFailed, match="does not exist"):
        run(ws, [tmp_path / "nope"])
    assert not ws.exists("code")  # nothing created
    with pytest.raises(InvalidArgument, match="tiers"):
        run(ws, [tmp_path], tiers=(2,))
    with pytest.raises(InvalidArgument, match="provider"):
        run(ws, [tmp_path], tiers=(1, 3))


def test_a_call_to_a_nested_function_resolves_to_it(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "n", {"a.py": "def outer():\n    def helper():\n        return 1\n    return helper()\n\n"
                                               "def other():\n    def helper():\n        return 2\n    return helper()\n"})
    run(ws, [root])
    calls = edges_of(ws.kg("code"), "calls")
    assert calls == {("py:a.outer", "py:a.outer.helper"): 1.0, ("py:a.other", "py:a.other.helper"): 1.0}


def test_workspace_ingest(ws: kgos.Workspace, tree: Path) -> None:
    from kgos.ingest import ingest_into
    report = ingest_into(ws, "via_ws", [tree / "shop"], tiers=(1,), embed=False, dimensions=False)
    assert report.files == {"python": 5} and ws.kg("via_ws").node("py:shop.orders.Order").type == "class"
    with pytest.raises(InvalidArgument, match="unknown ingest option"):
        ingest_into(ws, "via_ws", [tree / "shop"], colour="blue")


def test_watch_reingests_when_a_file_changes(ws: kgos.Workspace, tree: Path) -> None:
    from kgos.ingest import IngestOptions, watch
    runs = watch(ws, "watched", [tree / "shop"], IngestOptions(embed=False, dimensions=False), interval=0.01)
    assert next(runs).changed == 5
    (tree / "shop/cache.py").write_text("class Store:\n    def reload(self):\n        return 2\n\n    def drop(self):\n        pass\n")
    second = next(runs)
    assert second.changed == 1 and ws.kg("watched").node("py:shop.cache.Store.drop").type == "method"


def test_a_single_file_root(ws: kgos.Workspace, tree: Path) -> None:
    report = run(ws, [tree / "shop" / "util.py"])
    assert report.files == {"python": 1} and ws.kg("code").node("py:shop.util.add_all").type == "function"
    (tree / "shop" / "util.py").write_text("def only():\n    pass\n")
    assert run(ws, [tree / "shop" / "util.py"]).changed == 1
    kg = ws.kg("code")
    assert kg.get_node("py:shop.util.add_all") is None and kg.get_node("py:shop.util.only") is not None
