"""Federated experts (issue 35, goal 7), with two real servers on loopback: signed requests and
responses, capability advertisement, delegation with provenance and checkable remote citations, and
the failures (bad signature, replay, stale timestamp, unknown peer, dead or slow peer, oversized
answer) refused or degraded to a local answer."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from live_server import free_port, live_server

import kgos
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
from kgos.data import load_demo
from kgos.errors import FederationRefused
from kgos.experts import ExpertService
from kgos.experts.federation import (
    ASK_PATH,
    FederationConfig,
    NonceBook,
    ask_peer,
    sign_request,
    verify_request,
)
from kgos.llm import get_provider

KEY = "test-shared-key-0123456789"


@pytest.fixture(scope="module")
def peer_b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Instance "b": the demo KGs, its finance expert shared with peer "a"."""
    ws = kgos.Workspace(tmp_path_factory.mktemp("b"))
    load_demo(ws, embedder=None)
    ExpertService(ws).update("finance", {"share_with_peers": True})
    port = free_port()
    app = create_app(ws, ServerSettings(port=port), provider_factory=lambda p, m: get_provider("offline"),
                     federation_config=FederationConfig("b", {"a": KEY}))
    with live_server(app, port) as url:
        yield url
    ws.close()


@pytest.fixture
def home_a(tmp_path: Path) -> kgos.Workspace:
    """Instance "a": only the demo KG, and an expert that delegates tax questions to b's finance."""
    ws = kgos.Workspace(tmp_path / "a")
    load_demo(ws, embedder=None)
    ExpertService(ws).create({"name": "Asker", "kg_db_id": "demo",
                              "delegate": [{"peer": "b", "expert": "finance", "when": "always"}]}, id="asker")
    yield ws
    ws.close()


def _cfg(url: str, key: str = KEY, **kw: object) -> FederationConfig:
    return FederationConfig("a", {"b": key}, {"b": url}, **kw)


def _signed_post(url: str, body: dict, key: str = KEY, nonce: str | None = None, stamp: str | None = None,
                 peer: str = "a") -> httpx.Response:
    raw, nonce, stamp = json.dumps(body).encode(), nonce or secrets.token_hex(16), stamp or str(int(time.time()))
    headers = {"content-type": "application/json", "x-kgos-peer": peer, "x-kgos-timestamp": stamp,
               "x-kgos-nonce": nonce, "x-kgos-signature": sign_request(key, "POST", ASK_PATH, stamp, nonce, raw)}
    return httpx.post(url + ASK_PATH, content=raw, headers=headers)


def test_delegation_brings_remote_sources_with_provenance(home_a: kgos.Workspace, peer_b: str) -> None:
    from kgos.experts.chat import ExpertChat
    chat = ExpertChat(home_a, get_provider("offline"), federation=_cfg(peer_b), use_memory=False)
    turn = chat.start("asker", "How does tax-loss harvesting lower my taxes?")  # names a node of the peer's KG
    done = list(chat.events(turn))[-1]
    remote = [n for n in turn.context.nodes if n.db_id == "b@finance"]
    assert remote and all(n.method == "federated:b/finance" for n in remote)
    assert done["citations"]["ok"] and any(c.startswith("b@finance:") for c in done["citations"]["valid"]), (
        [(n.db_id, n.id, round(n.score, 3)) for n in turn.context.nodes[:8]], done)
    (prov,) = turn.federation
    assert prov["peer"] == "b" and prov["error"] is None and prov["sources"] == len(remote)


def test_capabilities_list_only_shared_experts(peer_b: str) -> None:
    nonce, stamp = secrets.token_hex(16), str(int(time.time()))
    path = "/api/federation/capabilities"
    headers = {"x-kgos-peer": "a", "x-kgos-timestamp": stamp, "x-kgos-nonce": nonce,
               "x-kgos-signature": sign_request(KEY, "GET", path, stamp, nonce, b"")}
    doc = httpx.get(peer_b + path, headers=headers).json()
    assert doc["instance"] == "b" and [e["id"] for e in doc["experts"]] == ["finance"]
    assert httpx.get(peer_b + path).status_code == 401


def test_forged_replayed_stale_and_unknown_requests_are_refused(peer_b: str) -> None:
    body = {"expert": "finance", "question": "How can I lower my taxes?"}
    assert _signed_post(peer_b, body, key="wrong-key").status_code == 401
    nonce = secrets.token_hex(16)
    assert _signed_post(peer_b, body, nonce=nonce).status_code == 200
    replay = _signed_post(peer_b, body, nonce=nonce)
    assert replay.status_code == 401 and "replayed" in replay.json()["detail"]
    stale = _signed_post(peer_b, body, stamp=str(int(time.time()) - 3600))
    assert stale.status_code == 401 and "off" in stale.json()["detail"]
    assert _signed_post(peer_b, body, peer="mallory").status_code == 401
    assert _signed_post(peer_b, {"expert": "demo", "question": "hi"}).status_code == 404  # not shared


def test_a_bad_response_signature_or_a_dead_peer_degrades_to_a_local_answer(home_a: kgos.Workspace,
                                                                           peer_b: str) -> None:
    # b signs with its key for "a"; an asker holding another key cannot verify b's answer either
    forged = ask_peer(_cfg(peer_b, key="another-key"), "b", "finance", "taxes?")
    assert forged.error and forged.sources == ()
    dead = ask_peer(_cfg(f"http://127.0.0.1:{free_port()}"), "b", "finance", "taxes?")
    assert dead.error.startswith("unreachable")
    from kgos.experts.chat import ExpertChat
    chat = ExpertChat(home_a, get_provider("offline"), federation=_cfg(f"http://127.0.0.1:{free_port()}"),
                      use_memory=False)
    turn = chat.start("asker", "How do I reduce my API costs?")
    done = list(chat.events(turn))[-1]
    assert done["citations"]["ok"] and any("answered locally" in n for n in turn.context.notes)
    assert all(n.db_id == "demo" for n in turn.context.nodes)


def test_slow_and_oversized_peers_are_bounded() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    def huge(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"x" * (600 * 1024))

    cfg = _cfg("http://peer.invalid")
    assert "no answer within" in ask_peer(cfg, "b", "finance", "q", transport=httpx.MockTransport(slow)).error
    assert "over 524,288 bytes" in ask_peer(cfg, "b", "finance", "q", transport=httpx.MockTransport(huge)).error


def test_verify_request_unit() -> None:
    cfg, book, now = FederationConfig("b", {"a": KEY}), NonceBook(), time.time()
    nonce, stamp = secrets.token_hex(16), str(int(now))
    headers = {"x-kgos-peer": "a", "x-kgos-timestamp": stamp, "x-kgos-nonce": nonce,
               "x-kgos-signature": sign_request(KEY, "POST", ASK_PATH, stamp, nonce, b"{}")}
    assert verify_request(cfg, book, headers, "POST", ASK_PATH, b"{}", now) == "a"
    with pytest.raises(FederationRefused, match="replayed"):
        verify_request(cfg, book, headers, "POST", ASK_PATH, b"{}", now)
    with pytest.raises(FederationRefused, match="signature"):
        verify_request(cfg, NonceBook(), headers, "POST", ASK_PATH, b'{"changed": 1}', now)


def test_no_keys_means_no_federation(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient
    client = TestClient(create_app(tmp_path / "h", federation_config=FederationConfig()),
                        base_url="http://127.0.0.1:8765")
    off = client.post(ASK_PATH, json={"expert": "x", "question": "q"})
    assert off.status_code == 401 and "federation is off" in off.json()["detail"]
