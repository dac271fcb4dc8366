"""``dims auto``: the roadmap's automatic dimension extraction (spec/000 section 14, "Dimension
Auto-Extraction from New KGs"), run by every import and ingestion and as an explicit command.

Rules (each value rounded to 2 places):

* structure, every KG:
  ``relationship_richness`` from degree: log(1 + degree) / log(1 + max degree), every node;
  ``implementation_complexity`` from outgoing requires / depends_on edges: min(1, 0.1 + 0.15 x count);
  ``pipeline_composability`` from feeds_into edges (either way): min(1, 0.5 + 0.1 x count);
  ``emergence_potential`` from the distinct node types a node touches: min(1, 0.05 + 0.15 x count);
  ``knowledge_density`` from the distinct content words of the description: min(1, 0.2 + count / 40);
* words, one rule per remaining dimension of the catalogue (``dimrules``): the high end's words or the
  low end's in the name, description, aliases and keywords (both or neither: no value). An import runs
  them only on a KG that speaks the catalogue's language (:func:`speaks_catalogue`).

Each inferred value is recorded in the node property ``_inferred_dimensions`` ({dimension: rule});
a value present without that mark was set by a person and is never overwritten.
``benchmarks/dims_bench.py`` measures the rules against the values a person set on the demo KG.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..index.snapshot import extra_text
from ..model import Node, normalize_name
from ..store.migrations import now_iso
from .dimensions import INFERRED_KEY, check_name
from .dimrules import RULES as WORD_RULES
from .dimrules import values as word_values
from .results import AutoDimensionsReport, InferredValue
from .view import GraphView, view_of

if TYPE_CHECKING:
    from .source import KGSource


GRAPH_RULES = ("relationship_richness", "implementation_complexity", "pipeline_composability",
               "emergence_potential")
TEXT_RULES = ("knowledge_density",) + tuple(WORD_RULES)
RULES = GRAPH_RULES + TEXT_RULES
WORDS_SHARE = 0.25  # see speaks_catalogue
# the rules that give nearly every node a value, from its shape alone (not what it is)
SHAPE_DIMENSIONS = ("relationship_richness", "emergence_potential", "knowledge_density")


_CONTENT = re.compile(r"[^\W\d_]{4,}")


def node_text(node: Any) -> str:
    return " ".join((node.name, node.description, extra_text(node.properties)))


def density(description: str) -> float | None:
    """Distinct content words (four letters or more) of a description: 0.2 + count / 40, capped at 1."""
    distinct = {w.lower() for w in _CONTENT.findall(description)}
    return min(1.0, 0.2 + len(distinct) / 40) if distinct else None


def graph_values(view: GraphView) -> dict[str, np.ndarray]:
    """Per-row values of the graph rules (NaN where a rule gives none)."""
    g = view.graph
    degree = np.rint(g.degree_centrality() * max(view.n - 1, 1))
    top = float(degree.max()) if degree.size else 0.0
    richness = np.log1p(degree) / np.log1p(top) if top > 0 else np.zeros(view.n)
    requires = _type_degree(view, ("requires", "depends_on"), outgoing_only=True)
    feeds = _type_degree(view, ("feeds_into",), outgoing_only=False)
    kinds = _neighbour_types(view)
    return {"relationship_richness": richness,
            "implementation_complexity": np.where(requires > 0, np.minimum(1.0, 0.1 + 0.15 * requires), np.nan),
            "pipeline_composability": np.where(feeds > 0, np.minimum(1.0, 0.5 + 0.1 * feeds), np.nan),
            "emergence_potential": np.where(kinds > 0, np.minimum(1.0, 0.05 + 0.15 * kinds), np.nan)}


def _neighbour_types(view: GraphView) -> np.ndarray:
    """How many distinct node types each node touches (either direction): a node bridging many kinds
    of things is where unexpected combinations come from."""
    g, width = view.graph, max(len(view.type_names), 1)
    rows = np.concatenate([np.repeat(np.arange(view.n), g.out_degree), np.repeat(np.arange(view.n), g.in_degree)])
    kinds = view.node_types[np.concatenate([g.out.indices, g.inn.indices])]
    pairs = np.unique(rows.astype(np.int64) * width + kinds)
    return np.bincount(pairs // width, minlength=view.n).astype(float)


def _type_degree(view: GraphView, types: tuple[str, ...], outgoing_only: bool) -> np.ndarray:
    mask = view.graph.type_mask(types)
    count = np.bincount(np.repeat(np.arange(view.n), view.graph.out_degree), weights=mask[view.graph.out.etype],
                        minlength=view.n)
    if not outgoing_only:
        count += np.bincount(np.repeat(np.arange(view.n), view.graph.in_degree), weights=mask[view.graph.inn.etype],
                             minlength=view.n)
    return count


def infer(kg: KGSource, dims: Iterable[str] | None = None, dry_run: bool = False,
          words: bool | None = True, view: GraphView | None = None) -> AutoDimensionsReport:
    """Run the rules over every node; write (unless ``dry_run``) the values that changed.

    ``words``: run the word rules (True), not (False), or only if the KG speaks the catalogue's
    language (None, what an import does; see :func:`speaks_catalogue`). ``view``: the graph to read
    (default: the search snapshot's; an import passes one read from the store, not to build a snapshot
    of a version it is about to replace).
    """
    chosen = _chosen(dims)
    view = view if view is not None else view_of(kg)
    graph = {d: v.tolist() for d, v in graph_values(view).items() if d in chosen}  # floats: fast per row
    rows = [(node, _rule_values(node, view.index.get(node.id), graph, frozenset(chosen))) for node in kg.nodes()]
    if words is None:
        words = speaks_catalogue(got for _, got in rows)
    if not words:
        chosen = tuple(d for d in chosen if d not in WORD_RULES)
    inferred: list[InferredValue] = []
    kept = 0
    writes: list[tuple[Node, dict[str, Any]]] = []
    for node, got in rows:
        found, node_kept = _node_values(node, {d: v for d, v in got.items() if words or d not in WORD_RULES})
        kept += node_kept
        changes = _changes(node, found)
        if changes:
            writes.append((node, changes))
            inferred += [InferredValue(node.id, d, v, r, _previous(node, d)) for d, (v, r) in found.items()
                         if d in changes]
    if not dry_run:
        _write(kg, writes)
    return AutoDimensionsReport(nodes=kg.node_count(), inferred=tuple(inferred), kept_human=kept,
                                nodes_written=0 if dry_run else len(writes), dry_run=dry_run, rules=tuple(chosen))


def speaks_catalogue(values: Iterable[dict[str, float]], share: float = WORDS_SHARE) -> bool:
    """Whether the word rules fit a KG: at least ``share`` of its nodes get values from two word rules
    or more. The catalogue describes AI tools and CLI programs; in another domain its words mean other
    things ("translation" of a protein, a "steady state"). Measured shares: the demo KG 0.66, cli-man
    0.66, the finance demo 0.12, go 0.02."""
    counts = [sum(1 for d in got if d in WORD_RULES) >= 2 for got in values]
    return bool(counts) and sum(counts) / len(counts) >= share


def _write(kg: KGSource, writes: list[tuple[Node, dict[str, Any]]]) -> None:
    """One unit of work. Where the backend has a bulk statement it is one merge of the property
    changes (go: 43,558 nodes in seconds, where one update per node took minutes); dimension values are
    not text, so nothing needs embedding again."""
    if not kg.store.supports_bulk:
        with kg.batch():
            for node, changes in writes:
                kg.update_node(node.id, properties=changes)
        return
    ts = now_iso()
    rows = [(n.id, n.name, normalize_name(n.name), n.type, "", json.dumps(changes, ensure_ascii=False),
             n.created_at or ts, ts) for n, changes in writes]
    with kg.store.writing(bulk=True) as w:
        for start in range(0, len(rows), 5000):
            w.merge_node_rows(rows[start:start + 5000], ts)


def _chosen(dims: Iterable[str] | None) -> tuple[str, ...]:
    if dims is None:
        return RULES
    chosen = tuple(check_name(d) for d in dims)
    unknown = [d for d in chosen if d not in RULES]
    if unknown:
        raise InvalidArgument(f"no inference rule for {', '.join(unknown)}; rules exist for {', '.join(RULES)}")
    return chosen


def _node_values(node: Any, got: dict[str, float]) -> tuple[dict[str, tuple[float, str]], int]:
    """({dimension: (value, rule)} to set on this node, how many human values the rules skipped)."""
    marks = node.properties.get(INFERRED_KEY)
    marks = marks if isinstance(marks, dict) else {}
    found, kept = {}, 0
    for dim, value in got.items():
        if dim in node.properties and dim not in marks:
            kept += 1  # a person set it: never overwritten
            continue
        found[dim] = (round(float(value), 2), _rule_name(dim))
    return found, kept


def _rule_values(node: Any, row: int | None, graph: dict[str, list[float]], chosen: frozenset[str]) -> dict[str, float]:
    got: dict[str, float] = {}
    if row is not None:
        got.update((d, v[row]) for d, v in graph.items() if v[row] == v[row])  # NaN: no value
    if "knowledge_density" in chosen and (value := density(node.description)) is not None:
        got["knowledge_density"] = value
    got.update(word_values(node_text(node), chosen))
    return got


def _rule_name(dim: str) -> str:
    return {"relationship_richness": "degree", "implementation_complexity": "requires_edges",
            "pipeline_composability": "feeds_into_edges", "emergence_potential": "neighbour_types",
            "knowledge_density": "description_words"}.get(dim, "text_words")


def _changes(node: Any, found: dict[str, tuple[float, str]]) -> dict[str, Any]:
    """The properties to write: changed values, plus the updated inferred-marks when they change."""
    marks = dict(node.properties.get(INFERRED_KEY) or {})
    changes: dict[str, Any] = {d: v for d, (v, _) in found.items() if node.properties.get(d) != v}
    new_marks = {**marks, **{d: r for d, (_, r) in found.items()}}
    if changes or new_marks != marks:
        changes[INFERRED_KEY] = new_marks
    return changes


def _previous(node: Any, dim: str) -> float | None:
    value = node.properties.get(dim)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

