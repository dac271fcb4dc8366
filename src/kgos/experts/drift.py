"""Dimension drift (spec/000 section 14): dimension values that use of the KG contradicts.

Two kinds of alert, each naming the node, the dimension, its value and who set it (a person, or the
rule that inferred it), with the evidence:

- ``excluded_but_used``: an expert's dimension filter excludes the node (its value is outside the
  bound, or it has none), yet people used it: an answer that cited it was rated up, or a proposal
  touching it was accepted into the KG. Either the value or the filter's bound is wrong.
- ``contradicted``: a user said something about the node that reads as the other end of the
  dimension: a statement (not a question) naming exactly one node, whose other words the dimension
  rules (``methods.dimrules``) read as a value at least ``GAP`` away and on the other side of 0.5
  ("The Batch API is real-time now" against ``real_time_requirement`` 0.0). A negation in the
  statement ("is not", "doesn't") turns the reading around.

Nothing is written: the alert is for a person, who sets the value (``kgos dims set``) or changes the
expert's filter. Statements are user text: only their redacted sentence is quoted.

>>> _reading("it is not real-time", "real_time_requirement")
0.15
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from ..index.snapshot import extra_text
from ..index.text import tokenize
from ..memory.pii import redact_secrets
from ..methods.dimensions import INFERRED_KEY, matches
from ..methods.dimrules import values as word_values
from ..methods.results import Record
from .learning import gazetteer, sentences
from .turnlog import LoggedTurn, expert_configs, turns

if TYPE_CHECKING:
    from ..kg import KG, Workspace

GAP = 0.4
MAX_EVIDENCE = 5
NEGATION = re.compile(r"\b(?:not|no|never|none|without|cannot|hardly)\b|n't\b", re.IGNORECASE)


@dataclass(frozen=True)
class DriftEvidence(Record):
    """``turn`` (a rated-up answer cited the node), ``proposal`` (accepted, touching the node) or
    ``statement`` (what a user said; ``value`` is how the rules read it)."""

    kind: str
    ref: str
    text: str
    at: str
    value: float | None = None


@dataclass(frozen=True)
class DriftAlert(Record):
    node: str
    name: str
    dimension: str
    value: float | None
    set_by: str  # "person", the inferring rule's name, or "unset"
    kind: str  # excluded_but_used | contradicted
    evidence: tuple[DriftEvidence, ...]
    expert: str | None = None  # the expert whose filter excludes the node
    bound: dict[str, float] | None = None


@dataclass(frozen=True)
class DriftReport(Record):
    db_id: str
    since: str
    turns_read: int
    experts_with_filters: int
    alerts: tuple[DriftAlert, ...]


def drift(ws: Workspace, db_id: str, days: int = 90, limit: int = 200) -> DriftReport:
    """The drift alerts of ``db_id`` from the last ``days`` of use (at most ``limit`` alerts)."""
    if not 1 <= days <= 3650 or not 1 <= limit <= 1000:
        raise InvalidArgument("days must be in 1..3650 and limit in 1..1000")
    kg = ws.kg(db_id)
    since = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat(timespec="seconds")
    log = turns(ws, db_id, since)
    filters = {eid: c.dimension_filters for eid, c in expert_configs(ws).items()
               if c.dimension_filters and db_id in c.kgs}
    alerts = _excluded_but_used(kg, log, filters, since) + _contradicted(kg, log)
    alerts.sort(key=lambda a: (-len(a.evidence), a.node, a.dimension))
    return DriftReport(db_id, since, len(log), len(filters), tuple(alerts[:limit]))


# -- filters that excluded what people used ------------------------------------------------------------
def _excluded_but_used(kg: KG, log: list[LoggedTurn], filters: dict[str, dict[str, dict[str, float]]],
                       since: str) -> list[DriftAlert]:
    if not filters:
        return []
    used = _used(kg, log, since)
    nodes = kg.store.get_nodes(list(used))
    alerts = []
    for node_id, evidence in used.items():
        node = nodes.get(node_id)
        for expert, bounds in filters.items():
            for dim, bound in bounds.items() if node is not None else ():
                if not matches(node.properties, {dim: bound}):
                    alerts.append(DriftAlert(node.id, node.name, dim, _number(node.properties.get(dim)),
                                             _set_by(node.properties, dim), "excluded_but_used",
                                             tuple(evidence[:MAX_EVIDENCE]), expert, dict(bound)))
    return alerts


def _used(kg: KG, log: list[LoggedTurn], since: str) -> dict[str, list[DriftEvidence]]:
    """Node id -> how people used it: rated-up answers that cited it, accepted proposals touching it."""
    used: dict[str, list[DriftEvidence]] = defaultdict(list)
    prefix = f"{kg.db_id}:"
    for t in log:
        for key in sorted(t.cited) if t.rating == 1 else ():
            if key.startswith(prefix):
                used[key[len(prefix):]].append(DriftEvidence("turn", t.turn_id, t.query, t.created_at))
    if kg.read_only:
        return used
    _, accepted = kg.proposals.list(status="accepted", limit=1000)
    for p in accepted:
        if (p.reviewed_at or "") >= since:
            text = f"{p.source} -[{p.type}]-> {p.target}" if p.kind == "edge" else f"node {p.source}"
            for node_id in filter(None, (p.source, p.target)):
                used[node_id].append(DriftEvidence("proposal", str(p.id), text, p.reviewed_at or ""))
    return used


# -- what people said ---------------------------------------------------------------------------------
def _contradicted(kg: KG, log: list[LoggedTurn]) -> list[DriftAlert]:
    gaz = gazetteer(kg)
    said: dict[tuple[str, str], list[DriftEvidence]] = defaultdict(list)
    for t in log:
        for sentence in sentences(t.query):
            mentioned = {node for _, _, node in gaz.mentions(tokenize(sentence))}
            if len(mentioned) == 1:
                _statement(kg, next(iter(mentioned)), sentence, t, said)
    nodes = kg.store.get_nodes(list({n for n, _ in said}))
    return [DriftAlert(n, nodes[n].name, dim, _number(nodes[n].properties.get(dim)),
                       _set_by(nodes[n].properties, dim), "contradicted", tuple(ev[:MAX_EVIDENCE]))
            for (n, dim), ev in said.items() if n in nodes]


def _statement(kg: KG, node_id: str, sentence: str, turn: LoggedTurn,
               said: dict[tuple[str, str], list[DriftEvidence]]) -> None:
    node = kg.store.get_node(node_id)
    if node is None:
        return
    rest = _without_names(sentence, node)
    for dim in word_values(rest):
        stored, reading = _number(node.properties.get(dim)), _reading(rest, dim)
        if stored is None or reading is None:
            continue
        if abs(reading - stored) >= GAP and (reading > 0.5) != (stored > 0.5):
            said[(node_id, dim)].append(DriftEvidence("statement", turn.turn_id, redact_secrets(sentence),
                                                      turn.created_at, reading))


def _reading(text: str, dim: str) -> float | None:
    """How the dimension's rule reads ``text``, turned around by a negation."""
    value = word_values(text, {dim}).get(dim)
    if value is None:
        return None
    return round(1.0 - value, 2) if NEGATION.search(text) else value


def _without_names(sentence: str, node: Any) -> str:
    """The sentence without the node's name and aliases: "Batch API" must not read as batch words."""
    names = sorted({node.name, *extra_text(node.properties).split(" ; ")} - {""}, key=len, reverse=True)
    for name in names:
        sentence = re.sub(re.escape(name), " ", sentence, flags=re.IGNORECASE)
    return sentence


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _set_by(properties: dict[str, Any], dim: str) -> str:
    if dim not in properties:
        return "unset"
    marks = properties.get(INFERRED_KEY)
    return str(marks[dim]) if isinstance(marks, dict) and dim in marks else "person"
