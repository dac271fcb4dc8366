"""``dims auto``: the roadmap's automatic dimension extraction (spec/000 section 14, "Dimension
Auto-Extraction from New KGs"), as an explicit command.

Rules (each value rounded to 2 places):

* ``relationship_richness`` from degree: log(1 + degree) / log(1 + max degree), every node;
* ``implementation_complexity`` from outgoing requires / depends_on edges: min(1, 0.1 + 0.15 x count),
  nodes with at least one;
* ``pipeline_composability`` from feeds_into edges (either way): min(1, 0.5 + 0.1 x count);
* ``pricing_tier`` from cost words in name, description, aliases and keywords: 0.15 for free / cheap
  / discount words, 0.85 for expensive / premium words (neither or both: no value);
* ``batch_suitability``, ``streaming_support``, ``cache_effectiveness``, ``multimodal_support``,
  ``real_time_requirement`` from their words (batch, stream, cache, image / audio / video / pdf,
  real-time).

Each inferred value is recorded in the node property ``_inferred_dimensions`` ({dimension: rule});
a value present without that mark was set by a person and is never overwritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..index.snapshot import extra_text
from .dimensions import INFERRED_KEY, check_name
from .results import AutoDimensionsReport, InferredValue
from .view import GraphView, view_of

if TYPE_CHECKING:
    from .source import KGSource


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b", re.IGNORECASE)


# dimension -> [(pattern, value)], the first pattern that matches wins; "pricing_tier" needs one side only
TEXT_RULES: dict[str, list[tuple[re.Pattern[str], float]]] = {
    "pricing_tier": [(_words(r"free(?![- ]form)", r"cheap(?:er|est)?", r"inexpensive", r"low[- ]cost", r"discount(?:s|ed)?",
                             r"half[- ]price", r"open[- ]source", r"no cost"), 0.15),
                     (_words(r"expensive", r"premium", r"costly", r"pricey", r"high[- ]cost", r"per[- ]call pricing",
                             r"enterprise pricing"), 0.85)],
    "batch_suitability": [(_words(r"batch(?:es|ed|ing)?", r"bulk", r"offline"), 0.8)],
    "streaming_support": [(_words(r"stream(?:s|ed|ing)?"), 0.8)],
    "cache_effectiveness": [(_words(r"cache[sd]?", r"caching"), 0.8)],
    "multimodal_support": [(_words(r"images?", r"vision", r"audio", r"video", r"pdfs?", r"screenshots?",
                                   r"photos?"), 0.7)],
    "real_time_requirement": [(_words(r"real[- ]?time", r"live", r"low[- ]latency", r"interactive"), 0.8)],
}
GRAPH_RULES = ("relationship_richness", "implementation_complexity", "pipeline_composability")
RULES = GRAPH_RULES + tuple(TEXT_RULES)


def node_text(node: Any) -> str:
    return " ".join((node.name, node.description, extra_text(node.properties)))


def text_value(dim: str, text: str) -> float | None:
    """The value a text rule gives, or None (for pricing_tier: None when both sides match)."""
    hits = [value for pattern, value in TEXT_RULES[dim] if pattern.search(text)]
    if dim == "pricing_tier" and len(hits) != 1:
        return None
    return hits[0] if hits else None


def graph_values(view: GraphView) -> dict[str, np.ndarray]:
    """Per-row values of the graph rules (NaN where a rule gives none)."""
    g = view.graph
    degree = np.rint(g.degree_centrality() * max(view.n - 1, 1))
    top = float(degree.max()) if degree.size else 0.0
    richness = np.log1p(degree) / np.log1p(top) if top > 0 else np.zeros(view.n)
    requires = _type_degree(view, ("requires", "depends_on"), outgoing_only=True)
    feeds = _type_degree(view, ("feeds_into",), outgoing_only=False)
    return {"relationship_richness": richness,
            "implementation_complexity": np.where(requires > 0, np.minimum(1.0, 0.1 + 0.15 * requires), np.nan),
            "pipeline_composability": np.where(feeds > 0, np.minimum(1.0, 0.5 + 0.1 * feeds), np.nan)}


def _type_degree(view: GraphView, types: tuple[str, ...], outgoing_only: bool) -> np.ndarray:
    mask = view.graph.type_mask(types)
    count = np.bincount(np.repeat(np.arange(view.n), view.graph.out_degree), weights=mask[view.graph.out.etype],
                        minlength=view.n)
    if not outgoing_only:
        count += np.bincount(np.repeat(np.arange(view.n), view.graph.in_degree), weights=mask[view.graph.inn.etype],
                             minlength=view.n)
    return count


def infer(kg: KGSource, dims: Iterable[str] | None = None, dry_run: bool = False) -> AutoDimensionsReport:
    """Run the rules over every node; write (unless ``dry_run``) the values that changed."""
    chosen = _chosen(dims)
    view = view_of(kg)
    graph = {d: v for d, v in graph_values(view).items() if d in chosen}
    inferred: list[InferredValue] = []
    kept = 0
    writes: list[tuple[str, dict[str, Any]]] = []
    for node in kg.nodes():
        found, node_kept = _node_values(node, view.index.get(node.id), graph, chosen)
        kept += node_kept
        changes = _changes(node, found)
        if changes:
            writes.append((node.id, changes))
            inferred += [InferredValue(node.id, d, v, r, _previous(node, d)) for d, (v, r) in found.items()
                         if d in changes]
    if not dry_run:
        with kg.batch():  # property changes: one vector check at the end, not one per node
            for node_id, changes in writes:
                kg.update_node(node_id, properties=changes)
    return AutoDimensionsReport(nodes=kg.node_count(), inferred=tuple(inferred), kept_human=kept,
                                nodes_written=0 if dry_run else len(writes), dry_run=dry_run, rules=tuple(chosen))


def _chosen(dims: Iterable[str] | None) -> tuple[str, ...]:
    if dims is None:
        return RULES
    chosen = tuple(check_name(d) for d in dims)
    unknown = [d for d in chosen if d not in RULES]
    if unknown:
        raise InvalidArgument(f"no inference rule for {', '.join(unknown)}; rules exist for {', '.join(RULES)}")
    return chosen


def _node_values(node: Any, row: int | None, graph: dict[str, np.ndarray],
                 chosen: tuple[str, ...]) -> tuple[dict[str, tuple[float, str]], int]:
    """({dimension: (value, rule)} the rules give this node, how many human values they skipped)."""
    marks = node.properties.get(INFERRED_KEY)
    marks = marks if isinstance(marks, dict) else {}
    text = node_text(node)
    found, kept = {}, 0
    for dim in chosen:
        value = _rule_value(dim, row, graph, text)
        if value is None:
            continue
        if dim in node.properties and dim not in marks:
            kept += 1  # a person set it: never overwritten
            continue
        found[dim] = (round(float(value), 2), _rule_name(dim))
    return found, kept


def _rule_value(dim: str, row: int | None, graph: dict[str, np.ndarray], text: str) -> float | None:
    if dim in graph:
        if row is None or np.isnan(graph[dim][row]):
            return None
        return float(graph[dim][row])
    return text_value(dim, text)


def _rule_name(dim: str) -> str:
    return {"relationship_richness": "degree", "implementation_complexity": "requires_edges",
            "pipeline_composability": "feeds_into_edges"}.get(dim, "text_words")


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

