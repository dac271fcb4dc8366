"""Method 11, ``_keyword_match_nodes``: SQL LIKE on node name, type and properties (spec/000 section 6).

The query's words (stopwords dropped, at most ``MAX_TERMS``) each become one bound ``%term%``
pattern; a node scores the number of terms its name, type or properties contain. One SQL statement
does the scan and the ranking, so Python only sees the rows it returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.text import STOPWORDS, tokenize
from .nodesql import like_pattern, node_table
from .results import KeywordHit, KeywordMatchResult, NodeRef

if TYPE_CHECKING:
    from ..store.base import GraphStore

MAX_TERMS = 16
MIN_TERM_LENGTH = 2


def terms_of(query: str) -> list[str]:
    words = [t for t in tokenize(query) if t not in STOPWORDS and len(t) >= MIN_TERM_LENGTH]
    return list(dict.fromkeys(words))[:MAX_TERMS]


def keyword_match(store: GraphStore, query: str, limit: int = 20) -> KeywordMatchResult:
    """Nodes containing the query's terms, most terms first, then node order."""
    terms = terms_of(query)
    if not terms:
        return KeywordMatchResult(query, (), ())
    table = node_table(store)
    rows = _sql(store, terms, limit) if table is not None else _python(store, terms, limit)
    nodes = store.get_nodes(r[0] for r in rows)
    hits = tuple(KeywordHit(NodeRef(n.id, n.name, n.type), int(score), tuple(t for t, on in zip(terms, flags) if on))
                 for node_id, score, flags in rows if (n := nodes.get(node_id)) is not None)
    return KeywordMatchResult(query, tuple(terms), hits)


def _sql(store: GraphStore, terms: list[str], limit: int) -> list[tuple[str, int, list[bool]]]:
    table = node_table(store)
    assert table is not None
    fields = [table.name, table.type] + ([table.props] if table.props else [])
    one = "(" + " OR ".join(f"coalesce({f}, '') LIKE ? ESCAPE '\\'" for f in fields) + ")"
    names = [f"f{i}" for i in range(len(terms))]
    inner = ", ".join(f"{one} AS {name}" for name in names)
    sql = (f"SELECT id, {' + '.join(names)} AS score, {', '.join(names)} FROM (SELECT {table.id} AS id, "
           f"{table.order} AS o, {inner} {table.source}) WHERE score > 0 ORDER BY score DESC, o LIMIT ?")
    args = [like_pattern(t) for t in terms for _ in fields]
    return [(r[0], r[1], [bool(x) for x in r[2:]]) for r in table.rows(sql, [*args, limit])]


def _python(store: GraphStore, terms: list[str], limit: int) -> list[tuple[str, int, list[bool]]]:
    import json
    found = []
    for node in store.iter_nodes():
        text = " ".join((node.name, node.type, json.dumps(node.properties, ensure_ascii=False))).lower()
        flags = [t in text for t in terms]
        if any(flags):
            found.append((node.id, sum(flags), flags))
    found.sort(key=lambda r: -r[1])
    return found[:limit]
