"""The SQLite suites of agent memory (store, context, time and aliases) and experts, run again on a
PostgreSQL workspace (slow: CI's second run); each test gets a fresh database."""

from __future__ import annotations

import pytest
from postgres_suites import adopt, database, ws  # noqa: F401 - the fixtures that replace SQLite's

pytestmark = pytest.mark.slow
adopt(globals(), "test_memory_store", "test_memory_context", "test_memory_time_aliases", "test_experts",
      skip=("ws",))
