"""``KG``: one knowledge graph as the user sees it, native or attached.

It is the object the Python API hands out (``Workspace.kg(db_id)``) and that the CLI, HTTP API and
MCP server call into. It composes the services below it instead of inheriting them: the store
(system of record), the search engine (snapshot + hybrid scorer), the query methods (functions of
``kgos.methods`` fed with the view, snapshot and store they read) and the embedder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..embed import get_embedder
from ..embed.nodes import (
    EmbedReport,
    EmbedStatus,
    NamesStatus,
)
from ..errors import InvalidArgument, KGOSError
from ..methods.dimensions import prefilter
from ..methods.nodesql import nodes_page
from ..methods.orchestrator import RetrievalConfig
from ..methods.results import (
    AlternativesResult,
    AutoDimensionsReport,
    BlockerReport,
    BoostResult,
    CapabilityResult,
    CompositionPlan,
    DimensionFilterResult,
    ExplorationTree,
    ImpactResult,
    IntentClassification,
    IntentSearchResult,
    KeywordMatchResult,
    NodeDimensions,
    NodeRef,
    PathResult,
    SimilarResult,
    WantToResult,
)
from ..methods.view import (
    PER_LEVEL_DEFAULT,
    GraphView,
    ViewCache,
    find_node,
    resolve,
)
from ..model import Edge, Neighbor, Node
from ..retrieval.engine import ModelEngine, SearchEngine
from ..retrieval.results import SearchResult
from ..store.base import GraphStore
from ..store.proposals import ProposalQueue, open_proposal_store
from ..store.stats import KGStats, kg_stats
from ..store.validation import ValidationReport, validate
from ..store.writing import Writer
from .analytics import Analytics
from .dimensions import Dimensions
from .queries import QueryMethods
from .vectors import Embedding, model_name
from .written import WriteEmbedding

if TYPE_CHECKING:
    from ..embed.adapter import AdapterReport, AdapterStatus
    from ..index.snapshot import Snapshot


class KGHome(Protocol):
    """What a KG uses of the workspace that opened it (``kgos.Workspace`` is one): the cache folder,
    and per-KG settings for KGs whose own file KG-OS does not write (attached KGs)."""

    cache_dir: Path

    def setting(self, db_id: str, key: str) -> str | None: ...

    def set_setting(self, db_id: str, key: str, value: str) -> None: ...


class KG:
    """One knowledge graph: reading, writing, search, the query methods and the review queue."""

    def __init__(self, workspace: KGHome, db_id: str, store: GraphStore) -> None:
        self.workspace = workspace
        self.db_id = db_id
        self.store = store
        self._engine: SearchEngine | None = None
        self._views = ViewCache()
        self._proposals: ProposalQueue | None = None
        self._methods: QueryMethods | None = None
        self._embedding: Embedding | None = None
        self._dimensions: Dimensions | None = None
        self._analytics: Analytics | None = None
        self._model_engines: dict[str, SearchEngine] = {}  # other models' vectors: search(..., model=...)
        # every unit of work on this store, whoever runs it, is embedded when it commits
        self.write_embedding = WriteEmbedding(self)
        store.on_commit(self.write_embedding)

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
        return find_node(self.store, ref)

    def nodes(self) -> Iterator[Node]:
        return self.store.iter_nodes()

    def edges(self) -> Iterator[Edge]:
        return self.store.iter_edges()

    def nodes_page(self, limit: int = 50, offset: int = 0, type: str | None = None) -> tuple[int, list[Node]]:
        """(how many nodes match, one page of them in storage order), optionally of one ``type``;
        in SQL where the store's layout is known."""
        return nodes_page(self.store, limit, offset, type)

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
        """The store, if it takes writes (``ReadOnlyKG`` otherwise). Each write is one unit of work of
        the store; the commit hook embeds what it wrote, so search finds it by meaning at once."""
        self.store.require_writable()
        if not self.store.supports_writes:
            raise KGOSError(f"KG '{self.db_id}' does not support writes")
        return self.store

    def writing(self) -> AbstractContextManager[Writer]:
        """``with kg.writing() as w: w.upsert_entity(...); w.add_edge(...)``: one unit of work, all of it
        or nothing; its nodes are embedded when it commits."""
        return self._writer().writing()

    def add_node(self, name: str, type: str = "entity", description: str = "",
                 properties: dict[str, Any] | None = None, id: str | None = None) -> Node:
        return self._writer().add_node(name, type, description, properties, id=id)  # type: ignore[no-any-return]

    def upsert_node(self, id: str, name: str, type: str = "entity", description: str = "",
                    properties: dict[str, Any] | None = None) -> Node:
        return self._writer().upsert_node(id, name, type, description, properties)  # type: ignore[no-any-return]

    def upsert_entity(self, name: str, type: str, properties: dict[str, Any] | None = None,
                      description: str = "") -> Node:
        return self._writer().upsert_entity(name, type, properties, description)  # type: ignore[no-any-return]

    def update_node(self, id: str, **changes: Any) -> Node:
        return self._writer().update_node(id, **changes)  # type: ignore[no-any-return]

    def batch(self) -> AbstractContextManager[None]:
        """``with kg.batch(): ...`` embeds the nodes written inside in one batch at the end."""
        return self.write_embedding.deferred()

    def delete_node(self, id: str) -> int:
        return self._writer().delete_node(id)

    def add_edge(self, source: str, target: str, type: str, weight: float = 1.0,
                 properties: dict[str, Any] | None = None) -> Edge:
        return self._writer().add_edge(source, target, type, weight, properties)

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        return self._writer().delete_edge(source, target, type)

    # -- the review queue (link prediction is ``kgos.linkpred.link_predictor(kg)``) ---------------
    @property
    def proposals(self) -> ProposalQueue:
        """The review queue of proposed edges and nodes (link prediction, research, ...)."""
        if self._proposals is None:
            sidecar = self.workspace.cache_dir.parent / "proposals" / f"{self.db_id}.db"
            self._proposals = ProposalQueue(open_proposal_store(self.store, sidecar), self.store)
        return self._proposals

    # -- search ------------------------------------------------------------------------------------
    @property
    def engine(self) -> SearchEngine:
        if self._engine is None:
            self._engine = SearchEngine(self.store, self.workspace.cache_dir,
                                        embedder=self.workspace.setting(self.db_id, "embedder"))
            self._engine.tuned = self.workspace.setting(self.db_id, "weight_profiles")
        return self._engine

    def view(self, snap: Snapshot | None = None) -> GraphView:
        """What the query methods read of ``snap`` (default: the current KG version's; built once per
        snapshot). A method that needs both takes the snapshot once and its view from it: two
        acquisitions could straddle another process's write and pair arrays of different lengths."""
        return self._views.view(self.store, snap if snap is not None else self.engine.snapshot())

    def view_and_snapshot(self) -> tuple[GraphView, Snapshot]:
        """The current snapshot and its view, taken once (a method reading both needs the pair)."""
        snap = self.engine.snapshot()
        return self.view(snap), snap

    def search(self, query: str, k: int = 10, weights: Any = None, intent: str | None = None,
               mode: str = "hybrid", filters: Mapping[str, Any] | None = None,
               model: str | None = None) -> SearchResult:
        """Intent-adaptive hybrid search (spec/001); every hit explains its score.

        ``weights``: explicit (alpha, beta, gamma, delta), normalised to sum 1; None uses the intent's
        profile. ``intent``: one of the 8 retrieval intents, or None to classify the query. ``mode``:
        hybrid (default), fixed3, fixed4, embedding, bm25, fts, text, graph or rrf (for ablations).
        ``filters``: dimension constraints ({name: {min, max, exact, gt, lt}}) as a pre-filter: only
        nodes meeting all of them are scored. ``model``: search with the vectors of this embedder spec
        (stored beside the search model's by :meth:`embed_side`) instead of the KG's search model.
        """
        mask = prefilter(self.store, filters) if filters else None
        result: SearchResult = self._search_engine(model).search(query, k=k, weights=weights, intent=intent,
                                                                 mode=mode, prefilter=mask)
        return result

    def _search_engine(self, model: str | None) -> SearchEngine:
        """The engine that searches with ``model``'s vectors (the KG's own engine for its search model)."""
        if model is None:
            return self.engine
        embedder = get_embedder(model)
        if model_name(self._setting("embedder")) == embedder.name:
            return self.engine
        engine = self._model_engines.get(embedder.name) or ModelEngine(self.engine, embedder.spec)
        if engine.snapshot().embedder is None:
            raise InvalidArgument(f"'{self.db_id}' has no vectors of {embedder.name}: embed them beside the "
                                  f"search model with `kgos embed add {self.db_id} --model {model}`")
        self._model_engines[embedder.name] = engine
        return engine

    # -- embedding: ``kg.embedding`` (kgos.kg.vectors); these names call it -------------------------------
    @property
    def embedding(self) -> Embedding:
        """Embedding the nodes, models side by side, the query adapter and name vectors."""
        if self._embedding is None:
            self._embedding = Embedding(self)
        return self._embedding

    def embed_side(self, model: str, batch_size: int = 64, progress: Callable[[int], None] | None = None,
                   total: Callable[[int], None] | None = None) -> EmbedReport:
        return self.embedding.embed_side(model, batch_size, progress, total)

    def embedding_models(self) -> dict[str, int]:
        return self.embedding.embedding_models()

    def embed(self, model: str | None = None, batch_size: int = 64, progress: Callable[[int], None] | None = None,
              total: Callable[[int], None] | None = None) -> EmbedReport:
        return self.embedding.embed(model, batch_size, progress, total)

    def embed_fast(self, model: str | None = None, batch_size: int = 1024,
                   progress: Callable[[int], None] | None = None,
                   total: Callable[[int], None] | None = None) -> EmbedReport:
        return self.embedding.embed_fast(model, batch_size, progress, total)

    def embed_status(self) -> EmbedStatus:
        return self.embedding.embed_status()

    def adapt(self, curriculum: str = "names",
              progress: Callable[[str, int, int], None] | None = None) -> AdapterReport:
        return self.embedding.adapt(curriculum, progress)

    def drop_adapter(self) -> bool:
        return self.embedding.drop_adapter()

    def adapter_status(self) -> AdapterStatus:
        return self.embedding.adapter_status()

    def embed_names(self, batch_size: int = 64, progress: Callable[[int], None] | None = None) -> int:
        return self.embedding.embed_names(batch_size, progress)

    def drop_names(self) -> bool:
        return self.embedding.drop_names()

    def names_status(self) -> NamesStatus:
        return self.embedding.names_status()

    def _setting(self, key: str) -> str | None:
        """A per-KG embedding setting: in the KG's own metadata, or the workspace's for attached KGs."""
        if self._owns_meta():
            return self.store.meta().get(key) or None
        return self.workspace.setting(self.db_id, key) or None

    def _set_settings(self, **values: str) -> None:
        if self._owns_meta():
            if any(self.store.meta().get(k, "") != v for k, v in values.items()):
                self.store.set_meta(**values)  # type: ignore[attr-defined]
            return
        for key, value in values.items():
            self.workspace.set_setting(self.db_id, key, value)

    def _owns_meta(self) -> bool:
        return self.store.native_schema and not self.store.read_only

    def save_weight_profiles(self, profiles: dict[str, Any] | None) -> None:
        """Store (or with None remove) this KG's tuned weight profiles (``kgos.eval.tuning.tune``
        fits them)."""
        value = self.engine.profile_json(profiles) if profiles else ""  # scoped to today's vectors
        if self._owns_meta():
            self.store.set_meta(weight_profiles=value)  # type: ignore[attr-defined]
        else:
            self.workspace.set_setting(self.db_id, "weight_profiles", value)
            self.engine.tuned = value
        self.engine.invalidate()

    # -- quality -----------------------------------------------------------------------------------
    def stats(self) -> KGStats:
        return kg_stats(self.store)

    def validate(self, max_examples: int = 20) -> ValidationReport:
        return validate(self.store, max_examples=max_examples)

    # -- the query methods: ``kg.methods`` (kgos.kg.queries); these names call it -----------------------
    @property
    def methods(self) -> QueryMethods:
        """The twelve query methods of spec/000 section 6, plus why_not and alternatives."""
        if self._methods is None:
            self._methods = QueryMethods(self)
        return self._methods

    @property
    def analytics(self) -> Analytics:
        """Graph analytics: centrality, bottlenecks, communities, gaps (kgos.kg.analytics)."""
        if self._analytics is None:
            self._analytics = Analytics(self)
        return self._analytics

    def _ref(self, node: str) -> NodeRef:
        return resolve(self.store, node)

    def intent_search(self, query: str, config: RetrievalConfig | Mapping[str, Any] | None = None) -> IntentSearchResult:
        return self.methods.intent_search(query, config)

    def want_to(self, goal: str, k: int = 10) -> WantToResult:
        return self.methods.want_to(goal, k)

    def can_it(self, capability: str) -> CapabilityResult:
        return self.methods.can_it(capability)

    def compose_for(self, goal: str, max_tools: int = 5) -> CompositionPlan:
        return self.methods.compose_for(goal, max_tools)

    def why_not(self, node: str) -> BlockerReport:
        return self.methods.why_not(node)

    def similar_to(self, node: str, k: int = 10) -> SimilarResult:
        return self.methods.similar_to(node, k)

    def alternatives(self, node: str, k: int = 10) -> AlternativesResult:
        return self.methods.alternatives(node, k)

    def impact_analysis(self, node: str, direction: str = "both", max_depth: int = 3,
                        per_depth: int = PER_LEVEL_DEFAULT) -> ImpactResult:
        return self.methods.impact_analysis(node, direction, max_depth, per_depth)

    def trace_path(self, node_a: str, node_b: str, max_depth: int = 5) -> PathResult:
        return self.methods.trace_path(node_a, node_b, max_depth)

    def explore_smart(self, node: str, depth: int = 2, per_level: int = PER_LEVEL_DEFAULT) -> ExplorationTree:
        return self.methods.explore_smart(node, depth, per_level)

    def edge_type_boost(self, seeds: Iterable[str] | str, boost_types: Iterable[str] | None = None,
                        limit: int = 50) -> BoostResult:
        return self.methods.edge_type_boost(seeds, boost_types, limit)

    def dimension_filter(self, filters: Mapping[str, Any], limit: int = 20) -> DimensionFilterResult:
        return self.methods.dimension_filter(filters, limit)

    def classify_intent(self, query: str) -> IntentClassification:
        return self.methods.classify_intent(query)

    def keyword_match(self, query: str, limit: int = 20) -> KeywordMatchResult:
        return self.methods.keyword_match(query, limit)

    # -- semantic dimensions: ``kg.dimensions`` (kgos.kg.dimensions); calling it reads one node's ------------
    @property
    def dimensions(self) -> Dimensions:
        """Read (``kg.dimensions(node)``), set, infer and filter the 56 semantic dimensions."""
        if self._dimensions is None:
            self._dimensions = Dimensions(self)
        return self._dimensions

    def set_dimensions(self, node: str, values: Mapping[str, Any], custom: bool = False) -> NodeDimensions:
        return self.dimensions.set(node, values, custom)

    def infer_dimensions(self, dims: Iterable[str] | None = None, dry_run: bool = False,
                         words: bool | None = True) -> AutoDimensionsReport:
        return self.dimensions.infer(dims, dry_run, words)
