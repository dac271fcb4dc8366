"""Expert tools (experts/tools.py): a model's bad call comes back to it as an error result naming what
was wrong, never as an exception out of the chat loop; good calls run the KG method."""

from __future__ import annotations

import json

import pytest

import kgos
from kgos.data import load_demo
from kgos.experts.tools import run_tool
from kgos.llm.base import ToolCall

KGS = ("demo",)


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory: pytest.TempPathFactory) -> kgos.Workspace:
    ws = kgos.Workspace(tmp_path_factory.mktemp("tools") / "home")
    load_demo(ws, embedder=None)
    yield ws
    ws.close()


def error_of(ws: kgos.Workspace, name: str, args: dict) -> str:
    outcome = run_tool(ws, KGS, ToolCall("c1", name, args))
    assert outcome.error and outcome.nodes == ()
    return json.loads(outcome.content)["error"]


@pytest.mark.parametrize(("name", "args", "message"), [
    ("drop_tables", {}, "unknown tool 'drop_tables'; available: search_kg"),
    ("search_kg", {"kg": "finance", "query": "x"}, "KG 'finance' is not one of this expert's KGs (demo)"),
    ("search_kg", {}, "search_kg: missing argument(s) query (takes kg, query, k)"),
    ("search_kg", {"query": "x", "limit": 3}, "search_kg: unknown argument(s) limit"),
    ("search_kg", {"query": 42}, "search_kg: query must be a string, not 42"),
    ("search_kg", {"query": "x", "k": "five"}, "search_kg: k must be an integer from 1 to 50, not 'five'"),
    ("search_kg", {"query": "x", "k": 500}, "k must be an integer from 1 to 50, not 500"),
    ("search_kg", {"query": "x", "k": 2.5}, "k must be an integer from 1 to 50, not 2.5"),
    ("impact_analysis", {"node": "feature:batch_api", "direction": "up"},
     "direction must be one of forward, backward, both, not 'up'"),
    ("similar_to", {"node": "no such node"}, "no such node"),
])
def test_bad_calls_come_back_as_error_results(demo_ws, name, args, message):
    assert message in error_of(demo_ws, name, args)


def test_integer_strings_from_small_models_are_accepted(demo_ws):
    outcome = run_tool(demo_ws, KGS, ToolCall("c1", "search_kg", {"query": "batch requests", "k": "3"}))
    assert not outcome.error and len(json.loads(outcome.content)["results"]) == 3
    assert any(n.id == "feature:batch_api" for n in outcome.nodes)
