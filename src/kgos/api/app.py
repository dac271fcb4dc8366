"""``create_app``: the FastAPI application behind ``kgos serve``.

>>> import tempfile
>>> from fastapi.testclient import TestClient
>>> client = TestClient(create_app(tempfile.mkdtemp()), base_url="http://127.0.0.1:8765")
>>> client.get("/api/health").json()["kgs"]
0
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi

from .. import __version__
from ..experts.federation import FederationConfig
from ..kg import Workspace
from . import (
    adapter,
    embedding,
    errors,
    evaluation,
    experts,
    federation,
    graph,
    ingest,
    jobs,
    kg,
    kgos,
    links,
    mcp,
    memory,
    openai_v1,
    pages,
    predictions,
    research,
    security,
    studio,
)
from .models import ErrorBody, Health
from .runtime import Runtime, ServerSettings, runtime

DESCRIPTION = """Knowledge graphs in SQLite, queried by intent: KGs, nodes and edges, import and export,
intent-adaptive hybrid search with per-signal explanations, the twelve KG-OS query methods, semantic
dimensions, graph analytics and expert agents.

Every error is JSON: `{"detail": "what was wrong and what to do", "error": "KindOfError"}`, plus
`suggestions` for an unknown node, `candidates` for an ambiguous name, `record` for a bad import and
`errors` (one per field) for a 422."""


def create_app(workspace: Workspace | str | Path | None = None, settings: ServerSettings | None = None,
               provider_factory: Callable[..., Any] | None = None,
               federation_config: FederationConfig | None = None) -> FastAPI:
    """The API over ``workspace`` (a Workspace, its folder, or None for ``$KGOS_HOME``/``~/.kgos``).

    ``settings`` (default: loopback, no token, no CORS) are checked: a non-loopback host without a
    token is refused. ``provider_factory(provider, model)`` overrides how chat providers are made
    (tests use it for a scripted provider).
    """
    settings = (settings or ServerSettings()).checked()
    owned = not isinstance(workspace, Workspace)
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.running(app), embedding.running(app):
            yield
        app.state.runtime.close()
        if owned:
            with app.state.runtime.lock:
                ws.close()

    app = FastAPI(title="KG-OS", version=__version__, description=DESCRIPTION, openapi_url="/openapi.json",
                  docs_url=None, redoc_url=None, lifespan=lifespan)  # /docs: pages.py, offline
    app.state.runtime = Runtime(workspace=ws, settings=settings, provider_factory=provider_factory)
    errors.install(app)
    app.include_router(kg.router)
    app.include_router(kgos.router)
    app.include_router(experts.router)
    app.include_router(graph.router)
    app.include_router(memory.router)
    app.include_router(ingest.router)
    app.include_router(jobs.router)
    app.include_router(embedding.router)
    app.include_router(adapter.router)
    mcp.mount(app, ws, app.state.runtime.provider, allow_writes=mcp.writes_allowed())
    app.include_router(openai_v1.router)
    app.include_router(evaluation.router)
    app.include_router(predictions.router)
    app.include_router(research.router)
    app.include_router(links.router)
    federation.install(app, federation_config)
    app.add_api_route("/api/health", health, methods=["GET"], response_model=Health, tags=["server"],
                      responses=errors.RESPONSES)
    studio.install(app)
    pages.install(app)
    security.install(app, settings)
    app.openapi = lambda: openapi(app, bearer=bool(settings.token))  # type: ignore[method-assign]
    return app


HEALTH_LOCK_WAIT = 0.25  # seconds health waits for the workspace before it answers "busy"


def health(rt: Annotated[Runtime, Depends(runtime)]) -> dict[str, Any]:
    """Liveness: the server's version and how many KGs its workspace holds (``kgs`` None and ``busy``
    true while a long call holds the workspace: liveness never waits on it)."""
    if not rt.lock.acquire(timeout=HEALTH_LOCK_WAIT):
        return {"status": "ok", "version": __version__, "kgs": None, "busy": True}
    try:
        count = len(rt.workspace.db_ids())
    finally:
        rt.lock.release()
    return {"status": "ok", "version": __version__, "kgs": count, "busy": False}


def openapi(app: FastAPI, bearer: bool = False) -> dict[str, Any]:
    """The OpenAPI document, with the error responses the app's handlers really send documented on
    every operation (``ErrorBody``, also for 422 instead of FastAPI's default shape) and, on token
    servers, a bearer security scheme."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        document_errors(schema)
        if bearer:
            schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            schema["security"] = [{"bearer": []}]
        app.openapi_schema = schema
    return app.openapi_schema


def document_errors(schema: dict[str, Any]) -> None:
    """Point every operation's error responses at ``ErrorBody`` (routers that did not declare them)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("ErrorBody", ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}"))
    for name, sub in ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}").get("$defs", {}).items():
        components.setdefault(name, sub)
    components["ErrorBody"].pop("$defs", None)
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for code, entry in errors.RESPONSES.items():
                current = responses.get(str(code))
                if current is None or "HTTPValidationError" in str(current):
                    responses[str(code)] = {"description": entry["description"], **ref}
    if "HTTPValidationError" not in str(schema.get("paths")):
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
