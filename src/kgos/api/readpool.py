"""Search and the query methods in worker processes: ``kgos serve --workers N``.

Why processes: reads already run in parallel threads (``Workspace.read``), but a search on go is
~10 ms of Python that holds the GIL, so threads alone gave 16 clients no more than one client's
throughput on 2 cores (benchmarks/serve_throughput.py, docs/performance.md). Each worker opens the
same workspace and holds its own snapshots; it sees every write of the server (or of any process) the
way another process does: the SQLite file's version (or PostgreSQL's notices) is checked per query.

Only reads go to the workers; everything else (writes, jobs, MCP sessions, event streams, experts)
stays in the server process, so ids those hand out keep working whichever request comes next.

``ReadPool.run(db_id, op, args)`` returns what ``execute`` returns in the server, or raises the same
``KGOSError`` class (with its suggestions or candidates); a worker that died is replaced and the
read answered in the server process, never a 500.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import KGNotFound, KGOSError
from ..worker import _CARRIED, _rebuilt

if TYPE_CHECKING:
    from ..kg import KG, Workspace

MAX_WORKERS = 64


def execute(ws: Workspace, db_id: str, op: str, args: tuple[Any, ...]) -> Any:
    """A named read of KG ``db_id`` as a JSON-able document: ``search`` (a ``SearchIn`` body) or
    ``method`` (a catalogue method's name and its parameter body)."""
    return ws.read(db_id, _OPS[op](*args))


def _search(body: Any) -> Callable[[KG], Any]:
    from . import models as m
    from .kg import search_dict
    return lambda kg: search_dict(kg.search(body.query, k=body.k, weights=m.weights_arg(body.weights),
                                            intent=body.intent, mode=body.mode, filters=body.filters,
                                            model=body.model), body.explain)


def _method(name: str, body: Any) -> Callable[[KG], Any]:
    from ..kg.catalogue import METHODS
    method = next(x for x in METHODS if x.name == name)
    return lambda kg: method.run(kg, body).to_dict()


_OPS: dict[str, Callable[..., Callable[[KG], Any]]] = {"search": _search, "method": _method}


class ReadPool:
    """``workers`` spawned processes over the workspace at ``home`` (and ``database_url``)."""

    def __init__(self, home: Path, database_url: str | None, workers: int) -> None:
        self.home, self.database_url, self.workers = home, database_url, workers
        self._lock = threading.Lock()
        self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        # spawn, not fork: a fork of the threaded server could inherit a lock held by another thread
        pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init, initargs=(str(self.home), self.database_url))
        for _ in range(self.workers):  # all started now (the pool starts one per busy moment otherwise)
            pool.submit(time.sleep, 0.5)
        return pool

    def run(self, ws: Workspace, db_id: str, op: str, args: tuple[Any, ...]) -> Any:
        pool = self._pool
        try:
            kind, payload = pool.submit(_read, db_id, op, args).result()
        except BrokenProcessPool:  # a worker died (killed, out of memory): new ones, and this read here
            self._restart(pool)
            return execute(ws, db_id, op, args)
        if kind == "error":
            raise _rebuilt(*payload)
        return payload

    def _restart(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is broken:
                self._pool = self._start()
        broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_WS: Workspace | None = None  # the worker's own workspace


def _init(home: str, database_url: str | None) -> None:
    global _WS
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops its workers
    from ..kg import Workspace
    _WS = Workspace(home, database_url=database_url)


def _forget_if_gone(ws: Workspace, db_id: str) -> None:
    """The server deleted (or deleted and re-created) the KG: never answer from the old file."""
    kg = ws._open.get(db_id)
    replaced = getattr(kg.store, "replaced", None) if kg is not None else None
    if replaced is not None and replaced():
        ws._forget(db_id)
    if not ws.exists(db_id):
        ws._forget(db_id)
        raise KGNotFound(f"no KG named '{db_id}'")


def _read(db_id: str, op: str, args: tuple[Any, ...]) -> tuple[str, Any]:
    """In a worker: ``("ok", document)`` or ``("error", (class name, message, attributes))``."""
    ws = _WS
    assert ws is not None, "the read pool's initializer opens the workspace"
    try:
        _forget_if_gone(ws, db_id)
        return "ok", execute(ws, db_id, op, args)
    except KGOSError as exc:
        return "error", (type(exc).__name__, str(exc), {k: getattr(exc, k) for k in _CARRIED if hasattr(exc, k)})
