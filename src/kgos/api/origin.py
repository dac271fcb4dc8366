"""Host and Origin checks against DNS rebinding and cross-site requests, as pure ASGI middleware
that any KG-OS server (the HTTP API, later the MCP server and the studio) wraps around its app.

A web page the user visits can make the browser send requests to ``127.0.0.1``; two attacks
follow, and three checks stop them (what Jupyter and the MCP specification do):

- **DNS rebinding** (read anything): the page's own name is re-pointed at 127.0.0.1, so its
  requests are same-origin for the browser but carry the page's name in ``Host``. Every request's
  ``Host`` must be one the server is bound to or was told about (``HostPolicy``); otherwise 400.
  The port is not compared: rebinding needs a foreign *name*, and a forwarded port
  (``ssh -L 9000:127.0.0.1:8765``) must keep working.
- **Cross-site writes** (change anything): a page may POST a form or multipart upload to any
  origin without a CORS preflight. A state-changing request (any method but GET, HEAD and
  OPTIONS) whose ``Origin`` is neither the server's own (``Origin``'s host equals ``Host``) nor a
  configured CORS origin is refused with 403; without ``Origin``, ``Sec-Fetch-Site`` (anything but
  ``same-origin``/``none``) or a foreign ``Referer`` refuses it the same way.
- **Browsers that send none of those** (old ones): a POST without a verified same origin must be
  one no page can send without a preflight: a non-simple ``Content-Type`` (``application/json``),
  an ``Authorization`` header, or the custom header ``X-KGOS-Client`` (any value). curl and
  scripts uploading a multipart file add ``-H 'X-KGOS-Client: curl'``. PUT, PATCH and DELETE
  always need a preflight cross-site, so they pass.

Refusals use the API's one error shape (``{"detail", "error"}``) and say what to configure.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import send_error

CLIENT_HEADER = "X-KGOS-Client"
"""The custom header that marks a POST as not sendable by a cross-site page (any value)."""

HOST_NAME = re.compile(r"^[a-z0-9_.-]+$")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SIMPLE_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
TRUSTED_FETCH_SITES = frozenset({"same-origin", "none"})


def split_host(value: str) -> tuple[str, int | None] | None:
    """``"Name:port"`` -> ``("name", port)``; IPv6 stays in brackets; None when malformed.

    >>> split_host("LocalHost:8765"), split_host("[::1]"), split_host("a:b")
    (('localhost', 8765), ('[::1]', None), None)
    """
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        name, port = name + bracket, rest[1:] if rest.startswith(":") else None
        if not bracket or (rest and port is None):
            return None
    else:
        name, colon, port_text = value.partition(":")
        port = port_text if colon else None
    if not name or (port is not None and not (port.isdigit() and 0 < int(port) < 65536)):
        return None
    if not (is_ip(name) if name.startswith("[") else HOST_NAME.fullmatch(name)):
        return None
    return name, int(port) if port is not None else None


def ip_of(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``name`` spells (IPv6 with or without brackets), or None for a host name."""
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


def is_ip(name: str) -> bool:
    return ip_of(name) is not None


def url_name(host: str) -> str:
    """A bind address as it appears in ``Host`` (IPv6 in brackets, lower case)."""
    host = host.lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def is_wildcard(host: str) -> bool:
    """True for the every-interface binds (``0.0.0.0``, ``::``)."""
    ip = ip_of(host)
    return ip is not None and ip.is_unspecified


@dataclass(frozen=True)
class HostPolicy:
    """Which ``Host`` headers a server answers. ``names``: allowed names (any port); ``pinned``:
    (name, port) pairs allowed on that port only; ``any_ip``: IP literals allowed (wildcard
    binds: a browser that sends an IP as Host went to that IP, which no rebinding can fake)."""

    names: frozenset[str]
    pinned: frozenset[tuple[str, int]] = frozenset()
    any_ip: bool = False

    @classmethod
    def for_bind(cls, host: str, extra: Iterable[str] = ()) -> HostPolicy:
        """The policy of a server bound to ``host``, plus the configured ``extra`` names
        (``name`` or ``name:port``). Loopback and wildcard binds also answer the loopback names;
        a wildcard bind answers any IP literal and this machine's host name as well."""
        names = {url_name(host)}
        wildcard = is_wildcard(host)
        if wildcard or is_loopback(host):
            names.update(LOOPBACK_NAMES)
        if wildcard:
            names.add(socket.gethostname().lower())
        pinned = set()
        for entry in extra:
            parsed = split_host(entry)
            if parsed is None:
                raise ValueError(f"not a host name: {entry!r}")
            if parsed[1] is None:
                names.add(parsed[0])
            else:
                pinned.add((parsed[0], parsed[1]))
        return cls(frozenset(names), frozenset(pinned), any_ip=wildcard)

    def allows(self, host_header: str | None) -> bool:
        parsed = split_host(host_header) if host_header else None
        if parsed is None:
            return False
        name, port = parsed
        return name in self.names or (name, port) in self.pinned or (self.any_ip and is_ip(name))


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``: the only binds that may run without a token."""
    if host.lower() == "localhost":
        return True
    ip = ip_of(host)
    return ip is not None and ip.is_loopback


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case bytes), decoded."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (the form browsers send in ``Origin``); "" if none."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return ""
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""


class SiteGuard:
    """The Host, Origin and write-header checks of the module docstring, in front of ``app``.
    ``cors_origins``: origins allowed besides the server's own (``"*"``: any). ``token_required``:
    a token check follows (every request needs ``Authorization``), so the header rule is left to it
    and a request without a token gets its 401."""

    def __init__(self, app: ASGIApp, hosts: HostPolicy, cors_origins: Iterable[str] = (),
                 token_required: bool = False) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = frozenset(o.rstrip("/").lower() for o in cors_origins)
        self.check_header = not token_required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await send_error(send, *refusal)

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        """(status, detail, error) when the request is refused, else None."""
        host = header(scope, b"host")
        if not self.hosts.allows(host):
            return 400, host_detail(host), "HostNotAllowed"
        if scope["type"] == "http" and scope.get("method", "GET") in SAFE_METHODS:
            return None
        verdict = self.same_site(scope, host or "")
        if verdict is False:
            return 403, ORIGIN_DETAIL, "OriginNotAllowed"
        if verdict is None and self.check_header and scope.get("method") == "POST" and is_simple(scope):
            return 403, HEADER_DETAIL, "HeaderRequired"
        return None

    def same_site(self, scope: Scope, host: str) -> bool | None:
        """True: the request comes from the server's own or a configured origin; False: from
        another site; None: nothing says (no Origin, Sec-Fetch-Site nor Referer)."""
        origin = header(scope, b"origin")
        if origin is not None:
            return self.trusted(origin_of(origin), host)
        fetch_site = header(scope, b"sec-fetch-site")
        if fetch_site is not None:
            return fetch_site.strip().lower() in TRUSTED_FETCH_SITES
        referer = header(scope, b"referer")
        if referer:
            return self.trusted(origin_of(referer), host)
        return None

    def trusted(self, origin: str, host: str) -> bool:
        if not origin:
            return False  # "null" (sandboxed frame, file: page) or garbage
        return origin.partition("://")[2] == host.strip().lower() or origin in self.origins or "*" in self.origins


def is_simple(scope: Scope) -> bool:
    """True when a cross-site page could send this request without a preflight: a CORS-safelisted
    (or no) Content-Type, and neither Authorization nor the custom client header."""
    if header(scope, b"authorization") is not None or header(scope, CLIENT_HEADER.lower().encode()) is not None:
        return False
    content_type = header(scope, b"content-type")
    return content_type is None or content_type.partition(";")[0].strip().lower() in SIMPLE_TYPES


def host_detail(host: str | None) -> str:
    shown = repr(host[:100]) if host else "no Host header"
    return (f"Host {shown} is not a name this server answers to (a guard against DNS rebinding): "
            "use the address it was started on (e.g. 127.0.0.1 or localhost), or start it with "
            "'kgos serve --allowed-host NAME' (or KGOS_ALLOWED_HOSTS=NAME,...) to allow another name")


ORIGIN_DETAIL = ("cross-origin request refused: a state-changing request must come from this server's own "
                 "origin, or from an origin given with 'kgos serve --cors-origin ORIGIN' (or KGOS_CORS_ORIGINS)")
HEADER_DETAIL = (f"a POST without a JSON body must show it is not a cross-site form: send the header "
                 f"'{CLIENT_HEADER}: <any value>' (e.g. curl -H '{CLIENT_HEADER}: curl' -F file=@kg.json ...), "
                 "a bearer token, or a same-origin Origin header")
