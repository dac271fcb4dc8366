"""How CLI commands print: rich for people, tab-separated ``--plain`` for pipes, ``--json`` for machines.

``--json`` writes exactly one JSON document to stdout; progress and messages go to stderr.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def to_jsonable(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


@dataclass
class Output:
    json: bool = False
    plain: bool = False
    header: bool = False  # --plain only: a first row naming the columns
    out: Console = field(default_factory=lambda: Console(soft_wrap=True))
    err: Console = field(default_factory=lambda: Console(stderr=True))

    @property
    def human(self) -> bool:
        return not (self.json or self.plain)

    def emit(self, data: Any, human: Callable[[Console], None] | None = None,
             plain: Callable[[], Sequence[Sequence[Any]]] | None = None,
             columns: Sequence[str] | None = None) -> None:
        """Print ``data`` as JSON, as plain rows (``columns`` names them for ``--header``), or through
        the rich renderer."""
        if self.json:
            click.echo(json.dumps(to_jsonable(data), ensure_ascii=False, indent=2))
        elif self.plain and plain is not None:
            rows = plain()
            for row in ([columns] if self.header and columns else []) + list(rows):
                click.echo("\t".join("" if v is None else _cell(v) for v in row))
        elif human is not None:
            human(self.out)
        else:
            click.echo(json.dumps(to_jsonable(data), ensure_ascii=False, indent=2))

    def note(self, message: str) -> None:
        """A message for people, on stderr so stdout stays clean for pipes."""
        if not self.json:
            self.err.print(message)

    @contextmanager
    def progress(self, label: str) -> Iterator[Callable[[str, int], None] | None]:
        """A live counter per phase (nodes, edges, indexes...) on stderr, for people only."""
        if not self.human or not stderr_is_terminal():
            yield None
            return
        columns = (SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(bar_width=None),
                   TextColumn("{task.completed:,}"), TimeElapsedColumn())
        with Progress(*columns, console=self.err, transient=False) as bar:
            tasks: dict[str, Any] = {}

            def update(phase: str, count: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(f"{label}: {phase}", total=None)
                bar.update(tasks[phase], completed=count)
            yield update

    @contextmanager
    def meter(self, label: str, unit: str) -> Iterator[Meter]:
        """Progress toward a known total on stderr: a bar with percentage and ETA in a terminal,
        periodic lines without one, nothing with ``--json``."""
        if self.json:
            yield Meter()
        elif self.human and stderr_is_terminal():
            with Progress(*_BarMeter.columns(), console=self.err, transient=False) as bar:
                yield _BarMeter(bar, label)
        else:
            lines = _LineMeter(label, unit)
            yield lines
            lines.finish()


class Meter:
    """Progress toward a total the command learns at run time (``total`` once, then ``advance``
    increments). This base shows nothing: it is what ``--json`` gets."""

    def total(self, n: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


class _BarMeter(Meter):
    """A rich bar in a terminal: count, percentage, elapsed time and ETA."""

    @staticmethod
    def columns() -> tuple[Any, ...]:
        return (TextColumn("[bold]{task.description}"), BarColumn(bar_width=None), MofNCompleteColumn(),
                TaskProgressColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())

    def __init__(self, bar: Progress, label: str) -> None:
        self.bar, self.label, self.task = bar, label, None

    def total(self, n: int) -> None:
        if n:
            self.task = self.bar.add_task(self.label, total=n)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.bar.advance(self.task, n)


class _LineMeter(Meter):
    """Without a terminal (``--plain``, a pipe, a log file): ``label: done/total unit (pct%), elapsed,
    ETA`` on stderr when the total is known, then at most every ``every`` seconds, and at the end."""

    every = 5.0

    def __init__(self, label: str, unit: str) -> None:
        self.label, self.unit = label, unit
        self.n: int | None = None
        self.done, self.shown, self.t0, self.last = 0, -1, time.monotonic(), 0.0

    def total(self, n: int) -> None:
        self.n, self.t0 = n, time.monotonic()
        if n:
            self._line()

    def advance(self, n: int) -> None:
        self.done += n
        if time.monotonic() - self.last >= self.every:
            self._line()

    def finish(self) -> None:
        if self.n and self.shown != self.done:
            self._line()

    def _line(self) -> None:
        if not self.n:
            return
        self.last, self.shown = time.monotonic(), self.done
        elapsed = self.last - self.t0
        eta = f", ETA {elapsed / self.done * (self.n - self.done):.0f} s" if 0 < self.done < self.n else ""
        click.echo(f"{self.label}: {self.done:,}/{self.n:,} {self.unit} ({100 * self.done / self.n:.0f}%), "
                   f"{elapsed:.0f} s elapsed{eta}", err=True)


def _cell(value: Any) -> str:
    # A tab or newline inside a value would split it into two columns or two rows.
    return str(value).replace("\t", " ").replace("\n", " ")


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    return t
