"""Shared plumbing of the HTTP chat providers: one streamed request, its failures, its events.

The providers speak to their services through a transport: the official SDKs for OpenAI-compatible
servers (``openai``) and Anthropic (``anthropic``, :mod:`._sdk`), httpx with ``httpx-sse`` for Gemini
(:mod:`.gemini`, see there why). Each provider says how to build the request (``_request``), its
transport sends it and decodes the events (``_exchange``); this module holds what is the same for
all three:

- ``timeout`` bounds connecting and every read (a stalled stream raises :class:`ProviderTimeout`);
- HTTP 4xx/5xx raise :class:`ProviderError` with the status and the service's own message (from its
  JSON error body when there is one); a 429 or 503 is retried once, after a short wait (its
  ``Retry-After`` when given), before any byte of an answer arrived — never once the stream has
  started. The SDKs' own retries are off, so this is the only retry policy;
- a refused connection names the URL and what to check; a body that is not an event stream (HTML,
  JSON, garbage) or that ends before the protocol's terminator raises :class:`ProviderError`;
- ``cancel`` is checked after every piece; once set, the response is closed and the stream ends quietly.

Every ProviderError raised here has ``http_status``: the service's HTTP status, or None when it
never answered one. API keys travel only in request headers and are scrubbed from every message.
"""

from __future__ import annotations

import http
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

from ..errors import InvalidArgument, MissingDependency
from .base import ChatProvider, Message, ProviderError, ProviderTimeout, StreamItem, ToolCall, ToolSpec

log = logging.getLogger("kgos.llm")

_RETRY_STATUSES = (429, 503)
_TAG = re.compile(r"<[^>]*>")


@dataclass
class StreamState:
    """What the transport and a provider's decoder learn about one response."""

    done: bool = False  #: the protocol's terminator arrived ([DONE], message_stop, finishReason)
    cancelled: bool = False
    events: int = 0


class HTTPStatus(Exception):
    """A transport got an HTTP error status before the stream started."""

    def __init__(self, status: int, body: bytes, retry_after: str | None) -> None:
        super().__init__(status)
        self.status, self.body, self.retry_after = status, body, retry_after


class HTTPChatProvider(ChatProvider):
    """A chat model behind a streaming HTTP API. Subclasses set ``service`` and implement ``_request``
    and ``_exchange`` (a transport: :class:`._sdk.SDKChatProvider`, or Gemini's own)."""

    service = "chat service"
    supports_tools = True
    #: the package its transport needs (import name, pip name) and the kgos extra that installs it
    package, pip_name, extra = "", "", ""
    #: seconds before the one retry of a 429/503 (a ``Retry-After`` up to ``max_retry_wait`` wins)
    retry_backoff = 0.5
    max_retry_wait = 5.0

    def __init__(self, *, model: str, base_url: str, timeout: float, secret: str | None,
                 unreachable_hint: str) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgument(f"{self.service} needs a model name")
        if self.package and not _installed(self.package):  # found, not imported: construction stays cheap
            raise MissingDependency(self.pip_name or self.package, self.extra)
        self.model = model.strip()
        self.base_url = check_base_url(base_url)
        self.timeout = check_timeout(timeout)
        self._secret = secret or None
        self._hint = unreachable_hint

    # -- what subclasses provide ---------------------------------------------------------------

    def _request(self, messages: list[Message], system: str | None, max_tokens: int,
                 tools: list[ToolSpec]) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(url, extra headers, JSON payload) of the streaming request."""
        raise NotImplementedError

    def _exchange(self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float,
                  state: StreamState, cancel: threading.Event | None) -> Generator[StreamItem, None, None]:
        """Send the request and yield the answer's items; raise :class:`HTTPStatus` for an error status
        (before the stream started) and call ``_timed_out`` / ``_unreachable`` / ``_broken`` for the
        transport's failures."""
        raise NotImplementedError

    # -- the shared loop -------------------------------------------------------------------------

    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float | None = None, tools: Sequence[ToolSpec] | None = None,
               cancel: threading.Event | None = None, grounding: Any = None) -> Iterator[StreamItem]:
        """Stream one answer. ``timeout`` (seconds, default: the provider's) bounds connecting and
        each read; ``grounding`` is ignored (the model reads ``system``)."""
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidArgument(f"max_tokens must be a positive integer, got {max_tokens!r}")
        t = self.timeout if timeout is None else check_timeout(timeout)
        url, headers, payload = self._request(list(messages), system, max_tokens, list(tools or ()))
        if _is_set(cancel):
            return
        log.debug("POST %s (model %s, %d messages)", display_url(url), self.model, len(messages))
        for attempt in range(2):
            state = StreamState()
            try:
                yield from self._checked(self._exchange(url, headers, payload, t, state, cancel), state, cancel)
                return
            except HTTPStatus as err:
                if attempt == 0 and err.status in _RETRY_STATUSES:
                    delay = _retry_delay(err.retry_after, self.retry_backoff, self.max_retry_wait)
                    if _wait(delay, cancel):
                        return
                    continue
                self._fail_http(url, err.status, err.body)

    def complete(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
                 timeout: float | None = None) -> str:
        """The whole answer as one string (tool calls are not offered)."""
        pieces = self.stream(messages, system=system, max_tokens=max_tokens, timeout=timeout)
        return "".join(p for p in pieces if isinstance(p, str))

    def _checked(self, items: Generator[StreamItem, None, None], state: StreamState,
                 cancel: threading.Event | None) -> Iterator[StreamItem]:
        """``items`` until ``cancel`` is set; a stream that ends before its terminator is an error."""
        try:
            for item in items:
                yield item
                if _is_set(cancel):
                    state.cancelled = True
                    return
        finally:
            items.close()  # closes the response: the server sees the connection end
        if state.done or state.cancelled:
            return
        if not state.events:
            self.fail("answered with a body that is not a server-sent event stream: (no event)")
        self.fail(f"stopped mid-answer: the stream ended without {self._terminator()}")

    def check_content_type(self, content_type: str, read: Callable[[], bytes], url: str) -> None:
        """A ProviderError, quoting the body, unless ``content_type`` is an event stream."""
        ctype = content_type.lower()
        if "event-stream" in ctype:
            return
        if "text/html" in ctype:
            text = _snippet(_TAG.sub(" ", read().decode("utf-8", "replace")))
            self.fail(f"answered with an HTML page instead of an event stream (is {display_url(url)} "
                      f"the right endpoint?): {text}")
        if "application/json" in ctype:
            self.fail(f"answered with JSON instead of an event stream: {service_message(read())}")
        head = _snippet(read().decode("utf-8", "replace")[:2000]) or "(empty body)"
        self.fail(f"answered with a body that is not a server-sent event stream: {head}")

    # -- failures of a transport -----------------------------------------------------------------

    def _timed_out(self, url: str, t: float, state: StreamState, *, connecting: bool) -> NoReturn:
        if connecting:
            what = f"did not accept a connection within {t:g} s"
        elif state.events:
            what = f"stopped sending for more than {t:g} s mid-answer"
        else:
            what = f"did not start answering within {t:g} s"
        raise _error(ProviderTimeout, self._scrub(f"{self.service} at {display_url(url)} {what}")) from None

    def _unreachable(self, url: str, reason: str) -> NoReturn:
        raise _error(ProviderError, self._scrub(
            f"cannot reach {self.service} at {display_url(url)} ({_snippet(reason, 200)}): {self._hint}"
        )) from None

    def _broken(self, url: str, state: StreamState, reason: str) -> NoReturn:
        where = "mid-answer" if state.events else "before answering"
        raise _error(ProviderError, self._scrub(
            f"the connection to {self.service} at {display_url(url)} broke {where}: {_snippet(reason, 200)}"
        )) from None

    def not_json(self, data: str) -> NoReturn:
        self.fail(f"sent an event whose data is not JSON: {_snippet(data)}")

    # -- messages --------------------------------------------------------------------------------

    def fail(self, what: str, status: int | None = None) -> NoReturn:
        """Raise a ProviderError saying that this service ``what`` (key scrubbed)."""
        raise _error(ProviderError, self._scrub(f"{self.service} ({self.model}) {what}"), status)

    def _fail_http(self, url: str, status: int, raw: bytes) -> NoReturn:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:  # a status outside the standard ones (Anthropic's 529 Overloaded)
            reason = "Error"
        self.fail(f"answered HTTP {status} {reason} at {display_url(url)}: {service_message(raw)}", status)

    def _terminator(self) -> str:
        return "its end marker"

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


# -- helpers shared by the providers ---------------------------------------------------------------


def check_timeout(timeout: Any) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise InvalidArgument(f"timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


def check_base_url(url: str) -> str:
    url = (url or "").strip().rstrip("/")
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise InvalidArgument(f"base URL must be an http(s) URL, got {display_url(url)!r}")
    return url


def display_url(url: str) -> str:
    """``url`` without credentials or query string, fit for a message."""
    try:
        p = urlsplit(url)
        netloc = p.netloc.rpartition("@")[2]
        return urlunsplit((p.scheme, netloc, p.path, "", ""))
    except ValueError:
        return "(invalid URL)"


def service_message(raw: bytes | str) -> str:
    """The human message of an error body: ``error.message`` (+ type/status) of a JSON body —
    including Gemini's one-element array — else the body's text, shortened."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        body = json.loads(text)
    except ValueError:
        return _snippet(_TAG.sub(" ", text)) or "(empty body)"
    if isinstance(body, list) and body:
        body = body[0]
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        msg = err.get("message") or err.get("detail")
        kind = err.get("type") or err.get("status") or err.get("code")
        if isinstance(msg, str) and msg:
            return _snippet(f"{msg} ({kind})" if isinstance(kind, str) and kind else msg)
    return _snippet(json.dumps(err) if not isinstance(err, str) else err)


def load_json(provider: HTTPChatProvider, data: str) -> Any:
    """One event's JSON data, or a ProviderError quoting it."""
    try:
        return json.loads(data)
    except ValueError:
        provider.not_json(data)


def parse_arguments(provider: HTTPChatProvider, name: str, raw: str | Mapping[str, Any] | None) -> dict:
    """A tool call's arguments: a JSON object (streamed as text pieces, or already parsed)."""
    if raw is None or raw == "":
        return {}
    value: Any = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            provider.fail(f"called tool {name!r} with arguments that are not valid JSON: {_snippet(raw)}")
    if not isinstance(value, Mapping):
        provider.fail(f"called tool {name!r} with arguments that are not a JSON object: {_snippet(str(raw))}")
    return dict(value)


def tool_result_object(content: str) -> dict[str, Any]:
    """A tool result as a JSON object: the content itself if it is one, else ``{"output": content}``."""
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"output": content}


def system_text(system: str | None, messages: Iterable[Message]) -> str | None:
    """``system`` and the content of any ``role="system"`` messages, joined by blank lines."""
    parts = [system] if system else []
    parts += [m.content for m in messages if m.role == "system" and m.content]
    return "\n\n".join(parts) or None


def check_roles(messages: Iterable[Message], service: str, *, need_tool_id: bool = True) -> None:
    """InvalidArgument for an unknown role, or a tool result that does not say which call it answers."""
    for i, m in enumerate(messages):
        if m.role not in ("user", "assistant", "system", "tool"):
            raise InvalidArgument(f"messages[{i}]: unknown role {m.role!r} (user|assistant|system|tool)")
        if m.role == "tool" and need_tool_id and not m.tool_call_id:
            raise InvalidArgument(f"messages[{i}]: a tool message needs the tool_call_id it answers "
                                  f"({service} matches results to calls by id)")


def tool_call_or_fail(provider: HTTPChatProvider, call_id: str | None, name: str | None,
                      raw: str | Mapping[str, Any] | None, fallback_id: str) -> ToolCall:
    if not name:
        provider.fail("sent a tool call without a function name")
    return ToolCall(id=call_id or fallback_id, name=name, arguments=parse_arguments(provider, name, raw))


def _error(cls: type[ProviderError], message: str, http_status: int | None = None) -> ProviderError:
    """``cls(message)`` with ``http_status``: the service's HTTP status, None if it never answered one."""
    err = cls(message)
    err.http_status = http_status  # type: ignore[attr-defined]
    return err


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _retry_delay(retry_after: str | None, backoff: float, cap: float) -> float:
    try:
        return min(max(float(retry_after or ""), 0.0), cap)
    except ValueError:
        return backoff


def _wait(seconds: float, cancel: threading.Event | None) -> bool:
    """Sleep ``seconds``, waking when ``cancel`` is set; True if it was."""
    if cancel is None:
        time.sleep(seconds)
        return False
    return cancel.wait(seconds)


def _installed(module: str) -> bool:
    from importlib.util import find_spec
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules (tests) reads as absent
        return False


def _is_set(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()
