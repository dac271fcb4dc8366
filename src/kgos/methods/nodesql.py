"""SQL over a KG's node rows, native or foreign, for methods 7 and 11 (dimension filter, LIKE match).

The native schema and a foreign profile name their columns differently; ``node_table`` gives the
SQL expressions of one store so a method writes its query once. Every expression comes from the
store's own fragments (``ForeignStore.sql`` quotes the profile's identifiers); user input only ever
travels as bound parameters.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ..store.base import GraphStore


@dataclass(frozen=True)
class NodeTable:
    """``SELECT <exprs> {source} AND ... ORDER BY {order}``: ``source`` ends in a WHERE clause."""

    conn: sqlite3.Connection
    source: str
    id: str
    name: str
    type: str
    description: str
    props: str | None  # a JSON text expression (NULL where the stored value is not valid JSON)
    order: str


def node_table(store: GraphStore) -> NodeTable | None:
    """The node table of a native or foreign store; None for other stores (use ``iter_nodes``)."""
    from ..store.foreign import ForeignStore
    from ..store.native import NativeStore
    if isinstance(store, NativeStore):
        return NodeTable(store.conn, "FROM nodes n WHERE 1", "n.id", "n.name", "n.type", "n.description",
                         "n.properties", "n.rowid")
    if isinstance(store, ForeignStore):
        s = store.sql
        raw = s.opt("n", "node_properties")
        props = f"CASE WHEN json_valid({raw}) THEN {raw} END" if raw else None
        node_id = s.node_id("n")
        return NodeTable(store.conn, s.node_rows, node_id, s.text("n", "node_name", "''"), s.node_type("n"),
                         s.text("n", "node_description", "''"), props, node_id)
    return None


def like_pattern(term: str) -> str:
    """``%term%`` with LIKE's wildcards escaped (use with ``ESCAPE '\\'``)."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
