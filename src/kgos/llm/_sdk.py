"""The transport of the providers whose service publishes an official Python SDK: OpenAI (and every
OpenAI-compatible server) through ``openai``, Anthropic through ``anthropic``. Each is an extra
(``kgos[openai]``, ``kgos[anthropic]``), imported on the first request; without it, creating the
provider raises :class:`~kgos.errors.MissingDependency` naming the extra.

Both SDKs are generated the same way (Stainless) and have the same shape, which is all this module
relies on: a client taking ``base_url``, ``timeout`` and ``max_retries`` (0 here: the one retry of a
429/503 is the shared loop's, kgos.llm._http); ``with_streaming_response.create(...)``, which raises
``APIStatusError`` for an error status and otherwise gives the response, whose ``parse()`` is a
stream of events; ``APITimeoutError`` and ``APIConnectionError`` for the transport; ``APIError`` for
an error event inside the stream. The SDK speaks HTTP, splits the server-sent events and decodes
their JSON; the provider turns the events (as dicts, ``to_dict()``) into text and tool calls.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Generator, Iterator
from contextlib import AbstractContextManager
from typing import Any

from ..errors import MissingDependency
from ._http import HTTPChatProvider, HTTPStatus, StreamState, service_message
from .base import StreamItem

__all__ = ["SDKChatProvider"]


class SDKChatProvider(HTTPChatProvider):
    """A provider whose requests go through its service's official SDK."""

    _client: Any = None

    # -- what subclasses provide ---------------------------------------------------------------

    def _make_client(self, sdk: Any) -> Any:
        """The SDK's client for ``base_url`` and the key, with its own retries off."""
        raise NotImplementedError

    def _open(self, sdk: Any, client: Any, payload: dict[str, Any], headers: dict[str, str],
              timeout: float) -> AbstractContextManager[Any]:
        """``client....with_streaming_response.create(**payload, ...)``."""
        raise NotImplementedError

    def _decode(self, events: Iterator[dict[str, Any]], state: StreamState) -> Iterator[StreamItem]:
        """Yield the text pieces, tool calls and the closing Usage; set ``state.done`` at the end marker."""
        raise NotImplementedError

    # -- the transport ---------------------------------------------------------------------------

    def sdk(self) -> Any:
        """The SDK module, imported on first use (MissingDependency naming the extra without it)."""
        try:
            return importlib.import_module(self.package)
        except ImportError:
            raise MissingDependency(self.package, self.extra) from None

    def _exchange(self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float,
                  state: StreamState, cancel: threading.Event | None) -> Generator[StreamItem, None, None]:
        sdk = self.sdk()
        if self._client is None:
            self._client = self._make_client(sdk)
        opening = self._open(sdk, self._client, payload, headers, timeout)
        try:
            response = opening.__enter__()
        except sdk.APIStatusError as exc:
            raise HTTPStatus(exc.status_code, _body(exc.response), exc.response.headers.get("retry-after")) from None
        except sdk.APIConnectionError as exc:  # APITimeoutError included
            self._transport_failed(sdk, exc, url, timeout, state, opening=True)
        try:
            raw = response.http_response
            self.check_content_type(raw.headers.get("content-type", ""), raw.read, url)
            yield from self._decode(_dicts(response.parse(), state), state)
        except sdk.APIConnectionError as exc:
            self._transport_failed(sdk, exc, url, timeout, state, opening=False)
        except sdk.APIError as exc:  # an error event inside a stream that had started (HTTP 200)
            self.fail(f"reported an error mid-stream: {service_message(_error_json(exc))}")
        except json.JSONDecodeError as exc:
            self.not_json(exc.doc)
        except Exception as exc:  # httpx's own, raised unwrapped from a stream by some SDKs (anthropic 2.x)
            if "TimeoutException" in _names(exc):
                self._timed_out(url, timeout, state, connecting=False)
            if "TransportError" in _names(exc):
                self._broken(url, state, str(exc) or type(exc).__name__)
            raise
        finally:
            opening.__exit__(None, None, None)  # closes the response: the server sees the connection end

    def _transport_failed(self, sdk: Any, exc: Exception, url: str, timeout: float, state: StreamState, *,
                          opening: bool) -> None:
        cause = _cause_names(exc)
        if isinstance(exc, sdk.APITimeoutError):
            self._timed_out(url, timeout, state, connecting=opening and "ConnectTimeout" in cause)
        if opening and "ConnectError" in cause:
            self._unreachable(url, str(exc.__cause__) or "connection refused")
        self._broken(url, state, str(exc.__cause__ or exc))


def _dicts(stream: Any, state: StreamState) -> Iterator[dict[str, Any]]:
    """The SDK's typed events as the plain dicts they were sent as, counted in ``state``."""
    for event in stream:
        state.events += 1
        yield event.to_dict()


def _body(response: Any) -> bytes:
    try:
        return bytes(response.content)
    except Exception:  # noqa: BLE001 - a body that could not be read: the status says enough
        return b""


def _error_json(exc: Any) -> str:
    """An error event's body as JSON with an ``error`` key, for ``service_message``."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and "error" in body:
        return json.dumps(body)
    return json.dumps({"error": body if body is not None else {"message": str(exc)}})


def _names(exc: BaseException) -> set[str]:
    """Class names of ``exc`` and its bases: the SDKs ship their own httpx (httpx, httpx2), whose
    ConnectError / ConnectTimeout / TransportError are matched by name, not by import."""
    return {c.__name__ for c in type(exc).__mro__}


def _cause_names(exc: BaseException) -> set[str]:
    """:func:`_names` of what ``exc`` wraps (the SDK's APIConnectionError wraps httpx's error)."""
    cause = exc.__cause__ or exc.__context__
    return _names(cause) if cause is not None else set()
