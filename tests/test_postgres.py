"""PostgreSQL beyond the store contract: migrations (recorded, concurrent, refused when newer), bad
URLs and passwords, several servers on one database (LISTEN/NOTIFY and the fallback), imports and
merges as one transaction, copies between backends, attach, the CLI, and a 503 when the pool is
exhausted. A throwaway cluster (tests/postgres_cluster.py); skipped with the reason without one."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest
from api_helpers import client, error
from click.testing import CliRunner
from conftest import write_nodelink
from postgres_cluster import PASSWORD, running_cluster

import kgos
from kgos.ingest import ingest_into
from kgos.cli import cli
from kgos.errors import (
    DatabaseUnavailable,
    ImportFailed,
    InvalidArgument,
    MissingDependency,
    ProposalConflict,
    SchemaTooNew,
)
from kgos.store import postgres_schema
from kgos.store.postgres import PostgresStore
from kgos.store.postgres_db import PgDatabase, close_all, psycopg_modules

NODES = [{"id": f"n{i}", "name": f"Node {i}", "type": "thing", "description": f"word{i} quokka"} for i in range(20)]
EDGES = [{"source": f"n{i}", "target": f"n{i + 1}", "type": "next"} for i in range(19)]


@pytest.fixture(scope="module")
def pg():
    return running_cluster()


@pytest.fixture
def url(pg) -> str:
    yield pg.new_database()
    close_all()  # the pools and listeners of this test's database


@pytest.fixture
def ws(url, tmp_path):
    w = kgos.Workspace(tmp_path / "home", database_url=url)
    yield w
    w.close()


def test_migrations_are_recorded_once_and_a_newer_database_is_refused(url):
    db = PgDatabase(url)
    store = PostgresStore.create(db, "k")
    with db.connection() as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM kgos.migrations ORDER BY name")]
        kg_names = [r[0] for r in conn.execute(f"SELECT name FROM {store.s}.kg_migrations ORDER BY name")]
        assert names == ["001_registry", "002_change_feed"]
        assert kg_names == ["001_kg_schema", "002_indexes", "003_kg_predictions", "004_change_feed"]
        conn.execute("INSERT INTO kgos.migrations VALUES ('099_from_the_future', 'x')")
    db.close()
    with pytest.raises(SchemaTooNew, match="099_from_the_future"):
        PgDatabase(url)


def test_a_kg_migrated_by_a_newer_kgos_is_refused(url):
    db = PgDatabase(url)
    store = PostgresStore.create(db, "k")
    with db.connection() as conn:
        conn.execute(f"INSERT INTO {store.s}.kg_migrations VALUES ('009_newer', 'x')")
    with pytest.raises(SchemaTooNew, match="upgrade KG-OS"):
        PostgresStore(db, "k")
    db.close()


def test_two_servers_migrating_at_once_one_applies_the_other_waits(url):
    psycopg, _ = psycopg_modules()
    holder = psycopg.connect(url, autocommit=True)
    with holder.transaction():  # a first server in the middle of its migration
        postgres_schema.lock(holder)
        results: list[object] = []
        t0 = time.monotonic()
        threads = [threading.Thread(target=lambda: results.append(PgDatabase(url))) for _ in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        assert results == []  # both wait for the lock
    for t in threads:
        t.join(10)
    assert len(results) == 2 and time.monotonic() - t0 >= 0.5
    with holder.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM kgos.migrations").fetchone()[0] == len(postgres_schema.DATABASE_MIGRATIONS)
    holder.close()
    for db in results:
        db.close()  # type: ignore[attr-defined]


def test_wrong_password_and_wrong_host_are_clear_errors(pg):
    with pytest.raises(DatabaseUnavailable) as err:
        PgDatabase(pg.tcp_url("not-the-password"))
    assert "password authentication failed" in str(err.value) and "not-the-password" not in str(err.value)
    assert err.value.status == 503
    with pytest.raises(DatabaseUnavailable, match="cannot connect"):
        PgDatabase("postgresql://kgos@127.0.0.1:1/postgres?connect_timeout=2")
    PgDatabase(pg.tcp_url(PASSWORD)).close()  # the right one works over TCP


def test_without_psycopg_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingDependency, match=r"kgos\[postgres\]"):
        psycopg_modules()


def test_a_write_on_one_server_reaches_search_on_another_within_a_second(url, tmp_path):
    a = kgos.Workspace(tmp_path / "a", database_url=url)
    a.create("shared").add_node("First", "thing", id="first")
    other = PgDatabase(url)  # a second server: its own pool and listener
    b = PostgresStore(other, "shared")
    reader = kgos.kg.KG(kgos.Workspace(tmp_path / "b"), "shared", b)
    assert reader.search("first").results[0].node.id == "first"
    deadline = time.monotonic() + 2
    while not other.listening and time.monotonic() < deadline:
        time.sleep(0.01)
    a.kg("shared").add_node("Quokka keeper", "role", id="keeper")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0:
        hits = reader.search("quokka keeper").results
        if hits and hits[0].node.id == "keeper":
            break
        time.sleep(0.02)
    assert hits and hits[0].node.id == "keeper", "not visible within 1 s"
    other.listening = False  # the fallback: without the listener every call asks the database
    a.kg("shared").add_node("Wombat", "animal", id="wombat")
    assert reader.search("wombat").results[0].node.id == "wombat"
    other.close()
    a.close()


def test_a_failed_merge_or_replace_leaves_the_kg_as_it_was(ws, tmp_path):
    good = write_nodelink(tmp_path / "good.json", NODES, EDGES)
    ws.import_file("k", good)
    before = (ws.kg("k").store.version(), sorted(n.id for n in ws.kg("k").nodes()))
    bad_edges = [*EDGES, {"source": "n1", "target": "missing", "type": "next"}]
    bad = write_nodelink(tmp_path / "bad.json", [*NODES, {"id": "extra", "name": "Extra"}], bad_edges)
    for mode in ("merge", "replace"):
        with pytest.raises(ImportFailed, match="missing"):
            ws.import_file("k", bad, mode=mode)
        assert (ws.kg("k").store.version(), sorted(n.id for n in ws.kg("k").nodes())) == before
    report = ws.import_file("k", bad, mode="merge", skip_dangling=True)
    assert (report.nodes, report.skipped_dangling, ws.kg("k").store.node_count()) == (21, 1, 21)


def test_merge_keeps_the_semantics_of_the_sqlite_merge(ws, tmp_path):
    first = write_nodelink(tmp_path / "a.json", [{"id": "a", "name": "A", "description": "kept",
                                                  "properties": {"evidence": ["x"], "k": 1}}, {"id": "b", "name": "B"}],
                           [{"source": "a", "target": "b", "type": "r", "weight": 0.9}])
    second = write_nodelink(tmp_path / "b.json", [{"id": "a", "name": "A2", "properties": {"evidence": ["y"]}}],
                            [{"source": "a", "target": "b", "type": "r", "weight": 0.2, "properties": {"evidence": "z"}}])
    ws.import_file("k", first, dimensions=False)  # the merge semantics alone
    ws.import_file("k", second, mode="merge", dimensions=False)
    node = ws.kg("k").node("a")
    assert (node.name, node.description, node.properties) == ("A2", "kept", {"evidence": ["x", "y"], "k": 1})
    edge = ws.kg("k").store.get_edge("a", "b", "r")
    assert (edge.weight, edge.properties) == (pytest.approx(0.9), {"evidence": "z"})


def test_bulk_import_collapses_duplicate_edges_and_keeps_writing(ws, tmp_path):
    edges = [*EDGES, {"source": "n0", "target": "n1", "type": "next", "weight": 3.0}]
    report = ws.import_file("k", write_nodelink(tmp_path / "d.json", NODES, edges))
    assert (report.nodes, report.edges, report.duplicate_edges) == (20, 19, 1)
    assert ws.kg("k").store.get_edge("n0", "n1", "next").weight == 3.0
    assert ws.kg("k").add_node("After import", "thing").id == "thing:after_import"  # rowids continue


def test_copy_native_to_postgres_and_back_is_lossless(tmp_path, url):
    local = kgos.Workspace(tmp_path / "local")
    local.import_file("src", write_nodelink(tmp_path / "s.json", NODES, EDGES, name="Source KG"))
    local.kg("src").embed("hash")
    local.copy("src", "remote", backend="postgres", database_url=url)
    assert local.info("remote").kind == "attached" and local.kg("remote").store.read_only is False
    local.copy("remote", "again", backend="native")

    def dump(db_id):
        g = local.kg(db_id)
        return (sorted(json.dumps(n.to_dict(timestamps=True), sort_keys=True) for n in g.nodes()),
                sorted(json.dumps(e.to_dict(timestamps=True), sort_keys=True) for e in g.edges()),
                g.store.meta()["name"], g.embed_status().search_model)
    assert dump("src") == dump("remote") == dump("again")
    hits = local.kg("again").search("word7 quokka", mode="embedding").results
    assert hits[0].node.id == "n7"  # the vectors came along
    local.close()


def test_attach_a_remote_kg_and_refuse_passwords_in_stored_urls(pg, url, tmp_path):
    owner = kgos.Workspace(tmp_path / "owner", database_url=url)
    owner.create("team").add_node("Shared fact", "fact", id="f1")
    local = kgos.Workspace(tmp_path / "local")
    with pytest.raises(InvalidArgument, match="pgpass"):
        local.attach("x", pg.tcp_url(PASSWORD) + "#team")
    g = local.attach("mine", url + "#team")
    assert g.node("f1").name == "Shared fact" and g.read_only
    owner.kg("team").add_node("Second fact", "fact", id="f2")
    assert local.kg("mine").store.node_count() == 2
    assert local.delete("mine") == "detached" and owner.exists("team")
    owner.close()
    local.close()


def test_cli_database_url_copy_and_attach(url, tmp_path):
    home = str(tmp_path / "cli")
    run = CliRunner().invoke
    data = write_nodelink(tmp_path / "c.json", NODES, EDGES)
    assert run(cli, ["--home", home, "kg", "import", "local", str(data)]).exit_code == 0
    r = run(cli, ["--home", home, "--database-url", url, "--json", "kg", "copy", "local", "shared"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["nodes"] == 20
    r = run(cli, ["--home", home, "--json", "kg", "list"], env={"KGOS_DATABASE_URL": url})
    kinds = {i["db_id"]: i["kind"] for i in json.loads(r.output)}
    assert kinds == {"local": "native", "shared": "postgres"}
    r = run(cli, ["--home", str(tmp_path / "other"), "kg", "attach", "s2", url + "#shared"])
    assert r.exit_code == 0 and "20 nodes" in r.output
    r = run(cli, ["--home", home, "--database-url", "postgresql://kgos@127.0.0.1:1/x?connect_timeout=2",
                  "kg", "list"])
    assert r.exit_code != 0 and "cannot connect" in r.output and "Traceback" not in r.output


def test_pool_exhausted_gives_503_with_retry_after(url, tmp_path, monkeypatch):
    monkeypatch.setenv("KGOS_PG_POOL_MAX", "1")
    monkeypatch.setenv("KGOS_PG_POOL_WAIT", "0.3")
    db = PgDatabase(url)
    ws = kgos.Workspace(tmp_path / "busy")
    ws._pg, ws.database_url = db, url
    ws.create("k").add_node("A", "thing", id="a")
    c = client(ws)
    assert c.get("/api/kg/k/nodes/a").status_code == 200
    with db.pool.connection():  # the only connection, held elsewhere
        t0 = time.monotonic()
        r = c.get("/api/kg/k/nodes/a")
        waited = time.monotonic() - t0
    body = error(r, 503, "StoreBusy")
    assert r.headers["Retry-After"] == "1" and "retry" in body["detail"] and 0.25 < waited < 3
    assert c.get("/api/kg/k/nodes/a").status_code == 200  # and served again once a connection is free
    db.close()


def test_kg_names_reaching_sql_are_validated(ws):
    with pytest.raises(kgos.errors.InvalidName):
        ws.create('x"; DROP SCHEMA kgos CASCADE; --')
    with pytest.raises(InvalidArgument):
        ws.pg.ident('kg_x" CASCADE')
    ws.create("kg-with-dash_and_underscore").add_node("ok", "thing")
    assert ws.kg("kg-with-dash_and_underscore").store.node_count() == 1


@pytest.mark.slow
def test_demo_expert_chat_and_memory_in_a_postgres_workspace(ws):
    from kgos.data import load_demo
    from kgos.experts.chat import ExpertChat
    from kgos.llm.offline import OfflineProvider
    from kgos.memory import MemoryService
    load_demo(ws, embedder="hash")
    assert ws.info("demo").kind == "postgres"
    chat = ExpertChat(ws, OfflineProvider())
    turn = chat.start("demo", "How do I reduce my API costs?")
    events = list(chat.events(turn))
    assert events[-1]["type"] == "done" and "[Source: demo:feature:batch_api]" in "".join(
        e["content"] for e in events if e["type"] == "token")
    added = MemoryService(ws).add("I use Postgres for the team's KGs")
    assert added.memory.kg_status == "ok" and ws.info("memory").kind == "postgres"  # shared with the KGs (issue 31)


def test_a_kg_deleted_or_replaced_by_another_server(url, tmp_path):
    a = kgos.Workspace(tmp_path / "a", database_url=url)
    b = kgos.Workspace(tmp_path / "b", database_url=url)
    a.import_file("k", write_nodelink(tmp_path / "k.json", NODES, EDGES))
    assert b.kg("k").search("word3 quokka").results[0].node.id == "n3"
    a.import_file("k", write_nodelink(tmp_path / "k2.json", [{"id": "z", "name": "Zebra crossing"}], []),
                  mode="replace")
    assert b.kg("k").search("zebra crossing").results[0].node.id == "z"  # the new schema, same name
    c = client(b)
    a.delete("k")
    error(c.get("/api/kg/k/nodes/z"), 404, "KGNotFound")
    a.close()
    b.close()


def test_nul_characters_are_a_clear_400_and_change_nothing(ws):
    g = ws.create("k")
    version = g.store.version()
    with pytest.raises(InvalidArgument, match="NUL"):
        g.add_node("a\x00b", "thing")
    with pytest.raises(InvalidArgument, match="NUL"):
        g.add_node("ok", "thing", properties={"k": "a\x00b"})
    assert g.store.node_count() == 0 and g.store.version() == version


def test_two_servers_accept_one_proposal_at_once(ws):
    g = ws.create("q")
    for name in ("grep", "edit"):
        g.add_node(name, "tool", id=name)
    pid = g.proposals.propose_edge("grep", "edit", "complements", score=0.5).added[0]
    other = PgDatabase(ws.database_url)  # a second server: its own pool
    views = [g, kgos.kg.KG(ws, "q", PostgresStore(other, "q"))]
    outcomes: list[str] = []

    def review(view, who: str) -> None:
        try:
            view.proposals.accept(pid, reviewer=who)
            outcomes.append("accepted")
        except ProposalConflict:
            outcomes.append("conflict")
    threads = [threading.Thread(target=review, args=(v, who)) for v, who in zip(views, ("ana", "bo"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(outcomes) == ["accepted", "conflict"]
    assert g.store.get_edge("grep", "edit", "complements").properties["prediction_id"] == pid
    assert g.proposals.counts() == {"pending": 0, "accepted": 1, "rejected": 0}
    other.close()


def test_a_read_only_attach_also_refuses_a_newer_kg(url, tmp_path):
    db = PgDatabase(url)
    store = PostgresStore.create(db, "k")
    with db.connection() as conn:
        conn.execute(f"INSERT INTO {store.s}.kg_migrations VALUES ('009_newer', 'x')")
    with pytest.raises(SchemaTooNew):
        kgos.Workspace(tmp_path / "h").attach("k", url + "#k")
    db.close()


def test_ingest_into_a_postgres_workspace_is_refused_and_leaves_no_kg(ws, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def f():\n    return 1\n")
    with pytest.raises(kgos.errors.InvalidArgument, match="kgos kg copy"):
        ingest_into(ws, "code", [tmp_path / "src"], embed=False)
    assert not ws.exists("code")
