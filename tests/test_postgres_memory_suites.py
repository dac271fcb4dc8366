"""The SQLite suites of memory snapshots, LLM enrichment and the memory CLI, run again on a PostgreSQL
workspace (slow: CI's second run); each test gets a fresh database. (Apart from
test_postgres_shared_suites: the snapshot suite's ``mem`` fixture differs from the store suite's.)"""

from __future__ import annotations

import pytest
from postgres_suites import adopt, database, ws  # noqa: F401 - the fixtures that replace SQLite's

pytestmark = pytest.mark.slow
adopt(globals(), "test_memory_snapshot", "test_memory_enrich", "test_memory_cli", skip=("ws",))
