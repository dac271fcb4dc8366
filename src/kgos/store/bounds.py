"""Bounds every file reader enforces while it parses, so no input can exhaust memory.

Why a reader-level bound: a parser's memory is not linear in nesting. ijson's C backend builds the
path prefix of every event of a 64 KB read before returning the first one, so 64 KB of ``[`` made
65,536 prefixes of up to 320 KB each (10.6 GB); and a tree builder keeps every open level. Checking
the bytes before any parser sees them bounds all of them at once:

- ``MAX_DOCUMENT_DEPTH``: objects and arrays (JSON) or elements (XML) nest at most 64 levels: a
  record's properties may nest 32 (``limits.MAX_PROPERTY_DEPTH``), plus the document around them;
- ``MAX_STRING_BYTES``: one JSON string, XML text or tag, CSV field or line, or JSON Lines line is
  at most 16 MiB.

``BoundedReader`` wraps a binary file and refuses, with ``InputTooLarge``, the read that would
cross either bound, before handing its bytes on. The scan is vectorised (numpy over each read, no
Python per byte): quotes that are not escaped split strings from structure, and only brackets
outside strings count.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

import numpy as np

from ..errors import InputTooLarge

MAX_DOCUMENT_DEPTH = 64
MAX_STRING_BYTES = 16 * 1024 * 1024

_QUOTE, _BACKSLASH = 0x22, 0x5C
# bytes.translate (C, ~1 GB/s) marks the bytes that matter: 1 opens, 2 closes, 3 a quote, 0 the rest;
# one nonzero() then finds them all
_MARKS = bytes(1 if b in b"[{" else 2 if b in b"]}" else 3 if b == _QUOTE else 0 for b in range(256))


def too_deep(offset: int) -> InputTooLarge:
    return InputTooLarge(f"the document nests deeper than {MAX_DOCUMENT_DEPTH} levels of objects and arrays "
                         f"(at byte {offset:,}); no KG record needs that: flatten the data or store the "
                         "nested part as a JSON string")


def too_long(what: str, offset: int) -> InputTooLarge:
    return InputTooLarge(f"{what} is longer than {MAX_STRING_BYTES:,} bytes (at byte {offset:,}); store "
                         "large content in a file and keep its path or URL in the KG")


class JsonScan:
    """Nesting depth and open-string length of a JSON byte stream fed in pieces; ``feed`` raises
    InputTooLarge as soon as a piece crosses a bound."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.string_bytes = 0  # bytes of the string still open at the end of the last piece
        self.backslashes = 0  # trailing backslashes of the last piece (an escape may span pieces)
        self.offset = 0

    def feed(self, data: bytes) -> None:
        if not data:
            return
        arr = np.frombuffer(data, dtype=np.uint8)
        marks = np.frombuffer(data.translate(_MARKS), dtype=np.uint8)
        found = (marks != 0).nonzero()[0]  # nonzero on a bool array is several times faster
        kinds = marks[found]
        quotes = self._real_quotes(data, arr, found[kinds == 3])
        self._check_strings(quotes, len(data))
        self._check_depth(found[kinds != 3], kinds[kinds != 3], quotes)
        self.in_string ^= bool(len(quotes) & 1)
        tail = len(data) - len(data.rstrip(b"\\"))
        self.backslashes = tail + self.backslashes if tail == len(data) else tail
        self.offset += len(data)

    def _real_quotes(self, data: bytes, arr: np.ndarray, quotes: np.ndarray) -> np.ndarray:
        """Positions of the quotes that open or close a string: those after an even run of backslashes
        (a run reaching the start of the piece continues the previous piece's tail). Vectorised, so a
        piece of nothing but escaped quotes costs what any piece costs."""
        if not len(quotes) or (b"\\" not in data and not self.backslashes):
            return quotes
        positions = np.arange(len(arr))
        last_other = np.maximum.accumulate(np.where(arr != _BACKSLASH, positions, -1))
        before = quotes - 1
        runs = np.where(before >= 0, before - last_other[np.maximum(before, 0)], 0)
        reaches_start = (before < 0) | (last_other[np.maximum(before, 0)] < 0)
        runs = runs + np.where(reaches_start, self.backslashes, 0)
        return quotes[(runs & 1) == 0]

    def _check_strings(self, quotes: np.ndarray, n: int) -> None:
        opened = self.in_string
        if opened:
            end = int(quotes[0]) if len(quotes) else n
            if self.string_bytes + end > MAX_STRING_BYTES:
                raise too_long("a string", self.offset + end)
        closed = quotes[1:] if opened else quotes  # pairs (open, close) of the strings inside the piece
        pairs = len(closed) // 2
        if pairs and int((closed[1:2 * pairs:2] - closed[0:2 * pairs:2]).max()) > MAX_STRING_BYTES:
            raise too_long("a string", self.offset + n)
        if not opened ^ bool(len(quotes) & 1):
            self.string_bytes = 0
            return
        self.string_bytes = self.string_bytes + n if opened and not len(quotes) else n - int(quotes[-1])
        if self.string_bytes > MAX_STRING_BYTES:
            raise too_long("a string", self.offset + n)

    def _check_depth(self, brackets: np.ndarray, kinds: np.ndarray, quotes: np.ndarray) -> None:
        if not len(brackets):
            return
        # a bracket is structure when an even number of real quotes precede it (odd if a string is open)
        before = np.searchsorted(quotes, brackets)
        keep = (before & 1) == int(self.in_string)
        outside = brackets[keep]
        if not len(outside):
            return
        levels = self.depth + np.cumsum(np.where(kinds[keep] == 1, 1, -1))
        deepest = int(levels.max())
        if deepest > MAX_DOCUMENT_DEPTH:
            at = int(outside[int(np.argmax(levels > MAX_DOCUMENT_DEPTH))])
            raise too_deep(self.offset + at)
        self.depth = int(levels[-1])


class BoundedReader:
    """A binary file whose reads are checked by a ``JsonScan`` before they are returned."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.scan: JsonScan | XmlScan = JsonScan()

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.scan.feed(data)
        return data

    def readline(self, limit: int = -1) -> bytes:
        return self.f.readline(limit)

    def seek(self, offset: int, whence: int = 0) -> int:
        if offset != 0 or whence != 0:
            raise OSError("a bounded reader seeks only to its start")
        self.scan = type(self.scan)()
        return self.f.seek(0)

    def close(self) -> None:
        self.f.close()

    def __enter__(self) -> BoundedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class XmlScan:
    """The longest run of bytes without a ``<`` in an XML stream: a text node or a tag (attribute
    values cannot hold a literal ``<``) longer than ``MAX_STRING_BYTES`` is refused. Element depth is
    counted by the parsers' own events (graphml.py), which know what a tag is."""

    def __init__(self) -> None:
        self.run = 0  # bytes since the last '<'
        self.offset = 0

    def feed(self, data: bytes) -> None:
        first, last = data.find(b"<"), data.rfind(b"<")
        if first < 0:
            self.run += len(data)
        else:
            # runs wholly inside a piece are shorter than the piece, which parsers read in KBs
            longest = max(self.run + first, len(data) if len(data) > MAX_STRING_BYTES else 0)
            if longest > MAX_STRING_BYTES:
                raise too_long("a text or tag", self.offset + first)
            self.run = len(data) - last - 1
        if self.run > MAX_STRING_BYTES:
            raise too_long("a text or tag", self.offset + len(data))
        self.offset += len(data)


class _XmlReader(BoundedReader):
    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.scan = XmlScan()


def open_xml(path: Path) -> IO[bytes]:
    """A binary XML file (gunzipped if ``*.gz``) whose reads are checked by an ``XmlScan``."""
    from .formats import open_binary
    return _XmlReader(open_binary(path))  # type: ignore[return-value]
