"""The 12 structural validation rules of spec/000 section 4, checked in one vectorised pass.

``validate(store)`` returns a ``ValidationReport``: one ``Issue`` per violated rule (with a count of
all offenders and a few human-readable examples) plus a pass/fail line for every rule, so a report
also shows what was checked. Graph-level rules run on ``store.graph_arrays()`` with numpy and
``scipy.sparse.csgraph``; node-level rules run as SQL on a native file, or as one pass over
``iter_nodes()`` on any other store.

How the rules are read where spec/000 leaves room:

- Rule 1: a name that is missing or only whitespace is empty.
- Rule 2: a valid type is a non-blank string of at most 64 characters without control characters,
  and one of the KG's declared ``node_types`` (metadata, JSON list) if it declares them.
- Rule 3: an edge whose source or target row has no node (native: no node with that rowid).
- Rule 5: edges sharing (source, target, type); ``count`` is the number of redundant copies and the
  examples name each duplicated triple once. Native files cannot hold them; foreign ones can.
- Rule 6: an orphan has no edge to or from another node. A DAG's roots and leaves are not orphans;
  a self loop alone does not connect a node to anything (rule 4 reports the loop).
- Rule 7: the vocabulary is ``DEFAULT_EDGE_TYPES`` plus the KG's declared ``edge_types``.
- Rule 8: a properties value that does not parse as JSON. NULL and '' mean ``{}`` (as when reading).
  Also a value over the bounds of ``store.limits`` (deeper than 32 levels or over 1 MB of JSON), which
  only a KG written before the bounds can hold: the example says which bound, e.g. ``a (nests deeper
  than 32 levels)``; reads show such a too-deep value as a ``_kgos_error`` marker.
- Rules 9 and 11: any cycle among ``requires`` (9) or ``feeds_into`` (11) edges, self loops included;
  ``count`` is the number of nodes on such cycles.
- Rule 10: a node with an outgoing ``has_workaround`` edge but no outgoing ``has_limitation`` edge.
- Rule 12: a node with an outgoing ``has_limitation`` edge, no outgoing ``has_workaround`` edge and
  no truthy ``no_workaround`` property (``true``, a non-zero number, a non-empty collection, or a
  string other than "", "0", "false", "no", "none", "null", "off").
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from scipy.sparse.csgraph import connected_components

from ..errors import InvalidArgument, PropertiesTooLarge
from ..model import Edge
from .arrays import GraphArrays, codes
from .base import GraphStore
from .limits import MAX_PROPERTY_BYTES, MAX_PROPERTY_DEPTH, nests_too_deep, parse_json
from .native import NativeStore
from .vocabulary import Vocabulary

WHITESPACE = "".join(ch for ch in map(chr, range(0x3001)) if ch.isspace())  # str.strip()'s set
FALSE_STRINGS = frozenset({"", "0", "false", "no", "none", "null", "off"})


class Severity(StrEnum):
    ERROR = "ERROR"
    WARNING = "WARNING"
    INFO = "INFO"


@dataclass(frozen=True)
class Rule:
    """One of the 12 rules: ``check`` is spec/000's wording, ``problem`` names a violation."""

    number: int
    severity: Severity
    check: str
    problem: str


RULES: tuple[Rule, ...] = (
    Rule(1, Severity.ERROR, "Every node has a non-empty name", "Nodes with an empty name"),
    Rule(2, Severity.ERROR, "Every node has a valid type", "Nodes with an invalid type"),
    Rule(3, Severity.ERROR, "Every edge references existing source and target nodes",
         "Edges whose source or target node does not exist"),
    Rule(4, Severity.WARNING, "No self-referencing edges (source != target)", "Self-referencing edges"),
    Rule(5, Severity.WARNING, "No duplicate edges (same source + target + type)", "Duplicate edges"),
    Rule(6, Severity.WARNING, "Every node is reachable from at least one other node (no orphans)",
         "Orphan nodes (no edge to or from another node)"),
    Rule(7, Severity.WARNING, "Edge types are from the allowed vocabulary",
         "Edges whose type is not in the allowed vocabulary"),
    Rule(8, Severity.ERROR, "Node properties are valid JSON (within the depth and size limits)",
         "Nodes whose properties are not valid JSON or exceed the depth/size limits"),
    Rule(9, Severity.ERROR, "No circular `requires` chains (A requires B requires A)",
         "Nodes on a circular `requires` chain"),
    Rule(10, Severity.WARNING, "`has_workaround` edges have a corresponding `has_limitation` edge",
         "Nodes with a `has_workaround` edge but no `has_limitation` edge"),
    Rule(11, Severity.ERROR, "`feeds_into` chains form a DAG (no cycles)", "Nodes on a `feeds_into` cycle"),
    Rule(12, Severity.INFO, "Nodes with `has_limitation` edges have at least one `has_workaround` "
         "or explicit \"no_workaround\" property",
         "Nodes with a `has_limitation` edge but no `has_workaround` edge or `no_workaround` property"),
)


# -- results ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Issue:
    """A violated rule: ``count`` offenders in all, up to ``max_examples`` of them named."""

    rule: int
    severity: Severity
    title: str
    count: int
    examples: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": str(self.severity), "title": self.title,
                "count": self.count, "examples": list(self.examples)}


@dataclass(frozen=True)
class RuleResult:
    """One line of the checklist: which rule, and whether the KG passed it."""

    rule: int
    severity: Severity
    check: str
    passed: bool
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": str(self.severity), "check": self.check,
                "passed": self.passed, "count": self.count}


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of ``validate``. ``errors``/``warnings``/``infos`` count violated rules of each
    severity; ``ok`` means no ERROR rule was violated."""

    db_id: str
    issues: tuple[Issue, ...]
    errors: int
    warnings: int
    infos: int
    ok: bool
    rules: tuple[RuleResult, ...] = ()
    nodes: int = 0
    edges: int = 0

    @classmethod
    def from_counts(cls, db_id: str, findings: dict[int, Finding], nodes: int,
                    edges: int) -> ValidationReport:
        """Assemble the report from each rule's finding."""
        issues = tuple(Issue(r.number, r.severity, r.problem, findings[r.number].count,
                             findings[r.number].examples) for r in RULES if findings[r.number].count)
        rules = tuple(RuleResult(r.number, r.severity, r.check, findings[r.number].count == 0,
                                 findings[r.number].count) for r in RULES)
        tally = {s: sum(1 for i in issues if i.severity is s) for s in Severity}
        return cls(db_id=db_id, issues=issues, errors=tally[Severity.ERROR],
                   warnings=tally[Severity.WARNING], infos=tally[Severity.INFO],
                   ok=tally[Severity.ERROR] == 0, rules=rules, nodes=nodes, edges=edges)

    def summary(self) -> str:
        """One line, e.g. ``go: ok (0 errors, 1 warning, 0 infos; 12 rules on 10 nodes / 9 edges)``."""
        def n(count: int, word: str) -> str:
            return f"{count} {word}{'' if count == 1 else 's'}"
        verdict = "ok" if self.ok else "FAILED"
        return (f"{self.db_id}: {verdict} ({n(self.errors, 'error')}, {n(self.warnings, 'warning')}, "
                f"{n(self.infos, 'info')}; {len(self.rules)} rules on {self.nodes} nodes / "
                f"{self.edges} edges)")

    def to_dict(self) -> dict[str, Any]:
        return {"db_id": self.db_id, "ok": self.ok, "errors": self.errors, "warnings": self.warnings,
                "infos": self.infos, "nodes": self.nodes, "edges": self.edges,
                "issues": [i.to_dict() for i in self.issues], "rules": [r.to_dict() for r in self.rules]}


@dataclass(frozen=True)
class Finding:
    """What one rule found: how many offenders, and the first few as readable strings."""

    count: int = 0
    examples: tuple[str, ...] = ()


# -- entry point -----------------------------------------------------------------------------------
def validate(store: GraphStore, max_examples: int = 20) -> ValidationReport:
    """Check all 12 rules on ``store``; see the module docstring for how each rule is read."""
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 0:
        raise InvalidArgument(f"max_examples must be a non-negative integer, not {max_examples!r}")
    with store.read_transaction():  # every rule reads the same state, whatever another process writes
        vocab = Vocabulary.from_meta(store.meta())
        n_dangling, dangling = dangling_edges(store, max_examples)
        n_invalid, invalid = invalid_properties(store, max_examples)
        arrays = load_arrays(store, has_dangling=n_dangling > 0)
        names, no_workaround = _scan_nodes(store, max_examples)
    findings = {
        1: names,
        2: _invalid_node_types(arrays, vocab, max_examples),
        3: Finding(n_dangling, tuple(format_edge(e.source, e.type, e.target) for e in dangling)),
        8: Finding(n_invalid, tuple(invalid)),
        **_graph_findings(arrays, vocab, no_workaround, max_examples),
    }
    return ValidationReport.from_counts(store.db_id, findings, arrays.n_nodes, arrays.n_edges + n_dangling)


def _graph_findings(a: GraphArrays, vocab: Vocabulary, no_workaround: frozenset[str],
                    limit: int) -> dict[int, Finding]:
    """The rules that only need the arrays: 4, 5, 6, 7, 9, 10, 11, 12."""
    return {
        4: _edge_finding(a, np.flatnonzero(a.src == a.dst), limit),
        5: _duplicates(a, limit),
        6: _node_finding(a, np.flatnonzero(orphan_mask(a)), limit),
        7: _unknown_edge_types(a, vocab, limit),
        9: _node_finding(a, np.flatnonzero(nodes_on_cycles(a, a.type_mask("requires"))), limit),
        10: _node_finding(a, np.flatnonzero(has_outgoing(a, "has_workaround")
                                            & ~has_outgoing(a, "has_limitation")), limit),
        11: _node_finding(a, np.flatnonzero(nodes_on_cycles(a, a.type_mask("feeds_into"))), limit),
        12: _limitations_without_workaround(a, no_workaround, limit),
    }


# -- vectorised graph checks -----------------------------------------------------------------------
def nodes_on_cycles(a: GraphArrays, mask: np.ndarray) -> np.ndarray:
    """Boolean mask of the nodes that lie on a directed cycle of the masked edges.

    A strongly connected component of more than one node is a cycle; so is a self loop.
    """
    on_cycle = np.zeros(a.n_nodes, dtype=bool)
    if not mask.any():
        return on_cycle
    src, dst = a.src[mask], a.dst[mask]
    on_cycle[src[src == dst]] = True
    _, labels = connected_components(a.adjacency(mask), directed=True, connection="strong")
    return on_cycle | (np.bincount(labels)[labels] > 1)


def orphan_mask(a: GraphArrays) -> np.ndarray:
    """Boolean mask of the nodes with no edge to or from another node (self loops do not count)."""
    linked = a.src != a.dst
    touched = np.zeros(a.n_nodes, dtype=bool)
    touched[a.src[linked]] = True
    touched[a.dst[linked]] = True
    return ~touched


def has_outgoing(a: GraphArrays, edge_type: str) -> np.ndarray:
    """Boolean mask of the nodes with at least one outgoing edge of ``edge_type``."""
    out = np.zeros(a.n_nodes, dtype=bool)
    out[a.src[a.type_mask(edge_type)]] = True
    return out


def _duplicates(a: GraphArrays, limit: int) -> Finding:
    """Rule 5: sort edges by (src, dst, type) so copies sit next to each other."""
    if a.n_edges < 2:
        return Finding()
    order = np.lexsort((a.type_code, a.dst, a.src))
    s, d, t = a.src[order], a.dst[order], a.type_code[order]
    same = (s[1:] == s[:-1]) & (d[1:] == d[:-1]) & (t[1:] == t[:-1])
    # The first edge of each run of copies names the duplicated triple once.
    starts = order[:-1][same & ~np.concatenate(([False], same[:-1]))]
    return Finding(int(same.sum()), _edge_strings(a, np.sort(starts)[:limit]))


def _unknown_edge_types(a: GraphArrays, vocab: Vocabulary, limit: int) -> Finding:
    """Rule 7, with examples spread so that every unknown type shows up before repeats."""
    bad = [code for code, name in enumerate(a.types) if not vocab.allows_edge_type(name)]
    idx = np.flatnonzero(np.isin(a.type_code, bad))
    return Finding(int(idx.size), _edge_strings(a, _spread(idx, a.type_code[idx], limit)))


def _invalid_node_types(a: GraphArrays, vocab: Vocabulary, limit: int) -> Finding:
    """Rule 2: check each distinct type name once, then mark its nodes."""
    bad = [code for code, name in enumerate(a.node_type_names) if not vocab.allows_node_type(name)]
    idx = np.flatnonzero(np.isin(a.node_types, bad))
    return Finding(int(idx.size), tuple(a.node_ids[i] for i in _spread(idx, a.node_types[idx], limit)))


def _limitations_without_workaround(a: GraphArrays, no_workaround: frozenset[str], limit: int) -> Finding:
    """Rule 12: ``has_limitation`` without ``has_workaround``, minus nodes that declare none exists."""
    idx = np.flatnonzero(has_outgoing(a, "has_limitation") & ~has_outgoing(a, "has_workaround"))
    if no_workaround and idx.size:
        declared = np.fromiter((a.node_ids[i] in no_workaround for i in idx), dtype=bool, count=idx.size)
        idx = idx[~declared]
    return _node_finding(a, idx, limit)


def _spread(idx: np.ndarray, groups: np.ndarray, limit: int) -> np.ndarray:
    """``idx`` reordered so the first member of every group comes first (examples show variety)."""
    if idx.size == 0:
        return idx
    _, first = np.unique(groups, return_index=True)
    firsts = idx[np.sort(first)]
    rest = idx[~np.isin(idx, firsts)]
    return np.concatenate((firsts, rest))[:limit]


def _node_finding(a: GraphArrays, idx: np.ndarray, limit: int) -> Finding:
    return Finding(int(idx.size), tuple(a.node_ids[i] for i in idx[:limit]))


def _edge_finding(a: GraphArrays, idx: np.ndarray, limit: int) -> Finding:
    return Finding(int(idx.size), _edge_strings(a, idx[:limit]))


def _edge_strings(a: GraphArrays, idx: np.ndarray) -> tuple[str, ...]:
    return tuple(format_edge(a.node_ids[a.src[j]], a.types[a.type_code[j]], a.node_ids[a.dst[j]])
                 for j in idx)


def format_edge(source: str, edge_type: str, target: str) -> str:
    """``source -[type]-> target``: how edges appear in issue examples."""
    return f"{source} -[{edge_type}]-> {target}"


# -- store access: dangling edges, invalid JSON, node scan -----------------------------------------
# Rowids are compared on the covering indexes (edges_key, edges_target), which visit them in sorted
# order: about ten times faster than joining every edge to its two nodes.
_MISSING_ENDS = ("SELECT DISTINCT source FROM edges WHERE source NOT IN (SELECT rowid FROM nodes) "
                 "UNION SELECT DISTINCT target FROM edges WHERE target NOT IN (SELECT rowid FROM nodes)")
_NATIVE_DANGLING = ("FROM edges e LEFT JOIN nodes s ON s.rowid = e.source "
                    "LEFT JOIN nodes t ON t.rowid = e.target "
                    "WHERE e.source IN (SELECT value FROM json_each(?1)) "
                    "OR e.target IN (SELECT value FROM json_each(?1))")
# Candidates only: more brackets than the depth limit, or more bytes than the size limit.
_NATIVE_OVER_LIMITS = ("SELECT id, properties FROM nodes WHERE json_valid(properties) AND (length(properties) "
                       "- length(replace(replace(properties, '{', ''), '[', '')) > ?1 "
                       "OR length(CAST(properties AS BLOB)) > ?2) ORDER BY rowid")
_NATIVE_INVALID_JSON = ("FROM nodes WHERE properties IS NOT NULL AND properties != '' "
                        "AND NOT json_valid(properties)")


def dangling_edges(store: GraphStore, limit: int) -> tuple[int, list[Edge]]:
    """Rule 3: (count, first ``limit``) edges whose source or target node is missing.

    A store that knows its own schema (``ForeignStore``) answers itself; for a native file it is
    SQL on rowids, and a missing end is shown as ``<missing node rowid N>``.
    """
    own = getattr(store, "dangling_edges", None)
    if callable(own):
        return own(limit)
    if not isinstance(store, NativeStore):
        return 0, []  # a generic store resolves every edge to node ids; it cannot dangle
    return _native_dangling(store.conn, limit)


def missing_endpoints(conn: sqlite3.Connection) -> list[int]:
    """Node rowids that native edges point at but no node has (empty in a healthy file)."""
    return [r[0] for r in conn.execute(_MISSING_ENDS)]


def _native_dangling(conn: sqlite3.Connection, limit: int) -> tuple[int, list[Edge]]:
    missing = missing_endpoints(conn)
    if not missing:
        return 0, []
    ends = json.dumps(missing)
    count = conn.execute("SELECT count(*) " + _NATIVE_DANGLING, (ends,)).fetchone()[0]
    rows = conn.execute(
        "SELECT coalesce(s.id, '<missing node rowid ' || e.source || '>'), "
        "coalesce(t.id, '<missing node rowid ' || e.target || '>'), e.type, e.weight, e.id "
        + _NATIVE_DANGLING + " ORDER BY e.rowid LIMIT ?2", (ends, limit)).fetchall()
    return count, [Edge(source=r[0], target=r[1], type=r[2], weight=r[3], id=r[4]) for r in rows]


def invalid_properties(store: GraphStore, limit: int) -> tuple[int, list[str]]:
    """Rule 8: (count, first ``limit`` ids) of nodes whose properties are not valid JSON."""
    own = getattr(store, "invalid_properties", None)
    if callable(own):
        return own(limit)
    if not isinstance(store, NativeStore):
        return 0, []  # a generic store hands out parsed dicts: nothing left to be invalid
    count = store.conn.execute("SELECT count(*) " + _NATIVE_INVALID_JSON).fetchone()[0]
    sql = "SELECT id " + _NATIVE_INVALID_JSON + " ORDER BY rowid LIMIT ?"
    ids = [r[0] for r in store.conn.execute(sql, (limit,))] if count and limit else []
    over = over_limits(store.conn)
    return count + len(over), (ids + over)[:limit]


def over_limits(conn: sqlite3.Connection) -> list[str]:
    """Valid-JSON node properties over ``store.limits``' bounds, as "id (which bound)"."""
    rows = conn.execute(_NATIVE_OVER_LIMITS, (MAX_PROPERTY_DEPTH, MAX_PROPERTY_BYTES))
    return [f"{node_id} ({reason})" for node_id, text in rows if (reason := _over_limit(text))]


def _over_limit(text: str) -> str | None:
    if len(text.encode()) > MAX_PROPERTY_BYTES:
        return f"{len(text.encode()):,} bytes of JSON; at most {MAX_PROPERTY_BYTES:,}"
    try:
        too_deep = nests_too_deep(text, parse_json(text))
    except PropertiesTooLarge:  # deeper than the parser goes
        too_deep = True
    return f"nests deeper than {MAX_PROPERTY_DEPTH} levels" if too_deep else None


def _scan_nodes(store: GraphStore, limit: int) -> tuple[Finding, frozenset[str]]:
    """Rule 1's finding and the ids with a truthy ``no_workaround`` property (for rule 12)."""
    if isinstance(store, NativeStore):
        return _native_empty_names(store.conn, limit), _native_no_workaround(store.conn)
    count, examples, declared = 0, [], set()
    for node in store.iter_nodes():  # one pass; foreign stores have no common SQL to push down
        if not isinstance(node.name, str) or not node.name.strip():
            count += 1
            if len(examples) < limit:
                examples.append(node.id)
        if is_truthy(node.properties.get("no_workaround")):
            declared.add(node.id)
    return Finding(count, tuple(examples)), frozenset(declared)


def _native_empty_names(conn: sqlite3.Connection, limit: int) -> Finding:
    where = "FROM nodes WHERE name IS NULL OR typeof(name) != 'text' OR trim(name, ?) = ''"
    count = conn.execute("SELECT count(*) " + where, (WHITESPACE,)).fetchone()[0]
    if not count or not limit:
        return Finding(count)
    rows = conn.execute("SELECT id " + where + " ORDER BY rowid LIMIT ?", (WHITESPACE, limit))
    return Finding(count, tuple(r[0] for r in rows))


def _native_no_workaround(conn: sqlite3.Connection) -> frozenset[str]:
    # instr() skips the JSON parser for the (usual) nodes that never mention the key; CASE keeps
    # json_extract away from invalid JSON, which would abort the whole query.
    rows = conn.execute(
        "SELECT id, v FROM (SELECT id, CASE WHEN json_valid(properties) "
        "THEN properties -> '$.no_workaround' END AS v FROM nodes "
        "WHERE instr(properties, 'no_workaround') > 0) WHERE v IS NOT NULL")
    return frozenset(node_id for node_id, raw in rows if is_truthy(json.loads(raw)))


def is_truthy(value: Any) -> bool:
    """Whether a ``no_workaround`` value says "yes": strings like "false" or "no" do not."""
    if isinstance(value, str):
        return value.strip().lower() not in FALSE_STRINGS
    return bool(value)


# -- arrays that never point at missing nodes ------------------------------------------------------
def load_arrays(store: GraphStore, has_dangling: bool | None = None) -> GraphArrays:
    """``store.graph_arrays()``, except that a native file with dangling edges leaves them out.

    ``NativeStore.graph_arrays`` maps edge rowids to node rows with ``searchsorted``, which would
    attach a dangling edge to a neighbouring node (or past the end); rule 3 reports those edges,
    and every other rule and statistic must not see them. ``has_dangling=None`` asks the file.
    """
    if not isinstance(store, NativeStore):
        return store.graph_arrays()
    if has_dangling is None:
        has_dangling = bool(missing_endpoints(store.conn))
    return _native_arrays_without_dangling(store.conn) if has_dangling else store.graph_arrays()


def _native_arrays_without_dangling(conn: sqlite3.Connection) -> GraphArrays:
    rows = conn.execute("SELECT rowid, id, type FROM nodes ORDER BY rowid").fetchall()
    rowids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    edges = conn.execute("SELECT e.source, e.target, e.type, e.weight FROM edges e "
                         "JOIN nodes s ON s.rowid = e.source JOIN nodes t ON t.rowid = e.target "
                         "ORDER BY e.rowid").fetchall()
    n = len(edges)
    src = np.searchsorted(rowids, np.fromiter((e[0] for e in edges), np.int64, n)).astype(np.int32)
    dst = np.searchsorted(rowids, np.fromiter((e[1] for e in edges), np.int64, n)).astype(np.int32)
    ntype, ntype_names = codes([r[2] for r in rows])
    etype, etype_names = codes([e[2] for e in edges])
    return GraphArrays(node_ids=tuple(r[1] for r in rows), node_types=ntype, node_type_names=ntype_names,
                       src=src, dst=dst, type_code=etype, types=etype_names,
                       weight=np.fromiter((e[3] for e in edges), np.float32, n))


__all__ = ["Finding", "Issue", "RULES", "Rule", "RuleResult", "Severity", "ValidationReport",
           "dangling_edges", "format_edge", "has_outgoing", "invalid_properties", "is_truthy",
           "load_arrays", "missing_endpoints", "nodes_on_cycles", "orphan_mask", "validate"]
