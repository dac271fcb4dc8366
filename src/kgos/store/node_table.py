"""A store's node rows for the few queries pushed down to SQL (dimension filters, LIKE match, paging).

The native schema and a foreign profile name their columns differently; a store that can run such
queries returns a ``NodeTable`` from ``node_table()`` with its SQL expressions and dialect, so a method
writes its query once. The store runs the query (``rows``) on its own connection, under its own lock:
no caller touches the connection. Every expression comes from the store's own fragments (a foreign
profile's identifiers are quoted by ``ForeignStore.sql``); user input only travels as bound parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Runner = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class NodeTable:
    """``SELECT <exprs> {source} AND ... ORDER BY {order}``: ``source`` ends in a WHERE clause."""

    dialect: str  # "sqlite": the JSON functions and LIKE ... ESCAPE of SQLite
    source: str
    id: str
    name: str
    type: str
    description: str
    props: str | None  # a JSON text expression (NULL where the stored value is not valid JSON)
    order: str
    runner: Runner = field(repr=False, compare=False)

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one SELECT on the store's connection."""
        return self.runner(sql, list(args))
