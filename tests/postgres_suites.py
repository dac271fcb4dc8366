"""Run SQLite suites of the shared workspace tables again on PostgreSQL: ``adopt`` copies a suite's
tests and fixtures into a test module, whose ``database`` (autouse: a fresh database per test, for
its workspaces and the CLI it runs) and ``ws`` fixtures then replace the SQLite ones. Suites whose
fixtures share a name (``mem`` differs between the memory suites) go to separate modules."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from postgres_cluster import running_cluster

import kgos
from kgos.store import postgres_workspace
from kgos.store.postgres_db import close_all


def adopt(namespace: dict[str, Any], *suites: str, skip: tuple[str, ...] = ()) -> None:
    for name in suites:
        module = importlib.import_module(name)
        namespace.update({k: v for k, v in vars(module).items() if k not in skip and (
            k.startswith("test_") or type(v).__name__ == "FixtureFunctionDefinition")})


@pytest.fixture(autouse=True)
def database(monkeypatch):
    monkeypatch.setenv("KGOS_DATABASE_URL", running_cluster().new_database())
    yield
    postgres_workspace.close_all()
    close_all()


@pytest.fixture
def ws(tmp_path, database):
    w = kgos.Workspace(tmp_path / "home")
    assert postgres_workspace.is_postgres(w.shared)
    yield w
    if w.exists("memory"):  # the memory KG went to the database, not a local file
        assert w.info("memory").kind == "postgres"
    w.close()
