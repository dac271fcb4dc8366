"""The feedback, cross-KG link and A/B test suites, run again on a PostgreSQL workspace holding the
demo (slow: CI's second run). Each test gets a fresh database with the demo: a copy of one loaded
once (``CREATE DATABASE ... TEMPLATE``, a file copy instead of a 8 s import per test)."""

from __future__ import annotations

import pytest
from postgres_cluster import running_cluster
from postgres_suites import adopt

import kgos
from kgos.data import load_demo
from kgos.store import postgres_workspace
from kgos.store.postgres_db import close_all

pytestmark = pytest.mark.slow
# the suites' fixtures over a copied SQLite home are replaced below
adopt(globals(), "test_feedback", "test_links", "test_ab", skip=("ws", "demo_ws", "home"))


EMBEDDER = {"test_ab": "hash"}  # as each suite's own demo home (the others load it without vectors)
_TEMPLATES: dict[str | None, str] = {}


def demo_database(tmp_path_factory, embedder: str | None) -> str:
    """The name of a database holding the demo, loaded once per embedder."""
    if embedder not in _TEMPLATES:
        url = running_cluster().new_database()
        w = kgos.Workspace(tmp_path_factory.mktemp("demo-home"), database_url=url)
        load_demo(w, embedder=embedder)
        w.close()
        postgres_workspace.close_all()  # a template database must have no connections
        close_all()
        _TEMPLATES[embedder] = url.split("?")[0].rsplit("/", 1)[1]
    return _TEMPLATES[embedder]


@pytest.fixture
def ws(tmp_path, tmp_path_factory, monkeypatch, request):
    import uuid

    import psycopg
    cluster = running_cluster()
    template = demo_database(tmp_path_factory, EMBEDDER.get(request.node.function.__module__))
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    monkeypatch.setenv("KGOS_DATABASE_URL", cluster.url(name))  # the CLI the suites run, too
    w = kgos.Workspace(tmp_path / "home")
    assert postgres_workspace.is_postgres(w.shared)
    yield w
    w.close()
    postgres_workspace.close_all()
    close_all()


@pytest.fixture
def demo_ws(ws):
    return ws
