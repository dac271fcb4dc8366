"""Federated experts (spec/000 section 14, "Federated expert network"): one KG-OS instance asks
another instance's expert, over HTTP, with signed requests and responses.

**Trust** is a shared secret per pair of instances, from the environment only (never stored):
``KGOS_FEDERATION_NAME`` is this instance's name, ``KGOS_FEDERATION_KEYS`` lists ``peer=secret``
pairs (the secret shared with that peer), ``KGOS_FEDERATION_PEERS`` lists ``peer=url`` for the peers
this instance asks. A request carries ``X-KGOS-Peer`` (who asks), ``X-KGOS-Timestamp``,
``X-KGOS-Nonce`` and ``X-KGOS-Signature``: HMAC-SHA256 of ``method, path, timestamp, nonce,
sha256(body)``. The server refuses a stale timestamp (more than 300 s off), a nonce it has seen (a
replay) or a bad signature with 401, and signs its response (HMAC of ``"response", the request's
nonce, timestamp, sha256(body)``) so the asker knows who answered.

**Sharing** is opt-in per expert (``"share_with_peers": true``); ``GET /api/federation/capabilities``
advertises those experts (name, description, KGs with their sizes and main node types).

**Delegation**: an expert whose config lists ``delegate: [{"peer": "b", "expert": "finance"}]`` asks
that remote expert on every turn (``"when": "always"``) or only when its own KGs found nothing
(``"fallback"``). The remote sources join the turn's context under citation keys
``peer@kg:node`` (the remote answer's citations stay checkable against the remote sources), and the
turn's metadata records each call's provenance (peer, expert, latency, sources, error). A slow or
dead peer, a bad signature or an oversized answer (``MAX_RESPONSE_BYTES``) leaves the local answer
with a note: delegation never fails a turn.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import FederationRefused, InvalidArgument
from ..settings import Settings, current

if TYPE_CHECKING:
    from .config import Delegate
    from .context import SourceNode

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SKEW_SECONDS = 300
NONCE_TTL = 2 * SKEW_SECONDS
MAX_NONCES = 100_000
MAX_RESPONSE_BYTES = 512 * 1024
MAX_REMOTE_SOURCES = 8
REMOTE_SCORE = 0.9  # a remote source ranks just under a local one of the same score
ASK_PATH = "/api/federation/ask"


@dataclass(frozen=True)
class FederationConfig:
    name: str = "kgos"
    keys: Mapping[str, str] = field(default_factory=dict)  # peer -> shared secret
    peers: Mapping[str, str] = field(default_factory=dict)  # peer -> base URL
    timeout: float = 10.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> FederationConfig:
        """From the process's settings, or from ``env`` (a mapping of variables) when given."""
        s = current() if env is None else Settings.from_env(env)
        return cls(s.federation_name or "kgos", _pairs(s.federation_keys or "", "KEYS"),
                   _pairs(s.federation_peers or "", "PEERS"), 10.0 if s.federation_timeout is None else s.federation_timeout)

    @property
    def enabled(self) -> bool:
        return bool(self.keys)


def _pairs(text: str, what: str) -> dict[str, str]:
    out = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or not NAME_RE.fullmatch(name.strip()) or not value.strip():
            raise InvalidArgument(f"KGOS_FEDERATION_{what}: {item.split('=')[0]!r}... is not name=value "
                                  "(names: lowercase letters, digits, '-', '_')")
        out[name.strip()] = value.strip()
    return out


# -- signatures -----------------------------------------------------------------------------------------------
def sign_request(secret: str, method: str, path: str, timestamp: str, nonce: str, body: bytes) -> str:
    message = "\n".join((method.upper(), path, timestamp, nonce, hashlib.sha256(body).hexdigest()))
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def sign_response(secret: str, nonce: str, timestamp: str, body: bytes) -> str:
    message = "\n".join(("response", nonce, timestamp, hashlib.sha256(body).hexdigest()))
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


class NonceBook:
    """Nonces seen in the last ``NONCE_TTL`` seconds (a replay is refused); bounded in memory."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def fresh(self, key: str, now: float) -> bool:
        with self._lock:
            while self._seen and (next(iter(self._seen.values())) < now - NONCE_TTL or len(self._seen) > MAX_NONCES):
                self._seen.popitem(last=False)
            if key in self._seen:
                return False
            self._seen[key] = now
            return True


def verify_request(cfg: FederationConfig, book: NonceBook, headers: Mapping[str, str], method: str, path: str,
                   body: bytes, now: float | None = None) -> str:
    """The calling peer's name, or FederationRefused saying why."""
    now = time.time() if now is None else now
    peer, stamp = headers.get("x-kgos-peer", ""), headers.get("x-kgos-timestamp", "")
    nonce, given = headers.get("x-kgos-nonce", ""), headers.get("x-kgos-signature", "")
    secret = cfg.keys.get(peer)
    if not secret:
        raise FederationRefused(f"unknown peer {peer[:64]!r}: this instance shares no key with it")
    try:
        skew = abs(now - float(stamp))
    except ValueError:
        raise FederationRefused("X-KGOS-Timestamp must be Unix seconds") from None
    if skew > SKEW_SECONDS:
        raise FederationRefused(f"the request's timestamp is {skew:.0f} s off (the limit is {SKEW_SECONDS} s)")
    if not re.fullmatch(r"[0-9a-f]{32}", nonce):
        raise FederationRefused("X-KGOS-Nonce must be 32 hex digits")
    if not hmac.compare_digest(sign_request(secret, method, path, stamp, nonce, body), given):
        raise FederationRefused("the request's signature does not match (a different key, or a changed body)")
    if not book.fresh(f"{peer}:{nonce}", now):
        raise FederationRefused("this nonce was used before: a replayed request")
    return peer


# -- asking a peer ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RemoteAnswer:
    peer: str
    expert: str
    answer: str
    sources: tuple[dict[str, Any], ...]
    latency_ms: float
    error: str | None = None

    def provenance(self) -> dict[str, Any]:
        return {"peer": self.peer, "expert": self.expert, "latency_ms": round(self.latency_ms, 1),
                "sources": len(self.sources), "error": self.error}


def ask_peer(cfg: FederationConfig, peer: str, expert: str, question: str,
             transport: httpx.BaseTransport | None = None) -> RemoteAnswer:
    """Ask ``peer``'s ``expert``; never raises for the peer's failures (they come back in ``error``)."""
    started = time.monotonic()

    def failed(why: str) -> RemoteAnswer:
        return RemoteAnswer(peer, expert, "", (), (time.monotonic() - started) * 1000, why)

    url, secret = cfg.peers.get(peer), cfg.keys.get(peer)
    if not url or not secret:
        return failed(f"peer {peer!r} is not configured (KGOS_FEDERATION_PEERS and KGOS_FEDERATION_KEYS)")
    body = json.dumps({"expert": expert, "question": question}).encode()
    stamp, nonce = str(int(time.time())), secrets.token_hex(16)
    headers = {"content-type": "application/json", "x-kgos-peer": cfg.name, "x-kgos-timestamp": stamp,
               "x-kgos-nonce": nonce, "x-kgos-signature": sign_request(secret, "POST", ASK_PATH, stamp, nonce, body)}
    try:
        with httpx.Client(timeout=cfg.timeout, transport=transport) as client, \
                client.stream("POST", url.rstrip("/") + ASK_PATH, content=body, headers=headers) as resp:
            raw = _read_bounded(resp)
            if raw is None:
                return failed(f"the answer is over {MAX_RESPONSE_BYTES:,} bytes; ignored")
            if resp.status_code != 200:
                return failed(f"HTTP {resp.status_code}: {_detail(raw)}")
            expected = sign_response(secret, nonce, resp.headers.get("x-kgos-timestamp", ""), raw)
            if not hmac.compare_digest(expected, resp.headers.get("x-kgos-signature", "")):
                return failed("the answer's signature does not match: ignored")
    except httpx.TimeoutException:
        return failed(f"no answer within {cfg.timeout:g} s")
    except httpx.HTTPError as exc:
        return failed(f"unreachable ({type(exc).__name__})")
    return _parsed(peer, expert, raw, started)


def _read_bounded(resp: httpx.Response) -> bytes | None:
    chunks, size = [], 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _detail(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("detail", ""))[:200]
    except (ValueError, AttributeError):
        return raw[:200].decode("utf-8", "replace")


def _parsed(peer: str, expert: str, raw: bytes, started: float) -> RemoteAnswer:
    latency = (time.monotonic() - started) * 1000
    try:
        doc = json.loads(raw)
        sources = tuple(s for s in doc.get("sources", []) if isinstance(s, dict))[:MAX_REMOTE_SOURCES]
        answer = str(doc.get("answer", ""))
    except (ValueError, AttributeError):
        return RemoteAnswer(peer, expert, "", (), latency, "the answer is not JSON")
    return RemoteAnswer(peer, expert, answer, sources, latency)


def remote_sources(answer: RemoteAnswer) -> list[SourceNode]:
    """The remote sources as context nodes citable as ``peer@kg:node``."""
    from .context import SourceNode
    out = []
    for s in answer.sources:
        node_id, kg = str(s.get("id", ""))[:200], str(s.get("source_kg", ""))[:64]
        if not node_id or not NAME_RE.fullmatch(kg):
            continue
        score = s.get("score") if isinstance(s.get("score"), (int, float)) else 0.5
        out.append(SourceNode(f"{answer.peer}@{kg}", node_id, str(s.get("name", node_id))[:300],
                              str(s.get("type", "entity"))[:64], str(s.get("description", ""))[:1000],
                              REMOTE_SCORE * float(score), f"federated:{answer.peer}/{answer.expert}"))
    return out


def delegates_due(delegates: list[Delegate], local_hits: int) -> list[Delegate]:
    return [d for d in delegates if d.when == "always" or local_hits == 0]
