"""Server-Sent Events: split a byte stream into lines and lines into ``(event, data)`` pairs.

Follows the WHATWG HTML spec, "Server-sent events", section "Interpreting an event stream"
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):

- lines end in CRLF, LF or CR; a leading UTF-8 BOM is dropped; invalid UTF-8 is replaced;
- a line starting with ``:`` is a comment; ``field: value`` loses one space after the colon; a line
  without a colon is a field with an empty value; unknown fields (and ``id`` / ``retry``, which only
  matter to a reconnecting browser) are ignored;
- ``data`` lines accumulate, joined with ``"\\n"``; ``event`` sets the type (default ``"message"``);
- a blank line dispatches the event, unless no ``data`` line came; an event still pending when the
  stream ends is discarded (it may have been cut off).

Used by the OpenAI-compatible, Anthropic and Gemini providers, which all stream this way.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["SSEEvent", "iter_events", "iter_lines", "parse_sse"]

_EOL = re.compile(r"\r\n|\r|\n")


class SSEEvent(NamedTuple):
    """One dispatched event: its type (``"message"`` unless an ``event:`` field said otherwise) and
    its data (the ``data:`` lines joined with ``"\\n"``)."""

    event: str
    data: str


def iter_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Decode ``chunks`` as UTF-8 and yield complete lines without their terminators.

    CR, LF and CRLF all end a line, also when a CRLF pair is split across two chunks. A final line
    without a terminator is yielded too (the event parser decides what an unterminated event is worth).
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    buf = ""
    first = True
    skip_lf = False  # the previous chunk ended in CR: a LF starting this one belongs to it
    for chunk in chunks:
        text = decoder.decode(chunk)
        if first and text:
            text = text.removeprefix("\ufeff")
            first = False
        if skip_lf and text:
            text = text.removeprefix("\n")
            skip_lf = False
        if "\n" not in text and "\r" not in text:
            buf += text
            continue
        lines, buf, skip_lf = _split(buf + text)
        yield from lines
    buf += decoder.decode(b"", final=True)
    if buf:
        yield buf


def _split(buf: str) -> tuple[list[str], str, bool]:
    """Complete lines of ``buf``, the unterminated rest, and whether ``buf`` ended on a bare CR."""
    parts = _EOL.split(buf)
    rest = parts.pop()
    return parts, rest, bool(parts) and not rest and buf.endswith("\r")


def iter_events(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Interpret ``lines`` (without terminators) as an event stream and yield each dispatched event."""
    data: list[str] = []
    event = ""
    for line in lines:
        if not line:
            if data:
                yield SSEEvent(event or "message", "\n".join(data))
            data, event = [], ""
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value


def parse_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """The events of a raw byte stream: ``iter_events(iter_lines(chunks))``."""
    return iter_events(iter_lines(chunks))
