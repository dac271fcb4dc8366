"""The method catalogue (kgos.kg.catalogue) and its four surfaces: every method and every parameter on
the CLI, HTTP (and its OpenAPI), MCP (with outputSchema and structuredContent) and the expert tools;
one direction vocabulary with the old words as aliases; a parameter added to a method's type reaches
every surface with no other edit."""

from __future__ import annotations

import json
from typing import Any

import anyio
import click
import pytest
from api_helpers import client
from mcp import Client
from pydantic import Field

import kgos
from kgos.api.kg import method_route
from kgos.api.mcp import Tools, create_server, method_tool
from kgos.cli import cli, load_all
from kgos.cli.methods import VIEWS, method_command
from kgos.data import load_demo
from kgos.experts.tools import TOOLS, method_spec
from kgos.kg.catalogue import BY_NAME, METHODS, Method, NodeK
from kgos.methods.intent import CATEGORY_ROUTES, RETRIEVAL_ROUTES

FIELDS = {m.name: set(m.params.model_fields) for m in METHODS}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> kgos.Workspace:
    ws = kgos.Workspace(tmp_path_factory.mktemp("catalogue") / "home")
    load_demo(ws, embedder=None)
    yield ws
    ws.close()


@pytest.fixture(scope="module")
def openapi(ws: kgos.Workspace) -> dict[str, Any]:
    return client(ws).get("/openapi.json").json()


@pytest.fixture(scope="module")
def tools(ws: kgos.Workspace) -> dict[str, Any]:
    return mcp_tools(ws)


def mcp_tools(ws: kgos.Workspace, allow_writes: bool = True) -> dict[str, Any]:
    async def main() -> Any:
        async with Client(create_server(ws, allow_writes=allow_writes)) as c:
            return (await c.list_tools()).tools
    return {t.name: t for t in anyio.run(main)}


def mcp_call(ws: kgos.Workspace, name: str, args: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with Client(create_server(ws)) as c:
            return await c.call_tool(name, args)
    return anyio.run(main)


def cli_params(method: Method) -> set[str]:
    load_all()
    group: Any = cli
    for name in method.cli:
        group = group.commands[name]
    assert isinstance(group, click.Command), method.cli
    return {p.name for p in group.params} - {"db_id", "json_", "plain_", "header"}


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
def test_every_surface_has_the_method_and_each_parameter(openapi: dict[str, Any], tools: dict[str, Any],
                                                         method: Method) -> None:
    fields = FIELDS[method.name]
    assert cli_params(method) == fields
    spec = openapi
    op = spec["paths"][f"/api/kg/{{db_id}}/{method.path}"]["post"]
    body = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(spec["components"]["schemas"][body]["properties"]) == fields
    assert "$ref" in op["responses"]["200"]["content"]["application/json"]["schema"]
    tool = tools[method.name]
    assert set(tool.input_schema["properties"]) == {"kg"} | fields
    assert tool.output_schema and tool.output_schema["type"] == "object"
    assert tool.annotations.read_only_hint is not method.writes
    assert set(TOOLS[method.name][0].parameters["properties"]) == {"kg"} | fields


def test_every_parameter_is_documented_and_bounded() -> None:
    for method in METHODS:
        assert len(method.summary) > 30, method.name
        for name, info in method.params.model_fields.items():
            assert info.description, f"{method.name}.{name} has no description"
            schema = method.params.model_json_schema()["properties"][name]
            if schema.get("type") == "integer":
                assert "minimum" in schema and "maximum" in schema, f"{method.name}.{name} is unbounded"


def test_parameter_types_are_frozen() -> None:
    params = BY_NAME["want_to"].params(goal="reduce costs")
    with pytest.raises(Exception, match="frozen"):
        params.k = 3  # type: ignore[misc]


def test_mcp_sends_structured_content_equal_to_the_text(ws: kgos.Workspace) -> None:
    result = mcp_call(ws, "alternatives", {"kg": "demo", "node": "feature:streaming", "k": 3})
    assert not result.is_error
    assert result.structured_content == json.loads(result.content[0].text)
    assert result.structured_content["node"]["id"] == "feature:streaming"
    why = mcp_call(ws, "why_not", {"kg": "demo", "node": "feature:zero_data_retention"})
    assert why.structured_content["status"] == "no"


def test_add_edge_is_marked_idempotent_and_add_node_is_not(tools: dict[str, Any]) -> None:
    assert tools["add_edge"].annotations.idempotent_hint is True
    assert tools["add_edge"].annotations.read_only_hint is False
    assert tools["add_node"].annotations.idempotent_hint is False


@pytest.mark.parametrize(("alias", "canonical"), [("outgoing", "forward"), ("incoming", "backward")])
def test_one_direction_vocabulary_with_the_old_words_as_aliases(ws: kgos.Workspace, alias: str, canonical: str) -> None:
    api = client(ws)
    body = {"node": "concept:api_key_authentication", "max_depth": 1}
    by_alias = api.post("/api/kg/demo/impact", json={**body, "direction": alias}).json()
    assert by_alias == api.post("/api/kg/demo/impact", json={**body, "direction": canonical}).json()
    assert by_alias["direction"] == canonical
    hop = api.get("/api/kg/demo/nodes/feature:batch_api/neighbors", params={"direction": canonical}).json()
    assert hop["neighbors"] == api.get("/api/kg/demo/nodes/feature:batch_api/neighbors",
                                       params={"direction": alias}).json()["neighbors"]
    assert {n["direction"] for n in hop["neighbors"]} == {alias}
    mcp = mcp_call(ws, "neighbors", {"kg": "demo", "node": "feature:batch_api", "direction": canonical})
    assert not mcp.is_error and {n["direction"] for n in mcp.structured_content["neighbors"]} == {alias}


def test_routed_intents_come_from_the_routing_table() -> None:
    routed = {**CATEGORY_ROUTES, **RETRIEVAL_ROUTES}
    for intent, routes in routed.items():
        for name in (routes,) if isinstance(routes, str) else routes:
            assert intent in BY_NAME[name].intents


class Widened(NodeK):
    """NodeK with one more parameter, as a contributor would add it."""

    min_score: float = Field(0.0, ge=0.0, le=1.0, description="Drop rows scoring below this")


def test_a_new_parameter_reaches_every_surface_from_one_declaration(ws: kgos.Workspace) -> None:
    base = BY_NAME["similar_to"]
    seen: list[float] = []

    def run(kg: Any, p: Any) -> Any:
        seen.append(p.min_score)
        return kg.similar_to(p.node, k=p.k)
    widened = Method("similar_min", "similar-min", base.summary, Widened, base.result, run, cli=("similar-min",),
                     cli_args=("node",))
    command = method_command(widened, VIEWS["similar_to"])
    assert "min_score" in {p.name for p in command.params}
    assert "min_score" in method_spec(widened).parameters["properties"]
    assert "min_score" in method_route(widened).__signature__.parameters["body"].annotation.model_fields
    tool = method_tool(Tools(ws, lambda: None), widened)  # type: ignore[arg-type,return-value]
    assert tool(kg="demo", node="feature:batch_api", k=2, min_score=0.5)["node"]["id"] == "feature:batch_api"
    assert seen == [0.5]
