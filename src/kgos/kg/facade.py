"""``KG``: one knowledge graph as the user sees it, native or attached.

It is the object the Python API hands out (``Workspace.kg(db_id)``) and that the CLI, HTTP API and
MCP server call into. It composes the services below it instead of inheriting them: the store
(system of record), the search engine (snapshot + hybrid scorer), the query methods (functions of
``kgos.methods`` fed with the view, snapshot and store they read) and the embedder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..embed import get_embedder, resolve_spec
from ..embed.registry import embedder_name
from ..embed.nodes import (
    EmbedReport,
    EmbedStatus,
    NamesStatus,
    disable_kg_names,
    drop_vectors,
    embed_store,
    enable_kg_names,
    names_status,
    vector_count,
)
from ..embed.registry import fast_spec
from ..errors import InvalidArgument, KGOSError
from ..index.vectors import models as vector_models
from ..methods import analytics, autodims, compose, dimensions, keyword, orchestrator, structure
from ..methods import capability as capabilities
from ..methods import goal as goals
from ..methods.intent import classify_intent
from ..methods.nodesql import nodes_page
from ..methods.orchestrator import RetrievalConfig
from ..methods.results import (
    AlternativesResult,
    AutoDimensionsReport,
    BlockerReport,
    BoostResult,
    CapabilityResult,
    CentralityReport,
    CommunityReport,
    CompositionPlan,
    DimensionFilterResult,
    ExplorationTree,
    GapReport,
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
    check_depth,
    check_direction,
    check_k,
    check_text,
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

if TYPE_CHECKING:
    from ..embed.adapter import AdapterReport, AdapterStatus
    from ..index.snapshot import Snapshot


def _model_name(spec: str | None) -> str | None:
    """The vector name ``spec`` stores, or None if it cannot be built here (its vectors are then not
    the ones being written)."""
    try:
        return embedder_name(spec) if spec else None  # a name: never waits on a model build
    except KGOSError:
        return None



def load_extension(name: str) -> bool:
    """Import the package that provides ``name`` (entry point group ``kgos.extensions``), which
    registers it: how ``kg.predict`` and ``ws.ingest`` work without the caller importing the layer
    above this one. False when no installed package provides it."""
    found = entry_points(group="kgos.extensions", name=name)
    for ep in found:
        ep.load()
    return bool(found)


class KGHome(Protocol):
    """What a KG uses of the workspace that opened it (``kgos.Workspace`` is one): the cache folder,
    and per-KG settings for KGs whose own file KG-OS does not write (attached KGs)."""

    cache_dir: Path

    def setting(self, db_id: str, key: str) -> str | None: ...

    def set_setting(self, db_id: str, key: str, value: str) -> None: ...


class KG:
    extensions: ClassVar[dict[str, Callable[[KG], Any]]] = {}

    def __init__(self, workspace: KGHome, db_id: str, store: GraphStore) -> None:
        self.workspace = workspace
        self.db_id = db_id
        self.store = store
        self._engine: SearchEngine | None = None
        self._views = ViewCache()
        self._proposals: ProposalQueue | None = None
        self._model_engines: dict[str, SearchEngine] = {}  # other models' vectors: search(..., model=...)
        self._extensions: dict[str, Any] = {}

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
        """The store, if it takes writes: KG-OS's own schema (SQLite or PostgreSQL: the same write
        methods) or a foreign file attached writable."""
        from ..store.foreign import ForeignStore
        self.store.require_writable()
        if not (self.store.native_schema or isinstance(self.store, ForeignStore)):
            raise KGOSError(f"KG '{self.db_id}' does not support writes")
        return self.store

    def add_node(self, name: str, type: str = "entity", description: str = "",
                 properties: dict[str, Any] | None = None, id: str | None = None) -> Node:
        return self._embedded(self._writer().add_node(name, type, description, properties, id=id))

    def upsert_node(self, id: str, name: str, type: str = "entity", description: str = "",
                    properties: dict[str, Any] | None = None) -> Node:
        return self._embedded(self._writer().upsert_node(id, name, type, description, properties))

    def upsert_entity(self, name: str, type: str, properties: dict[str, Any] | None = None,
                      description: str = "") -> Node:
        return self._embedded(self._writer().upsert_entity(name, type, properties, description))

    def update_node(self, id: str, **changes: Any) -> Node:
        return self._embedded(self._writer().update_node(id, **changes))

    def _embedded(self, node: Node) -> Node:
        """A written node gets its vector now (if the KG is embedded), so search finds it by meaning."""
        self.engine.embed_written([node.id])
        return node

    def batch(self) -> AbstractContextManager[None]:
        """``with kg.batch(): ...`` embeds the nodes written inside in one batch at the end."""
        return self.engine.deferred_embedding()

    def delete_node(self, id: str) -> int:
        return self._writer().delete_node(id)

    def add_edge(self, source: str, target: str, type: str, weight: float = 1.0,
                 properties: dict[str, Any] | None = None) -> Edge:
        return self._writer().add_edge(source, target, type, weight, properties)

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        return self._writer().delete_edge(source, target, type)

    # -- the review queue and the layers that extend a KG ----------------------------------------
    @property
    def proposals(self) -> ProposalQueue:
        """The review queue of proposed edges and nodes (link prediction, research, ...)."""
        if self._proposals is None:
            sidecar = self.workspace.cache_dir.parent / "proposals" / f"{self.db_id}.db"
            self._proposals = ProposalQueue(open_proposal_store(self.store, sidecar), self.store)
        return self._proposals

    @property
    def predict(self) -> Any:
        """Link prediction on this KG (``kgos.linkpred.Predict``): discover, run, evaluate."""
        return self.extension("predict")

    def extension(self, name: str) -> Any:
        """The accessor a higher layer registered under ``name`` (``KG.register_extension``), made once
        per KG: the kg layer cannot import the layers above it."""
        if name not in self._extensions:
            if name not in KG.extensions:
                load_extension(name)
            factory = KG.extensions.get(name)
            if factory is None:
                raise KGOSError(f"'{name}' is not available: no installed package provides it "
                                "(entry point group 'kgos.extensions')")
            self._extensions[name] = factory(self)
        return self._extensions[name]

    @classmethod
    def register_extension(cls, name: str, factory: Callable[[KG], Any]) -> None:
        cls.extensions[name] = factory

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

    def _view_and_snapshot(self) -> tuple[GraphView, Snapshot]:
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
        prefilter = dimensions.prefilter(self.store, filters) if filters else None
        result: SearchResult = self._search_engine(model).search(query, k=k, weights=weights, intent=intent,
                                                                 mode=mode, prefilter=prefilter)
        return result

    def _search_engine(self, model: str | None) -> SearchEngine:
        """The engine that searches with ``model``'s vectors (the KG's own engine for its search model)."""
        if model is None:
            return self.engine
        embedder = get_embedder(model)
        if _model_name(self._setting("embedder")) == embedder.name:
            return self.engine
        engine = self._model_engines.get(embedder.name) or ModelEngine(self.engine, embedder.spec)
        if engine.snapshot().embedder is None:
            raise InvalidArgument(f"'{self.db_id}' has no vectors of {embedder.name}: embed them beside the "
                                  f"search model with `kgos embed add {self.db_id} --model {model}`")
        self._model_engines[embedder.name] = engine
        return engine

    def embed_side(self, model: str, batch_size: int = 64, progress: Callable[[int], None] | None = None,
                   total: Callable[[int], None] | None = None) -> EmbedReport:
        """Embed the nodes (those whose text changed) with ``model`` beside the search model's vectors:
        search keeps its model, and ``search(..., model=model)`` uses these. Nodes written later get
        vectors of the search model only; rerun this to refresh the side model."""
        embedder = get_embedder(model)
        if _model_name(self._setting("embedder")) in (None, embedder.name):
            return self.embed(model, batch_size, progress, total)  # no search model yet, or this one
        return embed_store(self.store, embedder, self.workspace.cache_dir, batch_size, progress, total)

    def embedding_models(self) -> dict[str, int]:
        """The models with vectors stored in this KG (its own table) and how many nodes each covers."""
        return vector_models(self.store)

    def embed(self, model: str | None = None, batch_size: int = 64,
              progress: Callable[[int], None] | None = None,
              total: Callable[[int], None] | None = None) -> EmbedReport:
        """Embed the nodes whose text changed since the last run, then search with that model.

        ``model`` defaults to the one a fill-in is heading for (see :meth:`embed_fast`), else
        ``default``. Resumable: vectors are committed 1,024-4,096 nodes at a time and a rerun embeds
        only what is missing or changed, so an interrupted run continues where it stopped. Search keeps
        the previous vectors until this model covers every node, then switches whole (one model's vectors
        per scan); a fast tier it replaces is dropped. ``total`` learns how many nodes will be embedded,
        before the first ``progress`` increment."""
        target, previous = self._setting("embed_target"), self._setting("embedder")
        embedder = get_embedder(model or target or "default")
        cache = self.workspace.cache_dir
        in_use = previous is not None and _model_name(previous) == embedder.name  # else: a silent fill-in
        report = embed_store(self.store, embedder, cache, batch_size, progress, total, bump=in_use)
        caught_up = embed_store(self.store, embedder, cache, batch_size, bump=in_use)  # nodes written meanwhile
        report = replace(report, embedded=report.embedded + caught_up.embedded, removed=report.removed + caught_up.removed)
        self._set_settings(embedder=embedder.spec, embed_target="")
        stood_in = _model_name(previous) if target and previous and previous != embedder.spec else None
        if stood_in:  # the fast tier stood in for this model
            drop_vectors(self.store, stood_in, cache)
        self.engine.use_embedder(embedder.spec)
        return report

    def embed_fast(self, model: str | None = None, batch_size: int = 1024,
                   progress: Callable[[int], None] | None = None,
                   total: Callable[[int], None] | None = None) -> EmbedReport:
        """Make the KG searchable by meaning at once: embed it with the fast tier (a static model
        distilled from the default one: seconds for 40K nodes), search with that, and remember ``model``
        (default ``default``) as the target :meth:`embed` fills in behind it. A cheap ``model`` (hash,
        static) is embedded directly instead."""
        target = resolve_spec(model or "default")
        fast = fast_spec(target)
        if fast is None:
            return self.embed(target, batch_size, progress, total)
        in_use = self._setting("embedder") == fast  # else readers see these vectors at the switch below
        report = embed_store(self.store, get_embedder(fast), self.workspace.cache_dir, batch_size, progress, total,
                             bump=in_use)
        self._set_settings(embedder=fast, embed_target=target)
        self.engine.use_embedder(fast)
        return report

    def embed_status(self) -> EmbedStatus:
        """Which vectors search uses and how far a fill-in has come."""
        spec, target = self._setting("embedder"), self._setting("embed_target")
        done = vector_count(self.store, get_embedder(target).name, self.workspace.cache_dir) if target else 0
        return EmbedStatus(self.db_id, spec, target, self.store.node_count(), done)

    # -- adapting search to this KG (issue 13, levers 1 and 3; docs/embedders.md) --------------------
    def adapt(self, curriculum: str = "names",
              progress: Callable[[str, int, int], None] | None = None) -> AdapterReport:
        """Fit the query adapter of the search model on this KG, no labels (``names``: names and aliases
        as pseudo-queries; ``names+sentences`` adds a description sentence per node); stored, and used by
        every later search, only if it beats the model alone on held-out pairs. ``AdapterNeedsData``
        (nothing changed) for a KG that cannot teach one. ``progress(phase, done, total)`` is called per
        embedding batch and per epoch; an exception it raises stops the fit with nothing stored.
        E.g. ``kg.adapt().val_mrr_after`` -> 0.769."""
        from ..embed.adapter import adapt_kg, curriculum_config
        config = curriculum_config(curriculum)
        self.store.require_writable()
        return adapt_kg(self.store, self.workspace.cache_dir, config, progress)

    def drop_adapter(self) -> bool:
        """Remove the search model's query adapter (search uses the model's own query vectors again);
        False when there was none. E.g. ``kg.drop_adapter()`` -> True."""
        from ..embed.adapter import drop_kg_adapter
        self.store.require_writable()
        return drop_kg_adapter(self.store)

    def adapter_status(self) -> AdapterStatus:
        """Whether the search model has a query adapter stored, with its curriculum, training pairs and
        held-out MRR. E.g. ``kg.adapter_status().present`` -> False."""
        from ..embed.adapter import adapter_status
        return adapter_status(self.store, _model_name(self._setting("embedder")))

    def embed_names(self, batch_size: int = 64, progress: Callable[[int], None] | None = None) -> int:
        """Keep a vector of each node's name and first aliases beside its full-text vector from now on
        (search scores both); returns how many nodes were embedded. E.g. ``kg.embed_names()`` -> 45."""
        self.store.require_writable()
        return enable_kg_names(self.store, self.workspace.cache_dir, batch_size, progress)

    def drop_names(self) -> bool:
        """Stop keeping name vectors and remove them; False when the KG kept none."""
        self.store.require_writable()
        return disable_kg_names(self.store, self.workspace.cache_dir)

    def names_status(self) -> NamesStatus:
        """Whether name vectors of the search model are kept and how many nodes have one."""
        return names_status(self.store, _model_name(self._setting("embedder")), self.workspace.cache_dir)

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

    # -- the twelve query methods (spec/000 section 6; table in kgos.methods) ---------------------------
    def _ref(self, node: str) -> NodeRef:
        return resolve(self.store, node)

    def intent_search(self, query: str, config: RetrievalConfig | Mapping[str, Any] | None = None) -> IntentSearchResult:
        """Classify, route to the query methods, merge with hybrid search (method 1)."""
        return orchestrator.intent_search(self, check_text(query, "query"), config)

    def want_to(self, goal: str, k: int = 10) -> WantToResult:
        """Nodes that serve a goal: keywords (intent verbs x5), then goal edges (method 2)."""
        return goals.want_to(*self._view_and_snapshot(), self.store, check_text(goal, "goal"), check_k(k))

    def can_it(self, capability: str) -> CapabilityResult:
        """yes / yes_with_limitations / no / unknown, with limitations and workarounds (method 3)."""
        return capabilities.can_it(*self._view_and_snapshot(), self.store,
                                   check_text(capability, "capability"))

    def compose_for(self, goal: str, max_tools: int = 5) -> CompositionPlan:
        """A plan of steps validated by feeds_into / requires / conflicts_with edges (method 4)."""
        return compose.compose(*self._view_and_snapshot(), self.store, check_text(goal, "goal"),
                               check_k(max_tools, "max_tools", compose.MAX_TOOLS_CAP))

    def why_not(self, node: str) -> BlockerReport:
        """What blocks a node: limitations, prerequisites that are blocked, conflicts."""
        view = self.view()
        return capabilities.why_not(view, self.store, view.row(self._ref(node).id))

    def similar_to(self, node: str, k: int = 10) -> SimilarResult:
        """0.70 Jaccard + 0.20 type match + 0.10 name overlap against all nodes (method 5)."""
        view, ref = self.view(), self._ref(node)
        return SimilarResult(ref, structure.similar_rows(view, view.row(ref.id), check_k(k)))

    def alternatives(self, node: str, k: int = 10) -> AlternativesResult:
        """Declared alternatives (alternative_to / similar_to edges) then structural twins."""
        view = self.view()
        return structure.alternatives(view, view.row(self._ref(node).id), check_k(k))

    def impact_analysis(self, node: str, direction: str = "both", max_depth: int = 3,
                        per_depth: int = PER_LEVEL_DEFAULT) -> ImpactResult:
        """BFS forward / backward / both with risk = 1/depth x weight x criticality (method 6)."""
        direction = check_direction(direction)
        depth, notes = check_depth(max_depth)
        view = self.view()
        return structure.impact(view, view.row(self._ref(node).id), direction, depth,
                                check_k(per_depth, "per_depth"), notes)

    def trace_path(self, node_a: str, node_b: str, max_depth: int = 5) -> PathResult:
        """Shortest path with each edge's type and direction; found False when none (method 9)."""
        depth, notes = check_depth(max_depth)
        view = self.view()
        a, b = self._ref(node_a), self._ref(node_b)
        return structure.trace(view, view.row(a.id), view.row(b.id), depth, notes)

    def explore_smart(self, node: str, depth: int = 2, per_level: int = PER_LEVEL_DEFAULT) -> ExplorationTree:
        """BFS levels ranked by degree centrality and edge diversity, hubs marked (method 10)."""
        d, notes = check_depth(depth, "depth")
        view = self.view()
        return structure.explore(view, view.row(self._ref(node).id), d, check_k(per_level, "per_level"), notes)

    def edge_type_boost(self, seeds: Iterable[str] | str, boost_types: Iterable[str] | None = None,
                        limit: int = 50) -> BoostResult:
        """+0.5 out / +0.3 in over ``boost_types`` from the seeds, normalised (method 12)."""
        view = self.view()
        refs = [self._ref(s) for s in ([seeds] if isinstance(seeds, str) else list(seeds))]
        if not refs:
            raise InvalidArgument("give at least one seed node")
        types = [boost_types] if isinstance(boost_types, str) else boost_types
        return structure.boost(view, [view.row(r.id) for r in refs], types, check_k(limit, "limit"))

    def dimension_filter(self, filters: Mapping[str, Any], limit: int = 20) -> DimensionFilterResult:
        """Nodes meeting {dimension: {min, max, exact, gt, lt}} constraints, in SQL (method 7)."""
        return dimensions.dimension_filter(self.store, filters, limit)

    def classify_intent(self, query: str) -> IntentClassification:
        """The 14 KG-OS categories, top 3 scoring >= 0.3 (method 8); needs no graph."""
        return classify_intent(query)

    def keyword_match(self, query: str, limit: int = 20) -> KeywordMatchResult:
        """SQL LIKE of the query's terms on name, type and properties (method 11)."""
        return keyword.keyword_match(self.store, check_text(query, "query"), check_k(limit, "limit"))

    # -- semantic dimensions ----------------------------------------------------------------------------
    def dimensions(self, node: str) -> NodeDimensions:
        """A node's dimension values (catalog and custom), each marked when it was inferred."""
        return dimensions.node_dimensions(self.node(self._ref(node).id))

    def set_dimensions(self, node: str, values: Mapping[str, Any], custom: bool = False) -> NodeDimensions:
        """Set dimension values (0..1); names outside the catalog need ``custom=True``."""
        return dimensions.set_dimensions(self, self._ref(node).id, values, custom)

    def infer_dimensions(self, dims: Iterable[str] | None = None, dry_run: bool = False) -> AutoDimensionsReport:
        """The roadmap's automatic extraction; never overwrites a value a person set."""
        return autodims.infer(self, dims, dry_run)

    # -- analytics ------------------------------------------------------------------------------------
    def centrality(self, metric: str = "combined", k: int = 20) -> CentralityReport:
        """Critical components: top k by degree, betweenness, pagerank or combined."""
        return analytics.centrality(self.view(), metric, check_k(k))

    def bottlenecks(self, k: int = 20) -> CentralityReport:
        """Articulation points ranked by betweenness."""
        return analytics.bottlenecks(self.view(), check_k(k))

    def communities(self, k: int = 20) -> CommunityReport:
        """Communities (Leiden), largest first, with top members and node types."""
        return analytics.communities(self.view(), check_k(k))

    def gaps(self, limit: int = 20) -> GapReport:
        """Orphans, cut-off components, unmitigated limitations, nodes without dimensions."""
        return analytics.gaps(self.view(), self.store, check_k(limit, "limit"))
