"""Heavy job work in a worker process with its own memory ceiling, so a runaway input kills the job,
not the server.

Why a process and not the job thread: parsing runs in C calls that hold the GIL for their whole
length (``ast.parse`` of a 12 MB Python file: a minute, 1.8 GB), so a thread stalls every route of
the server, health included, and its memory is the server's. The worker is started with ``spawn``
(a fork of a threaded server can inherit a held lock), caps its private memory with
``resource.setrlimit(RLIMIT_DATA)`` (``KGOS_JOB_MEMORY_MB``, default 4096) and reports progress over a
pipe; the job thread relays it, so cancelling the job terminates the process.

``run_in_worker(fn, args, progress)`` returns ``fn(*args, progress)`` or raises: the ``KGOSError``
the work raised (same class and message), ``InputTooLarge`` when it ran out of its memory ceiling,
``WorkerFailed`` when the process died (killed for memory, a crash). ``check`` (optional) is called
while the job waits for a slot and at every poll of the worker: what it raises (a stopped research
run) terminates the worker and reaches the caller.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import threading
from collections.abc import Callable
from typing import Any

from . import errors
from .errors import InputTooLarge, KGOSError, ServerBusy, WorkerFailed
from .settings import current

_POLL = 0.2  # seconds between checks that the worker is alive
ProgressFn = Callable[[str, int, int], None]


def memory_ceiling_mb() -> int:
    """The worker's memory ceiling in MB: ``KGOS_JOB_MEMORY_MB``, else 4096."""
    return max(current().job_memory_mb, 256)


def _max_workers() -> int:
    return current().max_workers


_SLOTS = threading.BoundedSemaphore(_max_workers())


def run_in_worker(fn: Callable[..., dict[str, Any]], args: tuple[Any, ...], progress: ProgressFn,
                  memory_mb: int | None = None, wait: bool = True,
                  check: Callable[[], None] | None = None, nice: int = 0) -> dict[str, Any]:
    """``fn(*args, progress)`` in a spawned process capped at ``memory_mb`` (module-level ``fn``), at
    scheduling priority ``nice`` (a background build below the server's routes). At most
    ``KGOS_MAX_WORKERS`` (2) run at once: a job (``wait``) queues for a slot, a request that cannot
    wait gets ServerBusy (503)."""
    if not _acquire(wait, check or _nothing):
        raise ServerBusy(f"{_max_workers()} worker processes are busy (KGOS_MAX_WORKERS); retry in a few seconds")
    try:
        return _run(fn, args, progress, memory_mb, check or _nothing, nice)
    finally:
        _SLOTS.release()


def _nothing() -> None:
    pass


def _acquire(wait: bool, check: Callable[[], None]) -> bool:
    """A slot; a waiting job polls ``check`` (a stopped run leaves the queue)."""
    if not wait:
        return _SLOTS.acquire(blocking=False)
    while not _SLOTS.acquire(timeout=_POLL):
        check()
    return True


def _run(fn: Callable[..., dict[str, Any]], args: tuple[Any, ...], progress: ProgressFn,
         memory_mb: int | None, check: Callable[[], None], nice: int = 0) -> dict[str, Any]:
    limit = memory_mb or memory_ceiling_mb()
    ctx = multiprocessing.get_context("spawn")
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(writer, fn, args, limit, nice), daemon=True, name="kgos-job-worker")
    proc.start()
    writer.close()
    try:
        return _relay(proc, reader, progress, limit, check)
    finally:
        if proc.is_alive():  # cancelled (progress raised) or the pipe broke: the work stops here
            proc.terminate()
        proc.join(5)
        reader.close()


def _relay(proc: Any, reader: Any, progress: ProgressFn, limit: int, check: Callable[[], None]) -> dict[str, Any]:
    while True:
        check()
        if reader.poll(_POLL):
            try:
                kind, *payload = reader.recv()
            except EOFError:
                break
            if kind == "progress":
                progress(*payload)
            elif kind == "result":
                return payload[0]  # type: ignore[no-any-return]
            else:
                raise _rebuilt(*payload)
        elif not proc.is_alive():
            break
    proc.join(5)
    raise WorkerFailed(f"the job's worker process ended without a result (exit code {proc.exitcode}); "
                       f"if it was killed for memory, the input is too large for the {limit:,} MB ceiling "
                       "(KGOS_JOB_MEMORY_MB)")


_CARRIED = ("record", "suggestions", "candidates")  # the attributes the API's error body shows


def _rebuilt(kind: str, message: str, attrs: dict[str, Any] | None = None) -> KGOSError:
    """The error the worker raised, as the same KGOSError class with its record or suggestions
    (others: WorkerFailed)."""
    cls = getattr(errors, kind, None)
    err: KGOSError = WorkerFailed(message)
    if isinstance(cls, type) and issubclass(cls, KGOSError):
        try:
            err = cls(message)
        except TypeError:  # an error class that needs more than a message
            pass
    for key, value in (attrs or {}).items():
        setattr(err, key, value)
    return err


def _child(writer: Any, fn: Callable[..., dict[str, Any]], args: tuple[Any, ...], limit_mb: int, nice: int = 0) -> None:
    """The worker: cap memory, lower priority, run, send the result or the error."""
    cap_memory(limit_mb)
    _lower_priority(nice)
    try:
        result = fn(*args, lambda phase, done, total: writer.send(("progress", phase, done, total)))
        writer.send(("result", result))
    except MemoryError:
        writer.send(("error", InputTooLarge.__name__,
                     f"the job ran out of its memory ceiling of {limit_mb:,} MB (KGOS_JOB_MEMORY_MB): "
                     "the input is too large; leave the largest files out (--exclude) or lower max_bytes"))
    except KGOSError as exc:
        writer.send(("error", type(exc).__name__, str(exc), {k: getattr(exc, k) for k in _CARRIED if hasattr(exc, k)}))
    except Exception as exc:  # a bug: reported with its type, as the job thread did
        writer.send(("error", "WorkerFailed", f"{type(exc).__name__}: {exc}"))
    finally:
        writer.close()


def _lower_priority(nice: int) -> None:
    if nice:
        try:
            os.nice(nice)
        except (AttributeError, OSError):  # not on this platform, or not allowed: full priority
            pass


def cap_memory(limit_mb: int) -> None:
    """RLIMIT_DATA counts private writable memory (the heap, anonymous maps) but not mapped model files
    or reserved address space, so onnxruntime's mappings do not count against the ceiling."""
    limit = limit_mb * 1024 * 1024
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    except (ValueError, OSError):  # a platform without RLIMIT_DATA: the job runs uncapped
        pass
