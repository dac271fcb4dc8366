"""Property-based fuzzing of the API from its own OpenAPI document (schemathesis over ASGI).

For every operation, schemathesis generates valid and invalid requests (path, query and body) and
checks that no response is a server error and that every response matches the documented status
codes, content types and schemas (the routes declare response models, and every error response is
the documented ``ErrorBody``). Two runs over a workspace holding the demo KGs:

- ``free``: every parameter generated, so most requests name KGs and nodes that do not exist or
  are not valid names (the validation and 404 paths);
- ``pinned``: ``db_id`` is ``demo`` and ``node_id`` a real node, so the bodies reach the query
  methods, search, import and export. Destructive operations (deleting the KG or the node,
  replacing the KG by an upload) are undone after each request, so later operations still find them.

Bounded for 2 cores: a few examples per operation, no shrinking or deadline, schemathesis' examples,
coverage and fuzzing phases only (hypothesis' explicit and generate phases); both runs together
take well under two minutes.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

import kgos
from kgos.api.app import create_app
from kgos.data import demo_file, load_demo

MAX_EXAMPLES = 20
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance]
NODE = "feature:prompt_caching"
# /api/experts and /api/playbooks belong to the experts module (kgos.api.experts), whose own tests
# fuzz them; every other route of the app, including uploads and downloads, is fuzzed here.
NOT_OURS = r"^/api/(experts|playbooks)"
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck), derandomize=True, database=None)


@pytest.fixture
def fuzz_ws(tmp_path):
    ws = kgos.Workspace(tmp_path / "home")
    load_demo(ws, embedder=None)
    yield ws
    ws.close()


def make_schema(ws: kgos.Workspace, **parameters: str):
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(ws))
    schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
    schema.config.generation.update(max_examples=MAX_EXAMPLES, modes=["positive", "negative"])
    if parameters:
        schema.config.update(parameters=parameters)
    return schema


@pytest.fixture
def free_schema(fuzz_ws):
    return make_schema(fuzz_ws)


@pytest.fixture
def pinned_schema(fuzz_ws):
    return make_schema(fuzz_ws, db_id="demo", node_id=NODE)


def restore_demo(ws: kgos.Workspace) -> None:
    """Re-import ``demo`` when a request deleted it, replaced it or removed the pinned node."""
    if not ws.exists("demo") or ws.kg("demo").get_node(NODE) is None:
        ws.import_file("demo", demo_file("cookbook.json"), mode="replace")


free = schemathesis.pytest.from_fixture("free_schema").exclude(path_regex=NOT_OURS)
pinned = schemathesis.pytest.from_fixture("pinned_schema").exclude(path_regex=NOT_OURS)


@free.parametrize()
@SETTINGS
def test_free_requests_never_fail(case, fuzz_ws):
    case.call_and_validate(checks=CHECKS)
    restore_demo(fuzz_ws)


@pinned.parametrize()
@SETTINGS
def test_requests_on_a_real_kg_never_fail(case, fuzz_ws):
    case.call_and_validate(checks=CHECKS)
    restore_demo(fuzz_ws)
