"""Bearer token, request size limits, CORS and the Host/Origin checks (``origin.py``), as pure
ASGI middleware (so they also cover streaming responses and never buffer a body).

- **Token.** With ``settings.token`` set, every request needs ``Authorization: Bearer <token>``
  (compared in constant time); otherwise 401 with ``WWW-Authenticate: Bearer``. CORS preflights
  (``OPTIONS``) pass, so a browser can learn that it must send the header.
- **Body size.** A declared ``Content-Length`` above the limit is refused with 413 before the route
  runs; a chunked body is counted as it streams, and the request is answered with 413 as soon as
  it passes the limit. KG uploads (``POST /api/kg/{db_id}/import``) get ``max_upload_bytes``, every
  other route ``max_body_bytes``.
- **CORS** is off unless ``settings.cors_origins`` names origins; then Starlette's ``CORSMiddleware``
  answers preflights and adds the headers (outside the token check, so a 401 is readable too).
"""

from __future__ import annotations

import hmac
import re
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import send_error
from .origin import HostPolicy, SiteGuard, header

if TYPE_CHECKING:
    from .runtime import ServerSettings

UPLOAD_PATH = re.compile(r"^/api/kg/[^/]+/import/?$")
STUDIO_PATH = re.compile(r"^/(studio/.*)?$")
FEDERATION_PREFIX = "/api/federation/"
"""The studio's page and files: no data, and a browser cannot send a bearer header when it opens a
page, so they load without the token; the studio then asks for it and sends it with every API call."""


class BodyTooLarge(Exception):
    """Raised from ``receive`` once a streamed body passes its limit."""


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, if there is one."""
    scheme, _, token = (header(scope, b"authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def declared_length(scope: Scope) -> int | None:
    """The request's Content-Length (None when absent or not a number)."""
    try:
        return int(header(scope, b"content-length") or "")
    except ValueError:
        return None


class SecurityMiddleware:
    """Token check and body size limits in front of the app (see the module docstring)."""

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self.token = settings.token.encode() if settings.token else None

    def authorized(self, scope: Scope) -> bool:
        if self.token is None or scope.get("method") == "OPTIONS":
            return True
        if scope.get("method") in ("GET", "HEAD") and STUDIO_PATH.match(scope.get("path", "")):
            return True
        if scope.get("path", "").startswith(FEDERATION_PREFIX):
            return True  # peers sign every request with their shared key (kgos.experts.federation)
        given = bearer_token(scope)
        return given is not None and hmac.compare_digest(given.encode(), self.token)

    def limit(self, scope: Scope) -> int:
        if UPLOAD_PATH.match(scope.get("path", "")):
            return self.settings.max_upload_bytes
        return self.settings.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and not self.authorized(scope):
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.authorized(scope):
            await send_error(send, 401, "missing or invalid bearer token: send 'Authorization: Bearer <token>' "
                             "with the server's KGOS_API_TOKEN", "Unauthorized", [(b"www-authenticate", b"Bearer")])
            return
        limit = self.limit(scope)
        length = declared_length(scope)
        if length is not None and length > limit:
            await send_error(send, 413, too_large(length, limit), "PayloadTooLarge")
            return
        await LimitedRequest(self.app, limit).run(scope, receive, send)


def too_large(size: int | None, limit: int) -> str:
    seen = f"{size:,} bytes" if size is not None else "the body"
    return f"request body too large: {seen} is over the limit of {limit:,} bytes"


class LimitedRequest:
    """One request whose streamed body is counted. Past the limit, ``receive`` raises
    ``BodyTooLarge`` and whatever the app then tries to send is replaced by one 413."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit
        self.received = 0
        self.exceeded = False
        self.started = False

    async def run(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.limit:
                    self.exceeded = True
                    raise BodyTooLarge()
            return message

        async def guarded_send(message: Message) -> None:
            if self.exceeded:
                if message["type"] == "http.response.start" and not self.started:
                    self.started = True
                    await send_error(send, 413, too_large(None, self.limit), "PayloadTooLarge")
                return
            if message["type"] == "http.response.start":
                self.started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except BodyTooLarge:
            if not self.started:
                self.started = True
                await send_error(send, 413, too_large(None, self.limit), "PayloadTooLarge")


def install(app: FastAPI, settings: ServerSettings) -> None:
    """Add the middleware: security inside, CORS (when configured) outside it, and the Host and
    Origin checks of ``origin.SiteGuard`` outermost (a refused request reaches nothing)."""
    origins = [o if o == "*" else o.rstrip("/").lower() for o in settings.cors_origins]
    app.add_middleware(SecurityMiddleware, settings=settings)
    if origins:
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_credentials=False,
                           allow_methods=["*"], allow_headers=["*"], max_age=600)
    app.add_middleware(SiteGuard, hosts=HostPolicy.for_bind(settings.host, settings.allowed_hosts),
                       cors_origins=origins, token_required=bool(settings.token))
