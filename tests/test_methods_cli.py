"""The query-method commands: JSON on stdout, readable tables / trees / path diagrams by default,
clean errors for bad node references and arguments."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from conftest import write_nodelink

import kgos
import kgos.cli.methods  # noqa: F401  (registers the commands)
from kgos.cli import cli
from kgos.data import load_demo

COMMANDS = [("want-to",), ("can-it",), ("compose",), ("similar",), ("alternatives",), ("why-not",), ("impact",),
            ("trace",), ("explore",), ("intent",), ("dims", "list"), ("dims", "show"), ("dims", "filter"),
            ("dims", "set"), ("dims", "auto"), ("analyze", "critical"), ("analyze", "bottlenecks"),
            ("analyze", "communities"), ("analyze", "gaps")]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    ws = kgos.Workspace(folder / "home")
    load_demo(ws, embedder=None)
    nodes = [{"id": i, "name": name, "type": "thing"} for i, name in
             [("a", "Twin"), ("b", "Twin"), ("c", "Alone"), ("d", "Dee")]]
    ws.import_file("small", write_nodelink(folder / "s.json", nodes, [{"source": "a", "target": "b", "type": "relates_to"}]))
    ws.close()
    return str(folder / "home")


@pytest.fixture
def run(home):
    runner = CliRunner()

    def invoke(*args: str, code: int = 0):
        result = runner.invoke(cli, ["--home", home, *args])
        assert result.exit_code == code, (result.output, result.stderr, result.exception)
        return result
    return invoke


def as_json(result) -> dict:
    return json.loads(result.stdout)


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_want_to_and_can_it(run):
    d = as_json(run("want-to", "demo", "I want to reduce my API costs", "-k", "5", "--json"))
    assert d["results"][0]["node"]["id"] == "goal:cost_reduction" and len(d["results"]) == 5
    assert "feature:batch_api" in run("want-to", "demo", "reduce my API costs").stdout
    d = as_json(run("can-it", "demo", "can it edit binary files?", "--json"))
    assert d["status"] == "yes_with_limitations" and d["limitations"][0]["node"]["id"] == "limitation:text_only_io"
    text = run("can-it", "demo", "can it edit binary files?").stdout
    assert "yes_with_limitations" in text and "workaround:base64_roundtrip" in text
    assert re.search(r"limitation .*limitation:text_only_io\s+-> workaround:base64_roundtrip", text)
    assert run("can-it", "demo", "can it edit binary files?", "--plain").stdout.startswith("yes_with_limitations\t")


def test_compose(run):
    d = as_json(run("compose", "demo", "read CSV data, analyze trends and generate a report", "--json"))
    assert [s["node"]["id"] for s in d["steps"]] == ["tool:csv_reader", "tool:trend_analysis", "tool:report_generator"]
    assert d["valid"] is True and {e["status"] for e in d["edges"]} == {"direct"}
    text = run("compose", "demo", "paste data into the prompt and analyze trends").stdout
    assert "conflicts_with" in text and "tool:csv_reader" in text


def test_similar_alternatives_why_not(run):
    d = as_json(run("similar", "demo", "prompt caching", "-k", "3", "--json"))
    assert d["node"]["id"] == "feature:prompt_caching" and len(d["results"]) == 3
    assert set(d["results"][0]) == {"node", "score", "jaccard", "type_match", "name_overlap"}
    assert "feature:batch_api" in run("alternatives", "demo", "feature:streaming").stdout
    d = as_json(run("why-not", "demo", "feature:zero_data_retention", "--json"))
    assert d["status"] == "no" and d["conflicts"][0]["id"] == "feature:files_api"
    text = run("why-not", "demo", "feature:zero_data_retention").stdout
    assert re.search(r"^\s+conflicts with feature:files_api$", text, re.M), text


def test_impact(run):
    d = as_json(run("impact", "demo", "concept:api_key_authentication", "--direction", "backward", "--json"))
    assert d["counts_by_depth"] == {"1": 16, "2": 38, "3": 53} and d["total_impacted"] == 107
    assert d["critical_path"][0]["id"] == "concept:api_key_authentication"
    text = run("impact", "demo", "concept:api_key_authentication", "--direction", "backward").stdout
    assert "critical path:" in text and "107" in text
    capped = as_json(run("impact", "demo", "prompt_caching", "--max-depth", "50", "--json"))
    assert capped["max_depth"] == 10 and "capped" in capped["notes"][0]
    bad = run("impact", "demo", "prompt_caching", "--direction", "sideways", code=2)
    assert "sideways" in bad.output
    assert "max_depth must be" in run("impact", "demo", "prompt_caching", "--max-depth", "0", code=1).stderr


def test_trace(run):
    d = as_json(run("trace", "demo", "prompt_caching", "cost_reduction", "--json"))
    assert (d["found"], d["length"]) == (True, 2)
    assert [p.get("edge") for p in d["path"] if "edge" in p] == ["enables", "contributes_to"]
    text = run("trace", "demo", "prompt_caching", "cost_reduction").stdout
    assert "2 edge(s)" in text and "enables" in text and "Token savings" in text
    d = as_json(run("trace", "small", "a", "c", "--json"))
    assert (d["found"], d["length"], d["path"]) == (False, None, [])
    assert "No path" in run("trace", "small", "a", "c").stdout
    assert run("trace", "demo", "prompt_caching", "cost_reduction", "--plain").stdout.startswith("True\t2\t")


def test_explore_tree(run):
    text = run("explore", "demo", "feature:prompt_caching", "--depth", "2", "--per-level", "3").stdout
    assert "Prompt caching" in text and "d1: 23" in text and "hub" in text and "──" in text
    d = as_json(run("explore", "demo", "feature:prompt_caching", "--json"))
    assert [lv["depth"] for lv in d["levels"]] == [0, 1, 2]


def test_intent(run):
    d = as_json(run("intent", "I want to reduce my API costs", "--json"))
    assert d["intent"]["category"] == "cost_optimization" and d["routes"] == ["want_to"]
    assert "cost_optimization" in run("intent", "I want to reduce my API costs").stdout
    d = as_json(run("intent", "can it process images?", "--kg", "demo", "-k", "3", "--json"))
    assert d["capability"]["node"]["id"] == "feature:vision_input" and len(d["nodes"]) == 3


def test_analyze(run):
    d = as_json(run("analyze", "critical", "demo", "-k", "3", "--json"))
    assert d["method"] == "exact" and d["results"][0]["node"]["id"] == "concept:messages_api"
    assert "Bottlenecks" in run("analyze", "bottlenecks", "demo", "-k", "3").stdout
    assert as_json(run("analyze", "communities", "demo", "-k", "2", "--json"))["count"] > 2
    d = as_json(run("analyze", "gaps", "small", "--json"))
    assert d["orphan_count"] == 2 and [n["id"] for n in d["orphans"]] == ["c", "d"]


def test_node_reference_errors(run):
    ambiguous = run("similar", "small", "Twin", code=1)
    assert "a, b" in ambiguous.stderr and "pass one of these ids" in ambiguous.stderr
    unknown = run("similar", "demo", "prompt_cachin", code=1)
    assert "did you mean" in unknown.stderr and "feature:prompt_caching" in unknown.stderr
    assert run("impact", "demo", "nope", "--json", code=1).stdout == ""  # errors never pollute stdout
