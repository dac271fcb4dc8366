"""The query-method catalogue: every query method declared once.

Each ``Method`` names the library call, its parameter type (a frozen pydantic model whose fields carry
the docs and bounds), its result type, whether it writes, and which intents route to it. The surfaces
are generated from it, so adding a parameter is one edit here:

- ``kgos.cli.methods`` builds a click command per method (positional ``cli_args``, ``--option`` per
  other field, help from the field's description);
- ``kgos.api.kg`` adds ``POST /api/kg/{db_id}/<path>`` with the parameter type as the body and the
  result type's derived model as the response (and so the OpenAPI schema);
- ``kgos.api.mcp`` adds an MCP tool with ``outputSchema`` and ``structuredContent``;
- ``kgos.experts.tools`` offers the method to an expert's model with the parameter type's JSON Schema.

``tests/test_catalogue.py`` fails when a surface lacks a method or a parameter.

One direction vocabulary for every parameter: ``forward`` (along outgoing edges), ``backward`` (along
incoming edges), ``both``; ``outgoing`` and ``incoming`` are accepted as aliases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from ..errors import InvalidArgument
from ..methods import results as R
from ..methods.compose import MAX_TOOLS_CAP
from ..methods.dimensions import merge_filters
from ..methods.intent import CATEGORY_ROUTES, RETRIEVAL_ROUTES, ROUTE_ORDER
from ..methods.view import MAX_DEPTH
from ..retrieval.hybrid import MAX_K
from ..retrieval.intents import INTENTS

if TYPE_CHECKING:
    from .facade import KG

MAX_TEXT = 10_000  # characters of a query, goal or capability
MAX_REF = 2_000  # characters of a node id or name
DIRECTION_ALIASES = {"outgoing": "forward", "incoming": "backward"}


def nonblank(what: str) -> Callable[[str], str]:
    """A validator refusing text that is only whitespace, naming what is missing."""
    def check(value: str) -> str:
        if not value.strip():
            raise ValueError(f"the {what} is empty: describe it in a few words")
        return value
    return check


def text(what: str, example: str, description: str) -> Any:
    """A required, non-blank string of at most MAX_TEXT characters (a query, goal, capability...)."""
    return Annotated[str, Field(min_length=1, max_length=MAX_TEXT, examples=[example], description=description),
                     AfterValidator(nonblank(what))]


def canonical_direction(value: Any) -> Any:
    """``outgoing``/``incoming`` (the neighbours' words) as ``forward``/``backward``."""
    return DIRECTION_ALIASES.get(value, value) if isinstance(value, str) else value


Query = text("query", "How do I reduce API costs?", "The question or search text")
Goal = text("goal", "read CSV data, analyze trends and generate a report", "What the user wants to achieve")
NodeRefIn = Annotated[str, Field(min_length=1, max_length=MAX_REF, description="A node id or an unambiguous name",
                                 examples=["feature:prompt_caching"]), AfterValidator(nonblank("node reference"))]
Name = Annotated[str, Field(min_length=1, max_length=MAX_REF), AfterValidator(nonblank("name"))]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"How many results (1-{MAX_K})")]
Limit = Annotated[int, Field(ge=1, le=MAX_K, description=f"How many results to list (1-{MAX_K}); totals count all")]
Depth = Annotated[int, Field(ge=1, le=MAX_DEPTH, description=f"Hops to follow (1-{MAX_DEPTH})")]
Direction = Annotated[Literal["forward", "backward", "both"], BeforeValidator(canonical_direction),
                      Field(description="forward: along outgoing edges (what the node affects); backward: along "
                                        "incoming edges (what affects it); both. outgoing/incoming are aliases")]
Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Constraint = dict[Literal["min", "max", "exact", "gt", "lt"], Finite]
DimensionFilters = Annotated[dict[str, Constraint], Field(description="{dimension: {min|max|exact|gt|lt: value}}, "
                                                                      "e.g. {\"pricing_tier\": {\"max\": 0.3}}")]
Intent = Literal[INTENTS]  # type: ignore[valid-type]
Route = Literal[ROUTE_ORDER]  # type: ignore[valid-type]


class Params(BaseModel):
    """Base of the parameter types: frozen, and an unknown key is an error naming it."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class WeightsIn(Params):
    """Explicit weights of the four signals, normalised to sum 1; missing ones are 0. A list of four
    numbers ``[alpha, beta, gamma, delta]`` is accepted too."""

    alpha: Weight = Field(0.0, description="embedding similarity")
    beta: Weight = Field(0.0, description="text (BM25 / FTS5)")
    gamma: Weight = Field(0.0, description="graph proximity")
    delta: Weight = Field(0.0, description="intent edges")

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            if len(value) != 4:
                raise ValueError("weights must be four numbers [alpha, beta, gamma, delta] or an object "
                                 "{alpha, beta, gamma, delta}")
            return dict(zip(("alpha", "beta", "gamma", "delta"), value, strict=True))
        return value

    @model_validator(mode="after")
    def _positive(self) -> WeightsIn:
        if self.alpha + self.beta + self.gamma + self.delta <= 0:
            raise ValueError("at least one weight must be positive")
        return self

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.alpha, self.beta, self.gamma, self.delta)


def weights_arg(weights: WeightsIn | None) -> tuple[float, ...] | None:
    """The library's form of a request's weights: a 4-tuple, or None for the intent's profile."""
    return None if weights is None else weights.as_tuple()


class RetrievalConfigIn(Params):
    """``intent_search``'s config (``kgos.methods.RetrievalConfig``)."""

    k: K = 10
    weights: WeightsIn | None = None
    intent: Intent | None = None
    method_weight: float = Field(0.4, ge=0.0, le=1.0)
    methods: list[Route] | None = Field(None, description="Routes to run (default: as classified)")
    dimension_filters: DimensionFilters | None = None
    expand_top: int = Field(3, ge=0, le=100)
    expand_edges: int = Field(5, ge=0, le=100)
    max_depth: Annotated[int, Field(ge=1, le=MAX_DEPTH)] = 2

    def library(self) -> dict[str, Any]:
        """The library's RetrievalConfig fields."""
        return {**self.model_dump(), "weights": weights_arg(self.weights)}


# -- the parameter types -----------------------------------------------------------------------------
class IntentSearchParams(Params):
    query: Query
    config: RetrievalConfigIn = Field(default_factory=RetrievalConfigIn,
                                      description="k, weights, routes to run, dimension pre-filters...")


class WantToParams(Params):
    goal: Goal
    k: K = 10


class CanItParams(Params):
    capability: text("capability", "can it stream responses?",  # type: ignore[valid-type]
                     "The capability asked about")


class ComposeParams(Params):
    goal: Goal
    max_tools: int = Field(5, ge=1, le=MAX_TOOLS_CAP, description=f"At most this many steps (1-{MAX_TOOLS_CAP})")


class NodeK(Params):
    node: NodeRefIn
    k: K = 10


class NodeOnly(Params):
    node: NodeRefIn


class ImpactParams(Params):
    node: NodeRefIn
    direction: Direction = "both"
    max_depth: Depth = 3
    per_depth: Annotated[int, Field(ge=1, le=MAX_K, description="Riskiest nodes listed per depth")] = 20


class TraceParams(Params):
    # node_a / node_b: the names MCP clients used before the catalogue
    source: NodeRefIn = Field(validation_alias=AliasChoices("source", "node_a"))
    target: NodeRefIn = Field(validation_alias=AliasChoices("target", "node_b"))
    max_depth: Annotated[int, Field(ge=1, le=MAX_DEPTH, description="Longest path to look for, in edges")] = 5


class ExploreParams(Params):
    node: NodeRefIn
    depth: Depth = 2
    per_level: Annotated[int, Field(ge=1, le=MAX_K, description="Nodes listed per level, best ranked first")] = 15


class KeywordParams(Params):
    query: Query
    limit: Limit = 20


class BoostParams(Params):
    seeds: list[NodeRefIn] = Field(min_length=1, max_length=100, description="The seed nodes (ids or names)")
    boost_types: list[Name] | None = Field(None, description="Only follow these edge types (default: all)")
    limit: Limit = 50


class DimensionFilterParams(Params):
    filters: DimensionFilters = Field(min_length=1)
    limit: Limit = 20


# -- the catalogue -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Method:
    """One query method and how each surface offers it.

    ``name``: the library method, MCP tool and expert tool name; ``path``: the HTTP path segment
    (``/api/kg/{db_id}/<path>``); ``cli``: the command path (``("dims", "filter")``); ``cli_args``: the
    parameters given positionally on the command line (the others are ``--options``); ``cli_flags``:
    extra option names (``{"k": "-k"}``); ``cli_parse``: how command-line text becomes a parameter
    (default: JSON for mappings); ``intents``: what routes to it (``kgos.methods.intent``).
    """

    name: str
    path: str
    summary: str
    params: type[Params]
    result: type
    run: Callable[[KG, Any], Any]
    tag: str = "methods"
    cli: tuple[str, ...] = ()
    cli_args: tuple[str, ...] = ()
    cli_flags: Mapping[str, str] = field(default_factory=dict)
    cli_parse: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    writes: bool = False

    @property
    def intents(self) -> tuple[str, ...]:
        """The intent categories and retrieval intents that route to this method."""
        routed = {**CATEGORY_ROUTES, **RETRIEVAL_ROUTES}
        return tuple(sorted(i for i, routes in routed.items() if self.name in _as_tuple(routes)))

    @property
    def description(self) -> str:
        return self.summary

    def __call__(self, kg: KG, params: Params | Mapping[str, Any]) -> Any:
        """Run on ``kg``; a mapping is validated first (InvalidArgument naming the bad field)."""
        return self.run(kg, self.parse(params))

    def parse(self, params: Params | Mapping[str, Any]) -> Any:
        if isinstance(params, self.params):
            return params
        return parse_params(self.params, params, self.name)


def _as_tuple(routes: str | tuple[str, ...]) -> tuple[str, ...]:
    return (routes,) if isinstance(routes, str) else tuple(routes)


def parse_params(model: type[Params], values: Any, what: str) -> Any:
    """``model`` from a mapping, or InvalidArgument with each bad field named."""
    from pydantic import ValidationError
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors())
        raise InvalidArgument(f"{what}: {problems}") from None


def _filters(exprs: Any) -> Any:
    """``NAME<0.3 NAME>=0.7`` expressions (the CLI's form) as a filter mapping."""
    return merge_filters(exprs) if isinstance(exprs, (list, tuple)) else exprs


METHODS: tuple[Method, ...] = (
    Method("intent_search", "intent-search", "Method 1: classify the query into the 14 intent categories, route it "
           "to the query methods they call for (want_to, can_it, compose_for...) and merge with hybrid search.",
           IntentSearchParams, R.IntentSearchResult, lambda kg, p: kg.methods.intent_search(p.query, p.config.library()),
           cli=("intent-search",), cli_args=("query",)),
    Method("want_to", "want-to", "Method 2: nodes that help reach a goal (\"reduce my API costs\"): goal keywords, "
           "then nodes linked to the goal by enables / optimizes / solves / contributes_to edges.",
           WantToParams, R.WantToResult, lambda kg, p: kg.methods.want_to(p.goal, k=p.k),
           cli=("want-to",), cli_args=("goal",), cli_flags={"k": "-k"}),
    Method("can_it", "can-it", "Method 3: can the KG's subject do a capability? yes / yes_with_limitations / no / "
           "unknown, with the limitations, workarounds and prerequisites.",
           CanItParams, R.CapabilityResult, lambda kg, p: kg.methods.can_it(p.capability),
           cli=("can-it",), cli_args=("capability",)),
    Method("compose_for", "compose", "Method 4: plan a multi-step goal: steps validated by feeds_into / requires "
           "edges, missing prerequisites, conflicts (conflicts_with) and alternatives.",
           ComposeParams, R.CompositionPlan, lambda kg, p: kg.methods.compose_for(p.goal, max_tools=p.max_tools),
           cli=("compose",), cli_args=("goal",)),
    Method("similar_to", "similar", "Method 5: nodes structurally similar to a node (0.70 neighbour Jaccard + "
           "0.20 same type + 0.10 name overlap).",
           NodeK, R.SimilarResult, lambda kg, p: kg.methods.similar_to(p.node, k=p.k),
           cli=("similar",), cli_args=("node",), cli_flags={"k": "-k"}),
    Method("alternatives", "alternatives", "Alternatives to a node: declared ones (alternative_to, similar_to "
           "edges), then structurally similar nodes, and what conflicts with it.",
           NodeK, R.AlternativesResult, lambda kg, p: kg.methods.alternatives(p.node, k=p.k),
           cli=("alternatives",), cli_args=("node",), cli_flags={"k": "-k"}),
    Method("why_not", "why-not", "What blocks a node: limitations without workarounds, blocked prerequisites, "
           "conflicts.", NodeOnly, R.BlockerReport, lambda kg, p: kg.methods.why_not(p.node),
           cli=("why-not",), cli_args=("node",)),
    Method("impact_analysis", "impact", "Method 6: what changing a node touches: breadth-first over its edges "
           "(forward = what it points to, backward = what points to it), each reached node with its depth and "
           "risk = 1/depth x edge weight x criticality.",
           ImpactParams, R.ImpactResult,
           lambda kg, p: kg.methods.impact_analysis(p.node, direction=p.direction, max_depth=p.max_depth,
                                            per_depth=p.per_depth),
           cli=("impact",), cli_args=("node",)),
    Method("trace_path", "trace", "Method 9: the shortest path between two nodes, each step with its edge type "
           "and direction; found is false when none exists within max_depth.",
           TraceParams, R.PathResult, lambda kg, p: kg.methods.trace_path(p.source, p.target, max_depth=p.max_depth),
           cli=("trace",), cli_args=("source", "target")),
    Method("explore_smart", "explore", "Method 10: a node's neighbourhood level by level (BFS), each level ranked "
           "by centrality and edge diversity, hubs marked.",
           ExploreParams, R.ExplorationTree,
           lambda kg, p: kg.methods.explore_smart(p.node, depth=p.depth, per_level=p.per_level),
           cli=("explore",), cli_args=("node",)),
    Method("keyword_match", "keyword", "Method 11: nodes whose name, type or properties contain the query's terms.",
           KeywordParams, R.KeywordMatchResult, lambda kg, p: kg.methods.keyword_match(p.query, limit=p.limit),
           cli=("keyword",), cli_args=("query",)),
    Method("edge_type_boost", "boost", "Method 12: neighbours of seed nodes scored +0.5 along outgoing and +0.3 "
           "along incoming edges of the given types.",
           BoostParams, R.BoostResult, lambda kg, p: kg.methods.edge_type_boost(p.seeds, p.boost_types, limit=p.limit),
           cli=("boost",), cli_args=("seeds",)),
    Method("dimension_filter", "dimension-filter", "Method 7: nodes whose semantic dimensions (cost, complexity, "
           "maturity...) meet every {dimension: {min, max, exact, gt, lt}} constraint.",
           DimensionFilterParams, R.DimensionFilterResult,
           lambda kg, p: kg.methods.dimension_filter(p.filters, limit=p.limit), tag="dimensions",
           cli=("dims", "filter"), cli_args=("filters",), cli_parse={"filters": _filters}),
)
BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}


def method(name: str) -> Method:
    """The method called ``name`` (InvalidArgument listing the names otherwise)."""
    if name not in BY_NAME:
        raise InvalidArgument(f"unknown query method {name!r}; choose from {', '.join(BY_NAME)}")
    return BY_NAME[name]


# The store's words for which side of an edge a neighbour is on, by direction of travel.
EDGE_SIDE: dict[str, str] = {"forward": "outgoing", "backward": "incoming", "both": "both"}
