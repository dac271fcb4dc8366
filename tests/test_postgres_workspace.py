"""Everything shared lives in PostgreSQL (issue 31, goal 2): two workspaces (two homes, as two
servers have) on one database see the same experts, conversations, feedback, A/B tests, cross-KG
links, agent memory (its KG in PostgreSQL too) and research runs. Two writers on one conversation
lose no turn; a connection killed mid-write is a 503 ``DatabaseUnavailable`` and writes nothing.
Real PostgreSQL: the throwaway cluster of ``postgres_cluster``."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from postgres_cluster import running_cluster
from research_helpers import corpus  # noqa: F401 - the fixture

import kgos
from kgos.errors import DatabaseUnavailable, ExpertExists
from kgos.experts import ExpertService
from kgos.experts.ab import ABService
from kgos.experts.feedback import FeedbackService
from kgos.kg.links import CrossLinks
from kgos.memory import MemoryConfig, MemoryService
from kgos.store import postgres_workspace
from kgos.store.postgres_db import close_all

EXPERT = {"name": "Notes helper", "kg_db_id": "notes", "description": "answers from the notes"}


@pytest.fixture(scope="module")
def pg():
    return running_cluster()


@pytest.fixture
def url(pg):
    yield pg.new_database()
    postgres_workspace.close_all()
    close_all()


@pytest.fixture
def two(url, tmp_path):
    """Workspaces A and B: two homes (two servers' local folders) on one database."""
    a = kgos.Workspace(tmp_path / "a", database_url=url)
    b = kgos.Workspace(tmp_path / "b", database_url=url)
    a.create("notes").add_node("Prompt caching", type="feature")
    yield a, b
    a.close()
    b.close()


def _turn(ws: kgos.Workspace, conversation: str, n: int) -> str:
    store = ExpertService(ws).store
    turn_id = f"turn_{n:016x}"
    store.add_messages(conversation, [("user", f"question {n}", {}),
                                      ("assistant", f"answer {n}", {"kg_db_id": "notes"})], turn_id=turn_id)
    return turn_id


def test_experts_conversations_and_feedback_are_shared(two):
    a, b = two
    ExpertService(a).create(EXPERT, id="helper")
    assert [e.id for e in ExpertService(b).list()] == ["helper"]
    assert ExpertService(b).get("helper").config.name == "Notes helper"
    with pytest.raises(ExpertExists):  # the id is taken in the shared table, whichever server asks
        ExpertService(b).create(EXPERT, id="helper")
    cid, created = ExpertService(a).store.open_conversation("helper", "conv-1")
    assert created
    turn = _turn(a, cid, 1)
    seen = ExpertService(b).conversation("helper", cid)  # a turn written by A, read by B
    assert [(m.role, m.content, m.turn_id) for m in seen.messages] == [
        ("user", "question 1", turn), ("assistant", "answer 1", turn)]
    assert ExpertService(b).store.open_conversation("helper", "conv-1") == (cid, False)
    FeedbackService(b).give(turn, "down", comment="too short")
    assert [(f.turn_id, f.rating, f.comment) for f in FeedbackService(a).list()] == [(turn, "down", "too short")]
    assert FeedbackService(a).summary("helper").down == 1
    from kgos.experts.turnlog import turns  # the turn log that gaps and drift read
    assert [(t.turn_id, t.rating) for t in turns(b, "notes")] == [(turn, -1)]
    assert a.db.execute("SELECT count(*) FROM experts").fetchone()[0] == 0  # not in the local workspace.db


def test_ab_tests_and_cross_kg_links_are_shared(two):
    a, b = two
    b.create("docs").add_node("Caching guide", type="doc")
    ExpertService(a).create(EXPERT, id="helper")
    test = ABService(a).create("helper", [{"name": "a", "overrides": {}},
                                          {"name": "b", "overrides": {"description": "variant b"}}], test_id="ab-1")
    assert ABService(b).active("helper").id == test.id
    assert ABService(b).report("ab-1").test.id == "ab-1"
    CrossLinks(a).add("notes:feature:prompt_caching", "docs:doc:caching_guide", "documented_by", 0.5, {"x": {"y": 1}})
    CrossLinks(b).add("notes:feature:prompt_caching", "docs:doc:caching_guide", "documented_by", 0.9, {"x": {"z": 2}})
    [edge] = CrossLinks(a).list()
    assert edge.weight == 0.9 and edge.properties == {"x": {"y": 1, "z": 2}}  # max weight, merge patch, as in SQLite


def test_memory_and_its_kg_are_shared(two):
    a, b = two
    mem_a, mem_b = MemoryService(a, config=MemoryConfig()), MemoryService(b, config=MemoryConfig())
    item = mem_a.add("I deploy the billing service with Docker on Fridays", tags=["ops"], expert_id="helper")
    assert [h.memory.id for h in mem_b.recall("docker deploy")] == [item.id]
    assert [h.memory.id for h in mem_b.recall("docker", tags=["ops"], filter_metadata={"expert_id": "helper"})] \
        == [item.id]
    assert mem_b.recall("docker", tags=["other"]) == []
    assert a.info("memory").kind == "postgres"  # the memory KG is in the database, not a local file
    assert mem_b.kg().store.node_count() == mem_a.kg().store.node_count() > 1  # the user and Docker at least
    assert mem_b.stats().memories == 1


def test_research_runs_are_listed_and_read_by_the_other_server(two, corpus):  # noqa: F811 - the fixture
    from kgos.research import replay, research, run_manifest, runs
    a, b = two
    a.create("tools").add_node("tar", "command", "tar stores many files in one archive file.", id="tar")
    r = research(a, "What is the difference between tar and zip?", corpus=str(corpus), kgs=["tools"],
                 max_iterations=2)
    assert [x["run_id"] for x in runs(b)] == [r.run_id]
    seen = run_manifest(b, r.run_id)  # B never ran it: manifest, seal and answer come from the database
    assert seen["sealed"] and seen["answer"]["answer"] == r.answer
    assert replay(b, r.run_id).identical  # every stage's snapshot and blob read from the database
    second = research(b, "How does gzip compress?", corpus=str(corpus), kgs=["tools"], max_iterations=1)
    assert second.run_id != r.run_id and [x["run_id"] for x in runs(a)] == [second.run_id, r.run_id]


def test_two_servers_writing_one_conversation_lose_no_turn(two):
    a, b = two
    ExpertService(a).create(EXPERT, id="helper")
    cid, _ = ExpertService(a).store.open_conversation("helper", "busy")
    errors = []

    def write(ws, first):
        try:
            for n in range(first, first + 25):
                _turn(ws, cid, n)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=write, args=(w, i * 100)) for i, w in enumerate((a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    conv = ExpertService(b).conversation("helper", cid)
    assert conv.message_count == len(conv.messages) == 100  # 2 servers x 25 turns x 2 messages


def test_a_connection_killed_mid_write_is_a_503_and_writes_nothing(two, url):
    a, _ = two
    import psycopg
    ExpertService(a).create(EXPERT, id="helper")
    cid, _ = ExpertService(a).store.open_conversation("helper", "c")
    with psycopg.connect(url, autocommit=True) as blocker, blocker.transaction():
        # hold the conversation's row: A's write inserts its messages, then waits at the row lock
        blocker.execute("SELECT 1 FROM kgos_ws.conversations WHERE id = %s FOR UPDATE", (cid,))
        caught = []
        writer = threading.Thread(target=lambda: _catch(caught, lambda: _turn(a, cid, 7)))
        writer.start()
        pid = _waiting_backend(blocker)
        blocker.execute("SELECT pg_terminate_backend(%s)", (pid,))
        writer.join(30)
    assert len(caught) == 1 and isinstance(caught[0], DatabaseUnavailable)
    assert caught[0].status == 503
    conv = ExpertService(a).conversation("helper", cid)  # served again, nothing of the killed turn kept
    assert conv.message_count == 0 and conv.messages == ()
    _turn(a, cid, 8)
    assert ExpertService(a).conversation("helper", cid).message_count == 2


def test_bad_values_are_clear_errors_and_sqlite_semantics_hold(two):
    a, _ = two
    from kgos.errors import InvalidArgument
    ExpertService(a).create(EXPERT, id="helper")
    cid, _ = ExpertService(a).store.open_conversation("helper", "c")
    with pytest.raises(InvalidArgument):  # PostgreSQL text cannot hold NUL: a 400, and nothing written
        ExpertService(a).store.add_messages(cid, [("user", "ok", {}), ("assistant", "bad\x00", {})])
    assert ExpertService(a).conversation("helper", cid).message_count == 0
    with pytest.raises(sqlite3.IntegrityError):  # the callers' "already exists" handling holds on both
        a.shared.execute("INSERT INTO experts VALUES ('helper', 'x', '{}', 1, 'now', 'now')")


def test_migrations_are_named_and_a_newer_workspace_schema_is_refused(url):
    from kgos.errors import SchemaTooNew
    from kgos.store.postgres_db import database
    shared = postgres_workspace.shared(url)
    names = [r[0] for r in shared.execute("SELECT name FROM kgos_ws.migrations ORDER BY name")]
    assert names == [name for name, _ in postgres_workspace.MIGRATIONS]
    shared.execute("INSERT INTO kgos_ws.migrations VALUES ('ws_999_future', 'now')")
    postgres_workspace.close_all()
    with pytest.raises(SchemaTooNew, match="ws_999_future"):
        postgres_workspace.PgWorkspaceDB(database(url))


def _catch(out: list, fn) -> None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        out.append(exc)


def _waiting_backend(conn, timeout: float = 10.0) -> int:
    """The pid of the session waiting on a row lock (A's write)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                           "AND pid <> pg_backend_pid()").fetchone()
        if row:
            return int(row[0])
        time.sleep(0.05)
    raise AssertionError("the write never waited on the row lock")


def test_http_a_chat_on_server_a_is_a_conversation_on_server_b(two):
    """The whole chat path (retrieval, offline answer, persistence) through A's HTTP API; B serves the
    expert, the conversation and the feedback on it."""
    from fastapi.testclient import TestClient

    from kgos.api.app import create_app
    from kgos.api.runtime import ServerSettings
    from kgos.llm import get_provider
    a, b = two

    def server(ws):
        return TestClient(create_app(ws, ServerSettings(), provider_factory=lambda p, m: get_provider("offline")),
                          base_url="http://127.0.0.1:8765")
    api_a, api_b = server(a), server(b)
    assert api_a.post("/api/experts", json={**EXPERT, "id": "helper"}).status_code == 201
    assert [e["id"] for e in api_b.get("/api/experts").json()] == ["helper"]
    r = api_a.post("/api/experts/helper/chat", json={"query": "What is prompt caching?", "stream": False})
    assert r.status_code == 200, r.text
    turn_id = r.json()["turn_id"]
    [conv] = api_b.get("/api/experts/helper/conversations").json()["conversations"]
    messages = api_b.get(f"/api/experts/helper/conversations/{conv['id']}").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[1]["turn_id"] == turn_id
    assert api_b.post("/api/feedback", json={"turn_id": turn_id, "rating": "up"}).status_code == 201
    assert api_a.get(f"/api/feedback/{turn_id}").json()["rating"] == "up"


def test_a_sqlite_workspace_shares_its_tables_once(url, tmp_path):
    """A home used with SQLite, then given the database URL: `kgos kg share-workspace` copies its
    experts, turns, votes, links, memory items and research runs; another home sees them; a second
    run copies nothing."""
    import json as _json

    from click.testing import CliRunner

    from kgos.cli import cli
    from kgos.research.manifest import FORMAT, RunStore
    local = kgos.Workspace(tmp_path / "a")
    local.create("notes").add_node("Prompt caching", type="feature")
    local.create("docs").add_node("Caching guide", type="doc")
    ExpertService(local).create(EXPERT, id="helper")
    cid, _ = ExpertService(local).store.open_conversation("helper", "c1")
    turns = [_turn(local, cid, n) for n in range(3)]
    FeedbackService(local).give(turns[1], "up")
    CrossLinks(local).add("notes:feature:prompt_caching", "docs:doc:caching_guide", "documented_by")
    MemoryService(local, config=MemoryConfig()).add("I deploy with Docker", enrich=False)
    store = RunStore(local.home)
    run_id = store.new_run_id()
    store.save_manifest({"format": FORMAT, "run_id": run_id, "query": {"original": "why?"}, "iterations": []})
    local.close()
    args = ["--home", str(tmp_path / "a"), "--database-url", url, "kg", "share-workspace", "--json"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    copied = _json.loads(first.stdout)
    assert {k: copied[k] for k in ("experts", "conversations", "messages", "feedback", "cross_edges", "memories")} \
        == {"experts": 1, "conversations": 1, "messages": 6, "feedback": 1, "cross_edges": 1, "memories": 1}
    assert copied["research_files"] == 1
    b = kgos.Workspace(tmp_path / "b", database_url=url)
    conv = ExpertService(b).conversation("helper", cid)
    assert [m.turn_id for m in conv.messages] == [t for t in turns for _ in range(2)]  # in order
    assert FeedbackService(b).get(turns[1]).rating == "up"
    assert len(CrossLinks(b).list()) == 1
    assert [h.memory.content for h in MemoryService(b, config=MemoryConfig()).recall("docker")] == ["I deploy with Docker"]
    from kgos.research import runs
    assert [r["run_id"] for r in runs(b)] == [run_id]
    again = _json.loads(CliRunner().invoke(cli, args).stdout)
    assert sum(again.values()) == 0  # nothing copied twice
    assert ExpertService(b).conversation("helper", cid).message_count == 6
    b.close()


def test_the_demo_loads_on_a_second_server(two):
    """The demo's fingerprint is a setting of KGs in the database: shared, so `kgos demo` on B after A
    finds the demo unchanged instead of refusing to replace it."""
    from kgos.data import load_demo
    a, b = two
    load_demo(a, embedder=None)
    load_demo(b, embedder=None)
    assert sorted(e.id for e in ExpertService(a).list()) == ["demo", "finance"]
    a.kg("demo").add_node("Quokka cache", type="feature")
    from kgos.errors import DemoChanged
    with pytest.raises(DemoChanged):  # a change through A is seen by B
        load_demo(b, embedder=None)

