"""``KGSource``: what the query methods that need more than a view, a snapshot and a store use of a KG.

The ``kgos.kg.KG`` facade is one. The protocol lives here so that the methods layer never imports the
layer above it: the facade calls these functions, not the other way round.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot
    from ..model import Node
    from ..retrieval.engine import SearchEngine
    from ..retrieval.results import SearchResult
    from ..store.base import GraphStore
    from .view import GraphView


class KGSource(Protocol):
    db_id: str
    store: GraphStore

    @property
    def engine(self) -> SearchEngine: ...

    def view(self, snap: Snapshot | None = None) -> GraphView:
        """The methods' view of ``snap`` (default: the current KG version's snapshot)."""
        ...

    def search(self, query: str, k: int = 10, weights: Any = None, intent: str | None = None,
               mode: str = "hybrid") -> SearchResult: ...

    def node(self, node_id: str) -> Node: ...

    def nodes(self) -> Iterator[Node]: ...

    def node_count(self) -> int: ...

    def update_node(self, id: str, **changes: Any) -> Node: ...
