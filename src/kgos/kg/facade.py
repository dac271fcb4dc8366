"""``KG``: one knowledge graph as the user sees it, native or attached.

It is the object the Python API hands out (``Workspace.kg(db_id)``) and that the CLI, HTTP API and
MCP server call into. Storage is delegated to a ``GraphStore``; search and the query methods are
layered on top of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import AmbiguousNode, KGOSError
from .methods import QueryMethods
from .model import Edge, Neighbor, Node
from .store.base import GraphStore

if TYPE_CHECKING:
    from .workspace import Workspace


class KG(QueryMethods):
    def __init__(self, workspace: Workspace, db_id: str, store: GraphStore) -> None:
        self.workspace = workspace
        self.db_id = db_id
        self.store = store
        self._engine: Any = None

    def __repr__(self) -> str:
        return f"<KG {self.db_id!r} nodes={self.store.node_count()} edges={self.store.edge_count()}>"

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    # -- reading -----------------------------------------------------------------------------------
    def node(self, node_id: str) -> Node:
        """The node with this id; ``NodeNotFound`` (with suggestions) otherwise."""
        node = self.store.get_node(node_id)
        if node is None:
            raise self.store.not_found(node_id)
        return node

    def get_node(self, node_id: str) -> Node | None:
        return self.store.get_node(node_id)

    def resolve(self, ref: str) -> Node:
        """A node by id, or else by unambiguous (case-insensitive) name."""
        node = self.store.get_node(ref)
        if node is not None:
            return node
        matches = self.store.find_nodes(ref, limit=20)
        if len(matches) == 1:
            return matches[0]
        if matches:
            ids = [m.id for m in matches]
            raise AmbiguousNode(f"'{ref}' names {len(ids)} nodes in '{self.db_id}': {', '.join(ids)}; "
                                "pass one of these ids", ids)
        raise self.store.not_found(ref)

    def nodes(self) -> Iterator[Node]:
        return self.store.iter_nodes()

    def edges(self) -> Iterator[Edge]:
        return self.store.iter_edges()

    def nodes_page(self, limit: int = 50, offset: int = 0, type: str | None = None) -> tuple[int, list[Node]]:
        """(how many nodes match, one page of them in storage order), optionally of one ``type``;
        in SQL where the store's layout is known (identifiers from its schema, values as parameters)."""
        from .methods.nodesql import node_table
        table = node_table(self.store)
        if table is None:
            nodes = [n for n in self.nodes() if type is None or n.type == type]
            return len(nodes), nodes[offset:offset + limit]
        where, args = ("", []) if type is None else (f" AND {table.type} = ?", [type])
        total = table.conn.execute(f"SELECT count(*) {table.source}{where}", args).fetchone()[0]
        ids = [str(r[0]) for r in table.conn.execute(
            f"SELECT {table.id} {table.source}{where} ORDER BY {table.order} LIMIT ? OFFSET ?", [*args, limit, offset])]
        found = self.store.get_nodes(ids)
        return int(total), [found[i] for i in ids if i in found]

    def find_nodes(self, name: str, type: str | None = None) -> list[Node]:
        return self.store.find_nodes(name, type)

    def neighbors(self, node_id: str, direction: str = "both", edge_types: Iterable[str] | None = None,
                  limit: int | None = None) -> list[Neighbor]:
        """Nodes one edge away: ``direction`` is outgoing, incoming or both."""
        if self.store.get_node(node_id) is None:
            raise self.store.not_found(node_id)
        return self.store.neighbors(node_id, direction, edge_types, limit)

    def node_count(self) -> int:
        return self.store.node_count()

    def edge_count(self) -> int:
        return self.store.edge_count()

    def meta(self) -> dict[str, str]:
        return self.store.meta()

    # -- writing -----------------------------------------------------------------------------------
    def _writer(self) -> Any:
        self.store.require_writable()
        if not hasattr(self.store, "add_node"):
            raise KGOSError(f"KG '{self.db_id}' does not support writes")
        return self.store

    def add_node(self, name: str, type: str = "entity", description: str = "",
                 properties: dict[str, Any] | None = None, id: str | None = None) -> Node:
        return self._writer().add_node(name, type, description, properties, id=id)

    def upsert_node(self, id: str, name: str, type: str = "entity", description: str = "",
                    properties: dict[str, Any] | None = None) -> Node:
        return self._writer().upsert_node(id, name, type, description, properties)

    def upsert_entity(self, name: str, type: str, properties: dict[str, Any] | None = None,
                      description: str = "") -> Node:
        return self._writer().upsert_entity(name, type, properties, description)

    def update_node(self, id: str, **changes: Any) -> Node:
        return self._writer().update_node(id, **changes)

    def delete_node(self, id: str) -> int:
        return self._writer().delete_node(id)

    def add_edge(self, source: str, target: str, type: str, weight: float = 1.0,
                 properties: dict[str, Any] | None = None) -> Edge:
        return self._writer().add_edge(source, target, type, weight, properties)

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        return self._writer().delete_edge(source, target, type)

    # -- search ------------------------------------------------------------------------------------
    @property
    def engine(self) -> Any:
        if self._engine is None:
            from .retrieval.engine import SearchEngine
            self._engine = SearchEngine(self.store, self.workspace.cache_dir,
                                        embedder=self.workspace.setting(self.db_id, "embedder"))
            self._engine.tuned = self.workspace.setting(self.db_id, "weight_profiles")
        return self._engine

    def search(self, query: str, k: int = 10, weights: Any = None, intent: str | None = None,
               mode: str = "hybrid") -> Any:
        """Intent-adaptive hybrid search (spec/001); every hit explains its score.

        ``weights``: explicit (alpha, beta, gamma, delta), normalised to sum 1; None uses the intent's
        profile. ``intent``: one of the 8 retrieval intents, or None to classify the query. ``mode``:
        hybrid (default), fixed3, fixed4, embedding, bm25, fts, text, graph or rrf (for ablations).
        """
        return self.engine.search(query, k=k, weights=weights, intent=intent, mode=mode)

    def embed(self, model: str = "default", batch_size: int = 64, progress: Any = None) -> Any:
        """Embed the nodes whose text changed since the last run, and use that model for search."""
        from .embed import get_embedder
        from .index.vectors import embed_store
        embedder = get_embedder(model)
        report = embed_store(self.store, embedder, self.workspace.cache_dir, batch_size, progress)
        if hasattr(self.store, "set_meta") and not self.store.read_only:
            if self.store.meta().get("embedder") != embedder.spec:
                self.store.set_meta(embedder=embedder.spec)
        else:
            self.workspace.set_setting(self.db_id, "embedder", embedder.spec)
        self.engine.embedder_spec = embedder.spec
        self.engine.invalidate()
        return report

    def tune(self, probes: Any, folds: int = 5, step: float = 0.1, save: bool = False,
             force: bool = False) -> Any:
        """Cross-validated weight search on ``probes`` (a path or a list of Probe); ``save`` stores the
        fitted profile for this KG only when its held-out gain is real (or ``force``)."""
        from .eval.probes import load_probes
        from .eval.tuning import tune
        report = tune(self, load_probes(probes) if not isinstance(probes, list) else probes, folds, step)
        if save:
            if not (report.worth_saving or force):
                raise KGOSError(f"not saved: held-out MRR@10 gain is {report.gain:+.4f} "
                                "(no gain measured on held-out folds); use --force to save anyway")
            self.save_weight_profiles(report.weights)
        return report

    def save_weight_profiles(self, profiles: dict[str, Any] | None) -> None:
        """Store (or with None remove) this KG's tuned weight profiles."""
        import json
        value = json.dumps({str(k): list(v) for k, v in profiles.items()}) if profiles else ""
        if hasattr(self.store, "set_meta") and not self.store.read_only:
            self.store.set_meta(weight_profiles=value)
        else:
            self.workspace.set_setting(self.db_id, "weight_profiles", value)
            self.engine.tuned = value
        self.engine.invalidate()

    # -- quality -----------------------------------------------------------------------------------
    def stats(self) -> Any:
        from .store.stats import kg_stats
        return kg_stats(self.store)

    def validate(self, max_examples: int = 20) -> Any:
        from .store.validation import validate
        return validate(self.store, max_examples=max_examples)
