"""SQL over a KG's node rows, native or foreign: methods 7 and 11 (dimension filter, LIKE match), paging.

The native schema and a foreign profile name their columns differently; ``node_table`` gives the
SQL expressions of one store so a method writes its query once. Every expression comes from the
store's own fragments (``ForeignStore.sql`` quotes the profile's identifiers); user input only ever
travels as bound parameters.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ..model import Node
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


def nodes_page(store: GraphStore, limit: int, offset: int, type: str | None = None) -> tuple[int, list[Node]]:
    """(how many nodes match, one page of them in storage order), optionally of one ``type``: in SQL
    where the store's layout is known (identifiers from its schema, values as parameters)."""
    table = node_table(store)
    if table is None:
        nodes = [n for n in store.iter_nodes() if type is None or n.type == type]
        return len(nodes), nodes[offset:offset + limit]
    where, args = ("", []) if type is None else (f" AND {table.type} = ?", [type])
    total = table.conn.execute(f"SELECT count(*) {table.source}{where}", args).fetchone()[0]
    ids = [str(r[0]) for r in table.conn.execute(
        f"SELECT {table.id} {table.source}{where} ORDER BY {table.order} LIMIT ? OFFSET ?", [*args, limit, offset])]
    found = store.get_nodes(ids)
    return int(total), [found[i] for i in ids if i in found]


def like_pattern(term: str) -> str:
    """``%term%`` with LIKE's wildcards escaped (use with ``ESCAPE '\\'``)."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
