"""One PostgreSQL database holding KGs: its connection pool, migrations, registry and version listener.

A database holds many KGs, one schema each (``kg_<db_id>``); ``kgos.kgs`` lists them. Several
KG-OS servers share the database: each keeps one ``PgDatabase`` per URL, whose listener thread
learns of every KG's new version through ``LISTEN kgos_version`` (the triggers of
``postgres_schema`` notify on each write). While the listener is down, ``version`` asks the
database on every call instead, so a server never serves a stale snapshot for long.

psycopg (3) and psycopg_pool are the optional extra ``postgres``, imported here only.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import DatabaseUnavailable, InvalidArgument, KGExists, KGNotFound, MissingDependency, StoreBusy
from ..settings import current
from . import postgres_schema
from .migrations import now_iso

# Connections per server process, and how long a request waits for a free one before its 503;
# KGOS_PG_POOL_MAX and KGOS_PG_POOL_WAIT override them.
POOL_MAX = 8
POOL_WAIT_SECONDS = 5.0
CONNECT_TIMEOUT = 5
_DATABASES: dict[str, PgDatabase] = {}
_DATABASES_LOCK = threading.Lock()


def psycopg_modules() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise MissingDependency("psycopg", "postgres") from None
    return psycopg, psycopg_pool


def is_database_url(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))


def split_kg_url(url: str) -> tuple[str, str | None]:
    """``postgresql://.../db#kg`` -> (the database URL, the KG's name there or None)."""
    base, _, fragment = url.partition("#")
    return base, fragment or None


def safe_url(url: str) -> str:
    """The URL without its password, for messages and listings."""
    scheme_only = url.split("://", 1)[0] + "://..."
    try:
        psycopg, _ = psycopg_modules()
    except MissingDependency:
        return scheme_only
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:  # a malformed URL: its scheme only
        return scheme_only
    host = info.get("host", "localhost")
    port = f":{info['port']}" if info.get("port") else ""
    user = f"{info['user']}@" if info.get("user") else ""
    return f"postgresql://{user}{host}{port}/{info.get('dbname', '')}"


def database(url: str) -> PgDatabase:
    """The shared ``PgDatabase`` of this URL in this process (one pool, one listener)."""
    with _DATABASES_LOCK:
        db = _DATABASES.get(url)
        if db is None or db.closed:
            db = _DATABASES[url] = PgDatabase(url)
        return db


def close_all() -> None:
    with _DATABASES_LOCK:
        for db in _DATABASES.values():
            db.close()
        _DATABASES.clear()


def schema_name(db_id: str) -> str:
    """``kg_<db_id>``, or a hashed tail where that exceeds PostgreSQL's 63-byte identifiers."""
    name = f"kg_{db_id}"
    return name if len(name) <= 63 else f"kg_{db_id[:44]}_{hashlib.sha1(db_id.encode()).hexdigest()[:12]}"


class PgDatabase:
    """A pool of autocommit connections to one database, migrated on first use."""

    def __init__(self, url: str, pool_max: int | None = None, wait: float | None = None) -> None:
        self.psycopg, pool_mod = psycopg_modules()
        pool_max = pool_max or current().pg_pool_max
        wait = wait or current().pg_pool_wait
        self.url, self.label, self.wait = url, safe_url(url), wait
        self.closed = False
        self._probe()  # a wrong URL or password fails here, at once, with the server's reason
        self.pool = pool_mod.ConnectionPool(
            url, min_size=1, max_size=pool_max, timeout=wait, open=True, name=f"kgos {self.label}",
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT}, reconnect_timeout=0)
        with self.connection() as conn, conn.transaction():
            postgres_schema.apply_database(conn)
        self.versions: dict[str, int] = {}  # schema -> latest version notified (while listening)
        self.listening = False
        self._listener = threading.Thread(target=self._listen, name="kgos-pg-listen", daemon=True)
        self._listener.start()

    def close(self) -> None:
        self.closed = True
        self.pool.close()

    # -- connections -------------------------------------------------------------------------------
    def _probe(self) -> None:
        try:
            self.psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT).close()
        except self.psycopg.Error as exc:
            raise DatabaseUnavailable(f"cannot connect to {self.label}: {_reason(exc)}") from None

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection; database failures become DatabaseUnavailable / StoreBusy (503s)."""
        pool_mod = psycopg_modules()[1]
        try:
            with self.pool.connection() as conn:
                yield conn
        except pool_mod.PoolTimeout:
            self._raise_unavailable()
        except self.psycopg.OperationalError as exc:
            # A restarted server left every idle connection dead: replace them now, not one failed
            # request each (a ping per checkout instead doubled the cost of a query).
            threading.Thread(target=self.pool.check, daemon=True).start()
            raise DatabaseUnavailable(f"the database {self.label} failed: {_reason(exc)}; retry shortly") from None

    def _raise_unavailable(self) -> None:
        """No connection within the wait: the server is down (say why) or every connection is busy."""
        self._probe()  # raises DatabaseUnavailable with the server's reason
        raise StoreBusy(f"all {self.pool.max_size} connections to {self.label} stayed busy for {self.wait:g} s; "
                        "retry shortly") from None

    # -- KGs in this database ------------------------------------------------------------------------
    def kg_ids(self) -> list[str]:
        with self.connection() as conn:
            return [r[0] for r in conn.execute("SELECT db_id FROM kgos.kgs ORDER BY db_id")]

    def kg_schema(self, db_id: str) -> str | None:
        with self.connection() as conn:
            row = conn.execute("SELECT schema_name FROM kgos.kgs WHERE db_id = %s", (db_id,)).fetchone()
        return row[0] if row else None

    def require_kg(self, db_id: str) -> str:
        schema = self.kg_schema(db_id)
        if schema is None:
            known = ", ".join(self.kg_ids()) or "none yet"
            raise KGNotFound(f"no KG named '{db_id}' in {self.label}; KGs there: {known}")
        return schema

    def create_schema(self, conn: Any, db_id: str, schema: str, meta: dict[str, str],
                      only: tuple[str, ...] | None = None) -> None:
        """Inside ``conn``'s transaction: a KG schema with its tables and metadata."""
        ident = self.ident(schema)
        conn.execute(f"CREATE SCHEMA {ident}")
        postgres_schema.apply_kg(conn, ident, only)
        conn.cursor().executemany(f"INSERT INTO {ident}.kg_meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                                  list(meta.items()))

    def create_kg(self, db_id: str, name: str | None = None, description: str = "") -> None:
        meta = {"name": name or db_id, "description": description, "format": "kgos-native/1",
                "created_at": now_iso()}
        schema = schema_name(db_id)
        with self.connection() as conn, conn.transaction():
            postgres_schema.lock(conn)  # two servers creating one name: the second sees the first's row
            if conn.execute("SELECT 1 FROM kgos.kgs WHERE db_id = %s", (db_id,)).fetchone():
                raise KGExists(f"a KG named '{db_id}' already exists in {self.label}")
            self.create_schema(conn, db_id, schema, meta)
            conn.execute("INSERT INTO kgos.kgs VALUES (%s, %s, %s)", (db_id, schema, meta["created_at"]))

    def drop_kg(self, db_id: str) -> None:
        with self.connection() as conn, conn.transaction():
            row = conn.execute("DELETE FROM kgos.kgs WHERE db_id = %s RETURNING schema_name", (db_id,)).fetchone()
            if row is None:
                raise KGNotFound(f"no KG named '{db_id}' in {self.label}")
            conn.execute(f"DROP SCHEMA {self.ident(row[0])} CASCADE")

    def ident(self, name: str) -> str:
        """A schema name as a quoted SQL identifier (names come from ``schema_name`` or kgos.kgs)."""
        if not name.startswith(("kg_", "kgi_")) or '"' in name or "\x00" in name:
            raise InvalidArgument(f"not a KG schema name: {name!r}")
        return self.psycopg.sql.Identifier(name).as_string(None)

    # -- versions: LISTEN/NOTIFY, else a query ----------------------------------------------------------
    @staticmethod
    def bump(conn: Any, ident: str, schema: str) -> int:
        """A new version for the KG of schema ``schema`` (``ident``: quoted), notified at commit."""
        v = int(conn.execute(f"UPDATE {ident}.kg_version SET v = nextval('kgos.versions') RETURNING v").fetchone()[0])
        conn.execute("SELECT pg_notify(%s, %s)", (postgres_schema.NOTIFY_CHANNEL, f"{schema} {v}"))
        return v

    def version_of(self, conn: Any, ident: str) -> int:
        return int(conn.execute(f"SELECT v FROM {ident}.kg_version").fetchone()[0])

    def cached_version(self, schema: str) -> int | None:
        return self.versions.get(schema) if self.listening else None

    def remember(self, schema: str, version: int) -> None:
        """A version read or written here: kept if newer (versions come from one sequence)."""
        if self.listening and version > self.versions.get(schema, -1):
            self.versions[schema] = version

    def _listen(self) -> None:
        while not self.closed:
            try:
                with self.psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
                    conn.execute(f"LISTEN {postgres_schema.NOTIFY_CHANNEL}")
                    self.versions.clear()  # notices missed while not listening: read afresh
                    self.listening = True
                    self._receive(conn)
            except self.psycopg.Error:
                pass
            self.listening = False
            self.versions.clear()
            time.sleep(0.5)

    def _receive(self, conn: Any) -> None:
        while not self.closed:
            for notice in conn.notifies(timeout=1.0):
                schema, _, version = notice.payload.rpartition(" ")
                if version.isdigit() and int(version) > self.versions.get(schema, -1):
                    self.versions[schema] = int(version)
            conn.execute("SELECT 1")  # a connection that died quietly fails here: fall back, reconnect


def _reason(exc: Exception) -> str:
    """The first line of a driver error (libpq never echoes the password)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
