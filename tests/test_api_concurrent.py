"""Concurrent requests on one server (issue 31, goal 1): reads run in parallel, without the workspace
lock; writes during reads lose nothing; a KG deleted while searched answers 404 or the old answer,
never a 500 or a hang; ``--workers N`` answers search and the query methods from worker processes
(under ``-m slow``: it spawns them).

Real HTTP on loopback (uvicorn in a thread), real SQLite files. A read is held "slow" in a controlled
way: one KG object's method waits on an event, so the test knows a read is in flight while it sends
the others. Throughput is measured in benchmarks/serve_throughput.py, not here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import free_port, live_server

from kgos import Workspace
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
from kgos.errors import InvalidArgument, KGNotFound
from kgos.store.native import NativeStore

# seconds a test waits for what should take milliseconds (a first write may load the embedder on a
# loaded machine): a hang fails, never blocks CI
WAIT = 30.0


def seed(ws: Workspace, db_id: str, n: int = 30) -> None:
    kg = ws.create(db_id)
    with kg.batch():
        for i in range(n):
            kg.add_node(f"alpha tool {i}", type="tool", description=f"does alpha thing {i}", id=f"t{i}")
        for i in range(1, n):
            kg.add_edge(f"t{i - 1}", f"t{i}", "feeds_into")


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Workspace, str]]:
    ws = Workspace(tmp_path / "home")
    seed(ws, "a")
    seed(ws, "b")
    with live_server(create_app(ws), free_port()) as base:
        yield ws, f"{base}/api"
    ws.close()


class Gate:
    """Holds every call of ``obj.name`` until ``release()``; ``entered`` is set once one is waiting."""

    def __init__(self, obj: Any, name: str) -> None:
        self.entered, self.opened = threading.Event(), threading.Event()
        original: Callable[..., Any] = getattr(obj, name)

        def held(*args: Any, **kwargs: Any) -> Any:
            self.entered.set()
            assert self.opened.wait(WAIT), "the gate was never opened"
            return original(*args, **kwargs)
        setattr(obj, name, held)

    def release(self) -> None:
        self.opened.set()


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def test_a_read_does_not_wait_for_another_read_in_flight(served: tuple[Workspace, str]) -> None:
    ws, api = served
    gate = Gate(ws.kg("a"), "search")  # a search of KG a that takes as long as the test wants
    slow, answer = in_thread(lambda: httpx.post(f"{api}/kg/a/search", json={"query": "alpha"}, timeout=WAIT * 2))
    assert gate.entered.wait(WAIT)
    with httpx.Client(timeout=WAIT) as client:  # under the old workspace lock each of these waited for it
        assert client.post(f"{api}/kg/b/search", json={"query": "alpha"}).status_code == 200
        assert client.get(f"{api}/kg/a/nodes/t3").json()["name"] == "alpha tool 3"
        assert client.get(f"{api}/kg/a/nodes/t3/neighbors").status_code == 200
        assert client.post(f"{api}/kg/a/impact", json={"node": "t0", "max_depth": 3}).status_code == 200
        assert client.post(f"{api}/kgos/query/a", json={"query": "alpha"}).status_code == 200
        assert client.get(f"{api}/health").json()["busy"] is False
    assert slow.is_alive()  # the slow read was in flight the whole time
    gate.release()
    slow.join(WAIT)
    assert answer[0].status_code == 200 and answer[0].json()["results"]


def test_a_write_does_not_wait_for_a_read_in_flight(served: tuple[Workspace, str]) -> None:
    ws, api = served
    gate = Gate(ws.kg("a"), "search")
    slow, answer = in_thread(lambda: httpx.post(f"{api}/kg/a/search", json={"query": "alpha"}, timeout=WAIT * 2))
    assert gate.entered.wait(WAIT)
    r = httpx.post(f"{api}/kg/a/nodes", json={"name": "beta tool", "type": "tool"}, timeout=WAIT)
    assert r.status_code == 201 and slow.is_alive()
    gate.release()
    slow.join(WAIT)
    assert answer[0].status_code == 200


def test_reads_and_writes_of_kgs_do_not_wait_for_the_workspace_lock(served: tuple[Workspace, str]) -> None:
    """A long call holding the workspace lock (an expert turn, a research step) holds up no read and no
    write of a KG: those are serialised per KG by the store."""
    ws, api = served
    held, done = threading.Event(), threading.Event()

    def long_call() -> None:
        with ws.lock:
            held.set()
            done.wait(WAIT)
    holder = threading.Thread(target=long_call, daemon=True)
    holder.start()
    assert held.wait(WAIT)
    try:
        with httpx.Client(timeout=WAIT) as client:
            assert client.post(f"{api}/kg/a/nodes", json={"name": "epsilon", "type": "tool", "id": "eps"}).status_code == 201
            assert client.patch(f"{api}/kg/a/nodes/eps", json={"description": "changed"}).status_code == 200
            assert client.post(f"{api}/kg/a/edges", json={"source": "eps", "target": "t1", "type": "uses"}).status_code == 201
            hits = client.post(f"{api}/kg/a/search", json={"query": "epsilon", "k": 3}).json()["results"]
            assert hits[0]["node"]["id"] == "eps"
            assert client.delete(f"{api}/kg/a/nodes/eps").json()["edges_removed"] == 1
    finally:
        done.set()
        holder.join(WAIT)


def test_an_edit_based_on_an_old_version_is_refused_in_one_unit(served: tuple[Workspace, str]) -> None:
    _, api = served
    with httpx.Client(timeout=WAIT) as client:
        seen = client.get(f"{api}/kg/a/nodes/t2").json()["updated_at"]
        assert client.patch(f"{api}/kg/a/nodes/t2", json={"description": "first", "if_updated_at": seen}).status_code == 200
        stale = client.patch(f"{api}/kg/a/nodes/t2", json={"description": "second", "if_updated_at": seen})
        assert stale.status_code == 409 and stale.json()["error"] == "NodeChanged"
        assert client.get(f"{api}/kg/a/nodes/t2").json()["description"] == "first"  # nothing written


def test_writes_during_parallel_reads_lose_nothing(served: tuple[Workspace, str]) -> None:
    _, api = served
    stop, failures, reads = threading.Event(), [], [0]

    def reader() -> None:
        with httpx.Client(timeout=WAIT) as client:
            while not stop.is_set():
                for r in (client.post(f"{api}/kg/a/search", json={"query": "gamma written"}),
                          client.get(f"{api}/kg/a/nodes", params={"limit": 5}),
                          client.post(f"{api}/kg/a/explore", json={"node": "t0", "depth": 2})):
                    reads[0] += 1
                    if r.status_code != 200:
                        failures.append((r.status_code, r.text[:200]))

    readers = [threading.Thread(target=reader, daemon=True) for _ in range(4)]
    for t in readers:
        t.start()
    written = []
    with httpx.Client(timeout=WAIT) as client:
        for i in range(20):
            r = client.post(f"{api}/kg/a/nodes", json={"name": f"gamma written {i}", "type": "note", "id": f"w{i}"})
            assert r.status_code == 201, r.text
            written.append(r.json()["id"])
            if i % 2:
                assert client.post(f"{api}/kg/a/edges", json={"source": f"w{i - 1}", "target": f"w{i}",
                                                                "type": "relates_to"}).status_code == 201
    stop.set()
    for t in readers:
        t.join(WAIT)
    assert failures == [] and reads[0] > 0
    with httpx.Client(timeout=WAIT) as client:
        for node_id in written:  # every acknowledged write is there, and in a fresh snapshot
            assert client.get(f"{api}/kg/a/nodes/{node_id}").status_code == 200
        hits = client.post(f"{api}/kg/a/search", json={"query": "gamma written 19", "k": 5}).json()["results"]
        assert "w19" in [h["node"]["id"] for h in hits]
        assert client.get(f"{api}/kg/a").json()["edges"] == 29 + 10


def test_delete_while_a_search_is_in_flight(served: tuple[Workspace, str]) -> None:
    ws, api = served
    gate = Gate(ws.kg("a").store, "get_nodes")  # the search has read the snapshot; its hits' rows next
    slow, answer = in_thread(lambda: httpx.post(f"{api}/kg/a/search", json={"query": "alpha"}, timeout=WAIT * 2))
    assert gate.entered.wait(WAIT)
    r = httpx.delete(f"{api}/kg/a", timeout=WAIT)  # not held up by the search (it holds no workspace lock)
    assert r.status_code == 200 and slow.is_alive()
    gate.release()
    slow.join(WAIT)
    assert not slow.is_alive()
    assert answer[0].status_code in (200, 404), answer[0].text  # the old answer, or gone: never a 500
    if answer[0].status_code == 404:
        assert answer[0].json()["error"] == "KGNotFound"
    after = httpx.post(f"{api}/kg/a/search", json={"query": "alpha"}, timeout=WAIT)
    assert after.status_code == 404 and after.json()["error"] == "KGNotFound"
    assert httpx.post(f"{api}/kg/b/search", json={"query": "alpha"}, timeout=WAIT).status_code == 200


def test_a_deleted_file_gives_the_old_answer_or_kg_not_found(tmp_path: Path) -> None:
    """The store itself: a thread that was reading finishes on the file it opened; a thread that opens
    a connection after the file is gone gets KGNotFound (never an empty KG created anew); a write
    after the store was closed writes nothing."""
    ws = Workspace(tmp_path / "home")
    seed(ws, "a", n=5)
    store = ws.kg("a").store
    assert isinstance(store, NativeStore)
    opened, deleted, seen = threading.Event(), threading.Event(), []

    def reading_thread() -> None:  # a request that was reading when the KG was deleted
        seen.append(store.node_count())
        opened.set()
        deleted.wait(WAIT)
        seen.append(store.node_count())

    def fresh_thread() -> None:  # a request that comes to the store only after
        try:
            seen.append(store.node_count())
        except KGNotFound as exc:
            seen.append(exc)
    reading = threading.Thread(target=reading_thread)
    reading.start()
    assert opened.wait(WAIT)
    ws.delete("a")
    deleted.set()
    reading.join(WAIT)
    assert seen == [5, 5]  # the old answer
    fresh = threading.Thread(target=fresh_thread)
    fresh.start()
    fresh.join(WAIT)
    assert isinstance(seen[2], KGNotFound)
    assert not (tmp_path / "home" / "kgs" / "a.db").exists()
    with pytest.raises(KGNotFound):
        store.add_node("late", type="note")
    ws.close()


def test_each_thread_reads_on_its_own_connection_and_sees_commits(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    seed(ws, "a", n=3)
    store = ws.kg("a").store
    assert isinstance(store, NativeStore)
    mine = store.conn
    other: list[Any] = []
    t = threading.Thread(target=lambda: other.append((store.conn, store.node_count())))
    t.start()
    t.join(WAIT)
    assert other[0][0] is not mine and other[0][1] == 3
    with store.writing() as w:  # inside a unit of work: the writer's connection, its own rows visible
        w.add_node("inside", type="note", id="n-inside")
        assert store.conn is store.writer_conn and store.get_node("n-inside") is not None
        seen_outside: list[Any] = []
        t = threading.Thread(target=lambda: seen_outside.append(store.get_node("n-inside")))
        t.start()
        t.join(WAIT)
        assert seen_outside == [None]  # another thread never sees a write before it commits
    assert store.get_node("n-inside") is not None
    ws.close()


@pytest.mark.slow  # spawns two worker processes that each import the API: ~15 s on a loaded machine
def test_workers_answer_search_and_methods_and_see_writes(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    seed(ws, "a")
    app = create_app(ws, ServerSettings(workers=2))
    with live_server(app, free_port()) as base, httpx.Client(base_url=f"{base}/api", timeout=60) as client:
        local = ws.kg("a").search("alpha tool 7", k=3)
        hits = client.post("/kg/a/search", json={"query": "alpha tool 7", "k": 3}).json()["results"]
        assert [h["node"]["id"] for h in hits] == [h.node.id for h in local.results]
        assert client.post("/kg/a/trace", json={"source": "t0", "target": "t4"}).json()["found"] is True
        missing = client.post("/kg/a/impact", json={"node": "t999"})
        assert missing.status_code == 404 and missing.json()["error"] == "NodeNotFound"
        assert client.post("/kg/a/nodes", json={"name": "delta fresh", "type": "tool", "id": "fresh"}).status_code == 201
        for _ in range(4):  # whichever worker answers has seen the write
            hits = client.post("/kg/a/search", json={"query": "delta fresh", "k": 3}).json()["results"]
            assert hits[0]["node"]["id"] == "fresh"
        assert client.delete("/kg/a").status_code == 200
        for _ in range(4):
            gone = client.post("/kg/a/search", json={"query": "alpha"})
            assert gone.status_code == 404 and gone.json()["error"] == "KGNotFound"
    ws.close()


def test_workers_setting_is_bounded() -> None:
    with pytest.raises(InvalidArgument, match="workers"):
        ServerSettings(workers=0).checked()


def test_a_postgres_kg_is_read_in_parallel_and_deleted_while_searched(tmp_path: Path) -> None:
    """The same guarantees for a KG in the workspace's PostgreSQL database (a throwaway cluster)."""
    from postgres_cluster import running_cluster

    from kgos.store.postgres_db import close_all
    url = running_cluster().new_database()
    ws = Workspace(tmp_path / "home", database_url=url)
    try:
        seed(ws, "a", n=10)
        seed(ws, "b", n=10)
        with live_server(create_app(ws), free_port()) as base, httpx.Client(timeout=WAIT) as client:
            api = f"{base}/api"
            assert client.post(f"{api}/kg/a/search", json={"query": "alpha"}).status_code == 200  # snapshot built
            gate = Gate(ws.kg("a").store, "get_nodes")
            slow, answer = in_thread(lambda: httpx.post(f"{api}/kg/a/search", json={"query": "alpha tool"},
                                                        timeout=WAIT * 2))
            assert gate.entered.wait(WAIT)
            assert client.post(f"{api}/kg/b/search", json={"query": "alpha"}).status_code == 200
            assert client.post(f"{api}/kg/b/nodes", json={"name": "zeta", "type": "tool"}).status_code == 201
            assert client.delete(f"{api}/kg/a").status_code == 200
            assert slow.is_alive()
            gate.release()
            slow.join(WAIT)
            assert answer[0].status_code in (200, 404), answer[0].text
            after = client.post(f"{api}/kg/a/search", json={"query": "alpha"})
            assert after.status_code == 404 and after.json()["error"] == "KGNotFound"
    finally:
        ws.close()
        close_all()


def test_a_search_of_the_old_version_finishing_late_leaves_no_stale_answer(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A search still running on the old snapshot when a write's rebuild clears the query cache must not
    leave its answer behind for the new version's queries (the cache is keyed by version)."""
    from kgos.retrieval import hybrid
    ws = Workspace(tmp_path / "home")
    seed(ws, "a", n=10)
    kg = ws.kg("a")
    kg.search("omega")
    original, entered, opened, calls = hybrid.search, threading.Event(), threading.Event(), [0]

    def first_call_held(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:  # only the first search (of the old version) is held
            entered.set()
            assert opened.wait(WAIT)
        return original(*args, **kwargs)
    monkeypatch.setattr(hybrid, "search", first_call_held)
    old, answer = in_thread(lambda: kg.search("omega", k=5))
    assert entered.wait(WAIT)
    kg.add_node("omega written", type="note", id="omega")
    assert kg.search("omega", k=5).results[0].node.id == "omega"  # the new version, cached
    opened.set()
    old.join(WAIT)
    assert "omega" not in [h.node.id for h in answer[0].results]  # the held search read the old version
    assert kg.search("omega", k=5).results[0].node.id == "omega"  # and did not overwrite the new answer
    ws.close()


def test_an_upload_to_a_postgres_workspace_lands_in_its_database(tmp_path: Path) -> None:
    """An upload is imported on a workspace of its own (no workspace lock): with the same database URL,
    so the KG is created in PostgreSQL, and the server sees it and its replacement."""
    import json

    from postgres_cluster import running_cluster

    from kgos.store.postgres_db import close_all
    url = running_cluster().new_database()
    ws = Workspace(tmp_path / "home", database_url=url)
    doc = lambda n: json.dumps({"nodes": [{"id": f"n{i}", "name": f"N {i}"} for i in range(n)], "edges": []})  # noqa: E731
    try:
        with live_server(create_app(ws), free_port()) as base, httpx.Client(base_url=base, timeout=WAIT) as c:
            up = c.post("/api/kg/up/import", files={"file": ("up.json", doc(20))}, params={"embed": "none"},
                        headers={"X-KGOS-Client": "test"})
            assert up.status_code == 200, up.text
            assert c.get("/api/kg/up").json()["nodes"] == 20 and ws.info("up").kind == "postgres"
            again = c.post("/api/kg/up/import", files={"file": ("up.json", doc(3))},
                           params={"embed": "none", "mode": "replace"}, headers={"X-KGOS-Client": "test"})
            assert again.status_code == 200 and c.get("/api/kg/up").json()["nodes"] == 3
    finally:
        ws.close()
        close_all()
