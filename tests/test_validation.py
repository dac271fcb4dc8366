"""The 12 validation rules: each triggered by a tiny native KG and passed by its fixed twin.

Violations that a native file structurally prevents (dangling edges, duplicates, invalid JSON,
empty names, bad types) are written with raw SQL past the constraints, so the checks really run.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from kgos.errors import InvalidArgument
from kgos.model import Edge
from kgos.store.arrays import GraphArrays, codes
from kgos.store.base import GraphStore
from kgos.store.native import NativeStore
from kgos.store.validation import (RULES, Severity, ValidationReport, _duplicates, is_truthy,
                                   nodes_on_cycles, validate)
from kgos.store.vocabulary import DEFAULT_EDGE_TYPES, Vocabulary, declared_list, is_valid_type_name

Mutation = Callable[[NativeStore], None]


# -- building tiny KGs -----------------------------------------------------------------------------
def chain(tmp_path: Path, name: str = "t") -> NativeStore:
    """a -> b -> c over `relates_to`: passes every rule."""
    store = NativeStore.create(tmp_path / f"{name}.db", name)
    for node in "abc":
        store.add_node(node, type="concept", id=node)
    store.add_edge("a", "b", "relates_to")
    store.add_edge("b", "c", "relates_to")
    return store


def nodes(*ids: str) -> Mutation:
    def apply(store: NativeStore) -> None:
        for node_id in ids:
            store.add_node(node_id, type="concept", id=node_id)
    return apply


def edges(*triples: tuple[str, str, str]) -> Mutation:
    def apply(store: NativeStore) -> None:
        for s, t, kind in triples:
            for node_id in (s, t):
                if store.get_node(node_id) is None:
                    store.add_node(node_id, type="concept", id=node_id)
            store.add_edge(s, t, kind)
    return apply


def sql(*statements: str) -> Mutation:
    """Raw SQL on the file, with the safety nets a native file normally has switched off."""
    def apply(store: NativeStore) -> None:
        conn = store.conn
        conn.execute("PRAGMA foreign_keys = OFF")
        for trigger in ("nodes_fts_ai", "nodes_fts_au", "nodes_fts_ad"):
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")  # they json_extract the properties
        for statement in statements:
            conn.execute(statement)
    return apply


def meta(**values: str) -> Mutation:
    return lambda store: store.set_meta(**values)


def props(node_id: str, **values: object) -> Mutation:
    return lambda store: store.update_node(node_id, properties=values)


def both(*steps: Mutation) -> Mutation:
    def apply(store: NativeStore) -> None:
        for step in steps:
            step(store)
    return apply


def failing(report: ValidationReport) -> set[int]:
    return {r.rule for r in report.rules if not r.passed}


# -- one case per rule (and a few variants): what breaks it, which rules then fail ------------------
BAD: list[tuple[str, Mutation, set[int]]] = [
    ("1-blank-name", sql("UPDATE nodes SET name = ' \t ' WHERE id = 'a'"), {1}),
    ("1-empty-name", sql("UPDATE nodes SET name = '' WHERE id = 'b'"), {1}),
    ("1-unicode-space-name", sql("UPDATE nodes SET name = char(160, 12288) WHERE id = 'b'"), {1}),
    ("2-long-type", sql(f"UPDATE nodes SET type = '{'x' * 65}' WHERE id = 'a'"), {2}),
    ("2-control-char", sql("UPDATE nodes SET type = 'con' || char(7) || 'cept' WHERE id = 'a'"), {2}),
    ("2-blank-type", sql("UPDATE nodes SET type = '  ' WHERE id = 'a'"), {2}),
    ("2-undeclared", meta(node_types='["tool", "goal"]'), {2}),
    ("3-missing-target", sql("INSERT INTO edges (source, target, type, created_at) "
                             "VALUES (1, 999, 'relates_to', 'x')"), {3}),
    ("3-deleted-node", sql("DELETE FROM nodes WHERE id = 'c'"), {3}),
    ("4-self-loop", edges(("b", "b", "relates_to")), {4}),
    ("5-duplicate", sql("DROP INDEX edges_key", "INSERT INTO edges (source, target, type, created_at) "
                                                "VALUES (1, 2, 'relates_to', 'x')"), {5}),
    ("6-isolated", nodes("z"), {6}),
    ("6-only-self-loop", edges(("z", "z", "relates_to")), {4, 6}),
    ("7-unknown-type", edges(("a", "c", "frobnicates")), {7}),
    ("8-invalid-json", sql("UPDATE nodes SET properties = '{\"a\": 1' WHERE id = 'b'"), {8}),
    ("8-not-json", sql("UPDATE nodes SET properties = 'nope' WHERE id = 'a'"), {8}),
    ("9-requires-cycle", edges(("a", "x", "requires"), ("x", "y", "requires"), ("y", "a", "requires")), {9}),
    ("9-requires-self", edges(("a", "a", "requires")), {4, 9}),
    ("10-workaround-alone", edges(("a", "w", "has_workaround")), {10}),
    ("11-feeds-cycle", edges(("a", "x", "feeds_into"), ("x", "a", "feeds_into")), {11}),
    ("12-limitation-alone", edges(("a", "l", "has_limitation")), {12}),
    ("12-no-workaround-false", both(edges(("a", "l", "has_limitation")), props("a", no_workaround="false")),
     {12}),
]

GOOD: list[tuple[str, Mutation]] = [
    ("1-unicode-name", both(edges(("c", "d", "relates_to")),
                            sql("UPDATE nodes SET name = 'é' WHERE id = 'd'"))),
    ("2-64-char-type", sql(f"UPDATE nodes SET type = '{'x' * 64}' WHERE id = 'a'")),
    ("2-declared", meta(node_types='["concept"]')),
    ("2-malformed-declaration-ignored", meta(node_types="not json")),
    ("3-edges-resolve", edges(("c", "a", "relates_to"))),
    ("4-no-self-loop", edges(("a", "c", "relates_to"))),
    ("5-same-pair-other-type", edges(("a", "b", "supports"))),
    ("6-dag-roots-and-leaves", edges(("d", "a", "is_a"), ("c", "e", "is_a"))),
    ("7-declared-edge-type", both(meta(edge_types='["frobnicates"]'), edges(("a", "c", "frobnicates")))),
    ("7-memory-predicate", edges(("a", "c", "prefers"))),
    ("8-valid-json", props("a", note="{not json inside a string}")),
    ("9-requires-dag", edges(("a", "x", "requires"), ("x", "y", "requires"), ("a", "y", "requires"),
                             ("y", "a", "relates_to"))),
    ("10-workaround-with-limitation", edges(("a", "l", "has_limitation"), ("a", "w", "has_workaround"))),
    ("11-feeds-dag", edges(("a", "x", "feeds_into"), ("x", "y", "feeds_into"), ("y", "a", "requires"))),
    ("12-no-workaround-true", both(edges(("a", "l", "has_limitation")), props("a", no_workaround=True))),
    ("12-no-workaround-reason", both(edges(("a", "l", "has_limitation")),
                                     props("a", no_workaround="by design"))),
]


@pytest.mark.parametrize("case, mutate, expected", BAD, ids=[c[0] for c in BAD])
def test_rule_is_triggered(tmp_path: Path, case: str, mutate: Mutation, expected: set[int]) -> None:
    store = chain(tmp_path)
    mutate(store)
    report = validate(store)
    assert failing(report) == expected
    rule = int(case.split("-")[0])
    issue = next(i for i in report.issues if i.rule == rule)
    assert issue.count >= 1 and 1 <= len(issue.examples) <= issue.count
    assert issue.severity is RULES[rule - 1].severity


@pytest.mark.parametrize("case, mutate", GOOD, ids=[c[0] for c in GOOD])
def test_rule_passes(tmp_path: Path, case: str, mutate: Mutation) -> None:
    store = chain(tmp_path)
    mutate(store)
    report = validate(store)
    assert report.issues == () and report.ok
    assert all(r.passed for r in report.rules)


# -- what the examples say --------------------------------------------------------------------------
def test_examples_name_the_offenders(tmp_path: Path) -> None:
    store = chain(tmp_path)
    both(edges(("a", "x", "requires"), ("x", "a", "requires"), ("c", "c", "relates_to")),
         sql("INSERT INTO edges (source, target, type, created_at) "
             "VALUES (2, 999, 'relates_to', 'x')"))(store)
    issues = {i.rule: i for i in validate(store).issues}
    assert issues[3].examples == ("b -[relates_to]-> <missing node rowid 999>",)
    assert issues[4].examples == ("c -[relates_to]-> c",)
    assert set(issues[9].examples) == {"a", "x"} and issues[9].count == 2


def test_duplicates_count_redundant_copies_and_name_each_triple_once(tmp_path: Path) -> None:
    store = chain(tmp_path)
    sql("DROP INDEX edges_key",
        *["INSERT INTO edges (source, target, type, created_at) VALUES (1, 2, 'relates_to', 'x')"] * 2,
        "INSERT INTO edges (source, target, type, created_at) VALUES (2, 3, 'relates_to', 'x')")(store)
    issue = next(i for i in validate(store).issues if i.rule == 5)
    assert issue.count == 3
    assert issue.examples == ("a -[relates_to]-> b", "b -[relates_to]-> c")


def test_dangling_edges_do_not_leak_into_other_rules(tmp_path: Path) -> None:
    # The dangling edge's rowid 4 sits between real nodes; a naive rowid mapping would attach it
    # to node 'd' and hide the orphan.
    store = chain(tmp_path)
    nodes("d", "e")(store)
    sql("DELETE FROM nodes WHERE id = 'd'",
        "INSERT INTO edges (source, target, type, created_at) VALUES (4, 5, 'relates_to', 'x')")(store)
    report = validate(store)
    assert failing(report) == {3, 6}
    assert next(i for i in report.issues if i.rule == 6).examples == ("e",)
    assert report.edges == 3


def test_unknown_edge_type_examples_show_every_type_first(tmp_path: Path) -> None:
    store = chain(tmp_path)
    edges(*[("a", f"n{i}", "zzz") for i in range(5)], ("a", "c", "yyy"))(store)
    issue = next(i for i in validate(store, max_examples=2).issues if i.rule == 7)
    assert issue.count == 6
    assert {e.split("-[")[1].split("]")[0] for e in issue.examples} == {"zzz", "yyy"}


def test_examples_are_capped_but_count_is_not(tmp_path: Path) -> None:
    store = chain(tmp_path)
    nodes(*[f"iso{i}" for i in range(30)])(store)
    issue = validate(store, max_examples=5).issues[0]
    assert (issue.rule, issue.count, len(issue.examples)) == (6, 30, 5)
    assert validate(store, max_examples=0).issues[0].examples == ()
    with pytest.raises(InvalidArgument):
        validate(store, max_examples=-1)


# -- the report ---------------------------------------------------------------------------------------
def test_report_counts_and_json(tmp_path: Path) -> None:
    store = chain(tmp_path)
    both(nodes("lonely"), edges(("a", "l", "has_limitation")),
         sql("UPDATE nodes SET name = '' WHERE id = 'b'"))(store)
    report = validate(store)
    assert (report.errors, report.warnings, report.infos, report.ok) == (1, 1, 1, False)
    assert [i.rule for i in report.issues] == [1, 6, 12]
    assert [i.severity for i in report.issues] == [Severity.ERROR, Severity.WARNING, Severity.INFO]
    d = json.loads(json.dumps(report.to_dict()))
    assert d["db_id"] == "t" and d["ok"] is False and d["errors"] == 1
    assert [r["rule"] for r in d["rules"]] == list(range(1, 13))
    assert d["issues"][0] == {"rule": 1, "severity": "ERROR", "title": RULES[0].problem,
                              "count": 1, "examples": ["b"]}
    assert (d["nodes"], d["edges"]) == (5, 3)
    assert "FAILED" in report.summary() and "1 error," in report.summary()


def test_warnings_alone_keep_the_report_ok(tmp_path: Path) -> None:
    store = chain(tmp_path)
    edges(("a", "a", "frobnicates"))(store)
    report = validate(store)
    assert report.ok and report.errors == 0 and report.warnings == 2


def test_empty_kg(tmp_path: Path) -> None:
    report = validate(NativeStore.create(tmp_path / "e.db", "e"))
    assert report.ok and report.issues == () and len(report.rules) == 12


def test_rules_table_matches_spec() -> None:
    severities = {r.number: r.severity for r in RULES}
    assert [r.number for r in RULES] == list(range(1, 13))
    assert {n for n, s in severities.items() if s is Severity.ERROR} == {1, 2, 3, 8, 9, 11}
    assert {n for n, s in severities.items() if s is Severity.INFO} == {12}


# -- stores that are not native files -------------------------------------------------------------
def proxy_class(**extra: object) -> type[GraphStore]:
    """A GraphStore that forwards to a NativeStore without being one (the generic code path)."""
    def forward(name: str) -> Callable[..., object]:
        return lambda self, *args, **kwargs: getattr(self.inner, name)(*args, **kwargs)
    body: dict[str, object] = {name: forward(name) for name in GraphStore.__abstractmethods__}
    def init(self: GraphStore, inner: NativeStore) -> None:
        self.inner, self.db_id = inner, inner.db_id  # type: ignore[attr-defined]
    body["__init__"] = init
    return type("ProxyStore", (GraphStore,), {**body, **extra})


def test_generic_store_path(tmp_path: Path) -> None:
    store = chain(tmp_path)
    both(edges(("a", "l", "has_limitation"), ("b", "m", "has_limitation"), ("q", "q", "requires")),
         props("a", no_workaround=1))(store)
    report = validate(proxy_class()(store))
    assert failing(report) == {4, 6, 9, 12}  # q's self loop alone leaves it an orphan
    assert next(i for i in report.issues if i.rule == 12).examples == ("b",)


def test_store_hooks_for_dangling_edges_and_invalid_properties(tmp_path: Path) -> None:
    hooks = {"dangling_edges": lambda self, limit: (7, [Edge("a", "gone", "requires")][:limit]),
             "invalid_properties": lambda self, limit: (2, ["a", "b"][:limit])}
    report = validate(proxy_class(**hooks)(chain(tmp_path)), max_examples=1)
    issues = {i.rule: i for i in report.issues}
    assert (issues[3].count, issues[3].examples) == (7, ("a -[requires]-> gone",))
    assert (issues[8].count, issues[8].examples) == (2, ("a",))
    assert report.errors == 2 and report.edges == 2 + 7


MEMORY_SCHEMA = """
CREATE TABLE entities (id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL,
  normalized_name TEXT NOT NULL, metadata TEXT, created_ts TEXT NOT NULL, updated_ts TEXT NOT NULL);
CREATE TABLE edges (id TEXT PRIMARY KEY, subject_id TEXT NOT NULL, predicate TEXT NOT NULL,
  object_id TEXT NOT NULL, weight REAL NOT NULL, evidence TEXT, created_ts TEXT NOT NULL);
"""


def test_foreign_store(tmp_path: Path) -> None:
    """A spec/002 memory file without its UNIQUE/FK constraints holds what a native file cannot."""
    foreign = pytest.importorskip("kgos.store.foreign")
    conn = sqlite3.connect(tmp_path / "mem.db")
    conn.executescript(MEMORY_SCHEMA)
    conn.executemany("INSERT INTO entities VALUES (?, ?, ?, lower(?3), ?, 'x', 'x')", [
        ("u", "user", "User", "{}"), ("p", "project", "Proj", '{"broken": '),
        ("t", "tool", "Tool", '{"no_workaround": true}'), ("x", "tool", "", None)])
    conn.executemany("INSERT INTO edges VALUES ('e' || ?, ?, ?, ?, 1.0, NULL, 'x')", [
        (0, "u", "works_on", "p"), (1, "u", "uses", "t"), (2, "u", "uses", "t"), (3, "p", "requires", "t"),
        (4, "t", "requires", "p"), (5, "t", "uses", "zzz"), (6, "t", "has_limitation", "u"),
        (7, "x", "prefers", "u")])
    conn.commit()
    conn.close()
    with foreign.ForeignStore(tmp_path / "mem.db", "mem") as store:
        issues = {i.rule: i for i in validate(store).issues}
    assert set(issues) == {1, 3, 5, 8, 9}
    assert issues[3].examples == ("t -[uses]-> zzz",) and issues[5].examples == ("u -[uses]-> t",)
    assert (issues[1].examples, issues[8].examples, issues[9].examples) == (("x",), ("p",), ("p", "t"))


# -- the vectorised detectors against networkx / brute force ------------------------------------------
def arrays_from(n: int, triples: list[tuple[int, int, str]]) -> GraphArrays:
    type_code, types = codes([t for _, _, t in triples]) if triples else (np.zeros(0, np.int32), ())
    node_types, node_type_names = codes(["concept"] * n)
    return GraphArrays(node_ids=tuple(f"n{i}" for i in range(n)), node_types=node_types,
                       node_type_names=node_type_names,
                       src=np.array([s for s, _, _ in triples], dtype=np.int32),
                       dst=np.array([d for _, d, _ in triples], dtype=np.int32),
                       type_code=type_code, types=types, weight=np.ones(len(triples), np.float32))


def random_triples(rng: random.Random, n: int, m: int) -> list[tuple[int, int, str]]:
    return [(rng.randrange(n), rng.randrange(n), rng.choice(("requires", "requires", "enables")))
            for _ in range(m)]


@pytest.mark.parametrize("seed", range(50))
def test_cycle_detector_agrees_with_networkx(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    triples = random_triples(rng, n, rng.randint(0, 2 * n))
    a = arrays_from(n, triples)
    on_cycle = nodes_on_cycles(a, a.type_mask("requires"))
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((s, d) for s, d, t in triples if t == "requires")
    expected = {v for cycle in nx.simple_cycles(g) for v in cycle}
    assert set(np.flatnonzero(on_cycle).tolist()) == expected
    assert bool(on_cycle.any()) == (not nx.is_directed_acyclic_graph(g))


@pytest.mark.parametrize("seed", range(10))
def test_duplicate_detector_agrees_with_counter(seed: int) -> None:
    rng = random.Random(seed)
    triples = random_triples(rng, 4, 25)
    found = _duplicates(arrays_from(4, triples), limit=100)
    counts = Counter(triples)
    assert found.count == sum(c - 1 for c in counts.values())
    assert len(found.examples) == sum(1 for c in counts.values() if c > 1)


# -- vocabulary -------------------------------------------------------------------------------------
def test_vocabulary() -> None:
    assert {"requires", "feeds_into", "is_a", "negatively_regulates", "works_on"} <= DEFAULT_EDGE_TYPES
    vocab = Vocabulary.from_meta({"edge_types": '["custom"]', "node_types": '["tool"]'})
    assert vocab.allows_edge_type("custom") and vocab.allows_edge_type("requires")
    assert vocab.allows_node_type("tool") and not vocab.allows_node_type("goal")
    assert Vocabulary.from_meta({}).node_types is None
    assert declared_list({"x": '{"a": 1}'}, "x") is None and declared_list({"x": "[1, \"a\"]"}, "x") == {"a"}
    assert is_valid_type_name("x" * 64) and not is_valid_type_name("x" * 65)
    assert not is_valid_type_name("a\nb") and not is_valid_type_name(" ") and not is_valid_type_name(None)


@pytest.mark.parametrize("value, truthy", [(True, True), (1, True), ("yes", True), ("no alternative", True),
                                           (False, False), (0, False), ("false", False), (" No ", False),
                                           ("", False), (None, False), ([], False)])
def test_no_workaround_truthiness(value: object, truthy: bool) -> None:
    assert is_truthy(value) is truthy
