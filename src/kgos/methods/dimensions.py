"""Method 7, ``dimension_filter``, and reading / setting semantic dimension values (spec/000 sections
5 and 6).

A dimension name must match ``^[a-z][a-z0-9_]{0,63}$`` (catalog or custom) and is only ever passed
to SQL as a bound parameter: the JSON path is built by SQLite itself, ``'$.' || ?``. A constraint is
a mapping with ``min`` (>=), ``max`` (<=), ``exact`` (=), ``gt`` (>) or ``lt`` (<); only JSON numbers
match (a string "0.3" never does). The CLI form ``"pricing_tier<0.3"`` is parsed by ``parse_filter``.

>>> parse_filter("pricing_tier<0.3"), parse_filter("batch_suitability >= 0.7")
(('pricing_tier', {'lt': 0.3}), ('batch_suitability', {'min': 0.7}))
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument, InvalidName
from ..retrieval.engine import Prefilter
from .catalog import DIMENSIONS
from .nodesql import node_table
from .results import DimensionFilterResult, DimensionMatch, DimensionValue, NodeDimensions, NodeRef

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot
    from ..store.base import GraphStore
    from .source import KGSource

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
INFERRED_KEY = "_inferred_dimensions"  # node property: {dimension: rule} of values ``dims auto`` set
OPERATORS = {"min": ">=", "max": "<=", "exact": "=", "gt": ">", "lt": "<"}
_EXPR_RE = re.compile(r"^\s*(?P<name>[^<>=!\s]+)\s*(?P<op><=|>=|==|=|<|>)\s*(?P<value>\S+)\s*$")
_EXPR_OPS = {"<": "lt", "<=": "max", ">": "gt", ">=": "min", "=": "exact", "==": "exact"}
MAX_LIMIT = 1000


def check_name(name: Any) -> str:
    """A valid dimension name, or ``InvalidName`` that says what is allowed (and suggests one)."""
    if isinstance(name, str) and NAME_RE.fullmatch(name):
        return name
    close = difflib.get_close_matches(str(name).lower(), list(DIMENSIONS), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise InvalidName(f"invalid dimension name {name!r}: use lowercase letters, digits and _ , starting with "
                      f"a letter, at most 64 characters (e.g. pricing_tier){hint}")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise InvalidArgument(f"{what} must be a number, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{what} must be a number, not {value!r}") from None
    if not math.isfinite(number):
        raise InvalidArgument(f"{what} must be a finite number, not {value!r}")
    return number


def check_constraint(name: str, constraint: Any) -> dict[str, float]:
    """{op: bound} with known ops and numeric bounds; a bare number means ``exact``; an empty or
    unsatisfiable range (min > max, exact outside it) is an error."""
    if not isinstance(constraint, Mapping):
        constraint = {"exact": constraint}
    if not constraint:
        raise InvalidArgument(f"the constraint on {name} is empty: give min, max, exact, gt or lt")
    unknown = [k for k in constraint if k not in OPERATORS]
    if unknown:
        raise InvalidArgument(f"unknown constraint {unknown[0]!r} on {name}: use min, max, exact, gt or lt")
    bounds = {op: _number(v, f"{name} {op}") for op, v in constraint.items()}
    low = max([bounds[k] for k in ("min", "gt") if k in bounds], default=-math.inf)
    high = min([bounds[k] for k in ("max", "lt") if k in bounds], default=math.inf)
    strict = ("gt" in bounds and bounds["gt"] == low) or ("lt" in bounds and bounds["lt"] == high)
    if low > high or (low == high and strict):
        raise InvalidArgument(f"no value can satisfy {name}: lower bound {low} is above upper bound {high}")
    if "exact" in bounds and not low <= bounds["exact"] <= high:
        raise InvalidArgument(f"{name} exact {bounds['exact']} is outside the range [{low}, {high}]")
    return bounds


def check_filters(filters: Any) -> dict[str, dict[str, float]]:
    if not isinstance(filters, Mapping) or not filters:
        raise InvalidArgument("give at least one dimension filter, e.g. {'pricing_tier': {'max': 0.3}}")
    return {check_name(name): check_constraint(name, c) for name, c in filters.items()}


def parse_filter(expr: str) -> tuple[str, dict[str, float]]:
    """``"pricing_tier<0.3"`` -> ``("pricing_tier", {"lt": 0.3})``; operators < <= > >= = ==."""
    m = _EXPR_RE.match(expr or "")
    if m is None:
        raise InvalidArgument(f"cannot read filter {expr!r}: write it as NAME<0.3, NAME>=0.7 or NAME=0.5")
    name = check_name(m["name"])
    return name, {_EXPR_OPS[m["op"]]: _number(m["value"], f"the value in {expr!r}")}


def merge_filters(exprs: Iterable[str]) -> dict[str, dict[str, float]]:
    """Several expressions into one filter mapping (two bounds on one dimension make a range)."""
    merged: dict[str, dict[str, float]] = {}
    for expr in exprs:
        name, bound = parse_filter(expr)
        merged.setdefault(name, {}).update(bound)
    return check_filters(merged)


def _conditions(props: str, filters: dict[str, dict[str, float]]) -> tuple[str, list[Any]]:
    """SQL conditions with every name and bound as a parameter (operators come from OPERATORS)."""
    parts, args = [], []
    for name, bounds in filters.items():
        parts.append(f"json_type({props}, '$.' || ?) IN ('integer', 'real')")
        args.append(name)
        for op, bound in bounds.items():
            parts.append(f"json_extract({props}, '$.' || ?) {OPERATORS[op]} ?")
            args += [name, bound]
    return " AND ".join(parts), args


def dimension_filter(store: GraphStore, filters: Any, limit: int = 20) -> DimensionFilterResult:
    """spec/000 method 7: nodes whose properties meet every constraint, in node order."""
    checked = check_filters(filters)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument(f"limit must be a positive integer, not {limit!r}")
    limit = min(limit, MAX_LIMIT)
    custom = tuple(n for n in checked if n not in DIMENSIONS)
    notes = tuple(f"{n} is not in the 56-dimension catalog: filtered as a custom dimension" for n in custom)
    table = node_table(store)
    if table is None:
        total, ids = _filter_python(store, checked, limit)
    elif table.props is None:
        total, ids, notes = 0, [], notes + ("this KG has no properties column: no dimension values",)
    else:
        where, args = _conditions(table.props, checked)
        total = table.rows(f"SELECT count(*) {table.source} AND {where}", args)[0][0]
        ids = [r[0] for r in table.rows(
            f"SELECT {table.id} {table.source} AND {where} ORDER BY {table.order} LIMIT ?", [*args, limit])]
    nodes = store.get_nodes(ids)
    rows = tuple(DimensionMatch(_ref(nodes[i]), {n: nodes[i].properties[n] for n in checked})
                 for i in ids if i in nodes)
    return DimensionFilterResult(checked, int(total), rows, custom, notes)


def prefilter(store: GraphStore, filters: Any) -> Prefilter:
    """The filters as a search pre-filter (spec/000 section 8: only nodes matching ALL constraints
    are considered): the row mask is built per snapshot, the key is the checked filters."""
    checked = check_filters(filters)
    return Prefilter(json.dumps(checked, sort_keys=True), lambda snap: filter_mask(store, snap, checked))


def filter_mask(store: GraphStore, snap: Snapshot, filters: dict[str, dict[str, float]]) -> np.ndarray:
    """One bool per snapshot row: does the node meet every constraint? One SQL query for the
    matching rows (native KGs map FTS rowids with one ``searchsorted``), else a pass over the nodes."""
    mask = np.zeros(snap.n, bool)
    table = node_table(store)
    if snap.n == 0:
        return mask
    if table is None:
        ids: list[str] = [n.id for n in store.iter_nodes() if matches(n.properties, filters)]
    elif table.props is None:
        return mask
    else:
        where, args = _conditions(table.props, filters)
        if table.order == "n.rowid" and snap.rowids is not None:
            found = np.array([r[0] for r in table.rows(f"SELECT n.rowid {table.source} AND {where}", args)],
                             np.int64)
            pos = np.searchsorted(snap.rowids, found)
            ok = (pos < snap.n) & (snap.rowids[np.minimum(pos, snap.n - 1)] == found)
            mask[pos[ok]] = True
            return mask
        ids = [str(r[0]) for r in table.rows(f"SELECT {table.id} {table.source} AND {where}", args)]
    rows = [snap.index[i] for i in ids if i in snap.index]
    mask[np.array(rows, np.int64)] = True
    return mask


def _filter_python(store: GraphStore, filters: dict[str, dict[str, float]], limit: int) -> tuple[int, list[str]]:
    """The same test over ``iter_nodes`` for stores without SQL."""
    ids = [n.id for n in store.iter_nodes() if matches(n.properties, filters)]
    return len(ids), ids[:limit]


def matches(properties: Mapping[str, Any], filters: dict[str, dict[str, float]]) -> bool:
    tests = {"min": lambda v, b: v >= b, "max": lambda v, b: v <= b, "exact": lambda v, b: v == b,
             "gt": lambda v, b: v > b, "lt": lambda v, b: v < b}
    for name, bounds in filters.items():
        value = properties.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if not all(tests[op](value, bound) for op, bound in bounds.items()):
            return False
    return True


def _ref(node: Any) -> NodeRef:
    return NodeRef(node.id, node.name, node.type)


# -- reading and setting values ------------------------------------------------------------------------
def node_dimensions(node: Any, include_custom: bool = True) -> NodeDimensions:
    """The dimension values of a node: catalog names first (catalog order), then other numeric
    properties in 0..1 as custom dimensions; each says which rule inferred it, if one did."""
    inferred = node.properties.get(INFERRED_KEY) or {}
    inferred = inferred if isinstance(inferred, Mapping) else {}
    values = []
    for name, value in node.properties.items():
        if not _is_value(value) or not NAME_RE.fullmatch(name) or (name not in DIMENSIONS and not include_custom):
            continue
        dim = DIMENSIONS.get(name)
        values.append(DimensionValue(name, float(value), dim.category if dim else None, inferred.get(name)))
    order = {n: i for i, n in enumerate(DIMENSIONS)}
    values.sort(key=lambda v: (order.get(v.name, len(order)), v.name))
    return NodeDimensions(NodeRef(node.id, node.name, node.type), tuple(values))


def _is_value(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0.0 <= value <= 1.0


def check_value(name: str, value: Any) -> float:
    number = _number(value, f"the value of {name}")
    if not 0.0 <= number <= 1.0:
        raise InvalidArgument(f"{name} must be between 0.0 and 1.0, not {value!r}")
    return number


def set_dimensions(kg: KGSource, node_id: str, values: Mapping[str, Any], custom: bool = False) -> NodeDimensions:
    """Set values a person chose: validated names and 0..1 floats; unknown names need ``custom``.
    A value set here is no longer marked as inferred, so ``dims auto`` will not overwrite it."""
    if not isinstance(values, Mapping) or not values:
        raise InvalidArgument("give at least one dimension=value to set")
    checked = {}
    for name, value in values.items():
        name = check_name(name)
        if name not in DIMENSIONS and not custom:
            close = difflib.get_close_matches(name, list(DIMENSIONS), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise InvalidName(f"{name} is not in the 56-dimension catalog{hint}; pass custom=True "
                              "(--custom) to set a custom dimension")
        checked[name] = check_value(name, value)
    node = kg.node(node_id)
    inferred = dict(node.properties.get(INFERRED_KEY) or {})
    changes: dict[str, Any] = dict(checked)
    if any(n in inferred for n in checked):
        changes[INFERRED_KEY] = {k: v for k, v in inferred.items() if k not in checked}
    return node_dimensions(kg.update_node(node_id, properties=changes))
