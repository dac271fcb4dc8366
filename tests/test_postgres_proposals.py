"""The review queue on a PostgreSQL KG: the review-queue suite of the SQLite store
(tests/test_review_queue.py) run again with its ``kg`` on PostgreSQL (slow: CI's second run; the
fast suite has two servers deciding one proposal at once, in test_postgres.py)."""

from __future__ import annotations

import pytest
from postgres_cluster import running_cluster
from test_review_queue import (  # noqa: F401  (collected here again, with the kg fixture below)
    test_a_pending_duplicate_merges_scores_from_each_source,
    test_accept_promotes_with_provenance_and_undo_removes_only_that_edge,
    test_accepting_after_an_endpoint_was_deleted,
    test_accepting_an_edge_that_exists_creates_nothing_and_undo_keeps_it,
    test_batch_accept_is_all_or_nothing,
    test_node_proposals_round_trip,
    test_proposals_are_checked,
    test_rejection_is_remembered,
    test_reviewing_twice_is_a_conflict_and_changes_nothing,
    test_the_queue_lists_by_expected_value,
    test_two_clients_reviewing_the_same_proposal,
    test_undo_of_a_rejection_and_of_nothing,
)

import kgos
from kgos.store.postgres import PostgresStore

pytestmark = pytest.mark.slow
_URL: list[str] = []


@pytest.fixture
def kg(tmp_path, monkeypatch):
    c = running_cluster()
    if not _URL:
        _URL.append(c.new_database())
    monkeypatch.setenv("KGOS_DATABASE_URL", _URL[0])  # every Workspace of the test, as a second server would
    ws = kgos.Workspace(tmp_path / "home")
    g = ws.create("q")
    for name in ("Bash", "Read", "Edit", "Grep"):
        g.add_node(name, type="tool", id=name.lower())
    g.add_edge("bash", "read", "complements")
    assert isinstance(g.store, PostgresStore)
    yield g
    for db_id in ws.pg.kg_ids():
        ws.pg.drop_kg(db_id)
    ws.close()
