"""The controlled vocabulary of edge types (validation rule 7) and the KG's own type declarations.

Every KG may use ``DEFAULT_EDGE_TYPES``. A KG extends the edge vocabulary by storing a JSON list
under the ``edge_types`` key of its metadata, and restricts its node types by storing a JSON list
under ``node_types`` (without that key any well-formed type name is allowed).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

# Relations of the Flags Toolkit / KG-OS KGs (spec/000 sections 4 and 7).
KGOS_EDGE_TYPES = (
    "implements", "provides", "enables", "used_for", "depends_on", "requires", "feeds_into",
    "followed_by", "part_of", "similar_to", "complements", "relates_to", "has_workaround",
    "alternative_to", "has_limitation", "optimizes", "contributes_to", "conflicts_with", "supports",
    "has_capability", "causes", "fixes", "solves", "contains", "reduces", "caused_by",
    "prerequisite_of", "composes_with",
)
# Common ontology and reference relations (e.g. the Gene Ontology's).
ONTOLOGY_EDGE_TYPES = (
    "is_a", "instance_of", "subclass_of", "has_part", "see_also", "regulates",
    "positively_regulates", "negatively_regulates",
)
# Predicates of the agent memory KG (spec/002, "Core Predicates").
MEMORY_EDGE_TYPES = ("prefers", "decided", "works_on", "uses", "references")

DEFAULT_EDGE_TYPES: frozenset[str] = frozenset(KGOS_EDGE_TYPES + ONTOLOGY_EDGE_TYPES + MEMORY_EDGE_TYPES)

MAX_TYPE_LENGTH = 64


def is_valid_type_name(value: object) -> bool:
    """A node type is a non-blank string of at most 64 characters with no control characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TYPE_LENGTH:
        return False
    return not any(unicodedata.category(ch) == "Cc" for ch in value)


def declared_list(meta: Mapping[str, str], key: str) -> frozenset[str] | None:
    """The JSON list of strings stored under ``key`` in the KG's metadata, or None.

    A missing key, a value that is not JSON, or JSON that is not a list means "not declared":
    validation then falls back to the defaults rather than failing on the metadata itself.
    """
    raw = meta.get(key)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, list):
        return None
    return frozenset(v for v in value if isinstance(v, str))


@dataclass(frozen=True)
class Vocabulary:
    """What one KG allows: its edge types, and its node types if it declares them."""

    edge_types: frozenset[str]
    node_types: frozenset[str] | None = None

    @classmethod
    def from_meta(cls, meta: Mapping[str, str]) -> Vocabulary:
        """The defaults, extended by the KG's ``edge_types`` and restricted by its ``node_types``."""
        extra = declared_list(meta, "edge_types") or frozenset()
        return cls(edge_types=DEFAULT_EDGE_TYPES | extra, node_types=declared_list(meta, "node_types"))

    def allows_edge_type(self, name: str) -> bool:
        return name in self.edge_types

    def allows_node_type(self, name: object) -> bool:
        """Rule 2: well-formed, and declared if the KG declares its node types."""
        if not is_valid_type_name(name):
            return False
        return self.node_types is None or name in self.node_types


__all__ = ["DEFAULT_EDGE_TYPES", "MAX_TYPE_LENGTH", "Vocabulary", "declared_list", "is_valid_type_name"]
