"""Bounds on the properties a node, edge or memory may carry, checked at every write.

Without a bound one record can break a whole KG: properties nested 254+ levels pass Python's
``json`` but not orjson, pydantic or the exporters, so every later listing, export and re-import of
the KG fails. The limits are generous for real data (a KG's properties are flat key/value pairs,
lists, or a few levels of objects) and far below where any encoder gives up:

- ``MAX_PROPERTY_DEPTH``: objects and lists nest at most 32 levels (``{"a": 1}`` is 1 level);
- ``MAX_PROPERTY_BYTES``: at most 1 MB (1,000,000 bytes) of compact JSON per record.

``check_properties`` serialises a properties object, checks both bounds and returns the JSON text
to store, so the check costs one serialisation, which the write needs anyway.
"""

from __future__ import annotations

import json
from itertools import repeat
from operator import add
from typing import Any

import orjson

from ..errors import InvalidArgument, PropertiesTooLarge

MAX_PROPERTY_DEPTH = 32
MAX_PROPERTY_BYTES = 1_000_000


def check_properties(props: dict[str, Any], what: str = "properties") -> str:
    """``props`` as compact JSON, or PropertiesTooLarge naming ``what`` and the limit it broke."""
    try:
        data = orjson.dumps(props)
    except TypeError as exc:  # orjson's own recursion limit (254), or an int wider than 64 bits
        if "recursion" in str(exc).lower():
            raise too_deep(what) from None
        data = _stdlib_dumps(props, what).encode()
    if len(data) > MAX_PROPERTY_BYTES:
        raise PropertiesTooLarge(f"{what} take {len(data):,} bytes of JSON; at most {MAX_PROPERTY_BYTES:,} "
                                 "are allowed: store large content in a file or a node of its own and "
                                 "keep a reference (a path, URL or node id) in the properties")
    text = data.decode()
    if nests_too_deep(text, props):
        raise too_deep(what)
    return text


def too_deep(what: str) -> PropertiesTooLarge:
    return PropertiesTooLarge(f"{what} nest deeper than {MAX_PROPERTY_DEPTH} levels of objects and lists; "
                              "flatten them (e.g. dotted keys such as 'a.b.c') or store the nested document "
                              "as a JSON string or a file")


# -- values stored before the limits existed -------------------------------------------------------
# An older version stored properties of any depth. Reading them back must not break every listing,
# search and export of the KG (orjson and pydantic refuse > 254 levels), so such a value is replaced,
# when read, by a declared marker; validation (rule 8) names the nodes, and a write that would merge
# into the marker is refused instead of storing it.
ERROR_KEY = "_kgos_error"
FIX = ("replace them: kg.update_node(id, properties=..., replace_properties=True) or PATCH the node "
       "with replace_properties: true (an edge: delete and re-add it)")


def unreadable(what: str) -> dict[str, str]:
    """The marker shown instead of stored properties that nest deeper than the limit."""
    return {ERROR_KEY: f"{what} nest deeper than {MAX_PROPERTY_DEPTH} levels (stored before this limit "
                       f"existed) and are not shown; {FIX}"}


def nests_too_deep(text: str, value: Any) -> bool:
    """Whether ``value``, parsed from (or serialised to) ``text``, nests deeper than the limit. Each
    level opens one '{' or '['; fewer of them than the limit (brackets inside strings only add to the
    count) proves the depth without walking the value, for nearly every record."""
    return text.count("{") + text.count("[") > MAX_PROPERTY_DEPTH and depth(value) > MAX_PROPERTY_DEPTH


def dumps_within_limits(values: list[dict[str, Any]]) -> list[str] | None:
    """``check_properties`` over a column of properties in one C-level pass (a bulk import's batch):
    their JSON texts when every one is provably within both bounds, None when one needs
    ``check_properties`` itself (orjson refuses it, it is too large, or it has enough brackets that
    its depth must be walked), to be stored or refused with its message."""
    try:
        data = list(map(orjson.dumps, values))
    except TypeError:
        return None
    texts = list(map(bytes.decode, data))
    brackets = map(add, map(str.count, texts, repeat("{")), map(str.count, texts, repeat("[")))
    if max(map(len, data), default=0) > MAX_PROPERTY_BYTES or max(brackets, default=0) > MAX_PROPERTY_DEPTH:
        return None
    return texts


def check_mergeable(old: dict[str, Any]) -> None:
    """Refuse to merge new properties into the marker of ``unreadable``: the write would store it."""
    if ERROR_KEY in old:
        raise PropertiesTooLarge(f"the stored properties nest deeper than {MAX_PROPERTY_DEPTH} levels and "
                                 f"cannot be merged into; {FIX}")


def parse_json(text: str | bytes, what: str = "the value") -> Any:
    """``json.loads``, except that nesting too deep for the parser (~1000 levels) is reported as
    PropertiesTooLarge instead of a RecursionError (shallower values are checked when stored)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise too_deep(what) from None


def depth(value: Any) -> int:
    """How many levels of dicts and lists ``value`` nests (0 for a scalar); iterative, so any depth
    is measured without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_PROPERTY_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _stdlib_dumps(props: dict[str, Any], what: str) -> str:
    try:
        return json.dumps(props, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        raise too_deep(what) from None
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{what} are not JSON ({exc}); use strings, numbers, booleans, null, "
                                 "lists and objects") from None
