"""How CLI commands print: rich for people, tab-separated ``--plain`` for pipes, ``--json`` for machines.

``--json`` writes exactly one JSON document to stdout; progress and messages go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table


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
        if not self.human or not sys.stderr.isatty():
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
