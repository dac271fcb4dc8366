"""The items of a top-level array of a JSON object, parsed by orjson a few MB at a time.

ijson hands every parse event to Python (about ten per node record), which made parsing most of the
cost of an import; orjson parses a whole chunk in C. Where a chunk ends is guessed (the last ``},``
read) and the parse proves the guess: JSON reads left to right with one meaning, so ``[`` + the
bytes up to the guess + ``]`` parses only if the guess falls between two items of the array, and
"unexpected content after document" says where the array itself closes. Whatever orjson would read
otherwise than ijson (integers beyond 64 bits, which yajl refuses; text that is not valid JSON or
UTF-8, which each parser reports its own way) hands the rest of the array to ijson, so the items and
the errors are exactly those of ``ijson.items``. Files are read in ijson's 64 KB pieces, so a file
that fails part way (a truncated gzip) fails after the same items. tests/test_import_fastpath.py
compares both readers on tricky and malformed input.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Generator, Iterator
from itertools import islice
from typing import IO, Any

import ijson
import orjson

BLOCK = 1 << 22  # bytes read per chunk (about 25,000 node records)
_HEAD = 1 << 20  # how far the top-level keys are scanned for the array's start
_MAX_ITEM = 1 << 26  # a chunk grows to this without a cut (one huge record) before ijson takes over
_TRIES = 3  # earlier cuts tried when one falls inside a string ('},' in a description)
# yajl refuses integers beyond int64, which orjson reads (as floats beyond uint64): a chunk with a
# run of 19 digits goes to ijson. Digits mapped to '0' and the rest to '.', then one find: 6x
# faster than a regex.
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x2E for i in range(256))
_LONG_RUN = b"0" * 19
_TOKEN = re.compile(rb'\s*("(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+)')
_SPACE = b" \t\r\n"
_AFTER_DOCUMENT = "unexpected content after document"


def array_start(f: IO[bytes], key: str) -> bytes | None:
    """Read the head of ``f`` up to the first top-level ``"key": [`` and return the bytes read after
    the ``[``; None when the head is not the plain case (the array not within the first MB, an
    escaped key): ijson then reads the file from its start."""
    try:
        head = _read(f, _HEAD)
    except _ReadFailed:
        return None
    pos, depth, want = 0, 0, b'"' + key.encode() + b'"'
    last, pending = b"", False
    if not head.lstrip().startswith(b"{"):
        return None
    while (m := _TOKEN.match(head, pos)) is not None:
        token, pos = m.group(1), m.end()
        if pending and depth == 1:
            if token == b"[":
                return head[pos:]
            pending = False
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                return None
        elif token == b":" and depth == 1:
            if b"\\" in last:
                return None
            pending = last == want
        last = token
    return None


def fast_items(f: IO[bytes], key: str, start: bytes) -> Iterator[Any]:
    """The items of the array whose content begins with ``start`` (then ``f``), up to its end."""
    chunks = _chunks(f, start)
    while True:
        try:
            items = next(chunks)
        except StopIteration as stop:
            closed, rest = stop.value
            break
        yield from items
    if not closed:
        yield from _ijson_rest(rest, f, key)


def _chunks(f: IO[bytes], buf: bytes) -> Generator[list[Any], None, tuple[bool, bytes]]:
    """Lists of the items of the array whose content begins with ``buf`` (then ``f``). Returns
    (True, the bytes read after its ``]``) or (False, the bytes from the first item not yielded)
    where orjson must not decide."""
    eof = False
    while True:
        if not eof:
            try:
                data = _read(f, BLOCK)
            except _ReadFailed as exc:  # ijson reads on to the same error, after the same items
                return False, buf + exc.data
            eof = not data
            buf += data
        cut = _last_cut(buf)
        if not eof and cut is None and len(buf) < _MAX_ITEM:
            continue
        done, items, used = _parse_chunk(buf, cut if not eof else None)
        if items is None:
            return False, buf
        yield items
        if done:
            return True, buf[used:]
        buf = buf[used:]


def _parse_chunk(buf: bytes, cut: int | None) -> tuple[bool, list[Any] | None, int]:
    """(array closed, its items, bytes used) for the chunk ``buf``, or items None for ijson."""
    cuts = [cut] if cut is not None else []
    for _ in range(_TRIES - 1):
        if cuts and (earlier := _last_cut(buf, cuts[-1])) is not None:
            cuts.append(earlier)
    for at in cuts or [len(buf)]:
        doc = b"[" + buf[:at] + (b"]" if cuts else b"")
        try:
            items = orjson.loads(doc)
        except orjson.JSONDecodeError as exc:
            if exc.msg != _AFTER_DOCUMENT:
                continue
            end = len(exc.doc[:exc.pos].encode())  # orjson counts characters
            return _closed(doc[:end])
        if not cuts:  # the file ends right after the array: ijson stops there without complaint
            return _closed(doc)
        if _long_digits(buf[:at]):
            return False, None, 0
        return False, items, at + 1
    return False, None, 0


def _closed(doc: bytes) -> tuple[bool, list[Any] | None, int]:
    if _long_digits(doc):
        return True, None, 0
    return True, orjson.loads(doc), len(doc) - 1


def _long_digits(data: bytes) -> bool:
    return data.translate(_DIGITS).find(_LONG_RUN) >= 0


def _last_cut(buf: bytes, before: int | None = None) -> int | None:
    """The position of the last ``,`` (before ``before``) that follows a ``}``: a likely boundary."""
    end = len(buf) if before is None else before
    while (comma := buf.rfind(b",", 0, end)) > 0:
        i = comma - 1
        while i > 0 and buf[i] in _SPACE:
            i -= 1
        if buf[i] == 0x7D:  # '}'
            return comma
        end = comma
    return None


def _ijson_rest(buf: bytes, f: IO[bytes], key: str) -> Iterator[Any]:
    """ijson over the rest of the array (``buf``, then ``f``), as if it were the whole file."""
    return ijson_array_items(_Chain(b'{"k":[' + buf, f), "k")


def ijson_array_items(f: Any, key: str) -> Iterator[Any]:
    """ijson's items of the first top-level array ``key``, parsed no further than its end."""
    return ijson.items(_until_end(ijson.parse(f, use_float=True), key), f"{key}.item")


def _until_end(events: Iterator[tuple[str, str, Any]], key: str) -> Iterator[tuple[str, str, Any]]:
    """The parse events up to the end of the top-level array ``key`` (each passes through Python)."""
    for event in events:
        yield event
        if event[1] == "end_array" and event[0] == key:
            return


_PIECE = 1 << 16  # ijson's own read size


class _ReadFailed(Exception):
    def __init__(self, data: bytes) -> None:
        self.data = data


def _read(f: IO[bytes], n: int) -> bytes:
    """``n`` bytes, read in the pieces ijson reads, so that a file failing part way (a truncated
    gzip) fails at the same read call, with the same bytes before it, as under ijson."""
    parts: list[bytes] = []
    piece = min(n, _PIECE)
    for _ in range(max(n // piece, 1)):
        try:
            part = f.read(piece)
        except (OSError, EOFError, zlib.error):
            raise _ReadFailed(b"".join(parts)) from None
        if not part:
            break
        parts.append(part)
    return b"".join(parts)


class _Chain:
    """A readable of ``head`` followed by the rest of ``f``."""

    def __init__(self, head: bytes, f: IO[bytes]) -> None:
        self.head, self.f = head, f

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.f.read(n)
        if n < 0:
            out, self.head = self.head + self.f.read(), b""
            return out
        out, self.head = self.head[:n], self.head[n:]
        return out


# -- every top-level array of a name, the whole document read ----------------------------------------
_WS = re.compile(rb"[ \t\r\n]*")  # JSON's own whitespace: anything else is left to ijson
_KEY = re.compile(rb'"([^"\\\x00-\x1f]*)"[ \t\r\n]*:[ \t\r\n]*')
_SCALAR = re.compile(rb'"(?:[^"\\\x00-\x1f]|\\.)*"|[-0-9][-+.eE0-9]*|true|false|null')
_WINDOW = 1 << 20  # bytes ahead kept for a top-level key and a value other than an array


def document_items(f: IO[bytes], reopen: Callable[[], IO[bytes]], key: str) -> Iterator[Any]:
    """What ``ijson.items(f, f"{key}.item")`` gives (the items of every top-level array ``key``,
    and any error of the whole document), with the arrays parsed in orjson chunks. When the document
    is not the plain case, ijson reads it again (``reopen``) from the start, past the items given."""
    given, walk = 0, _document(f, key)
    while True:
        try:
            items = next(walk)
        except StopIteration as stop:
            plain = stop.value
            break
        except _ReadFailed:
            plain = False
            break
        given += len(items)
        yield from items
    if not plain:
        with reopen() as again:
            yield from islice(ijson.items(again, f"{key}.item", use_float=True), given, None)


def _document(f: IO[bytes], key: str) -> Generator[list[Any], None, bool]:
    """Lists of the items of the top-level arrays ``key`` of the object in ``f``; returns whether
    the whole document was read and valid (False: ijson must decide, from where it is unknown)."""
    buf = _read(f, _WINDOW)
    pos = _skip(buf, 0)
    if buf[pos:pos + 1] != b"{":
        return False
    pos = _skip(buf, pos + 1)
    if buf[pos:pos + 1] == b"}":
        return _only_space_left(f, buf[pos + 1:])
    while True:
        buf, pos = _ahead(f, buf, pos)
        m = _KEY.match(buf, pos)
        if m is None or not _utf8(m.group(1)):
            return False
        pos = m.end()
        if buf[pos:pos + 1] == b"[":
            chunks = _chunks(f, buf[pos + 1:])
            while True:
                try:
                    items = next(chunks)
                except StopIteration as stop:
                    closed, buf = stop.value
                    break
                if m.group(1) == key.encode():
                    yield items
            if not closed:
                return False
            pos = 0
        else:
            pos = _value_end(buf, pos)
            if pos < 0:
                return False
        buf, pos = _ahead(f, buf, pos)
        pos = _skip(buf, pos)
        sep = buf[pos:pos + 1]
        if sep == b"}":
            return _only_space_left(f, buf[pos + 1:])
        if sep != b",":
            return False
        pos = _skip(buf, pos + 1)


def _value_end(buf: bytes, pos: int) -> int:
    """The end of the scalar or (small) object at ``pos``, checked by orjson; -1 if unsure."""
    if buf[pos:pos + 1] == b"{":
        end, depth = pos, 0
        while (m := _TOKEN.match(buf, end)) is not None:
            token, end = m.group(1), m.end()
            if token in (b"{", b"["):
                depth += 1
            elif token in (b"}", b"]"):
                depth -= 1
            if depth == 0:
                break
        if depth != 0:
            return -1
    else:
        m = _SCALAR.match(buf, pos)
        if m is None:
            return -1
        end = m.end()
    if end >= len(buf):  # the value may go on past the bytes read
        return -1
    try:
        orjson.loads(buf[pos:end])
    except orjson.JSONDecodeError:
        return -1
    return -1 if _long_digits(buf[pos:end]) else end


def _skip(buf: bytes, pos: int) -> int:
    """The position after the whitespace at ``pos``."""
    m = _WS.match(buf, pos)
    return m.end() if m else pos


def _ahead(f: IO[bytes], buf: bytes, pos: int) -> tuple[bytes, int]:
    """``buf`` from ``pos`` with at least a window of bytes ahead (unless the file ends)."""
    if len(buf) - pos < _WINDOW:
        return buf[pos:] + _read(f, _WINDOW), 0
    return buf, pos


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _only_space_left(f: IO[bytes], rest: bytes) -> bool:
    while True:
        if _skip(rest, 0) != len(rest):
            return False
        rest = _read(f, _WINDOW)
        if not rest:
            return True
