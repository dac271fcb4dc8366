"""``kgos serve`` as a real process: uvicorn on a free loopback port over a temporary KGOS_HOME,
queried with httpx, then terminated; and the refusal to bind off loopback without a token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from api_helpers import add_tiny

import kgos

TOKEN = "serve-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(home, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGOS_")}
    return {**env, "KGOS_HOME": str(home), **extra}


def wait_ready(proc: subprocess.Popen, url: str, headers: dict[str, str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"kgos serve exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            if httpx.get(url, headers=headers, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("kgos serve did not answer in time")


@pytest.fixture
def home(tmp_path):
    ws = kgos.Workspace(tmp_path / "home")
    add_tiny(ws, tmp_path)
    ws.close()
    return tmp_path / "home"


def test_serve_answers_over_http(home):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    proc = subprocess.Popen([sys.executable, "-m", "kgos", "serve", "--port", str(port), "--log-level", "warning"],
                            env=environment(home, KGOS_API_TOKEN=TOKEN), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_ready(proc, f"{base}/api/health", auth)
        assert httpx.get(f"{base}/api/kg", timeout=30).status_code == 401
        assert [k["db_id"] for k in httpx.get(f"{base}/api/kg", headers=auth, timeout=30).json()] == ["tiny"]
        hits = httpx.post(f"{base}/api/kg/tiny/search", json={"query": "prompt caching", "k": 2}, headers=auth,
                          timeout=30).json()
        assert hits["results"][0]["node"]["id"] == "feature:prompt_caching"
        node = httpx.get(f"{base}/api/kg/tiny/nodes/src/app.py", headers=auth, timeout=30).json()
        assert node["name"] == "App module"
        assert httpx.get(f"{base}/api/kg/nope", headers=auth, timeout=30).json()["error"] == "KGNotFound"
        assert httpx.get(f"{base}/openapi.json", headers=auth, timeout=30).json()["info"]["title"] == "KG-OS"
        concurrent_requests(base, auth)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode in (0, -15), err  # uvicorn shuts down gracefully, then re-raises SIGTERM
    assert "Traceback" not in err
    assert f"{base}/api" in out and f"{base}/docs" in out and "Bearer" in out and TOKEN not in out + err


def concurrent_requests(base: str, auth: dict[str, str]) -> None:
    """Reads and writes from many threads at once (the routes share one workspace behind a lock)."""
    def one(i: int) -> int:
        with httpx.Client(base_url=base, headers=auth, timeout=30) as c:
            if i % 3 == 0:
                return c.post("/api/kg/tiny/nodes", json={"name": f"Node {i}", "type": "thing"}).status_code
            if i % 3 == 1:
                return c.post("/api/kg/tiny/search", json={"query": f"caching {i}"}).status_code
            return c.post("/api/kg/tiny/impact", json={"node": "src/app.py", "direction": "both"}).status_code
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(one, range(24)))
    assert codes == [201 if i % 3 == 0 else 200 for i in range(24)]
    assert httpx.get(f"{base}/api/kg/tiny", headers=auth, timeout=30).json()["nodes"] == 6 + 8


def test_serve_refuses_public_bind_without_token(home):
    result = subprocess.run([sys.executable, "-m", "kgos", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
                            env=environment(home), capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("Error: refusing to serve on 0.0.0.0 without a token") and "KGOS_API_TOKEN" in result.stderr
    assert "Traceback" not in result.stderr


def test_loopback_server_refuses_cross_site_attacks(home, tmp_path):
    """The issue's attack on a real server without a token: a cross-origin multipart upload that
    replaced a KG, and a DNS-rebinding read with a foreign Host. Both refused, the KG unchanged;
    the same upload from the server's own origin, or from a script with X-KGOS-Client, works."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    upload = {"file": ("x.json", b'{"nodes": [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}], "edges": []}')}
    proc = subprocess.Popen([sys.executable, "-m", "kgos", "serve", "--port", str(port), "--log-level", "warning",
                             "--allowed-host", "kg.example.test"],
                            env=environment(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_ready(proc, f"{base}/api/health", {})
        attack = httpx.post(f"{base}/api/kg/tiny/import?mode=replace", files=upload, headers={"Origin": "http://evil.example"})
        assert attack.status_code == 403 and attack.json()["error"] == "OriginNotAllowed"
        assert httpx.post(f"{base}/api/kg/tiny/import?mode=replace", files=upload).json()["error"] == "HeaderRequired"
        rebound = httpx.get(f"{base}/api/kg", headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 400 and rebound.json()["error"] == "HostNotAllowed"
        assert httpx.get(f"{base}/api/kg/tiny").json()["nodes"] == 6
        assert httpx.get(f"{base}/api/kg", headers={"Host": "kg.example.test"}).status_code == 200
        assert httpx.get(f"http://localhost:{port}/api/kg").status_code == 200
        # embed=none: this test is about the site checks; on a fresh home the first embedding upload
        # would distill the fast tier (about a minute) inside the request.
        own = httpx.post(f"{base}/api/kg/tiny/import?mode=replace&embed=none", files=upload, headers={"Origin": base})
        assert own.status_code == 200 and httpx.get(f"{base}/api/kg/tiny").json()["nodes"] == 2
        script = httpx.post(f"{base}/api/kg/copy/import?embed=none", files=upload, headers={"X-KGOS-Client": "test"})
        assert script.status_code == 200 and script.json()["nodes"] == 2
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
