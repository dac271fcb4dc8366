"""Bearer token on every route, body size limits (declared and streamed), CORS only when configured,
and the refusal to serve off loopback without a token."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from api_helpers import SCRIPT, add_tiny, client, error

import kgos
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
from kgos.errors import InvalidArgument

TOKEN = "s3cret-token"
STUDIO = "http://studio.local"


@pytest.fixture
def ws(tmp_path):
    w = kgos.Workspace(tmp_path / "home")
    add_tiny(w, tmp_path)
    yield w
    w.close()


def every_route(app) -> list[tuple[str, str]]:
    """(method, concrete path) for every operation of the OpenAPI document, path parameters filled
    in, plus the document, the pages and their assets."""
    out = [("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/static/docs.js")]  # "/": the studio, test_studio_api
    for template, operations in app.openapi()["paths"].items():
        path = re.sub(r"\{\w+\}", "x", template.replace("{db_id}", "tiny").replace("{node_id}", "src/app.py"))
        out += [(method.upper(), path) for method in operations]
    return out


def test_token_required_on_every_route(ws):
    app = create_app(ws, ServerSettings(token=TOKEN))
    c = client(ws, token=TOKEN)
    routes = every_route(app)
    assert len(routes) > 40 and ("GET", "/docs") in routes and ("GET", "/openapi.json") in routes
    federation = {(m, p) for m, p in routes if p.startswith("/api/federation/")}
    assert len(federation) == 2
    for method, path in federation:  # signed by the peers' shared key instead: refused unsigned
        r = c.request(method, path)
        assert r.status_code == 401 and r.json()["error"] == "FederationRefused"
    for method, path in sorted(set(routes) - federation):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
                        {"Authorization": TOKEN}, {"Authorization": f"Bearer {TOKEN}x"}):
            r = c.request(method, path, headers=headers)
            body = error(r, 401, "Unauthorized")
            assert r.headers["www-authenticate"] == "Bearer" and "Authorization: Bearer" in body["detail"]
        ok = c.request(method, path, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code != 401, (method, path)
    assert c.request("GET", "/api/nowhere").status_code == 401  # unknown routes too


def test_token_lets_requests_through(ws):
    c = client(ws, token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert c.get("/api/kg", headers=auth).status_code == 200
    assert c.get("/api/kg/tiny/nodes/src/app.py", headers={"authorization": f"bearer {TOKEN}"}).status_code == 200
    assert c.post("/api/kg/tiny/search", json={"query": "caching"}, headers=auth).json()["results"]
    spec = c.get("/openapi.json", headers=auth).json()
    assert spec["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert c.options("/api/kg").status_code != 401  # preflights pass the token check


def test_no_token_no_check(ws):
    assert client(ws).get("/api/kg").status_code == 200
    assert "securitySchemes" not in client(ws).get("/openapi.json").json().get("components", {})


def test_settings_refuse_public_binds_without_token(ws, monkeypatch):
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        with pytest.raises(InvalidArgument, match="KGOS_API_TOKEN"):
            ServerSettings(host=host).checked()
        with pytest.raises(InvalidArgument, match="without a token"):
            create_app(ws, ServerSettings(host=host))
        assert ServerSettings(host=host, token=TOKEN).checked().token == TOKEN
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert ServerSettings(host=host).checked().host == host
    monkeypatch.setenv("KGOS_API_TOKEN", TOKEN)
    monkeypatch.setenv("KGOS_CORS_ORIGINS", f"{STUDIO}, http://other.local")
    s = ServerSettings.from_env(host="0.0.0.0")
    assert s.token == TOKEN and s.cors_origins == (STUDIO, "http://other.local")


def test_declared_body_over_limit(ws):
    c = client(ws, max_body_bytes=1000)
    big = json.dumps({"query": "x" * 2000})
    body = error(c.post("/api/kg/tiny/search", content=big, headers={"content-type": "application/json"}),
                 413, "PayloadTooLarge")
    assert "1,000 bytes" in body["detail"]
    assert c.post("/api/kg/tiny/search", json={"query": "caching"}).status_code == 200


def test_streamed_body_over_limit(ws):
    c = client(ws, max_body_bytes=1000)
    chunks = iter([b'{"query": "', b"x" * 600, b"x" * 600, b'"}'])
    r = c.post("/api/kg/tiny/search", content=chunks, headers={"content-type": "application/json"})
    assert error(r, 413, "PayloadTooLarge") and "content-length" not in r.request.headers
    small = iter([b'{"query": ', b'"caching"}'])
    assert c.post("/api/kg/tiny/search", content=small, headers={"content-type": "application/json"}).status_code == 200


def test_upload_has_its_own_limit(ws):
    c = client(ws, max_body_bytes=100, max_upload_bytes=5000, headers=SCRIPT)
    nodes = [{"id": f"n{i}", "name": f"Node {i}"} for i in range(10)]
    small = json.dumps({"nodes": nodes, "edges": []}).encode()
    assert 100 < len(small) < 5000
    assert c.post("/api/kg/up/import", files={"file": ("up.json", small)}).json()["nodes"] == 10
    big = json.dumps({"nodes": nodes * 40, "edges": []}).encode()
    error(c.post("/api/kg/big/import", files={"file": ("big.json", big)}), 413, "PayloadTooLarge")
    boundary = "kgosboundary"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.json"\r\n'
            "Content-Type: application/json\r\n\r\n").encode()
    parts = iter([head, big[:3000], big[3000:], f"\r\n--{boundary}--\r\n".encode()])
    r = c.post("/api/kg/big/import", content=parts, headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    error(r, 413, "PayloadTooLarge")
    assert c.get("/api/kg/big").status_code == 404
    error(c.post("/api/kg/tiny/search", json={"query": "x" * 200}), 413)


def test_zip_upload_is_capped_once_unpacked(ws):
    c = client(ws, max_upload_bytes=5000, headers=SCRIPT)
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("kg/nodes.csv", "id,name\n" + "".join(f"n{i},{'x' * 50}\n" for i in range(200)))
    assert len(packed.getvalue()) < 5000
    body = error(c.post("/api/kg/bomb/import", files={"file": ("kg.zip", packed.getvalue())}), 400, "ImportFailed")
    assert "upload limit" in body["detail"] and c.get("/api/kg/bomb").status_code == 404


def test_cors_off_by_default(ws):
    c = client(ws)
    r = c.get("/api/kg", headers={"Origin": STUDIO})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    pre = c.options("/api/kg", headers={"Origin": STUDIO, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in pre.headers


def test_cors_when_configured(ws):
    c = client(ws, token=TOKEN, cors_origins=(STUDIO,))
    pre = c.options("/api/kg/tiny/search", headers={"Origin": STUDIO, "Access-Control-Request-Method": "POST",
                                                     "Access-Control-Request-Headers": "authorization, content-type"})
    assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == STUDIO
    assert "authorization" in pre.headers["access-control-allow-headers"].lower()
    denied = c.get("/api/kg", headers={"Origin": STUDIO})
    assert denied.status_code == 401 and denied.headers["access-control-allow-origin"] == STUDIO
    ok = c.get("/api/kg", headers={"Origin": STUDIO, "Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == STUDIO
    other = c.get("/api/kg", headers={"Origin": "http://evil.local", "Authorization": f"Bearer {TOKEN}"})
    assert "access-control-allow-origin" not in other.headers


# --- Host and Origin checks (origin.SiteGuard): DNS rebinding and cross-site writes --------------

OWN = "http://127.0.0.1:8765"  # the origin of api_helpers.BASE_URL
EVIL = "http://evil.example"
UPLOAD = json.dumps({"nodes": [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}], "edges": []}).encode()


def node_count(ws, db_id: str = "tiny") -> int:
    with ws.lock:
        return ws.kg(db_id).stats().nodes


def replace_upload(c, **headers: str):
    return c.post("/api/kg/tiny/import?mode=replace", files={"file": ("x.json", UPLOAD)}, headers=headers)


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST", "localhost:9000"])
def test_loopback_names_are_answered(ws, host):
    assert client(ws).get("/api/kg", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "127.0.0.1.nip.io:8765", "localhost.evil.example",
                                  "192.168.1.10:8765", "[::1", "localhost:99999", "", "testserver"])
def test_foreign_host_is_refused_before_anything_else(ws, host):
    for c, auth in ((client(ws), {}), (client(ws, token=TOKEN), {"Authorization": f"Bearer {TOKEN}"})):
        body = error(c.get("/api/kg", headers={"Host": host, **auth}), 400, "HostNotAllowed")
        assert "--allowed-host" in body["detail"] and "KGOS_ALLOWED_HOSTS" in body["detail"]
        error(c.post("/api/kg/tiny/nodes", json={"name": "X"}, headers={"Host": host, **auth}), 400, "HostNotAllowed")
    assert node_count(ws) == 6


def test_configured_hosts(ws, monkeypatch):
    c = client(ws, allowed_hosts=("kg.example.com", "lan-box:9000"))
    assert c.get("/api/kg", headers={"Host": "kg.example.com"}).status_code == 200
    assert c.get("/api/kg", headers={"Host": "KG.example.com:443"}).status_code == 200
    assert c.get("/api/kg", headers={"Host": "lan-box:9000"}).status_code == 200
    error(c.get("/api/kg", headers={"Host": "lan-box:8765"}), 400, "HostNotAllowed")  # pinned to its port
    error(c.get("/api/kg", headers={"Host": "other.example.com"}), 400, "HostNotAllowed")
    monkeypatch.setenv("KGOS_ALLOWED_HOSTS", "a.example, b.example:81")
    assert ServerSettings.from_env().allowed_hosts == ("a.example", "b.example:81")
    for bad in ("http://kg.example.com", "kg.example.com/x", "a:b", "[zz]"):
        with pytest.raises(InvalidArgument, match="NAME:PORT"):
            ServerSettings(allowed_hosts=(bad,)).checked()


def test_wildcard_bind_answers_ip_literals_and_this_machine(ws):
    import socket
    c = client(ws, token=TOKEN, host="0.0.0.0", allowed_hosts=("kg.lan",))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for host in ("192.168.1.10:8765", "[fe80::1]:8765", "localhost:8765", socket.gethostname(), "kg.lan:8765"):
        assert c.get("/api/kg", headers={"Host": host, **auth}).status_code == 200, host
    error(c.get("/api/kg", headers={"Host": "evil.example", **auth}), 400, "HostNotAllowed")
    bound = client(ws, token=TOKEN, host="192.168.1.10")
    assert bound.get("/api/kg", headers={"Host": "192.168.1.10:8765", **auth}).status_code == 200
    error(bound.get("/api/kg", headers={"Host": "10.0.0.1:8765", **auth}), 400, "HostNotAllowed")


@pytest.mark.parametrize("signal", [{"Origin": EVIL}, {"Origin": "null"}, {"Origin": "http://127.0.0.1:9999"},
                                    {"Origin": "http://localhost:8765"}, {"Sec-Fetch-Site": "cross-site"},
                                    {"Sec-Fetch-Site": "same-site"}, {"Referer": f"{EVIL}/page.html"},
                                    {"Origin": EVIL, "X-KGOS-Client": "x"}])
def test_writes_from_another_origin_change_nothing(ws, signal):
    c = client(ws)
    body = error(replace_upload(c, **signal), 403, "OriginNotAllowed")
    assert "--cors-origin" in body["detail"]
    error(c.post("/api/kg/tiny/nodes", json={"name": "Injected"}, headers=signal), 403, "OriginNotAllowed")
    error(c.delete("/api/kg/tiny/nodes/lonely", headers=signal), 403, "OriginNotAllowed")
    error(c.delete("/api/kg/tiny", headers=signal), 403, "OriginNotAllowed")
    assert node_count(ws) == 6 and c.get("/api/kg/tiny/nodes/lonely").status_code == 200
    assert c.get("/api/kg/tiny", headers=signal).status_code == 200  # reads: the browser keeps the answer from the page


def test_writes_from_the_own_origin_pass(ws):
    c = client(ws)
    for signal in ({"Origin": OWN}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"},
                   {"Referer": f"{OWN}/docs"}):
        assert c.post("/api/kg/tiny/nodes", json={"name": f"N {signal}"}, headers=signal).status_code == 201
    assert replace_upload(c, Origin=OWN).json()["nodes"] == 2  # the studio's multipart upload, no extra header
    assert node_count(ws) == 2


def test_configured_cors_origin_may_write(ws):
    c = client(ws, cors_origins=(STUDIO,))
    assert c.post("/api/kg/tiny/nodes", json={"name": "From studio"}, headers={"Origin": STUDIO}).status_code == 201
    error(c.post("/api/kg/tiny/nodes", json={"name": "X"}, headers={"Origin": EVIL}), 403, "OriginNotAllowed")
    assert node_count(ws) == 7
    with pytest.raises(InvalidArgument, match="KGOS_API_TOKEN"):
        ServerSettings(cors_origins=("*",)).checked()
    with pytest.raises(InvalidArgument, match="without a path"):
        ServerSettings(cors_origins=("http://studio.local/app",)).checked()
    anyone = client(ws, token=TOKEN, cors_origins=("*",))
    r = anyone.post("/api/kg/tiny/nodes", json={"name": "Y"}, headers={"Origin": EVIL, "Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 201


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "Text/Plain; charset=utf-8", None])
def test_post_without_origin_needs_a_non_simple_request(ws, content_type):
    """What an old browser (no Origin, no Sec-Fetch-Site, no Referer) could send cross-site is refused."""
    c = client(ws)
    headers = {"content-type": content_type} if content_type else {}
    body = error(c.post("/api/kg/tiny/search", content=b'{"query": "caching"}', headers=headers), 403, "HeaderRequired")
    assert "X-KGOS-Client" in body["detail"]
    error(replace_upload(c), 403, "HeaderRequired")
    assert node_count(ws) == 6


def test_what_curl_and_scripts_send(ws):
    c = client(ws)
    assert c.post("/api/kg/tiny/search", json={"query": "caching"}).status_code == 200  # JSON: no extra header
    assert c.post("/api/kg/tiny/nodes", json={"name": "Curl node"}).status_code == 201
    assert c.delete("/api/kg/tiny/nodes/lonely").status_code == 200  # DELETE/PUT always preflight cross-site
    assert replace_upload(c, **{"X-KGOS-Client": "curl"}).json()["nodes"] == 2
    assert node_count(ws) == 2
    t = client(ws, token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert t.post("/api/kg/up/import", files={"file": ("x.json", UPLOAD)}, headers=auth).json()["nodes"] == 2


def test_guard_wraps_any_asgi_app_websockets_too():
    """SiteGuard is plain ASGI (the MCP server and the studio wrap their apps in it): HTTP and
    WebSocket handshakes with a foreign Host or Origin never reach the app."""
    from fastapi.testclient import TestClient
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route, WebSocketRoute
    from starlette.websockets import WebSocketDisconnect

    from kgos.api.origin import HostPolicy, SiteGuard

    reached = []

    async def hello(request):
        reached.append(request.method)
        return PlainTextResponse("hi")

    async def greet(socket):
        await socket.accept()
        await socket.send_text("hi")
        await socket.close()

    inner = Starlette(routes=[Route("/", hello, methods=["GET", "POST"]), WebSocketRoute("/ws", greet)])
    c = TestClient(SiteGuard(inner, HostPolicy.for_bind("127.0.0.1")), base_url="http://127.0.0.1:8765")
    assert c.get("/").text == "hi" and c.post("/", json={}).text == "hi"
    error(c.get("/", headers={"Host": "evil.example"}), 400, "HostNotAllowed")
    error(c.post("/", json={}, headers={"Origin": EVIL}), 403, "OriginNotAllowed")
    error(c.post("/", content=b"a=1", headers={"content-type": "application/x-www-form-urlencoded"}), 403, "HeaderRequired")
    assert reached == ["GET", "POST"]
    with c.websocket_connect("ws://127.0.0.1:8765/ws", headers={"Origin": OWN}) as socket:
        assert socket.receive_text() == "hi"
    for headers in ({"Host": "evil.example"}, {"Origin": EVIL}):
        with pytest.raises(WebSocketDisconnect) as refused, c.websocket_connect("ws://127.0.0.1:8765/ws", headers=headers):
            pass
        assert refused.value.code == 1008
