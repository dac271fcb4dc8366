"""The 56-dimension catalog, ``dimension_filter`` (method 7) on native and attached foreign KGs,
hostile dimension names, setting values, and ``dims auto``."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from conftest import write_nodelink

import kgos
import kgos.cli.methods  # noqa: F401  (registers the dims commands)
from kgos.cli import cli
from kgos.errors import InvalidArgument, InvalidName, ReadOnlyKG
from kgos.methods import CATALOG, CATEGORIES, DIMENSIONS
from kgos.methods.dimensions import INFERRED_KEY, check_name, matches, merge_filters, parse_filter

NODES = [
    ("tool:cheap_batch", "Cheap batch tool", "Free bulk processing", {"pricing_tier": 0.1, "batch_suitability": 0.9}),
    ("tool:pricey_live", "Premium live tool", "Expensive real-time answers", {"pricing_tier": 0.9, "batch_suitability": 0.1}),
    ("tool:mid", "Middle tool", "Streaming output", {"pricing_tier": 0.5, "batch_suitability": 0.7, "my_dim": 0.4}),
    ("tool:string", "String valued", "", {"pricing_tier": "0.1", "batch_suitability": True}),
    ("tool:none", "No dimensions", "Uses a cache", {}),
]
EDGES = [("tool:cheap_batch", "tool:mid", "requires"), ("tool:cheap_batch", "tool:none", "requires"),
         ("tool:mid", "tool:none", "feeds_into"), ("tool:pricey_live", "tool:mid", "relates_to")]


@pytest.fixture
def kg(ws, tmp_path):
    nodes = [{"id": i, "name": name, "type": "tool", "description": d, "properties": p} for i, name, d, p in NODES]
    edges = [{"source": s, "target": t, "type": y} for s, t, y in EDGES]
    ws.import_file("dims", write_nodelink(tmp_path / "d.json", nodes, edges), dimensions=False)  # set by hand here
    return ws.kg("dims")


def ids(result) -> list[str]:
    return [m.node.id for m in result.results]


def test_catalog_is_the_spec_table():
    assert len(CATALOG) == 56 == len(DIMENSIONS)
    counts = {c: sum(d.category == c for d in CATALOG) for c in CATEGORIES}
    assert list(counts.values()) == [8, 6, 7, 6, 8, 7, 5, 3, 6]
    assert all(check_name(d.name) == d.name and d.description and d.low and d.high for d in CATALOG)
    assert DIMENSIONS["batch_suitability"].to_dict() == {
        "name": "batch_suitability", "category": "Performance & Cost",
        "description": "How well it works with batch processing", "low": "Real-time only", "high": "Designed for batch"}


@pytest.mark.parametrize("name", ["pricing'tier", 'pricing"tier', "pricing.tier", "$.pricing_tier", "pricing_tier$",
                                  "x') OR 1=1 --", "a; DROP TABLE nodes", "Pricing_tier", "", "1abc", "a" * 65,
                                  "pricing tier", None, 3])
def test_hostile_dimension_names_are_rejected(kg, name):
    with pytest.raises(InvalidName):
        kg.dimension_filter({name: {"max": 0.3}})
    assert kg.node_count() == len(NODES)  # nothing was executed


def test_filter_min_max_exact_gt_lt(kg):
    r = kg.dimension_filter({"pricing_tier": {"max": 0.3}, "batch_suitability": {"min": 0.7}})
    assert ids(r) == ["tool:cheap_batch"] and r.total == 1
    assert r.results[0].values == {"pricing_tier": 0.1, "batch_suitability": 0.9}
    assert ids(kg.dimension_filter({"pricing_tier": {"exact": 0.5}})) == ["tool:mid"]
    assert ids(kg.dimension_filter({"pricing_tier": 0.5})) == ["tool:mid"]  # a bare number is exact
    assert ids(kg.dimension_filter({"pricing_tier": {"gt": 0.1, "lt": 0.9}})) == ["tool:mid"]
    assert ids(kg.dimension_filter({"pricing_tier": {"min": 0.1, "max": 0.9}})) == \
        ["tool:cheap_batch", "tool:pricey_live", "tool:mid"]  # strings and booleans never match


def test_filter_limit_total_and_custom_dimensions(kg):
    r = kg.dimension_filter({"pricing_tier": {"min": 0.0}}, limit=2)
    assert (r.total, len(r.results)) == (3, 2)
    custom = kg.dimension_filter({"my_dim": {"max": 0.5}})
    assert ids(custom) == ["tool:mid"] and custom.custom_dimensions == ("my_dim",) and custom.notes
    assert kg.dimension_filter({"never_set": {"min": 0}}).total == 0


@pytest.mark.parametrize("filters", [{"pricing_tier": {"min": 0.5, "max": 0.3}}, {"pricing_tier": {"gt": 0.3, "lt": 0.3}},
                                     {"pricing_tier": {"exact": 0.9, "max": 0.3}}, {"pricing_tier": {"below": 0.3}},
                                     {"pricing_tier": {"max": "cheap"}}, {"pricing_tier": {"max": float("nan")}},
                                     {"pricing_tier": {}}, {}, None, {"pricing_tier": {"max": True}}])
def test_bad_constraints(kg, filters):
    with pytest.raises(InvalidArgument):
        kg.dimension_filter(filters)


def test_bad_limit(kg):
    for limit in (0, -3, "10", True):
        with pytest.raises(InvalidArgument):
            kg.dimension_filter({"pricing_tier": {"max": 1}}, limit=limit)


def test_parse_filter_expressions():
    assert parse_filter("pricing_tier<0.3") == ("pricing_tier", {"lt": 0.3})
    assert parse_filter(" pricing_tier <= 0.3 ") == ("pricing_tier", {"max": 0.3})
    assert parse_filter("x>=1") == ("x", {"min": 1.0}) and parse_filter("x==0.5") == ("x", {"exact": 0.5})
    assert merge_filters(["pricing_tier>0.1", "pricing_tier<=0.5"]) == {"pricing_tier": {"gt": 0.1, "max": 0.5}}
    for bad in ("pricing_tier", "pricing_tier<", "<0.3", "pricing_tier<abc", "pricing_tier<0.3; DROP TABLE x",
                "pricing_tier!0.3"):
        with pytest.raises((InvalidArgument, InvalidName)):
            parse_filter(bad)
    with pytest.raises(InvalidName):
        parse_filter("pricing.tier<0.3")
    with pytest.raises(InvalidArgument):
        merge_filters(["pricing_tier>0.5", "pricing_tier<0.3"])


def test_matches_is_the_same_test_in_python():
    f = {"pricing_tier": {"max": 0.3}}
    assert matches({"pricing_tier": 0.2}, f) and not matches({"pricing_tier": "0.2"}, f)
    assert not matches({"pricing_tier": True}, f) and not matches({}, f)


def test_filter_on_attached_foreign_kg(ws, tmp_path):
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE nodes (id TEXT PRIMARY KEY, name TEXT, type TEXT, description TEXT, properties TEXT);"
                       "CREATE TABLE edges (source TEXT, target TEXT, type TEXT, weight REAL, properties TEXT, created_at TEXT);")
    conn.executemany("INSERT INTO nodes VALUES (?, ?, 'tool', '', ?)",
                     [("a", "A", json.dumps({"pricing_tier": 0.1})), ("b", "B", json.dumps({"pricing_tier": 0.8})),
                      ("c", "C", "not json {"), ("d", "D", None)])
    conn.execute("INSERT INTO edges VALUES ('a', 'b', 'requires', 1.0, NULL, NULL)")
    conn.commit()
    conn.close()
    kg = ws.attach("foreign", path)
    r = kg.dimension_filter({"pricing_tier": {"max": 0.3}})
    assert (ids(r), r.total) == (["a"], 1)
    assert kg.keyword_match("pricing").results[0].node.id == "a"
    with pytest.raises(ReadOnlyKG):
        kg.set_dimensions("a", {"pricing_tier": 0.2})


# -- reading, setting and inferring values ----------------------------------------------------------------
def test_read_and_set_values(kg):
    dims = kg.dimensions("tool:mid")
    assert [(v.name, v.value, v.category) for v in dims.values] == [
        ("pricing_tier", 0.5, "Performance & Cost"), ("batch_suitability", 0.7, "Performance & Cost"), ("my_dim", 0.4, None)]
    kg.set_dimensions("Middle tool", {"pricing_tier": "0.25", "cache_effectiveness": 1})
    assert kg.node("tool:mid").properties["pricing_tier"] == 0.25
    for bad in ({"pricing_tier": 1.5}, {"pricing_tier": -0.1}, {"pricing_tier": "high"}, {"pricing.tier": 0.1}, {}):
        with pytest.raises((InvalidArgument, InvalidName)):
            kg.set_dimensions("tool:mid", bad)
    with pytest.raises(InvalidName, match="pricing_tier"):
        kg.set_dimensions("tool:mid", {"pricing_teir": 0.2})  # a typo is not silently a new dimension
    kg.set_dimensions("tool:mid", {"team_fit": 0.3}, custom=True)
    assert kg.node("tool:mid").properties["team_fit"] == 0.3


def test_infer_dimensions_never_overwrites_people(kg):
    dry = kg.infer_dimensions(dry_run=True)
    assert dry.nodes_written == 0 and INFERRED_KEY not in kg.node("tool:none").properties
    report = kg.infer_dimensions()
    got = {(v.node, v.dimension): v.value for v in report.inferred}
    assert got[("tool:cheap_batch", "implementation_complexity")] == 0.4  # 2 requires edges: 0.1 + 2 x 0.15
    assert got[("tool:mid", "relationship_richness")] == 1.0  # the highest degree
    assert got[("tool:none", "cache_effectiveness")] == 0.85  # "cache" in its text
    assert got[("tool:none", "pipeline_composability")] == 0.6  # one feeds_into edge
    assert ("tool:cheap_batch", "pricing_tier") not in got  # set by a person: kept
    assert ("tool:pricey_live", "pricing_tier") not in got and report.kept_human >= 3
    marks = kg.node("tool:none").properties[INFERRED_KEY]
    assert marks["cache_effectiveness"] == "text_words" and marks["relationship_richness"] == "degree"
    assert kg.infer_dimensions().inferred == ()  # idempotent
    kg.set_dimensions("tool:none", {"cache_effectiveness": 0.2})  # a person takes over
    assert "cache_effectiveness" not in kg.node("tool:none").properties[INFERRED_KEY]
    kg.infer_dimensions()
    assert kg.node("tool:none").properties["cache_effectiveness"] == 0.2
    assert next(v for v in kg.dimensions("tool:none").values if v.name == "relationship_richness").inferred == "degree"


def test_infer_only_some_rules(kg):
    r = kg.infer_dimensions(["pricing_tier"], dry_run=True)
    assert r.rules == ("pricing_tier",) and {v.dimension for v in r.inferred} <= {"pricing_tier"}
    with pytest.raises(InvalidArgument):
        kg.infer_dimensions(["team_fit"])  # a custom dimension: no rule knows it
    with pytest.raises(InvalidName):
        kg.infer_dimensions(["bad.name"])


def test_dims_cli(kg, ws):
    home = str(ws.home)
    run = CliRunner().invoke
    listing = json.loads(run(cli, ["--home", home, "dims", "list", "--json"]).stdout)
    assert len(listing) == 56 and listing[0]["name"] == "latency_sensitivity"
    r = run(cli, ["--home", home, "dims", "filter", "dims", "pricing_tier<0.3", "batch_suitability>=0.7", "--json"])
    assert r.exit_code == 0 and [m["node"]["id"] for m in json.loads(r.stdout)["results"]] == ["tool:cheap_batch"]
    assert "1 node(s) match" in run(cli, ["--home", home, "dims", "filter", "dims", "pricing_tier<0.3"]).stdout
    bad = run(cli, ["--home", home, "dims", "filter", "dims", "pricing'tier<0.3"])
    assert bad.exit_code == 1 and "invalid dimension name" in bad.stderr
    assert run(cli, ["--home", home, "dims", "set", "dims", "tool:mid", "pricing_tier=0.3"]).exit_code == 0
    assert run(cli, ["--home", home, "dims", "set", "dims", "tool:mid", "pricing_tier"]).exit_code == 1
    shown = json.loads(run(cli, ["--home", home, "dims", "show", "dims", "tool:mid", "--json"]).stdout)
    assert {"name": "pricing_tier", "value": 0.3, "category": "Performance & Cost", "inferred": None} in shown["values"]
    auto = json.loads(run(cli, ["--home", home, "dims", "auto", "dims", "--dry-run", "--json"]).stdout)
    assert auto["dry_run"] is True and auto["inferred"]
