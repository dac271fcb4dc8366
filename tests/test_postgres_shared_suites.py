"""The SQLite suites of the shared workspace tables, run again on a PostgreSQL workspace (slow: CI's
second run): agent memory (store, context, time and aliases) and experts. Each test gets a fresh
database, so the shared tables start empty as a fresh workspace.db does."""

from __future__ import annotations

import importlib

import pytest
from postgres_cluster import running_cluster

import kgos
from kgos.store import postgres_workspace
from kgos.store.postgres_db import close_all

pytestmark = pytest.mark.slow
SUITES = ("test_memory_store", "test_memory_context", "test_memory_time_aliases", "test_experts")

for _name in SUITES:  # every test and fixture of the suite, collected here with the ws fixture below
    _module = importlib.import_module(_name)
    globals().update({k: v for k, v in vars(_module).items()
                      if k.startswith("test_") or hasattr(v, "_fixture_function_marker") or
                      type(v).__name__ == "FixtureFunctionDefinition"})


@pytest.fixture
def ws(tmp_path):
    w = kgos.Workspace(tmp_path / "home", database_url=running_cluster().new_database())
    assert postgres_workspace.is_postgres(w.shared)
    yield w
    if w.exists("memory"):  # the memory KG went to the database, not a local file
        assert w.info("memory").kind == "postgres"
    w.close()
    postgres_workspace.close_all()
    close_all()
