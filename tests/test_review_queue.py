"""The review queue of proposals (kg.proposals): promotion with provenance, rejection memory, undo
round trips, batch review, stale and concurrent reviews, read-only KGs, and the migration of a KG
file written before the queue existed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from api_helpers import attach_readonly

import kgos
from kgos.errors import NodeNotFound, ProposalConflict, ProposalNotFound, ProposalStale, ReadOnlyKG
from kgos.store.migrations import M001_NATIVE_SCHEMA, M002_COMPACT_VECTORS, apply
from kgos.store.native import NativeStore, connect


@pytest.fixture
def kg(ws: kgos.Workspace) -> kgos.KG:
    g = ws.create("q")
    for name in ("Bash", "Read", "Edit", "Grep"):
        g.add_node(name, type="tool", id=name.lower())
    g.add_edge("bash", "read", "complements")
    return g


def _edge(kg: kgos.KG, s: str, t: str, type: str = "complements") -> kgos.Edge | None:
    return kg.store.get_edge(s, t, type)


def test_accept_promotes_with_provenance_and_undo_removes_only_that_edge(kg: kgos.KG) -> None:
    version = kg.store.version()
    pid = kg.proposals.propose_edge("bash", "edit", "complements", origin="ensemble", score=0.7,
                                    scores={"complex": 0.9}, evidence={"paths": [["bash", "read", "edit"]]}).added[0]
    assert kg.store.version() == version  # staging a proposal does not change the graph
    p = kg.proposals.accept(pid, reviewer="ana")
    assert (p.status, p.reviewer, p.promoted) == ("accepted", "ana", True)
    edge = _edge(kg, "bash", "edit")
    assert edge is not None and edge.properties == {"source": "ensemble", "confidence": 0.7, "prediction_id": pid}
    assert kg.store.version() != version
    before = kg.edge_count()
    undone = kg.proposals.undo(pid)
    assert undone.status == "pending" and not undone.promoted
    assert _edge(kg, "bash", "edit") is None and _edge(kg, "bash", "read") is not None
    assert kg.edge_count() == before - 1


def test_accepting_an_edge_that_exists_creates_nothing_and_undo_keeps_it(kg: kgos.KG) -> None:
    pid = kg.proposals.propose_edge("bash", "read", "complements", origin="research").added[0]
    p = kg.proposals.accept(pid)
    assert p.status == "accepted" and not p.promoted
    kg.proposals.undo(pid)
    assert _edge(kg, "bash", "read") is not None  # it was there before the proposal


def test_rejection_is_remembered(kg: kgos.KG) -> None:
    pid = kg.proposals.propose_edge("grep", "read", "complements", origin="structural", score=0.4).added[0]
    kg.proposals.reject(pid, note="unrelated")
    again = kg.proposals.propose_edge("grep", "read", "complements", origin="complex", score=0.99)
    assert again.added == () and again.skipped_rejected == 1
    assert kg.proposals.rejected_edges() == {("grep", "read", "complements")}
    assert _edge(kg, "grep", "read") is None
    assert kg.proposals.counts() == {"pending": 0, "accepted": 0, "rejected": 1}


def test_a_pending_duplicate_merges_scores_from_each_source(kg: kgos.KG) -> None:
    first = kg.proposals.propose_edge("grep", "edit", "complements", origin="structural", score=0.3,
                                      scores={"adamic_adar": 0.3}).added[0]
    report = kg.proposals.propose_edge("grep", "edit", "complements", origin="text", score=0.6,
                                       scores={"text": 0.6}, evidence={"similar": ["x"]})
    assert report.merged == (first,)
    p = kg.proposals.get(first)
    assert p.score == 0.6 and p.scores == {"adamic_adar": 0.3, "text": 0.6} and p.evidence == {"similar": ["x"]}


def test_reviewing_twice_is_a_conflict_and_changes_nothing(kg: kgos.KG) -> None:
    pid = kg.proposals.propose_edge("grep", "edit", "complements").added[0]
    kg.proposals.accept(pid)
    edges = kg.edge_count()
    with pytest.raises(ProposalConflict, match="already accepted"):
        kg.proposals.accept(pid)
    with pytest.raises(ProposalConflict):
        kg.proposals.reject(pid)
    assert kg.edge_count() == edges and kg.proposals.get(pid).status == "accepted"
    with pytest.raises(ProposalNotFound):
        kg.proposals.accept(999)


def test_two_clients_reviewing_the_same_proposal(tmp_path: Path, kg: kgos.KG) -> None:
    pid = kg.proposals.propose_edge("grep", "edit", "complements").added[0]
    other = kgos.Workspace(kg.workspace.home).kg("q")  # a second process's view of the same file
    other.proposals.reject(pid, reviewer="bo")
    with pytest.raises(ProposalConflict, match="bo"):
        kg.proposals.accept(pid, reviewer="ana")
    assert _edge(kg, "grep", "edit") is None


def test_accepting_after_an_endpoint_was_deleted(kg: kgos.KG) -> None:
    pid = kg.proposals.propose_edge("grep", "edit", "complements").added[0]
    kg.delete_node("edit")
    version = kg.store.version()
    with pytest.raises(ProposalStale, match="'edit'"):
        kg.proposals.accept(pid)
    assert kg.proposals.get(pid).status == "pending" and kg.store.version() == version


def test_batch_accept_is_all_or_nothing(kg: kgos.KG) -> None:
    ok = kg.proposals.propose_edge("grep", "edit", "complements", origin="text", score=0.9).added[0]
    stale = kg.proposals.propose_edge("grep", "bash", "complements", origin="text", score=0.8).added[0]
    low = kg.proposals.propose_edge("read", "edit", "complements", origin="text", score=0.1).added[0]
    kg.delete_node("bash")
    edges = kg.edge_count()
    with pytest.raises(ProposalStale):
        kg.proposals.review_where("accept", origin="text", min_confidence=0.5)
    assert kg.edge_count() == edges and kg.proposals.get(ok).status == "pending"
    kg.proposals.reject(stale)
    done = kg.proposals.review_where("accept", origin="text", min_confidence=0.5)
    assert [p.id for p in done] == [ok] and kg.proposals.get(low).status == "pending"
    assert [p.id for p in kg.proposals.review_where("reject", type="complements")] == [low]


def test_proposals_are_checked(kg: kgos.KG) -> None:
    with pytest.raises(NodeNotFound):
        kg.proposals.propose_edge("bash", "nope", "complements")
    with pytest.raises(kgos.InvalidArgument):
        kg.proposals.propose_edge("bash", "bash", "complements")
    with pytest.raises(kgos.InvalidArgument):
        kg.proposals.propose_edge("bash", "edit", "complements", score=float("nan"))
    with pytest.raises(kgos.InvalidArgument):
        kg.proposals.list(status="maybe")


def test_node_proposals_round_trip(kg: kgos.KG) -> None:
    pid = kg.proposals.propose_node("tool:sed", "Sed", type="tool", origin="research", score=0.5,
                                    description="Stream editor.").added[0]
    kg.proposals.accept(pid)
    node = kg.node("tool:sed")
    assert node.description == "Stream editor." and node.properties["prediction_id"] == pid
    kg.add_edge("tool:sed", "edit", "complements")
    with pytest.raises(ProposalConflict, match="edge"):
        kg.proposals.undo(pid)  # the node has an edge the acceptance did not create
    kg.delete_edge("tool:sed", "edit", "complements")
    kg.proposals.undo(pid)
    assert kg.get_node("tool:sed") is None


def test_undo_of_a_rejection_and_of_nothing(kg: kgos.KG) -> None:
    pid = kg.proposals.propose_edge("grep", "edit", "complements").added[0]
    with pytest.raises(ProposalConflict, match="pending"):
        kg.proposals.undo(pid)
    kg.proposals.reject(pid)
    assert kg.proposals.undo(pid).status == "pending"
    assert kg.proposals.propose_edge("grep", "edit", "complements").merged == (pid,)


def test_read_only_kg_keeps_a_queue_but_cannot_promote(ws: kgos.Workspace, tmp_path: Path) -> None:
    attach_readonly(ws, tmp_path)
    kg = ws.kg("mem")
    pid = kg.proposals.propose_edge("b", "a", "uses", origin="structural", score=0.5).added[0]
    with pytest.raises(ReadOnlyKG, match="writable"):
        kg.proposals.accept(pid)
    assert kg.proposals.get(pid).status == "pending"
    kg.proposals.reject(pid)
    assert kgos.Workspace(ws.home).kg("mem").proposals.rejected_edges() == {("b", "a", "uses")}


def test_migration_of_a_file_written_before_the_queue(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = connect(path)
    apply(conn, [("001_native_schema", M001_NATIVE_SCHEMA), ("002_compact_vectors", M002_COMPACT_VECTORS)])
    conn.execute("INSERT INTO nodes (id, name, norm_name, created_at, updated_at) VALUES ('a','A','a','t','t'), "
                 "('b','B','b','t','t')")
    conn.close()
    store = NativeStore(path, "old")
    names = [r[0] for r in store.conn.execute("SELECT name FROM kg_migrations ORDER BY name")]
    assert "003_kg_predictions" in names and store.node_count() == 2
    store.close()
    ws = kgos.Workspace(tmp_path / "home")
    (ws.kgs_dir / "old.db").write_bytes(path.read_bytes())
    pid = ws.kg("old").proposals.propose_edge("a", "b", "rel").added[0]
    assert ws.kg("old").proposals.accept(pid).promoted
    assert sqlite3.connect(ws.kgs_dir / "old.db").execute("SELECT count(*) FROM kg_predictions").fetchone() == (1,)


def test_docstring_example() -> None:
    import doctest

    import kgos.store.proposals
    result = doctest.testmod(kgos.store.proposals)
    assert result.attempted > 0 and result.failed == 0


def test_the_queue_lists_by_expected_value(kg: kgos.KG) -> None:
    """Default order: confidence x the source's ``priority`` score (1 when it gives none)."""
    dull = kg.proposals.propose_edge("bash", "edit", "uses", origin="x", score=0.8, scores={"priority": 0.25}).added[0]
    plain = kg.proposals.propose_edge("bash", "grep", "uses", origin="y", score=0.5).added[0]
    valuable = kg.proposals.propose_edge("read", "edit", "uses", origin="x", score=0.6, scores={"priority": 0.9}).added[0]
    _, page = kg.proposals.list()
    assert [p.id for p in page] == [valuable, plain, dull]  # 0.54, 0.5, 0.2
