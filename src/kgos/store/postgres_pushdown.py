"""Pushdown mode of a PostgreSQL KG: search and the graph methods run in the database, so a server
holds no snapshot of the whole KG (docs/postgres.md "Pushdown"; issue 31 goal 4).

What the database keeps beside the KG's tables, in the KG's schema, created by ``prepare`` (idempotent,
not a numbered migration: a database without pgvector still opens every KG):

- ``pd_vectors``: each node vector as a pgvector ``vector`` (copied from ``node_embeddings``' float32
  bytes), with one HNSW index per search model (a partial expression index cast to the model's width;
  ``halfvec`` when pgvector >= 0.7 has it: half the index memory). ``pd_dirty`` holds the vectors
  written since the last copy (a row trigger on ``node_embeddings``): search copies them first.
- ``nodes.pd_tsv``, a stored generated ``to_tsvector('simple', name type description)`` with a GIN
  index: text candidates (AND of the query's words first, OR when those are too few).
- ``pd_degree``: each node's edge count (kept by row triggers on ``edges``): the criticality of impact.
- covering indexes of ``edges`` by source and by target (``INCLUDE`` the other end, type, weight,
  rowid): a hop reads one index page per node, never the table (index-only scans once vacuumed).

Every statement runs with ``statement_timeout`` (``KGOS_PUSHDOWN_TIMEOUT_MS``, default 5000) and the
broad ones are checked against the planner's row estimate (``KGOS_PUSHDOWN_MAX_ROWS``, default
200,000): past either, ``QueryTooBroad`` (HTTP 422) or a bounded answer that says so, never a hang.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgument, QueryTooBroad
from ..settings import current

MODE_ENV = "KGOS_PUSHDOWN"  # on | off | auto: the default of every PostgreSQL KG without its own setting
NODES_ENV = "KGOS_PUSHDOWN_NODES"  # auto: pushdown from this many nodes on
TIMEOUT_ENV = "KGOS_PUSHDOWN_TIMEOUT_MS"
MAX_ROWS_ENV = "KGOS_PUSHDOWN_MAX_ROWS"
EF_ENV = "KGOS_PUSHDOWN_EF"  # hnsw.ef_search of the vector candidates
DEFAULT_NODES = 500_000  # ~1.2 GB of snapshot (2.5 GB at 1M nodes / 10M edges): past a small server
MODES = ("on", "off", "auto")
TEXT_MATCH_BOUND = 2_000  # text matches ranked at most (a bounded answer past it, with a note)
TEXT_CONFIG = "simple"
DF_COUNT_BOUND = 1_000  # a query word the planner puts under this many nodes is counted (up to it)
HNSW_KEY = "pushdown_hnsw"  # kg_meta: the KG's HNSW build settings, "m=24,ef_construction=128"
# (m, ef_construction): at 100K vectors recall@10 +0.07 (hash:64, ef_search 200) and +0.00-0.03 (the fast
# model) over pgvector's (16, 64), for 1.9-2.1x the build time and +20% index (docs/postgres.md, measured)
HNSW_DEFAULT = (24, 128)
# The text a node is found by, stored (a generated column: ranking reads it instead of re-parsing the text)
TSV = f"to_tsvector('{TEXT_CONFIG}'::regconfig, name || ' ' || type || ' ' || description)"

PREPARE = """
CREATE TABLE IF NOT EXISTS {s}.pd_vectors (
  node bigint NOT NULL REFERENCES {s}.nodes(rowid) ON DELETE CASCADE,
  model text NOT NULL,
  embedding vector NOT NULL,
  PRIMARY KEY (node, model)
);
CREATE TABLE IF NOT EXISTS {s}.pd_dirty (node bigint NOT NULL, model text NOT NULL, PRIMARY KEY (node, model));
CREATE TABLE IF NOT EXISTS {s}.pd_degree (
  node bigint PRIMARY KEY REFERENCES {s}.nodes(rowid) ON DELETE CASCADE,
  degree integer NOT NULL
);
CREATE INDEX IF NOT EXISTS pd_degree_degree ON {s}.pd_degree(degree);
CREATE TABLE IF NOT EXISTS {s}.pd_state (key text PRIMARY KEY, value text NOT NULL);
CREATE OR REPLACE FUNCTION {s}.pd_vector_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    EXECUTE format('INSERT INTO %I.pd_dirty VALUES ($1, $2) ON CONFLICT DO NOTHING', TG_TABLE_SCHEMA)
      USING OLD.node, OLD.model;
  ELSE
    EXECUTE format('INSERT INTO %I.pd_dirty VALUES ($1, $2) ON CONFLICT DO NOTHING', TG_TABLE_SCHEMA)
      USING NEW.node, NEW.model;
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION {s}.pd_edge_degree() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  q text := format('INSERT INTO %I.pd_degree AS g SELECT x, $3 FROM unnest(ARRAY[$1, $2]) x '
                   'WHERE EXISTS (SELECT 1 FROM %I.nodes WHERE rowid = x) '
                   'ON CONFLICT (node) DO UPDATE SET degree = g.degree + $3', TG_TABLE_SCHEMA, TG_TABLE_SCHEMA);
BEGIN
  IF TG_OP = 'DELETE' THEN
    EXECUTE q USING OLD.source, OLD.target, -1;
  ELSE
    EXECUTE q USING NEW.source, NEW.target, 1;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS pd_vector_dirty ON {s}.node_embeddings;
CREATE TRIGGER pd_vector_dirty AFTER INSERT OR UPDATE OR DELETE ON {s}.node_embeddings
  FOR EACH ROW EXECUTE FUNCTION {s}.pd_vector_dirty();
DROP TRIGGER IF EXISTS pd_edge_degree ON {s}.edges;
CREATE TRIGGER pd_edge_degree AFTER INSERT OR DELETE ON {s}.edges
  FOR EACH ROW EXECUTE FUNCTION {s}.pd_edge_degree();
ALTER TABLE {s}.nodes ADD COLUMN IF NOT EXISTS pd_tsv tsvector GENERATED ALWAYS AS (@TSV@) STORED;
CREATE INDEX IF NOT EXISTS pd_text ON {s}.nodes USING gin (pd_tsv);
CREATE INDEX IF NOT EXISTS pd_edges_out ON {s}.edges(source) INCLUDE (target, type, weight, rowid);
CREATE INDEX IF NOT EXISTS pd_edges_in ON {s}.edges(target) INCLUDE (source, type, weight, rowid);
""".replace("@TSV@", TSV)


def env_mode() -> str:
    return current().pushdown


def extension_version(db: Any) -> str | None:
    """pgvector's version on this server (installed or installable), or None: cached per database."""
    cached = getattr(db, "_pgvector", False)
    if cached is not False:
        return cached  # type: ignore[no-any-return]
    with db.connection() as conn:
        row = conn.execute("SELECT coalesce(i.extversion, a.default_version) FROM pg_available_extensions a "
                           "LEFT JOIN pg_extension i ON i.extname = a.name WHERE a.name = 'vector'").fetchone()
    db._pgvector = row[0] if row else None
    return db._pgvector  # type: ignore[no-any-return]


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


@dataclass(frozen=True)
class Edge4:
    """One edge row as the pushdown queries return it: node rowids, type, weight."""

    source: int
    target: int
    type: str
    weight: float


Ranked = tuple[int, int, str, float, bool, int, float]  # node, parent, edge type, weight, forward, degree, risk


@dataclass(frozen=True)
class LastLevel:
    """The deepest level of an impact walk as the database summarises it: how many nodes it reached
    (and by which edge types), its riskiest nodes (risk order, then node) and the node of its highest
    cumulative risk (the last field then holds that sum), or None when it reached nothing."""

    count: int
    types: dict[str, int]
    top: list[Ranked]
    best: Ranked | None


def _ranked(r: tuple[Any, ...]) -> Ranked:
    return (int(r[1]), int(r[2]), r[3], float(r[4]), bool(r[5]), int(r[6]), float(r[7]))


class Pushdown:
    """The pushed-down queries of one ``PostgresStore``."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.timeout_ms = current().pushdown_timeout_ms
        self.max_rows = current().pushdown_max_rows
        self._prepared: str | None = None  # the KG version last found prepared by this process
        self._local = threading.local()  # the connection of this thread's open session
        self._top: tuple[str, int] | None = None  # (version, the largest degree)
        # per KG version: each model's width, and the models whose HNSW index is known to exist and be
        # used by the nearest-neighbour plan (re-checked at each version: no probe or EXPLAIN per search)
        self._checked: tuple[str, dict[str, int | None], set[str]] = ("", {}, set())

    @property
    def vector_version(self) -> str | None:
        return extension_version(self.store.db)

    @property
    def halfvec(self) -> bool:
        v = self.vector_version
        return v is not None and _version_tuple(v) >= (0, 7)

    # -- statements ---------------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """One bounded read transaction: statement_timeout set, a timeout as ``QueryTooBroad``. Nested
        calls in one thread share the outer one (a search is one transaction, not ten)."""
        open_conn = getattr(self._local, "conn", None)
        if open_conn is not None:
            yield open_conn
            return
        self.prepare()
        errors = self.store.db.psycopg.errors
        with self.store._conn() as conn:
            try:
                with conn.transaction():
                    conn.execute(f"SET LOCAL statement_timeout = {int(self.timeout_ms)}")
                    # small indexed reads: parallel workers cost more than they save on a busy server
                    # (impact's deepest level at 100K nodes: 72 ms without, 80 ms with 2; load average 10)
                    conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
                    self._local.conn = conn
                    try:
                        yield conn
                    finally:
                        self._local.conn = None
            except errors.QueryCanceled:  # caught here: the pool would call it the database failing
                raise QueryTooBroad(f"a pushed-down query of KG '{self.store.db_id}' ran past the "
                                    f"{self.timeout_ms} ms statement timeout ({TIMEOUT_ENV}): narrow it "
                                    "(fewer hops, more specific words)") from None

    session = _tx  # what callers hold around several pushed-down reads

    def _sql(self, sql: str) -> str:
        return sql.replace("{s}", self.store.s)

    def estimate(self, conn: Any, sql: str, args: Any = ()) -> int:
        """The planner's row estimate of ``sql`` (EXPLAIN, nothing runs)."""
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + self._sql(sql), args).fetchone()[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        return int(plan[0]["Plan"]["Plan Rows"])

    # -- setup --------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Create the pushdown tables, triggers and indexes if missing, and fill them the first time."""
        # checked again at each new version: an import may have renamed a fresh schema (without them) in
        key = self.store.version()
        if self._prepared == key:
            return
        if self.vector_version is None:
            raise InvalidArgument("pushdown needs the pgvector extension on the PostgreSQL server "
                                  "(Debian: apt-get install postgresql-NN-pgvector; or pip install pgserver)")
        with self.store._conn() as conn, conn.transaction():  # _conn: a dropped KG is KGNotFound
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"kgos-pushdown {self.store.schema}",))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            ready = conn.execute("SELECT to_regclass(%s)", (f"{self.store.s}.pd_state",)).fetchone()[0]
            done = ready is not None and conn.execute(
                self._sql("SELECT 1 FROM {s}.pd_state WHERE key = 'filled'")).fetchone() is not None
            if not done:
                conn.execute(self._sql(PREPARE))
                self._fill(conn)
        self._prepared = key

    def _fill(self, conn: Any) -> None:
        """First fill: every node's degree, every stored vector (a bulk load may have written both)."""
        conn.execute(self._sql(
            "INSERT INTO {s}.pd_degree SELECT n.rowid, coalesce(o.c, 0) + coalesce(i.c, 0) FROM {s}.nodes n "
            "LEFT JOIN (SELECT source, count(*) c FROM {s}.edges GROUP BY source) o ON o.source = n.rowid "
            "LEFT JOIN (SELECT target, count(*) c FROM {s}.edges GROUP BY target) i ON i.target = n.rowid "
            "ON CONFLICT DO NOTHING"))
        conn.execute(self._sql("INSERT INTO {s}.pd_dirty SELECT e.node, e.model FROM {s}.node_embeddings e "
                               "WHERE NOT EXISTS (SELECT 1 FROM {s}.pd_vectors v WHERE v.node = e.node "
                               "AND v.model = e.model) ON CONFLICT DO NOTHING"))
        conn.execute(self._sql("INSERT INTO {s}.pd_state VALUES ('filled', now()::text)"))

    def sync(self, model: str | None) -> int:
        """Copy the vectors written since the last sync into ``pd_vectors`` and make sure ``model`` has
        its HNSW index. Returns how many vectors were copied."""
        self.prepare()
        index = model is not None and model not in self._known()[2]
        # the KG's settings read before the connection is taken: one pooled connection at a time
        hnsw = hnsw_settings(self.store.meta().get(HNSW_KEY)) if index else None
        with self.store._conn() as conn, conn.transaction():
            dirty = conn.execute(self._sql(
                "DELETE FROM {s}.pd_dirty d USING (SELECT node, model FROM {s}.pd_dirty LIMIT 50000 "
                "FOR UPDATE SKIP LOCKED) x WHERE d.node = x.node AND d.model = x.model "
                "RETURNING d.node, d.model")).fetchall()
            if dirty:
                self._copy_vectors(conn, dirty)
            if model and index:
                self._ensure_index(conn, model, hnsw)
        return len(dirty)

    def _known(self) -> tuple[str, dict[str, int | None], set[str]]:
        """This version's cache of model widths and checked indexes (emptied when the version moves).
        The version is the one ``prepare`` read before the transaction began: asking the store inside
        a transaction could need a second pooled connection."""
        version = self._prepared or ""
        if self._checked[0] != version:
            self._checked = (version, {}, set())
        return self._checked

    def _copy_vectors(self, conn: Any, dirty: list[tuple[int, str]]) -> None:
        nodes, models = [r[0] for r in dirty], [r[1] for r in dirty]
        conn.execute(self._sql("DELETE FROM {s}.pd_vectors v USING unnest(%s::bigint[], %s::text[]) d(node, model) "
                               "WHERE v.node = d.node AND v.model = d.model"), (nodes, models))
        rows = conn.execute(self._sql(
            "SELECT e.node, e.model, e.vector FROM {s}.node_embeddings e JOIN unnest(%s::bigint[], %s::text[]) "
            "d(node, model) ON e.node = d.node AND e.model = d.model"), (nodes, models)).fetchall()
        with conn.cursor().copy(self._sql("COPY {s}.pd_vectors (node, model, embedding) FROM STDIN")) as copy:
            for node, model, blob in rows:
                copy.write_row((node, model, vector_text(np.frombuffer(bytes(blob), np.float32))))

    def _index_name(self, model: str, dims: int) -> str:
        return "pd_hnsw_" + hashlib.sha1(f"{model} {dims} {self.halfvec}".encode()).hexdigest()[:12]

    def _cast(self, dims: int) -> tuple[str, str]:
        kind = "halfvec" if self.halfvec else "vector"
        return f"{kind}({int(dims)})", f"{kind}_cosine_ops"

    def dims(self, conn: Any, model: str) -> int | None:
        widths = self._known()[1]
        if model not in widths:
            row = conn.execute(self._sql("SELECT dims FROM {s}.node_embeddings WHERE model = %s LIMIT 1"),
                               (model,)).fetchone()
            widths[model] = int(row[0]) if row else None
        return widths[model]

    def _ensure_index(self, conn: Any, model: str, hnsw: tuple[int, int] | None = None) -> None:
        dims = self.dims(conn, model)
        if dims is None:
            return
        name = self._index_name(model, dims)
        if conn.execute("SELECT to_regclass(%s)", (f"{self.store.s}.{name}",)).fetchone()[0] is not None:
            return
        cast, ops = self._cast(dims)
        m, efc = hnsw or hnsw_settings(self.store.meta().get(HNSW_KEY))
        literal = "'" + model.replace("'", "''") + "'"  # a model name from the KG's own settings, quoted
        conn.execute(self._sql(f"CREATE INDEX IF NOT EXISTS {name} ON {{s}}.pd_vectors USING hnsw "
                               f"((embedding::{cast}) {ops}) WITH (m = {m}, ef_construction = {efc}) "
                               f"WHERE model = {literal}"))

    def rebuild_vector_index(self, model: str) -> None:
        """Drop and build ``model``'s HNSW index again with the KG's current ``pushdown_hnsw`` settings:
        maintenance, not a query (the KG's vector searches wait for it; 26 min at 1M vectors on 2
        loaded cores with pgvector's defaults)."""
        self.sync(None)
        hnsw = hnsw_settings(self.store.meta().get(HNSW_KEY))
        with self.store._conn() as conn, conn.transaction():
            dims = self.dims(conn, model)
            if dims is None:
                return
            conn.execute(self._sql(f"DROP INDEX IF EXISTS {{s}}.{self._index_name(model, dims)}"))
            self._ensure_index(conn, model, hnsw)

    # -- search candidates --------------------------------------------------------------------------
    def vector_candidates(self, model: str, query: np.ndarray, limit: int, ef: int | None = None) -> list[tuple[int, float]]:
        """(node rowid, cosine similarity) of the ``limit`` nearest vectors by the HNSW index, which
        looks at ``ef`` (``KGOS_PUSHDOWN_EF``, default 800) candidates: more is slower, nearer exact
        (at 1M hash:64 vectors recall@10 0.915 at 400, 0.95 at 600, 0.96 at 800; docs/postgres.md)."""
        ef = ef or current().pushdown_ef
        with self._tx() as conn:
            dims = self.dims(conn, model)
            if dims is None or dims != query.size:
                return []
            cast, _ = self._cast(dims)
            conn.execute(f"SET LOCAL hnsw.ef_search = {int(max(ef, limit))}")
            sql = (f"SELECT node, 1 - (embedding::{cast} <=> %s::{cast}) FROM {{s}}.pd_vectors "
                   f"WHERE model = %s ORDER BY embedding::{cast} <=> %s::{cast} LIMIT %s")
            q = vector_text(query)
            checked = self._known()[2]
            if model not in checked:
                self._require_index(conn, sql, (q, model, q, limit))
                checked.add(model)
            return [(int(r[0]), float(r[1])) for r in conn.execute(self._sql(sql), (q, model, q, limit))]

    def _require_index(self, conn: Any, sql: str, args: Any) -> None:
        """A nearest-neighbour query without its HNSW index would sort every vector: refused."""
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + self._sql(sql), args).fetchone()[0]
        text = json.dumps(plan)
        if "Index Scan" not in text and self.estimate(conn, "SELECT 1 FROM {s}.pd_vectors") > self.max_rows:
            raise QueryTooBroad(f"KG '{self.store.db_id}': the vector query would scan every vector "
                                "(no HNSW index of this model yet); retry once `kgos embed` has finished")

    def exact_vector_candidates(self, model: str, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """The exact nearest vectors (a full scan: for measuring recall only, never on a query path)."""
        with self.store._conn() as conn, conn.transaction():
            conn.execute("SET LOCAL enable_indexscan = off")
            q = vector_text(query)
            sql = ("SELECT node, 1 - (embedding <=> %s::vector) FROM {s}.pd_vectors WHERE model = %s "
                   "ORDER BY embedding <=> %s::vector LIMIT %s")
            return [(int(r[0]), float(r[1])) for r in conn.execute(self._sql(sql), (q, model, q, limit))]

    def text_candidates(self, query: str, limit: int, analyzer: Any = None) -> tuple[list[tuple[int, float]], str | None]:
        """(node rowid, ts_rank_cd) of the best text matches: nodes with every query word first, then
        (when those are fewer than ``limit``) with any; a note when the matches were more than
        ``TEXT_MATCH_BOUND`` (then a bounded sample of them was ranked). ``analyzer``: the ranking's
        (``query_words``: its stopwords dropped, inflections matched)."""
        words = query_words(query, analyzer=analyzer)
        if not words:
            return [], None
        found: dict[int, float] = {}
        note = None
        with self._tx() as conn:
            for op in (" & ", " | ") if len(words) > 1 else (" & ",):
                rows, bounded = self._ranked(conn, op.join(words), limit)
                for r, rank in rows:
                    found.setdefault(r, rank + (1.0 if op == " & " else 0.0))  # all words above some
                if bounded and note is None:
                    n = self._estimate_text(conn, op.join(words))
                    many = f"about {n:,}" if n > TEXT_MATCH_BOUND else f"at least {TEXT_MATCH_BOUND:,}"
                    note = (f"pushdown: {many} nodes match the query's words; {TEXT_MATCH_BOUND:,} of them "
                            "were ranked (a bounded answer)")
                if len(found) >= limit:
                    break
        best = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return best, note

    def _ranked(self, conn: Any, tsq: str, limit: int) -> tuple[list[tuple[int, float]], bool]:
        """The best ``limit`` of at most ``TEXT_MATCH_BOUND`` matches of ``tsq``, and whether the bound
        was reached (the window count is over the matches before the ranking's LIMIT)."""
        sql = (f"SELECT rowid, ts_rank_cd(pd_tsv, to_tsquery('{TEXT_CONFIG}', %s)) r, count(*) OVER () FROM "
               f"(SELECT rowid, pd_tsv FROM {{s}}.nodes WHERE pd_tsv @@ to_tsquery('{TEXT_CONFIG}', %s) LIMIT %s) m "
               "ORDER BY r DESC, rowid LIMIT %s")
        rows = conn.execute(self._sql(sql), (tsq, tsq, TEXT_MATCH_BOUND, limit)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows], bool(rows) and int(rows[0][2]) >= TEXT_MATCH_BOUND

    def _estimate_text(self, conn: Any, tsq: str) -> int:
        """The planner's count of ``tsq``'s matches: asked only when the bound was reached (for the note)."""
        return self.estimate(conn, f"SELECT 1 FROM {{s}}.nodes WHERE pd_tsv @@ to_tsquery('{TEXT_CONFIG}', %s)", (tsq,))

    def document_frequencies(self, lexemes: list[str]) -> tuple[dict[str, int], int]:
        """({lexeme: nodes of the KG matching it}, the KG's node count): BM25's statistics of the
        query's words over the KG, not over the candidates. The planner's estimate first (its
        statistics of the column's common lexemes; nothing read); a word it puts under
        ``DF_COUNT_BOUND`` counted (at most that many rows: a rare word's short posting list, where the
        estimate is a guess), and the planner's node count: no scan of the KG, and a common word's
        posting list is not read a second time (the text query read it)."""
        if not lexemes:
            return {}, 0
        sql = (f"SELECT t, (SELECT count(*) FROM (SELECT 1 FROM {{s}}.nodes WHERE pd_tsv @@ to_tsquery("
               f"'{TEXT_CONFIG}', t) LIMIT %s) m) FROM unnest(%s::text[]) t")
        with self._tx() as conn:
            counts = {t: self._estimate_text(conn, t) for t in lexemes}
            rare = [t for t, n in counts.items() if n < DF_COUNT_BOUND]
            if rare:
                counts |= {t: int(n) for t, n in conn.execute(self._sql(sql), (DF_COUNT_BOUND, rare)).fetchall()}
            total = self._planner_rows(conn)
        return counts, max(total, *counts.values())

    def _planner_rows(self, conn: Any) -> int:
        """The planner's node count (pg_class.reltuples), else the count (a young KG, never analysed)."""
        row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                           (f"{self.store.s}.nodes",)).fetchone()
        if row is not None and row[0] > 0:
            return int(row[0])
        return int(conn.execute(self._sql("SELECT count(*) FROM {s}.nodes")).fetchone()[0])

    def name_candidates(self, query: str, limit: int) -> list[int]:
        """Nodes named exactly as the query (normalised name): the name signal's candidates."""
        from ..model import normalize_name
        with self._tx() as conn:
            rows = conn.execute(self._sql("SELECT rowid FROM {s}.nodes WHERE norm_name = %s LIMIT %s"),
                                (normalize_name(query), limit)).fetchall()
        return [int(r[0]) for r in rows]

    # -- subgraphs ----------------------------------------------------------------------------------
    def neighbourhood(self, seeds: list[int], per_node: int, limit: int) -> list[Edge4]:
        """Edges touching ``seeds`` (each seed's strongest ``per_node`` each way), at most ``limit``."""
        if not seeds:
            return []
        sql = ("SELECT e.source, e.target, e.type, e.weight FROM unnest(%s::bigint[]) s(id) "
               "CROSS JOIN LATERAL (SELECT * FROM {s}.edges WHERE source = s.id ORDER BY weight DESC LIMIT %s) e "
               "UNION SELECT e.source, e.target, e.type, e.weight FROM unnest(%s::bigint[]) s(id) "
               "CROSS JOIN LATERAL (SELECT * FROM {s}.edges WHERE target = s.id ORDER BY weight DESC LIMIT %s) e "
               "LIMIT %s")
        with self._tx() as conn:
            rows = conn.execute(self._sql(sql), (seeds, per_node, seeds, per_node, limit)).fetchall()
        return [Edge4(int(a), int(b), t, float(w)) for a, b, t, w in rows]

    def node_rows(self, rowids: list[int]) -> list[tuple[Any, ...]]:
        """NODE_COLS rows of ``rowids``, in rowid order."""
        from .postgres import NODE_COLS
        with self._tx() as conn:
            return conn.execute(self._sql(f"SELECT {NODE_COLS} FROM {{s}}.nodes WHERE rowid = ANY(%s) "
                                          "ORDER BY rowid"), (rowids,)).fetchall()

    def nodes_with_vectors(self, model: str | None, rowids: list[int]) -> tuple[list[tuple[Any, ...]],
                                                                             dict[int, tuple[str, bytes, int]]]:
        """``node_rows(rowids)`` and ``vectors_of(model, rowids)`` in one round trip."""
        from .postgres import NODE_COLS
        if not model:
            return self.node_rows(rowids), {}
        cols = ", ".join(f"n.{c.strip()}" for c in NODE_COLS.split(","))
        # the vector by the (node, model) key, one probe per node (``model =`` alone picks the model index)
        sql = (f"SELECT {cols}, e.content_hash, e.vector, e.dims FROM {{s}}.nodes n LEFT JOIN LATERAL "
               "(SELECT content_hash, vector, dims FROM {s}.node_embeddings x WHERE x.node = n.rowid AND x.model = %s) e "
               "ON true WHERE n.rowid = ANY(%s) ORDER BY n.rowid")
        with self._tx() as conn:
            rows = conn.execute(self._sql(sql), (model, rowids)).fetchall()
        width = len(NODE_COLS.split(","))
        vectors = {int(r[0]): (r[width], bytes(r[width + 1]), int(r[width + 2])) for r in rows if r[width + 1] is not None}
        return [r[:width] for r in rows], vectors

    def vectors_of(self, model: str, rowids: list[int]) -> dict[int, tuple[str, bytes, int]]:
        with self._tx() as conn:
            # by the (node, model) key, one probe per node (``model =`` alone would pick the model index)
            rows = conn.execute(self._sql("SELECT e.node, e.content_hash, e.vector, e.dims FROM unnest(%s::bigint[]) "
                                          "u(node) JOIN {s}.node_embeddings e ON e.node = u.node AND e.model = %s"),
                                (rowids, model)).fetchall()
        return {int(r[0]): (r[1], bytes(r[2]), int(r[3])) for r in rows}

    def edges_among(self, rowids: list[int]) -> list[Edge4]:
        with self._tx() as conn:
            rows = conn.execute(self._sql(
                "SELECT source, target, type, weight FROM {s}.edges WHERE source = ANY(%s) AND target = ANY(%s)"),
                (rowids, rowids)).fetchall()
        return [Edge4(int(a), int(b), t, float(w)) for a, b, t, w in rows]

    # -- graph methods ------------------------------------------------------------------------------
    def _arrivals(self, direction: str) -> str:
        """The nodes first reached from ``%(f)s`` (not in ``%(seen)s``), one row each: (n, parent, type,
        weight, f), the arrival the in-memory BFS keeps (an out-edge first, then the lowest parent
        rowid and edge rowid). One indexed probe per frontier node, duplicates dropped in SQL."""
        steps = []
        if direction in ("forward", "both"):
            steps.append("SELECT target n, source parent, type, weight, true f, rowid FROM {s}.edges "
                         "WHERE source = ANY(%(f)s)")
        if direction in ("backward", "both"):
            steps.append("SELECT source n, target parent, type, weight, false f, rowid FROM {s}.edges "
                         "WHERE target = ANY(%(f)s)")
        return ("SELECT DISTINCT ON (x.n) x.n, x.parent, x.type, x.weight, x.f FROM ("
                + " UNION ALL ".join(steps) + ") x LEFT JOIN unnest(%(seen)s::bigint[]) s(id) ON s.id = x.n "
                "WHERE s.id IS NULL ORDER BY x.n, x.f DESC, x.parent, x.rowid")

    def level(self, frontier: list[int], seen: list[int], direction: str) -> list[tuple[int, int, str, float, bool, int]]:
        """One BFS level: (node, parent, edge type, weight, forward, degree) of each node first reached
        from ``frontier``, in node order (see ``_arrivals``)."""
        sql = ("SELECT a.*, coalesce(g.degree, 0) FROM (" + self._arrivals(direction) + ") a "
               "LEFT JOIN {s}.pd_degree g ON g.node = a.n ORDER BY a.n")
        with self._tx() as conn:
            rows = conn.execute(self._sql(sql), {"f": frontier, "seen": seen}).fetchall()
        return [(int(n), int(p), t, float(w), bool(f), int(g)) for n, p, t, w, f, g in rows]

    def last_level(self, frontier: list[int], cum: list[float], seen: list[int], direction: str, depth: int,
                   top: int, per_depth: int) -> LastLevel:
        """The deepest level of an impact walk, ranked in the database (most of the reached nodes are
        there: only its ``per_depth`` riskiest nodes, its best cumulative risk and its counts travel).
        risk = weight (as float32, as the in-memory graph holds it) x degree / ``top`` / ``depth``;
        cumulative risk = risk + the parent's (``cum``, aligned with ``frontier``)."""
        sql = ("WITH a AS (" + self._arrivals(direction) + "), "
               "r AS (SELECT a.*, coalesce(g.degree, 0) deg, a.weight::real::float8 * coalesce(coalesce(g.degree, 0)"
               "::float8 / nullif(%(top)s::float8, 0), 0) / %(d)s risk FROM a "
               "LEFT JOIN {s}.pd_degree g ON g.node = a.n), "
               "c AS (SELECT r.*, r.risk + p.cum cum FROM r JOIN unnest(%(f)s::bigint[], %(cum)s::float8[]) "
               "p(id, cum) ON p.id = r.parent) "
               "(SELECT 0, n, parent, type, weight, f, deg, risk, 0::bigint FROM c ORDER BY risk DESC, n LIMIT %(k)s) "
               "UNION ALL (SELECT 1, n, parent, type, weight, f, deg, cum, 0 FROM c ORDER BY cum DESC, n LIMIT 1) "
               "UNION ALL SELECT 2, NULL, NULL, type, NULL, NULL, NULL, NULL, count(*) FROM c GROUP BY type")
        args = {"f": frontier, "cum": cum, "seen": seen, "top": top, "d": depth, "k": per_depth}
        with self._tx() as conn:
            rows = conn.execute(self._sql(sql), args).fetchall()
        ranked = sorted((_ranked(r) for r in rows if r[0] == 0), key=lambda r: (-r[6], r[0]))
        best = next((_ranked(r) for r in rows if r[0] == 1), None)
        types = {r[3]: int(r[8]) for r in rows if r[0] == 2}
        return LastLevel(sum(types.values()), types, ranked, best)

    def check_hop(self, edges: int, hop: int, depth: int) -> None:
        """Refuse a BFS level before it runs when its frontier's edges (the sum of their degrees, known
        from the level before) pass ``max_rows``."""
        if edges > self.max_rows:
            raise QueryTooBroad(f"KG '{self.store.db_id}': hop {hop} of {depth} from this node would walk about "
                                f"{edges:,} edges (bound {self.max_rows:,}, {MAX_ROWS_ENV}): ask fewer hops")

    def degree_of(self, rowid: int) -> int:
        with self._tx() as conn:
            row = conn.execute(self._sql("SELECT degree FROM {s}.pd_degree WHERE node = %s"), (rowid,)).fetchone()
        return int(row[0]) if row else 0

    def top_degree(self) -> int:
        """The KG's largest edge count (criticality = degree / it), once per version."""
        version = self.store.version()
        if self._top is None or self._top[0] != version:
            with self._tx() as conn:
                top = conn.execute(self._sql("SELECT max(degree) FROM {s}.pd_degree")).fetchone()[0]
            self._top = (version, int(top or 0))
        return self._top[1]

    def hop(self, frontier: list[int]) -> list[Edge4]:
        """Every edge with an end in ``frontier`` (both directions: trace ignores direction)."""
        sql = ("SELECT source, target, type, weight FROM {s}.edges WHERE source = ANY(%s) "
               "UNION ALL SELECT source, target, type, weight FROM {s}.edges WHERE target = ANY(%s)")
        with self._tx() as conn:
            rows = conn.execute(self._sql(sql), (frontier, frontier)).fetchall()
            if len(rows) > self.max_rows:
                raise QueryTooBroad(f"KG '{self.store.db_id}': one hop of the path search reached {len(rows):,} "
                                    f"edges (bound {self.max_rows:,}): ask fewer hops")
        return [Edge4(int(a), int(b), t, float(w)) for a, b, t, w in rows]

    def rowids_of(self, node_ids: list[str]) -> dict[str, int]:
        with self._tx() as conn:
            rows = conn.execute(self._sql("SELECT id, rowid FROM {s}.nodes WHERE id = ANY(%s)"), (node_ids,)).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def approx_nodes(self) -> int:
        """The planner's node count (pg_class.reltuples, no scan), else the count."""
        with self.store._conn() as conn:
            row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                               (f"{self.store.s}.nodes",)).fetchone()
        if row is not None and row[0] >= 0:
            return int(row[0])
        return int(self.store.node_count())  # never analysed: a young KG, cheap to count


def hnsw_settings(text: str | None) -> tuple[int, int]:
    """(m, ef_construction) of a KG's ``pushdown_hnsw`` setting ("m=24,ef_construction=128"; either may
    be left out), else ``HNSW_DEFAULT``. They apply when the index is built (a new model, or after
    ``rebuild_vector_index``): more is slower to build and nearer exact (docs/postgres.md)."""
    m, efc = HNSW_DEFAULT
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if key not in ("m", "ef_construction") or not value.strip().isdigit():
            raise InvalidArgument(f"setting {HNSW_KEY}={text!r}: write m=N,ef_construction=N (e.g. m=24,ef_construction=128)")
        if key == "m":
            m = int(value)
        else:
            efc = int(value)
    if not (2 <= m <= 100 and 2 * m <= efc <= 1000):  # pgvector's own limits
        raise InvalidArgument(f"setting {HNSW_KEY}={text!r}: m is 2-100 and ef_construction 2 x m-1000")
    return m, efc


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


PREFIX_MIN = 4  # letters a word's inflection prefix needs: a shorter one ("us:*") matches too much


def query_words(query: str, limit: int = 16, analyzer: Any = None) -> list[str]:
    """The query's words as tsquery lexemes: letters and digits only, lower case, de-duplicated.

    With ``analyzer`` (the ranking's ``index.text.Analyzer``) the words are those its BM25 scores: its
    stopwords dropped (unless nothing else is left: "to" or "a" in an any-word query matched nearly
    every node, and the bounded sample of them was the first rows found, not the best), and each word
    with its inflections, as its stemmer counts them: a prefix query of what the word and its stem
    share ("directories" -> ``director:*``, as "directory"), since the stored ``tsvector`` is not stemmed."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query) if len(w) > 1))
    if analyzer is None:
        return words[:limit]
    kept = [w for w in words if w not in analyzer.stop] or words
    return list(dict.fromkeys(inflected(w, analyzer) for w in kept))[:limit]


def inflected(word: str, analyzer: Any) -> str:
    """``word`` as a lexeme matching its inflections: the prefix it shares with its stem, if long enough."""
    stem = analyzer.stem(word)
    # Porter's y -> i ("directori"): the stem's i stands for the word's y, which the prefix must not fix
    shared = os.path.commonprefix([word, stem.removesuffix("i")])
    return f"{shared}:*" if len(shared) >= PREFIX_MIN else word


def vector_text(v: np.ndarray) -> str:
    """pgvector's text form of a float32 vector."""
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(v, np.float32).tolist()) + "]"
