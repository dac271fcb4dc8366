"""Research runs in background threads, steered while they run (the HTTP API's side of spec/004's
debugger controls: run / pause / stop / step / restart an iteration / breakpoints / answer).

Each run gets its own ``Workspace`` on the same folder (its own SQLite connections), so a long run
never holds the server's workspace lock. Finished runs stay listed until ``KEEP`` newer ones push
them out; their manifests stay on disk either way.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import RunNotFound, ServerBusy
from ..kg import Workspace
from .runner import ResearchRequest, ResearchRunner
from .service import prepare_resume

__all__ = ["LiveRuns"]

KEEP = 50
# runs executing at once (a run waiting for an answer counts): each indexes its corpus in a capped worker
# (at most KGOS_MAX_WORKERS at once) and maps the saved index, so their number bounds the threads
MAX_RUNNING = 4
ANSWER_WAIT = 600.0  # seconds a live run blocks for an answer; then it is saved as waiting (resumable)


class LiveRuns:
    """The runs this process is executing or executed, by run id."""

    def __init__(self, home: Path, database_url: str | None = None, answer_wait: float = ANSWER_WAIT) -> None:
        self.home, self.database_url, self.answer_wait = Path(home), database_url, answer_wait
        self._runs: OrderedDict[str, ResearchRunner] = OrderedDict()
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(self, request: ResearchRequest, provider: Any = None) -> ResearchRunner:
        """Start a run in the background; an ask blocks it until ``answer``."""
        return self._launch(lambda ws: ResearchRunner(ws, request, wait_for_answers=True, provider=provider,
                                                      answer_timeout=self.answer_wait))

    def resume(self, run_id: str, answer: str | None = None, provider: Any = None) -> ResearchRunner:
        """Continue a saved run (waiting, stopped or interrupted) in the background."""
        return self._launch(lambda ws: prepare_resume(ws, run_id, answer, provider=provider, wait_for_answers=True,
                                                      answer_timeout=self.answer_wait))

    def restart(self, run_id: str, provider: Any = None) -> tuple[ResearchRunner, int]:
        """Run a saved run's last completed iteration again, in the background (the run is not running).

        Returns the runner and the number of the iteration that runs again, read before the thread
        starts: once it runs, the manifest already holds the new iteration.
        """
        number: list[int] = []

        def make(ws: Workspace) -> ResearchRunner:
            runner = prepare_resume(ws, run_id, provider=provider, wait_for_answers=True,
                                    answer_timeout=self.answer_wait, restart=True)
            number.append(len(runner.manifest["iterations"]) + 1)
            return runner
        return self._launch(make), number[0]

    def _launch(self, make: Callable[[Workspace], ResearchRunner]) -> ResearchRunner:
        with self._lock:
            alive = sum(t.is_alive() for t in self._threads.values())
        if alive >= MAX_RUNNING:
            raise ServerBusy(f"{alive} research runs are executing (at most {MAX_RUNNING} at once); "
                             "retry when one ends, or stop one")
        ws = Workspace(self.home, database_url=self.database_url)
        try:
            runner = make(ws)
            runner.isolate_corpus()  # indexed in a capped worker process, not in the server
        except BaseException:
            ws.close()
            raise
        thread = threading.Thread(target=self._run, args=(runner, ws), name=f"research-{runner.run_id}", daemon=True)
        with self._lock:
            self._runs[runner.run_id] = runner
            self._threads[runner.run_id] = thread
            while len(self._runs) > KEEP:
                old = next(iter(self._runs))
                if self._threads[old].is_alive():
                    break
                self._runs.pop(old)
                self._threads.pop(old)
        thread.start()
        return runner

    @staticmethod
    def _run(runner: ResearchRunner, ws: Workspace) -> None:
        try:
            runner.run()
        except Exception as exc:  # recorded in the manifest and the event log, never lost
            runner.manifest["status"] = "failed"
            runner.manifest["error"] = f"{type(exc).__name__}: {exc}"
            runner.store.save_manifest(runner.manifest)
            runner.control.emit("run_finished", {"status": "failed", "error": runner.manifest["error"]})
        finally:
            ws.close()

    def get(self, run_id: str) -> ResearchRunner:
        with self._lock:
            runner = self._runs.get(run_id)
        if runner is None:
            raise RunNotFound(f"run {run_id} is not running in this server (see GET /api/research/runs/{run_id} "
                              f"for its manifest)")
        return runner

    def running(self, run_id: str) -> bool:
        with self._lock:
            t = self._threads.get(run_id)
        return bool(t and t.is_alive())

    def join(self, run_id: str, timeout: float | None = None) -> None:
        """Wait until the run ends or waits for a person's answer (an ask never ends by itself)."""
        with self._lock:
            t, runner = self._threads.get(run_id), self._runs.get(run_id)
        end = None if timeout is None else time.monotonic() + timeout
        while t is not None and t.is_alive():
            if runner is not None and runner.manifest.get("status") == "waiting":
                return
            if end is not None and time.monotonic() >= end:
                return
            t.join(0.05)
