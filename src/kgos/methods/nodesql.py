"""SQL over a KG's node rows, native or foreign: methods 7 and 11 (dimension filter, LIKE match), paging.

The native schema and a foreign profile name their columns differently; the store's ``node_table()``
gives its SQL expressions so a method writes its query once, and runs it (``NodeTable.rows``) on its
own connection. Every expression comes from the store's own fragments; user input only ever travels
as bound parameters.
"""

from __future__ import annotations

from ..model import Node
from ..store.base import GraphStore
from ..store.node_table import NodeTable


def node_table(store: GraphStore) -> NodeTable | None:
    """The store's node rows for pushed-down SQL, or None (use ``iter_nodes``): asked of the store."""
    table = store.node_table()
    return table if isinstance(table, NodeTable) and table.dialect == "sqlite" else None


def nodes_page(store: GraphStore, limit: int, offset: int, type: str | None = None) -> tuple[int, list[Node]]:
    """(how many nodes match, one page of them in storage order), optionally of one ``type``: in SQL
    where the store's layout is known (identifiers from its schema, values as parameters)."""
    table = node_table(store)
    if table is None:
        nodes = [n for n in store.iter_nodes() if type is None or n.type == type]
        return len(nodes), nodes[offset:offset + limit]
    where, args = ("", []) if type is None else (f" AND {table.type} = ?", [type])
    total = table.rows(f"SELECT count(*) {table.source}{where}", args)[0][0]
    ids = [str(r[0]) for r in table.rows(
        f"SELECT {table.id} {table.source}{where} ORDER BY {table.order} LIMIT ? OFFSET ?", [*args, limit, offset])]
    found = store.get_nodes(ids)
    return int(total), [found[i] for i in ids if i in found]


def like_pattern(term: str) -> str:
    """``%term%`` with LIKE's wildcards escaped (use with ``ESCAPE '\\'``)."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
