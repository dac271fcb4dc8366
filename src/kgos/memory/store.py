"""Memory items in ``workspace.db`` or the workspace's PostgreSQL database (spec/002: "Store memory first", ``memory/store.py::add_memory``).

A memory is text with tags, metadata (``expert_id`` and ``conversation_id`` also get their own indexed
columns, for spec/000 stage 2's "filter recalled memories by expert"), timestamps and the status of
its KG enrichment. Content is searched with FTS5 (same tokenizer as the KG files). Beside the items:
``memory_relations``, the relations each memory yielded with the memory's time (temporal queries and
per-expert context read it), and ``memory_counters`` (enrichment failures and LLM fallbacks).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgument, MemoryNotFound
from ..model import normalize_name
from ..store.limits import MAX_PROPERTY_DEPTH, depth, too_deep
from ..store.migrations import now_iso
from ..store.postgres_workspace import is_postgres, write_transaction
from .extract import Relation
from .vocabulary import STOPWORDS

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_TAGS, MAX_TAG_LEN, MAX_METADATA = 32, 64, 65_536
_COLS = "id, content, tags, metadata, expert_id, conversation_id, created_at, updated_at, kg_status, kg_error"


@dataclass(frozen=True)
class Memory:
    id: str
    content: str
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    expert_id: str | None = None
    conversation_id: str | None = None
    created_at: str = ""
    updated_at: str = ""
    kg_status: str = "pending"  # pending | ok | failed
    kg_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "content": self.content, "tags": list(self.tags), "metadata": self.metadata,
                "expert_id": self.expert_id, "conversation_id": self.conversation_id,
                "created_at": self.created_at, "updated_at": self.updated_at, "kg_status": self.kg_status,
                "kg_error": self.kg_error}

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Memory:
        return cls(id=row[0], content=row[1], tags=tuple(json.loads(row[2])), metadata=json.loads(row[3]),
                   expert_id=row[4], conversation_id=row[5], created_at=row[6], updated_at=row[7],
                   kg_status=row[8], kg_error=row[9])


@dataclass(frozen=True)
class MemoryHit:
    memory: Memory
    score: float  # FTS5 bm25, negated so that higher is better

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory.to_dict(), "score": round(self.score, 4)}


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories: all given conditions must hold (tags: every tag present)."""

    tags: tuple[str, ...] = ()
    expert_id: str | None = None
    conversation_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    since: str | None = None  # ISO 8601 UTC, inclusive
    until: str | None = None  # exclusive

    def where(self, pg: bool = False) -> tuple[str, list[Any]]:
        """The SQL condition on ``memories m`` and its arguments (``pg``: PostgreSQL's JSON operators)."""
        sql, args = ["1 = 1"], []
        for tag in clean_tags(self.tags):
            sql.append("m.tags::jsonb @> jsonb_build_array(?::text)" if pg else
                       "EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)")
            args.append(tag)
        meta = dict(self.metadata)
        for column in ("expert_id", "conversation_id"):
            value = getattr(self, column) if getattr(self, column) is not None else meta.pop(column, None)
            if value is not None:
                sql.append(f"m.{column} = ?")
                args.append(str(value))
        for key, value in meta.items():
            if pg:  # the JSON value, type included, as SQLite's json_extract compares it
                sql.append(f"m.metadata::jsonb -> '{_key(key)}' = ?::jsonb")
                args.append(json.dumps(value))
            else:
                sql.append(f"json_extract(m.metadata, '$.{_key(key)}') = ?")
                args.append(value)
        for op, bound in ((">=", self.since), ("<", self.until)):
            if bound is not None:
                sql.append(f"m.created_at {op} ?")
                args.append(bound)
        return " AND ".join(sql), args


def _key(key: str) -> str:
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise InvalidArgument(f"metadata filter key {key!r} must be a plain identifier (letters, digits, _)")
    return key


# -- validation ---------------------------------------------------------------------------------------
def clean_content(content: Any, max_chars: int) -> str:
    """The text to store: control characters removed, line ends normalised. Refuses empty text, text
    over ``max_chars`` and binary data (over 10% control or undecodable characters) with a clear error."""
    if isinstance(content, (bytes, bytearray)):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument("memory content is binary data, not UTF-8 text; store text only") from None
    if not isinstance(content, str):
        raise InvalidArgument(f"memory content must be text, not {type(content).__name__}")
    if len(content) > max_chars:
        raise InvalidArgument(f"memory is {len(content):,} characters; the limit is {max_chars:,} "
                              "(KGOS_MEMORY_MAX_CHARS): split it into several memories")
    text = content.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> "?"
    bad = len(_CONTROL_RE.findall(text)) + text.count("\ufffd")
    if bad > max(3, len(text) // 10):
        raise InvalidArgument(f"memory content looks like binary data ({bad:,} control or invalid characters "
                              f"in {len(text):,}); store text only")
    text = _CONTROL_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()
    if not text:
        raise InvalidArgument("memory content is empty: give some text to remember")
    return text


def clean_tags(tags: Iterable[Any] | str | None) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    out: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or len(tag.strip()) > MAX_TAG_LEN or _CONTROL_RE.search(tag):
            raise InvalidArgument(f"tag {tag!r} must be non-empty text of at most {MAX_TAG_LEN} characters")
        out[tag.strip().lower()] = None
    if len(out) > MAX_TAGS:
        raise InvalidArgument(f"{len(out)} tags given; at most {MAX_TAGS} per memory")
    return tuple(out)


def clean_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidArgument("memory metadata must be a JSON object with string keys")
    if depth(dict(metadata)) > MAX_PROPERTY_DEPTH:  # json.dumps accepts ~1000 levels; readers do not
        raise too_deep("memory metadata")
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"memory metadata is not JSON-serialisable ({exc})") from None
    if len(text) > MAX_METADATA:
        raise InvalidArgument(f"memory metadata is {len(text):,} bytes of JSON; at most {MAX_METADATA:,}")
    return json.loads(text)


def _id_text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise InvalidArgument(f"{what} must be non-empty text of at most 200 characters")
    return value.strip()


def fts_query(text: str) -> str | None:
    """An FTS5 query that cannot be a syntax error: the words, quoted, OR-ed (recall, ranked by bm25)."""
    words = list(dict.fromkeys(w for w in re.findall(r"\w+", text.lower())))[:32]
    content = [w for w in words if w not in STOPWORDS] or words
    return " OR ".join(f'"{w}"' for w in content) or None


# -- the store ----------------------------------------------------------------------------------------
class MemoryStore:
    def __init__(self, conn: Any) -> None:
        self.conn = conn  # workspace.db, or the PgWorkspaceDB of a PostgreSQL workspace
        self.pg = is_postgres(conn)
        self._lock = threading.RLock()

    def transaction(self) -> AbstractContextManager[Any]:
        return write_transaction(self.conn, self._lock)

    def where(self, where: MemoryFilter | None) -> tuple[str, list[Any]]:
        return (where or MemoryFilter()).where(self.pg)

    def insert(self, content: str, tags: tuple[str, ...], metadata: dict[str, Any], expert_id: str | None,
               conversation_id: str | None, created_at: str | None = None) -> Memory:
        expert_id, conversation_id = _id_text(expert_id, "expert_id"), _id_text(conversation_id, "conversation_id")
        metadata = {**metadata, **({"expert_id": expert_id} if expert_id else {}),
                    **({"conversation_id": conversation_id} if conversation_id else {})}
        memory = Memory(f"mem_{uuid.uuid4().hex}", content, tags, metadata, expert_id, conversation_id,
                        created_at or now_iso(), now_iso())
        with self.transaction() as conn:
            conn.execute(f"INSERT INTO memories ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                         (memory.id, content, json.dumps(list(tags), ensure_ascii=False),
                          json.dumps(metadata, ensure_ascii=False), expert_id, conversation_id,
                          memory.created_at, memory.updated_at, "pending", None))
        return memory

    def get(self, memory_id: str) -> Memory:
        row = self.conn.execute(f"SELECT {_COLS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(f"no memory '{memory_id}' (ids look like mem_<hex>; list some with "
                                 "kgos memory recent)")
        return Memory.from_row(row)

    def delete(self, memory_id: str) -> bool:
        with self.transaction() as conn:
            return conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,)).rowcount > 0

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def search(self, query: str, limit: int = 10, where: MemoryFilter | None = None) -> list[MemoryHit]:
        match = fts_query(query)
        if match is None:
            return [MemoryHit(m, 0.0) for m in self.list(where, limit=limit)]
        sql, args = self.where(where)
        if self.pg:
            return self._search_pg(match, sql, args, _limit(limit))
        rows = self.conn.execute(
            f"SELECT {', '.join('m.' + c for c in _COLS.split(', '))}, bm25(memories_fts) FROM memories_fts "
            f"JOIN memories m ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ? AND {sql} "
            "ORDER BY bm25(memories_fts), m.created_at DESC LIMIT ?", (match, *args, _limit(limit)))
        return [MemoryHit(Memory.from_row(r[:-1]), -r[-1]) for r in rows]

    def _search_pg(self, match: str, sql: str, args: list[Any], limit: int) -> list[MemoryHit]:
        """PostgreSQL full text over the generated ``fts`` column: the same words OR-ed, ranked by
        ts_rank_cd (scores differ from FTS5's bm25; the order of clear matches is the same)."""
        words = " | ".join(w.strip('"') for w in match.split(" OR "))  # quoted \w+ words: no tsquery syntax
        rows = self.conn.execute(
            f"SELECT {', '.join('m.' + c for c in _COLS.split(', '))}, ts_rank_cd(m.fts, q) "
            f"FROM memories m, to_tsquery('english', ?) q WHERE m.fts @@ q AND {sql} "
            "ORDER BY 11 DESC, m.created_at DESC LIMIT ?", (words, *args, limit))
        return [MemoryHit(Memory.from_row(r[:-1]), float(r[-1])) for r in rows]

    def list(self, where: MemoryFilter | None = None, limit: int | None = 100, newest_first: bool = True) -> list[Memory]:
        sql, args = self.where(where)
        order = "DESC" if newest_first else "ASC"
        q = f"SELECT {', '.join('m.' + c for c in _COLS.split(', '))} FROM memories m WHERE {sql} " \
            f"ORDER BY m.created_at {order}, m.rowid {order}"
        if limit is not None:
            q, args = q + " LIMIT ?", [*args, _limit(limit)]
        return [Memory.from_row(r) for r in self.conn.execute(q, args)]

    def iter_all(self, batch: int = 1000) -> Iterator[Memory]:
        """Every memory, oldest first, read in pages (a rebuild must not hold them all)."""
        last = ("", 0)
        while True:
            rows = self.conn.execute(f"SELECT {_COLS}, rowid FROM memories WHERE (created_at, rowid) > (?, ?) "
                                     "ORDER BY created_at, rowid LIMIT ?", (*last, batch)).fetchall()
            if not rows:
                return
            yield from (Memory.from_row(r[:-1]) for r in rows)
            last = (rows[-1][6], rows[-1][-1])

    def ids_of_expert(self, memory_ids: Iterable[str], expert_id: str) -> set[str]:
        ids = list(dict.fromkeys(memory_ids))
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            found.update(r[0] for r in self.conn.execute(
                f"SELECT id FROM memories WHERE expert_id = ? AND id IN ({','.join('?' * len(chunk))})",
                (expert_id, *chunk)))
        return found

    # -- enrichment bookkeeping -----------------------------------------------------------------------
    def finish(self, memory_id: str, created_at: str, relations: Sequence[Relation],
               canonical: Mapping[tuple[str, str], str] | None = None) -> None:
        """Record what the memory yielded and mark it enriched, in one transaction."""
        with self.transaction() as conn:
            self._relations(conn, memory_id, created_at, relations, canonical or {})
            conn.execute("UPDATE memories SET kg_status = 'ok', kg_error = NULL WHERE id = ?", (memory_id,))

    def fail(self, memory_id: str, error: str) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE memories SET kg_status = 'failed', kg_error = ? WHERE id = ?",
                         (error[:500], memory_id))
            _bump(conn, "kg_failures", 1)

    def replace_relations(self, items: Iterable[tuple[str, str, Sequence[Relation]]],
                          canonical: Mapping[tuple[str, str], str] | None = None) -> None:
        """After a rebuild: every memory's relations anew, every memory marked enriched."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM memory_relations")
            for memory_id, created_at, relations in items:
                self._relations(conn, memory_id, created_at, relations, canonical or {})
            conn.execute("UPDATE memories SET kg_status = 'ok', kg_error = NULL")

    @staticmethod
    def _relations(conn: Any, memory_id: str, created_at: str, relations: Sequence[Relation],
                   canonical: Mapping[tuple[str, str], str]) -> None:
        def name(e: Any) -> tuple[str, str, str]:
            shown = canonical.get(e.key, e.name)
            return e.type, normalize_name(shown), shown
        conn.executemany("INSERT INTO memory_relations VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         [(memory_id, *name(r.subject), r.predicate, *name(r.object), r.weight, r.src, r.pattern,
                           created_at) for r in relations])

    def bump(self, counter: str, n: int = 1) -> None:
        if n:
            with self.transaction() as conn:
                _bump(conn, counter, n)

    def counters(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT name, value FROM memory_counters ORDER BY name"))

    def status_counts(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT kg_status, count(*) FROM memories GROUP BY kg_status"))


def _bump(conn: Any, counter: str, n: int) -> None:
    conn.execute("INSERT INTO memory_counters VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = memory_counters.value + ?",
                 (counter, n, n))


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument(f"limit must be a positive integer, not {limit!r}")
    return limit
