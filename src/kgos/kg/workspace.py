"""The workspace: one folder of KGs (DESIGN.md section 4).

```
$KGOS_HOME/              (default ~/.kgos)
  kgs/<db_id>.db         one native SQLite KG per file
  workspace.db           attached KGs, settings; experts, conversations, memory... (in PostgreSQL
                         instead with a database URL: ``Workspace.shared``)
  cache/<db_id>/         derived indexes, safe to delete
```

>>> import kgos, tempfile
>>> ws = kgos.Workspace(tempfile.mkdtemp())
>>> kg = ws.create("notes")
>>> kg.add_node("Prompt caching", type="feature").id
'feature:prompt_caching'
>>> [info.db_id for info in ws.list()]
['notes']
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import InvalidArgument, InvalidName, KGExists, KGNotFound, SchemaNotRecognized
from ..settings import current
from ..store.base import GraphStore
from ..store.formats import open_source, writer_for
from ..store.importer import ImportReport, Progress, bulk_load, merge_into
from ..store.native import NativeStore
from ..store.registry import Registry, open_workspace_db
from .facade import KG

if TYPE_CHECKING:
    from ..retrieval.results import SearchResult

T = TypeVar("T")
DB_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
IMPORT_MODES = ("create", "merge", "replace")


def check_db_id(db_id: Any) -> str:
    """A db_id is 1-64 of lowercase letters, digits, ``-`` and ``_``, starting with a letter or digit."""
    if not isinstance(db_id, str) or not DB_ID_RE.fullmatch(db_id):
        raise InvalidName(f"invalid KG name {db_id!r}: use 1-64 lowercase letters, digits, '-' or '_', "
                          "starting with a letter or digit (e.g. 'my-kg')")
    return db_id


def default_home() -> Path:
    return current().home_path


@dataclass(frozen=True)
class KGInfo:
    db_id: str
    kind: str  # "native" | "attached" | "postgres" (a KG of the workspace's database)
    path: str
    profile: str
    read_only: bool
    name: str
    description: str
    nodes: int
    edges: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Workspace:
    def __init__(self, home: str | Path | None = None, database_url: str | None = None) -> None:
        """``database_url`` (default: ``$KGOS_DATABASE_URL``): new KGs are created in that PostgreSQL
        database, and its KGs are listed with the local ones (docs/postgres.md)."""
        self.home = Path(home).expanduser() if home is not None else default_home()
        self.database_url = database_url or current().database_url
        self._pg: Any = None
        self._shared: Any = None
        self.kgs_dir = self.home / "kgs"
        self.cache_dir = self.home / "cache"
        self.kgs_dir.mkdir(parents=True, exist_ok=True)
        _remove_stale_temps(self.kgs_dir)
        self.db = open_workspace_db(self.home / "workspace.db")
        self.registry = Registry(self.db)
        self._open: dict[str, KG] = {}
        # The workspace's own SQLite connection (workspace.db) and the experts, memory and research
        # services on it must not be used by two threads at once: code that shares one Workspace
        # between threads (the HTTP server) holds this around those uses. Reads of a KG need neither
        # lock (its store reads on a connection per thread, and serialises its own writes).
        self.lock = threading.RLock()
        self._open_lock = threading.RLock()  # the cache of open KGs: opening, forgetting, deleting

    def close(self) -> None:
        with self._open_lock:
            for kg in self._open.values():
                kg.store.close()
            self._open.clear()
        self.db.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- naming ------------------------------------------------------------------------------------
    def native_path(self, db_id: str) -> Path:
        return self.kgs_dir / f"{check_db_id(db_id)}.db"

    def exists(self, db_id: str) -> bool:
        return self.native_path(db_id).exists() or self.registry.get(db_id) is not None or self._in_pg(db_id)

    def db_ids(self) -> list[str]:
        native = [p.stem for p in self.kgs_dir.glob("*.db") if DB_ID_RE.fullmatch(p.stem)]
        shared = self.pg.kg_ids() if self.pg is not None else []
        return sorted(set(native) | {row[0] for row in self.registry.all()} | set(shared))

    @property
    def pg(self) -> Any:
        """The ``PgDatabase`` of ``database_url`` (connected on first use), or None."""
        if self.database_url and self._pg is None:
            from ..store.postgres_db import database
            self._pg = database(self.database_url)
        return self._pg

    @property
    def shared(self) -> Any:
        """Where the tables every server of a deployment shares live (experts, conversations, feedback,
        A/B tests, links, memory): ``workspace.db``, or with ``database_url`` the ``PgWorkspaceDB`` of
        that database (docs/postgres.md, "What is shared")."""
        if not self.database_url:
            return self.db
        if self._shared is None:
            from ..store.postgres_workspace import shared
            self._shared = shared(self.database_url)
        return self._shared

    def share_local(self) -> dict[str, int]:
        """Copy this home's experts, conversations, feedback, A/B tests, links, memory items and research
        runs from ``workspace.db`` into the workspace's PostgreSQL database (one transaction; rows
        already there are kept). For a workspace that was used with SQLite before its database URL."""
        from ..store.postgres_workspace import copy_from_sqlite, is_postgres
        if not is_postgres(self.shared):
            raise InvalidArgument("this workspace has no database URL (--database-url or KGOS_DATABASE_URL): "
                                  "its shared tables are already the local workspace.db")
        return copy_from_sqlite(self.db, self.shared, self.home / "research")

    def _in_pg(self, db_id: str) -> bool:
        return self.pg is not None and self.pg.kg_schema(db_id) is not None

    # -- opening -----------------------------------------------------------------------------------
    def kg(self, db_id: str) -> KG:
        """Open a native or attached KG by its db_id."""
        check_db_id(db_id)
        kg = self._open.get(db_id)  # one dict read: safe while another thread opens or forgets
        if kg is not None:
            return kg
        with self._open_lock:  # two threads opening one KG: one store, one engine, one snapshot
            if db_id not in self._open:
                self._open[db_id] = KG(self, db_id, self._open_store(db_id))
            return self._open[db_id]

    def _open_store(self, db_id: str) -> GraphStore:
        path = self.native_path(db_id)
        if path.exists():
            return NativeStore(path, db_id)
        if self._in_pg(db_id):
            from ..store.postgres import PostgresStore
            return PostgresStore(self.pg, db_id)
        attached = self.registry.get(db_id)
        if attached is None:
            known = ", ".join(self.db_ids()) or "none yet (try: kgos demo)"
            raise KGNotFound(f"no KG named '{db_id}' in {self.home}; known KGs: {known}")
        if attached[1] == "postgres":
            from ..store.postgres import PostgresStore
            from ..store.postgres_db import split_kg_url
            url, remote = split_kg_url(attached[0])
            return PostgresStore(url, db_id, read_only=attached[2], remote_id=remote)
        from ..store.foreign import ForeignStore
        return ForeignStore(attached[0], db_id, profile=attached[1], read_only=attached[2])

    def _forget(self, db_id: str) -> None:
        """Drop the open KG: the next ``kg(db_id)`` opens it anew. A request still reading it finishes
        on what it opened, or gets KGNotFound if the KG is gone (``NativeStore.close``)."""
        with self._open_lock:
            kg = self._open.pop(db_id, None)
        if kg is not None:
            kg.store.close()

    def read(self, db_id: str, fn: Callable[[KG], T]) -> T:
        """``fn(kg)`` for a read of one KG by a thread sharing this workspace (the HTTP and MCP servers):
        without any workspace-wide lock when the KG's store reads from several threads at once (native
        SQLite, PostgreSQL), so reads run in parallel and a slow one holds up nobody; under ``lock``
        otherwise (an attached foreign SQLite file: one connection)."""
        kg = self.kg(db_id)
        if kg.store.concurrent_reads:
            return fn(kg)
        with self.lock:
            return fn(kg)

    def write(self, db_id: str, fn: Callable[[KG], T]) -> T:
        """``fn(kg)`` for a write of one KG by a thread sharing this workspace: serialised by the KG's
        store (a native file's writer lock, PostgreSQL's transactions), so it waits for no read and for
        no other KG's write; under ``lock`` where the store needs it (as ``read``)."""
        return self.read(db_id, fn)

    def read_many(self, db_ids: Sequence[str], fn: Callable[[], T]) -> T:
        """``fn()`` reading the KGs ``db_ids``: as ``read``, under ``lock`` if any of them needs it."""
        if all(self.kg(db_id).store.concurrent_reads for db_id in db_ids):
            return fn()
        with self.lock:
            return fn()

    def list(self) -> list[KGInfo]:
        return [self.info(db_id) for db_id in self.db_ids()]

    def info(self, db_id: str) -> KGInfo:
        kg = self.kg(db_id)
        meta = kg.store.meta()
        attached = self.registry.get(db_id)
        location = getattr(kg.store, "location", None)  # a PostgreSQL KG: its database (no password)
        return KGInfo(db_id=db_id, kind="attached" if attached else "postgres" if location else "native",
                      path=location or (attached[0] if attached else str(self.native_path(db_id))),
                      profile=meta.get("profile", "native"), read_only=kg.store.read_only,
                      name=meta.get("name", db_id), description=meta.get("description", ""),
                      nodes=kg.store.node_count(), edges=kg.store.edge_count())

    # -- lifecycle ---------------------------------------------------------------------------------
    def create(self, db_id: str, name: str | None = None, description: str = "", local: bool = False) -> KG:
        """A new empty KG: in the workspace's PostgreSQL database if it has one (unless ``local``),
        else a SQLite file."""
        if self.exists(db_id):
            raise KGExists(f"a KG named '{db_id}' already exists; choose another name or delete it first")
        if self.pg is not None and not local:
            self.pg.create_kg(check_db_id(db_id), name, description)
        else:
            NativeStore.create(self.native_path(db_id), db_id, name=name, description=description).close()
        return self.kg(db_id)

    def attach(self, db_id: str, path: str | Path, profile: str | None = None,
               writable: bool = False) -> KG:
        """Register an existing SQLite KG file of a known or guessable schema (read-only by default)."""
        from ..store.foreign import ForeignStore
        if self.exists(db_id):
            raise KGExists(f"a KG named '{db_id}' already exists; choose another name")
        if isinstance(path, str) and path.startswith(("postgresql://", "postgres://")):
            return self._attach_postgres(db_id, path, writable)
        path = Path(path).expanduser().resolve()
        if not path.is_file():
            raise SchemaNotRecognized(f"no such file: {path}")
        store = ForeignStore(path, db_id, profile=profile, read_only=not writable)
        self.registry.add(db_id, str(path), store.profile.name, not writable)
        self._open[db_id] = KG(self, db_id, store)
        return self._open[db_id]

    def _attach_postgres(self, db_id: str, url: str, writable: bool) -> KG:
        """A KG of a PostgreSQL database (``postgresql://.../db#name``; name defaults to ``db_id``)."""
        from ..store.postgres import PostgresStore
        from ..store.postgres_db import split_kg_url
        base, remote = split_kg_url(url)
        if "password=" in base or re.match(r"^postgres(ql)?://[^/@:]*:[^/@]*@", base):
            raise InvalidArgument("the URL is stored in workspace.db: leave the password out of it and put it in "
                                  "~/.pgpass or PGPASSWORD (libpq reads both)")
        store = PostgresStore(base, db_id, read_only=not writable, remote_id=remote)
        self.registry.add(db_id, url, "postgres", not writable)
        self._open[db_id] = KG(self, db_id, store)
        return self._open[db_id]

    def delete(self, db_id: str) -> str:
        """Delete a native KG's file, or detach an attached one (its file is left alone)."""
        with self._open_lock:  # no other thread reopens it between the forget and the unlink
            return self._delete(db_id)

    def _delete(self, db_id: str) -> str:
        if not self.exists(db_id):
            raise KGNotFound(f"no KG named '{db_id}'")
        self._forget(db_id)
        shutil.rmtree(self.cache_dir / db_id, ignore_errors=True)
        if self.registry.get(db_id) is not None:
            self.registry.remove(db_id)
            return "detached"
        if not self.native_path(db_id).exists() and self._in_pg(db_id):
            self.pg.drop_kg(db_id)
            return "deleted"
        path = self.native_path(db_id)
        for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            p.unlink(missing_ok=True)
        return "deleted"

    # -- search across KGs -------------------------------------------------------------------------
    def search(self, db_ids: Sequence[str], query: str, k: int = 10, **options: Any) -> SearchResult:
        """One query over several KGs: hits tagged with ``source_kg``, deduplicated by normalised
        name keeping the higher score (spec/000 section 8, multi-KG experts)."""
        from ..retrieval.multi import merge_results
        if not db_ids:
            raise InvalidArgument("give at least one KG to search")
        results = [self.kg(db_id).search(query, k=k, **options) for db_id in dict.fromkeys(db_ids)]
        return merge_results(results, k)

    def setting(self, db_id: str, key: str) -> str | None:
        row = self._settings_of(db_id).execute("SELECT value FROM kg_settings WHERE db_id = ? AND key = ?",
                                               (db_id, key)).fetchone()
        return row[0] if row else None

    def set_setting(self, db_id: str, key: str, value: str) -> None:
        """Remember a per-KG setting (embedder, tuned weights) in workspace.db; for attached KGs,
        whose own files KG-OS does not write."""
        self._settings_of(db_id).execute("INSERT INTO kg_settings VALUES (?, ?, ?) ON CONFLICT (db_id, key) "
                                         "DO UPDATE SET value = excluded.value", (db_id, key, value))

    def _settings_of(self, db_id: str) -> Any:
        """Where a KG's workspace settings live: shared by every server for a KG of the workspace's
        database (the demo's fingerprint: `kgos demo` on a second server), else this home's."""
        if self.database_url and self.registry.get(db_id) is None and not self.native_path(db_id).exists():
            return self.shared
        return self.db

    # -- import / export ---------------------------------------------------------------------------
    def import_file(self, db_id: str, path: str | Path, format: str | None = None, mode: str = "create",
                    skip_dangling: bool = False, progress: Progress | None = None,
                    skip_invalid: bool = False, dimensions: bool = True) -> ImportReport:
        """Import a file into a KG, all or nothing.

        ``mode``: ``create`` (the KG must not exist), ``merge`` (upsert into an existing native KG) or
        ``replace`` (build a new file, then swap it in; the old KG survives any failure). The search
        snapshot of the new version is built and saved right after, so the first query of any
        process loads it instead of building it (DESIGN.md section 8). ``skip_invalid``: records that
        fail their checks are left out and counted (``report.skipped_invalid``) instead of failing.
        ``dimensions``: infer the KG's dimension values (``dims auto``: the structural rules, and the
        word rules where the KG speaks the catalogue's language; ``report.dimensions`` says what).
        """
        created = mode == "create"
        report = self._import_file(db_id, path, format, mode, skip_dangling, progress, skip_invalid)
        try:
            if dimensions:
                report = self._import_dimensions(db_id, report, progress)
            if progress:
                progress("search index", 0)
            self.kg(db_id).engine.snapshot()
        except MemoryError:
            if created:  # a new KG whose rules or index do not fit (KGOS_MAX_MEMORY_MB) is not left half usable
                self.delete(db_id)
            raise
        return report

    def _import_dimensions(self, db_id: str, report: ImportReport, progress: Progress | None) -> ImportReport:
        if progress:
            progress("dimensions", 0)
        kg = self.kg(db_id)
        if not kg.store.writable:
            return report
        from ..methods import autodims  # a hundred patterns: compiled when first needed
        from ..methods.dimrules import RULES as WORD_RULES
        from ..methods.view import view_from_arrays
        # the graph straight from the store: a search snapshot of this version would be replaced at once
        inferred = autodims.infer(kg, words=None, view=view_from_arrays(kg.store.graph_arrays()))
        return replace(report, dimensions={"nodes_written": inferred.nodes_written, "values": len(inferred.inferred),
                                           "word_rules": any(r in WORD_RULES for r in inferred.rules)})

    def _import_file(self, db_id: str, path: str | Path, format: str | None, mode: str,
                     skip_dangling: bool, progress: Progress | None, skip_invalid: bool) -> ImportReport:
        if mode not in IMPORT_MODES:
            raise InvalidArgument(f"mode must be one of {', '.join(IMPORT_MODES)}, not {mode!r}")
        check_db_id(db_id)
        source = open_source(path, format)
        exists = self.exists(db_id)
        attached = self.registry.get(db_id) if exists else None
        if attached is not None and not (attached[1] == "postgres" and mode == "merge"):
            raise InvalidArgument(f"'{db_id}' is an attached KG; import into a native KG instead"
                                  + (" (or --merge into it)" if attached[1] == "postgres" else ""))
        if mode == "merge" and exists:
            # one bulk unit of work of the store, SQLite or PostgreSQL alike
            merged = merge_into(self.kg(db_id).store, source, skip_dangling, progress, skip_invalid)
            self.kg(db_id).engine.embed_changed()  # an embedded KG stays searchable by meaning
            return merged
        if mode == "create" and exists:
            raise KGExists(f"KG '{db_id}' already exists: use --merge to add to it or --replace to overwrite it")
        carried = self.kg(db_id).engine.vector_carry() if exists else None
        report = self._build_and_swap(db_id, source, skip_dangling, progress, mode, skip_invalid)
        if carried is not None:  # the replacement keeps the embedder and the vectors of unchanged text
            self.kg(db_id).engine.embed_changed(carried)
        return report

    def _build_and_swap(self, db_id: str, source: Any, skip_dangling: bool,
                        progress: Progress | None, mode: str, skip_invalid: bool = False,
                        native: bool = False) -> ImportReport:
        """Build the KG anew: in PostgreSQL if it lives there or is new in a PostgreSQL workspace
        (unless ``native``), else as a SQLite file swapped into place."""
        if not native and (self._in_pg(db_id) or (self.pg is not None and not self.native_path(db_id).exists())):
            from ..store import postgres_import  # one transaction: a killed server leaves the KG as it was
            report = postgres_import.bulk_load(self.pg, db_id, source, mode, skip_dangling, progress, skip_invalid)
            self._forget(db_id)
            shutil.rmtree(self.cache_dir / db_id, ignore_errors=True)
            return report
        final = self.native_path(db_id)
        _remove_stale_temps(self.kgs_dir)
        temp = final.with_name(f".{final.name}.importing-{os.getpid()}")
        temp.unlink(missing_ok=True)
        try:
            report = replace(bulk_load(temp, source, db_id, skip_dangling, progress, skip_invalid), mode=mode)
            self._forget(db_id)
            _swap_in(temp, final)
        finally:
            temp.unlink(missing_ok=True)
        shutil.rmtree(self.cache_dir / db_id, ignore_errors=True)
        return report

    def copy(self, src: str, dst: str, backend: str | None = None, database_url: str | None = None) -> ImportReport:
        """Copy KG ``src`` into a new KG ``dst`` losslessly (nodes, edges, ids, timestamps, settings,
        vectors). ``backend``: ``native`` (a SQLite file) or ``postgres`` (``database_url``, default
        the workspace's; a KG in another database than the workspace's is attached as ``dst``)."""
        from .copy import copy_vectors, settings_of, store_source
        check_db_id(dst)
        if self.exists(dst):
            raise KGExists(f"a KG named '{dst}' already exists; choose another name or delete it first")
        store = self.kg(src).store
        target = backend or ("postgres" if database_url or self.database_url else "native")
        report = self._copy_rows(dst, store_source(store), target, database_url)
        settings = settings_of(store, self.setting)
        dest = self.kg(dst).store
        if settings:
            dest.set_meta(**settings)  # type: ignore[attr-defined]
        copy_vectors(store, dest, self.cache_dir)
        self._forget(dst)  # reopened with the settings just written
        return replace(report, mode="copy")

    def _copy_rows(self, dst: str, source: Any, target: str, database_url: str | None) -> ImportReport:
        if target == "native":
            return self._build_and_swap(dst, source, False, None, "create", native=True)
        if target != "postgres":
            raise InvalidArgument(f"backend must be native or postgres, not {target!r}")
        from ..store import postgres_import
        from ..store.postgres_db import database
        url = database_url or self.database_url
        if url is None:
            raise InvalidArgument("copying to PostgreSQL needs a database URL (--database-url or KGOS_DATABASE_URL)")
        report = postgres_import.bulk_load(database(url), dst, source, "create")
        if url != self.database_url:  # another database than the workspace's: attach it
            self._attach_postgres(dst, f"{url}#{dst}", writable=True)
        return report

    def export(self, db_id: str, path: str | Path, format: str | None = None,
               progress: Progress | None = None) -> Path:
        """Write the KG to ``path``, creating missing folders; InvalidArgument if it cannot be written."""
        path = Path(path)
        write, store = writer_for(path, format), self.kg(db_id).store
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write(store, path, progress=progress)
        except OSError as exc:
            raise InvalidArgument(f"cannot write {path}: {exc.strerror or exc}; choose a path in a folder "
                                  "you can write to") from None
        return path


TEMP_RE = re.compile(r"\..+\.importing-(\d+)(?:-wal|-shm|-journal)?")
STALE_TEMP_SECONDS = 6 * 3600  # an import writes its file all along; one untouched this long is dead


def _remove_stale_temps(folder: Path) -> None:
    """Delete half-built files (and their -wal/-shm) left by imports whose process died, e.g. killed
    with SIGKILL: those whose pid is no longer running, or that nothing has written for hours (the
    pid may have been reused). A file a live import may still be writing is left alone."""
    now = time.time()
    for temp in folder.glob(".*.importing-*"):
        m = TEMP_RE.fullmatch(temp.name)
        if m is None:
            continue
        try:
            idle = now - temp.stat().st_mtime
        except FileNotFoundError:
            continue
        if not _alive(int(m.group(1))) or idle > STALE_TEMP_SECONDS:
            temp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _swap_in(temp: Path, final: Path) -> None:
    """Make ``final`` the KG built in ``temp``. A new KG is renamed into place. An existing one is
    overwritten through SQLite's backup API, in one write transaction: processes that have it open
    (a server, another CLI) read the old content until it commits and the new one after, as with any
    write. (Renamed over, their connections would stay on the old file for good; and the old file
    cannot leave WAL mode to be retired while they hold it open: "database is locked".)"""
    if not final.exists():
        os.replace(temp, final)
        return
    source, target = NativeStore(temp, final.stem, read_only=True), NativeStore(final, final.stem)
    try:
        source.writer_conn.backup(target.writer_conn)  # all pages in one step: one transaction, all or nothing
    finally:
        source.close()
        target.close()