"""Control of a live research run: pause, resume, stop, step one stage, breakpoints, restart an
iteration, answer a question, and the event log the API streams as SSE.

The runner calls ``gate(stage)`` before every stage; the other methods are called from other threads
(an HTTP request, a CLI prompt). Events are kept in order with a sequence number, so a client that
reconnects asks for the events after the last one it saw.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["Interrupted", "RestartIteration", "RunControl"]


class Interrupted(Exception):
    """The user stopped the run (spec/004 "User interrupt")."""


class RestartIteration(Exception):
    """The user asked to run the current iteration again from its first stage."""


class RunControl:
    """Thread-safe controls and event log of one run."""

    def __init__(self, breakpoints: tuple[str, ...] | list[str] = ()) -> None:
        self._cond = threading.Condition()
        self.events: list[dict[str, Any]] = []
        self.breakpoints: set[str] = set(breakpoints)
        self.paused = False
        self.stopped = False
        self._steps = 0
        self._restart = False
        self._answer: str | None = None
        self.waiting_seconds = 0.0

    # -- called by the runner ----------------------------------------------------------------------
    def gate(self, stage: str) -> None:
        """Block while paused (a step lets one stage through); raise on stop or restart."""
        with self._cond:
            if stage in self.breakpoints and not self._steps:
                self.paused = True
                self._emit("breakpoint", {"stage": stage})
            while self.paused and not self._steps and not self.stopped and not self._restart:
                self._cond.wait(0.5)
            self._check()
            if self._steps:
                self._steps -= 1

    def wait_answer(self, timeout: float | None = None) -> str | None:
        """Block until ``answer`` (or stop); returns the answer, or None when stopped or timed out."""
        started = time.monotonic()
        with self._cond:
            while self._answer is None and not self.stopped:
                left = None if timeout is None else timeout - (time.monotonic() - started)
                if left is not None and left <= 0:
                    break
                self._cond.wait(0.5 if left is None else min(left, 0.5))
            answer, self._answer = self._answer, None
        self.waiting_seconds += time.monotonic() - started
        return answer

    def _check(self) -> None:
        if self.stopped:
            raise Interrupted()
        if self._restart:
            self._restart = False
            raise RestartIteration()

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        with self._cond:
            self._emit(kind, payload)

    def _emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.events.append({"seq": len(self.events) + 1, "event": kind, "time": round(time.time(), 3), **payload})
        self._cond.notify_all()

    # -- called by people (CLI, HTTP) ------------------------------------------------------------------
    def pause(self) -> None:
        with self._cond:
            self.paused = True
            self._emit("paused", {})

    def resume(self) -> None:
        with self._cond:
            self.paused = False
            self._emit("resumed", {})

    def stop(self) -> None:
        with self._cond:
            self.stopped = True
            self._emit("stop_requested", {})

    def step(self) -> None:
        """Run exactly one more stage, then stay paused."""
        with self._cond:
            self.paused = True
            self._steps += 1
            self._emit("step", {})

    def restart_iteration(self) -> None:
        with self._cond:
            self._restart = True
            self._emit("restart_requested", {})

    def set_breakpoints(self, stages: list[str] | tuple[str, ...]) -> None:
        with self._cond:
            self.breakpoints = set(stages)
            self._emit("breakpoints", {"stages": sorted(self.breakpoints)})

    def answer(self, text: str) -> None:
        with self._cond:
            self._answer = text
            self._emit("answered", {"text": text})

    def events_after(self, seq: int, timeout: float = 0.0) -> list[dict[str, Any]]:
        """Events with ``seq`` greater than ``seq``, waiting up to ``timeout`` seconds for one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.events) <= seq and time.monotonic() < deadline:
                self._cond.wait(max(0.0, min(0.5, deadline - time.monotonic())))
            return [dict(e) for e in self.events[seq:]]
