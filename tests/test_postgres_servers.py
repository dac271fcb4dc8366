"""Slow PostgreSQL faults and deployments: the database going down mid-use and coming back (a clear
503, then recovery without a restart), two real ``kgos serve`` processes sharing KGs (the README
recipe), and an import killed with SIGKILL (the KG stays as it was)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from api_helpers import client, error
from conftest import write_nodelink
from postgres_cluster import running_cluster

import kgos

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pg():
    return running_cluster()


def test_database_down_then_back_without_restarting(pg, tmp_path, monkeypatch):
    monkeypatch.setenv("KGOS_PG_POOL_WAIT", "1")
    url = pg.new_database()
    ws = kgos.Workspace(tmp_path / "h", database_url=url)
    ws.create("k").add_node("Before the outage", "thing", id="before")
    c = client(ws)
    assert c.get("/api/kg/k/nodes/before").status_code == 200
    pg.stop()
    try:
        r = c.get("/api/kg/k/nodes/before")  # a pooled connection finds the server gone
        body = error(r, 503, "DatabaseUnavailable")
        assert "postgresql://kgos@" in body["detail"] and r.headers["Retry-After"] == "5"
        time.sleep(0.5)  # the pool has dropped its dead connections meanwhile
        body = error(c.get("/api/kg/k/nodes/before"), 503, "DatabaseUnavailable")
        assert "cannot connect" in body["detail"]
    finally:
        pg.start()
    deadline = time.monotonic() + 10
    while (r := c.get("/api/kg/k/nodes/before")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert r.status_code == 200
    assert c.post("/api/kg/k/nodes", json={"name": "After", "type": "thing"}).status_code == 201
    ws.close()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(home: Path, url: str, port: int) -> subprocess.Popen:
    env = {**os.environ, "KGOS_DATABASE_URL": url, "KGOS_EMBEDDER": "hash"}
    return subprocess.Popen([sys.executable, "-m", "kgos", "--home", str(home), "serve", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_up(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"server on {port} did not start")


def test_two_servers_share_kgs_and_see_each_others_writes(pg, tmp_path):
    url = pg.new_database()
    ports = [_port(), _port()]
    procs = [_serve(tmp_path / f"home{i}", url, p) for i, p in enumerate(ports)]
    try:
        for p in ports:
            _wait_up(p)
        one, two = (f"http://127.0.0.1:{p}/api" for p in ports)
        assert httpx.post(f"{one}/kg", json={"db_id": "team"}).status_code == 201
        assert [k["db_id"] for k in httpx.get(f"{two}/kg").json()] == ["team"]
        httpx.post(f"{two}/kg/team/search", json={"query": "warm up"})  # a snapshot to keep current
        r = httpx.post(f"{one}/kg/team/nodes", json={"name": "Quokka cache", "type": "feature"})
        assert r.status_code == 201, r.text
        t0 = time.monotonic()
        while time.monotonic() - t0 < 5:
            hits = httpx.post(f"{two}/kg/team/search", json={"query": "quokka cache", "k": 1}).json()["results"]
            if hits:
                break
        assert hits[0]["node"]["id"] == "feature:quokka_cache" and time.monotonic() - t0 < 1.0
        # experts and conversations are shared too (kgos_ws): an expert made on one, a turn through it
        assert httpx.post(f"{one}/experts", json={"id": "helper", "name": "Helper", "kg_db_id": "team"}).status_code == 201
        assert [e["id"] for e in httpx.get(f"{two}/experts").json()] == ["helper"]
        r = httpx.post(f"{one}/experts/helper/chat", json={"query": "quokka cache?", "stream": False,
                                                            "provider": "offline"}, timeout=60)
        assert r.status_code == 200, r.text
        [conv] = httpx.get(f"{two}/experts/helper/conversations").json()["conversations"]
        assert conv["message_count"] == 2
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        for proc in procs:
            proc.wait(20)


def test_an_import_killed_midway_leaves_the_kg_as_it_was(pg, tmp_path):
    url = pg.new_database()
    ws = kgos.Workspace(tmp_path / "h", database_url=url)
    ws.create("k").add_node("Original", "thing", id="original")
    version = ws.kg("k").store.version()
    nodes = [{"id": f"n{i}", "name": f"node {i}", "type": "thing"} for i in range(300_000)]
    edges = [{"source": f"n{i}", "target": f"n{i + 1}", "type": "next"} for i in range(299_999)]
    big = write_nodelink(tmp_path / "big.json", nodes, edges)
    env = {**os.environ, "KGOS_DATABASE_URL": url, "KGOS_EMBEDDER": "hash"}
    proc = subprocess.Popen([sys.executable, "-m", "kgos", "--home", str(tmp_path / "h"), "kg", "import", "k",
                             str(big), "--replace"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _importing(ws):  # the COPY is under way
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert [n.id for n in ws.kg("k").nodes()] == ["original"] and ws.kg("k").store.version() == version
    deadline = time.monotonic() + 10
    while _importing(ws) and time.monotonic() < deadline:  # the server rolls back the dead session
        time.sleep(0.1)
    assert not _importing(ws)
    ws.close()


def _importing(ws: kgos.Workspace) -> bool:
    with ws.pg.connection() as conn:
        return bool(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY%'")
                    .fetchone()[0])
