"""``kg.dimensions``: the 56 semantic dimensions (spec/000 section 5) of one KG's nodes: read, set, infer
and filter. Calling it reads one node's values, as ``kg.dimensions(node)`` always did."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..methods import autodims, dimensions
from ..methods.results import AutoDimensionsReport, DimensionFilterResult, NodeDimensions
from ..methods.view import resolve

if TYPE_CHECKING:
    from .facade import KG


class Dimensions:
    def __init__(self, kg: KG) -> None:
        self.kg = kg

    def __call__(self, node: str) -> NodeDimensions:
        return self.of(node)

    def of(self, node: str) -> NodeDimensions:
        """A node's dimension values (catalog and custom), each marked when it was inferred."""
        return dimensions.node_dimensions(self.kg.node(resolve(self.kg.store, node).id))

    def set(self, node: str, values: Mapping[str, Any], custom: bool = False) -> NodeDimensions:
        """Set dimension values (0..1); names outside the catalog need ``custom=True``."""
        return dimensions.set_dimensions(self.kg, resolve(self.kg.store, node).id, values, custom)

    def infer(self, dims: Iterable[str] | None = None, dry_run: bool = False,
              words: bool | None = True) -> AutoDimensionsReport:
        """The roadmap's automatic extraction; never overwrites a value a person set. ``words``: the
        word rules always (True), never (False) or where the KG speaks the catalogue's language (None)."""
        return autodims.infer(self.kg, dims, dry_run, words)

    def filter(self, filters: Mapping[str, Any], limit: int = 20) -> DimensionFilterResult:
        """Nodes meeting {dimension: {min, max, exact, gt, lt}} constraints (query method 7)."""
        return self.kg.methods.dimension_filter(filters, limit)
