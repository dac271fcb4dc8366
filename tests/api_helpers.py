"""Shared pieces of the HTTP API tests: small workspaces on real SQLite, and clients over them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from conftest import write_nodelink
from fastapi.testclient import TestClient

import kgos
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings

# Ids with ':' and '/' (routes use {node_id:path}); "src/app.py" has a neighbour, "lonely" none.
TINY_NODES = [
    {"id": "feature:prompt_caching", "name": "Prompt caching", "type": "feature",
     "description": "Reuse a cached prompt prefix to cut cost and latency.",
     "properties": {"pricing_tier": 0.2, "cache_effectiveness": 0.9}},
    {"id": "benefit:token_savings", "name": "Token savings", "type": "benefit"},
    {"id": "goal:cost_reduction", "name": "Cost reduction", "type": "goal", "description": "Spend less on API calls."},
    {"id": "src/app.py", "name": "App module", "type": "file", "description": "The web app's entry point."},
    {"id": "src/db.py", "name": "Database module", "type": "file"},
    {"id": "lonely", "name": "Lonely node", "type": "thing"},
]
TINY_EDGES = [
    {"source": "feature:prompt_caching", "target": "benefit:token_savings", "type": "enables"},
    {"source": "benefit:token_savings", "target": "goal:cost_reduction", "type": "contributes_to", "weight": 0.8},
    {"source": "src/app.py", "target": "src/db.py", "type": "requires"},
]

MEMORY_DDL = """
CREATE TABLE entities (id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL,
  normalized_name TEXT NOT NULL, metadata TEXT, created_ts TEXT NOT NULL, updated_ts TEXT NOT NULL,
  UNIQUE(normalized_name, type));
CREATE TABLE edges (id TEXT PRIMARY KEY, subject_id TEXT NOT NULL, predicate TEXT NOT NULL,
  object_id TEXT NOT NULL, weight REAL NOT NULL, evidence TEXT, created_ts TEXT NOT NULL,
  UNIQUE(subject_id, predicate, object_id));
INSERT INTO entities VALUES ('a', 'tool', 'Alpha', 'alpha', '{}', 't', 't'), ('b', 'tool', 'Beta', 'beta', '{}', 't', 't');
INSERT INTO edges VALUES ('e1', 'a', 'uses', 'b', 1.0, NULL, 't');
"""


def add_tiny(ws: kgos.Workspace, folder: Path, db_id: str = "tiny") -> None:
    """Import the tiny KG as ``db_id``."""
    ws.import_file(db_id, write_nodelink(folder / f"{db_id}.json", TINY_NODES, TINY_EDGES, name="Tiny"))


def attach_readonly(ws: kgos.Workspace, folder: Path, db_id: str = "mem") -> None:
    """Attach a small foreign (memory-layout) SQLite KG read-only as ``db_id``."""
    path = folder / f"{db_id}.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(MEMORY_DDL)
    conn.commit()
    conn.close()
    ws.attach(db_id, path)


BASE_URL = "http://127.0.0.1:8765"
"""Where test clients send requests: a Host the loopback server answers (TestClient's default,
``testserver``, is refused by the Host check)."""


SCRIPT = {"X-KGOS-Client": "test"}
"""The header a script sends with a multipart upload (a POST without a JSON body) to a server
without a token: it shows the request is no cross-site form (``kgos.api.origin``)."""


def client(ws: kgos.Workspace | Path | str, token: str | None = None, headers: dict[str, str] | None = None,
           **settings: Any) -> TestClient:
    """A TestClient over ``create_app`` (server errors are raised in the test, not turned into 500s),
    sending ``headers`` with every request."""
    return TestClient(create_app(ws, ServerSettings(token=token, **settings)), base_url=BASE_URL, headers=headers)


def error(response: Any, status: int, kind: str | None = None) -> dict[str, Any]:
    """Assert an error response in the API's shape, and return its body."""
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"] and isinstance(body["error"], str), body
    assert "Traceback" not in response.text
    if kind is not None:
        assert body["error"] == kind, body
    return body
