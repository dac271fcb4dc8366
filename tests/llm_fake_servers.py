"""Fake streaming LLM servers on loopback for tests/test_llm_providers.py.

A :class:`FakeServer` is a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) that records every request
(path, query, headers, JSON body) and answers it with a *script*: a function of ``(reply, request)``
that writes the response through :class:`Reply` — status and headers, then body pieces, each sent and
flushed at once (chunked transfer encoding by default), with pauses where the test wants them.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """The response side of one request, for scripts."""

    handler: BaseHTTPRequestHandler
    server: FakeServer
    chunked: bool = True
    broken: bool = field(default=False)

    def start(self, status: int = 200, content_type: str = "text/event-stream", *,
              chunked: bool = True, headers: dict[str, str] | None = None) -> None:
        self.chunked = chunked
        h = self.handler
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Connection", "close")
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.flush()

    def send(self, data: bytes | str) -> bool:
        """Write and flush one piece; False (and ``server.client_closed`` set) if the client is gone."""
        raw = data.encode() if isinstance(data, str) else data
        try:
            if self.chunked:
                self.handler.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
            else:
                self.handler.wfile.write(raw)
            self.handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.broken = True
            self.server.client_closed.set()
            return False
        return True

    def end(self) -> None:
        if self.chunked and not self.broken:
            self.send_raw(b"0\r\n\r\n")

    def send_raw(self, raw: bytes) -> None:
        try:
            self.handler.wfile.write(raw)
            self.handler.wfile.flush()
        except OSError:
            self.server.client_closed.set()

    def json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        h = self.handler
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        h.send_header("Connection", "close")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(raw)
        h.wfile.flush()

    def wait(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops."""
        self.server.stopping.wait(seconds)


Script = Callable[[Reply, Recorded], None]


class FakeServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.script: Script = lambda reply, req: reply.json(404, {"error": {"message": "no script"}})
        self.client_closed = threading.Event()
        self.stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _handler_for(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
            parts = urlsplit(self.path)
            req = Recorded("POST", parts.path, parse_qs(parts.query),
                           {k.lower(): v for k, v in self.headers.items()}, body)
            server.requests.append(req)
            server.script(Reply(self, server), req)
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event (``data`` JSON-encoded unless already a string)."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return (head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()


def stream_script(events: Iterable[bytes], *, delay: float = 0.0, end: bool = True, chunked: bool = True,
                  content_type: str = "text/event-stream") -> Script:
    """Answer 200 with ``events``, one flushed write each (``delay`` seconds apart)."""
    events = list(events)

    def run(reply: Reply, req: Recorded) -> None:
        reply.start(200, content_type, chunked=chunked)
        for ev in events:
            if not reply.send(ev):
                return
            if delay:
                reply.wait(delay)
        if end:
            reply.end()

    return run


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(predicate: Callable[[], bool], timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
