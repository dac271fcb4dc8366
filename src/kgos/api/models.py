"""Pydantic models of the /api/kg and /api/kgos routes: request bodies (validated before any library
call: bounded counts, finite non-negative weights, non-blank text) and response shapes (mirroring
the library's ``to_dict()`` documents, so ``/openapi.json`` describes what the routes really send).
Response models of library results are derived from the result types (``kgos.api.schemas``), so
each shape has one definition; only shapes the API composes itself are written out here.

Request models forbid unknown keys, so a typo (``"limt"``) is a 422 naming it, not a silent default.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..embed.nodes import EmbedReport
from ..kg import KGInfo, check_db_id
from ..kg.catalogue import (  # noqa: F401  (the shared parameter types, declared with the query methods)
    MAX_REF,
    MAX_TEXT,
    Constraint,
    DimensionFilters,
    Direction,
    Finite,
    Goal,
    Intent,
    Name,
    NodeRefIn,
    Query,
    RetrievalConfigIn,
    Route,
    Weight,
    WeightsIn,
    nonblank,
    text,
    weights_arg,
)
from ..kg.embedding import ImportEmbedding
from ..methods import results as R
from ..methods.compose import MAX_TOOLS_CAP
from ..methods.view import MAX_DEPTH
from ..model import Edge, Neighbor, Node
from ..retrieval import results as RR
from ..retrieval.hybrid import MAX_K, MODES
from ..retrieval.intents import Intent as ClassifiedIntent
from ..retrieval.results import Weights
from ..store.importer import ImportReport
from ..store.stats import DegreeSummary, KGStats
from ..store.validation import Issue, RuleResult, ValidationReport
from .schemas import (
    DROP,
    DerivedModel,
    api_model,
    is_none,
    json_type,
    list_of,
    omitted_when_none,
    register,
    response_model,
)

MAX_INT64 = 2**63 - 1  # every integer a request may carry fits SQLite's INTEGER (no 500 on 10**30)
DbIdIn = Annotated[str, Field(min_length=1, max_length=64, examples=["demo"],
                              description="1-64 lowercase letters, digits, '-' or '_'"), AfterValidator(check_db_id)]
K = Annotated[int, Field(ge=1, le=MAX_K)]
Depth = Annotated[int, Field(ge=1, le=MAX_DEPTH)]
Properties = dict[str, Any]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


WeightsArg = WeightsIn | None


# -- requests: KGs, nodes, edges -------------------------------------------------------------------
class KGCreate(Strict):
    db_id: DbIdIn
    name: str | None = Field(None, max_length=MAX_REF)
    description: str = Field("", max_length=100_000)


class NodeCreate(Strict):
    name: Name
    type: Name = "entity"
    description: str = Field("", max_length=1_000_000)
    properties: Properties = Field(default_factory=dict)
    id: str | None = Field(None, min_length=1, max_length=MAX_REF, description="Default: <type>:<slug of name>")


class NodeUpsert(Strict):
    name: Name
    type: Name = "entity"
    description: str = Field("", max_length=1_000_000)
    properties: Properties = Field(default_factory=dict)


class NodePatch(Strict):
    name: Name | None = None
    type: Name | None = None
    description: str | None = Field(None, max_length=1_000_000)
    properties: Properties | None = None
    replace_properties: bool = Field(False, description="Replace the properties instead of merging them")
    if_updated_at: str | None = Field(None, max_length=64, description="The node's updated_at this change is based on: "
                                      "409 NodeChanged (nothing written) when the node changed since")


class EdgeCreate(Strict):
    source: Name
    target: Name
    type: Name
    weight: Finite = 1.0
    properties: Properties = Field(default_factory=dict)


class DimensionsSet(Strict):
    values: dict[str, Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]] = Field(min_length=1)
    custom: bool = Field(False, description="Allow names outside the 56-dimension catalog")
    if_updated_at: str | None = Field(None, max_length=64, description="The node's updated_at this change is based on: "
                                      "409 NodeChanged (nothing written) when the node changed since")


class DimensionsInfer(Strict):
    dims: list[str] | None = Field(None, max_length=100, description="Only these dimensions' rules")
    dry_run: bool = False


# -- requests: search and query methods ------------------------------------------------------------
Mode = Literal[MODES]  # type: ignore[valid-type]


class SearchIn(Strict):
    query: Query
    k: K = 10
    weights: WeightsArg = None
    intent: Intent | None = Field(None, description="Force a retrieval intent (default: classified)")
    mode: Mode = "hybrid"
    explain: bool = Field(True, description="Include each hit's signal components and edge annotations")
    filters: DimensionFilters | None = Field(None, description="Dimension pre-filter: only nodes meeting every "
                                             "constraint are scored, e.g. {\"pricing_tier\": {\"max\": 0.3}}")
    model: str | None = Field(None, max_length=100, pattern=r"^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$",
                              description="Search with this embedding model's vectors (stored beside the search "
                                          "model's by `kgos embed add`), e.g. \"fast\"; default: the KG's search model")


class MultiSearchIn(SearchIn):
    db_ids: list[DbIdIn] = Field(min_length=1, max_length=64)


# -- requests: /api/kgos (spec/000 section 10) ------------------------------------------------------
SpecMethod = Literal["hybrid", "intent", "can_it", "compose_for", "want_to", "impact_analysis", "similar_to",
                     "explore_smart"]


class SpecConfig(Strict):
    """spec/000's retrieval config: alpha..delta (all four absent: the intent's profile), limit, methods
    (``hybrid`` = search only, ``intent`` = route as classified, or named query methods)."""

    alpha: Weight | None = None
    beta: Weight | None = None
    gamma: Weight | None = None
    delta: Weight | None = None
    limit: K = 10
    methods: list[SpecMethod] | None = None
    intent: Intent | None = None
    method_weight: float = Field(0.4, ge=0.0, le=1.0)
    dimension_filters: DimensionFilters | None = None
    max_depth: Depth = 2

    @model_validator(mode="after")
    def _positive(self) -> SpecConfig:
        given = [w for w in (self.alpha, self.beta, self.gamma, self.delta) if w is not None]
        if given and sum(given) <= 0:
            raise ValueError("at least one weight must be positive")
        return self


class SpecQueryIn(Strict):
    query: Query
    config: SpecConfig = Field(default_factory=SpecConfig)


class SpecImpactIn(Strict):
    direction: Direction = "forward"
    max_depth: Depth = 3


class SpecComposeIn(Strict):
    goal: Goal
    max_tools: int = Field(5, ge=1, le=MAX_TOOLS_CAP)


class SpecSimilarIn(Strict):
    k: K = 10


# -- responses: errors ---------------------------------------------------------------------------------
class FieldError(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error: ``detail`` says what was wrong and what to do, ``error`` names its kind."""

    detail: str
    error: str
    suggestions: list[str] | None = Field(None, description="Close node ids, for an unknown node")
    candidates: list[str] | None = Field(None, description="Node ids an ambiguous name matches")
    record: str | None = Field(None, description="The offending record of a failed import")
    errors: list[FieldError] | None = Field(None, description="Each invalid field, for a 422")


# -- responses: graph values ------------------------------------------------------------------------
# Derived from the library's result types (``kgos.api.schemas``): one definition of each shape. The
# order matters: a record derived (and registered) first is the model its later uses nest.
NodeRef = response_model(R.NodeRef, description=omitted_when_none(str, "Only when the node has one"))
NodeOut = response_model(Node, "NodeOut", created_at=DROP, updated_at=DROP)
NodeDetail = response_model(Node, "NodeDetail", register=False)
EdgeOut = response_model(Edge, "EdgeOut", id=omitted_when_none(str, "Only where the store keeps edge ids"),
                         created_at=DROP)
NeighborOut = response_model(Neighbor, "NeighborOut")


# Shapes the API composes around derived models are built the same way (a class statement cannot name a
# model made at import time as a field type).
NeighborsOut = api_model("NeighborsOut", node=NodeOut, direction=str, neighbors=list_of(NeighborOut))
NodePage = api_model("NodePage", total=int, limit=int, offset=int, nodes=list_of(NodeOut))
EdgePage = api_model("EdgePage", limit=int, offset=int, edges=list_of(EdgeOut))


class NodeDeleted(BaseModel):
    deleted: str
    edges_removed: int


class EdgeDeleted(BaseModel):
    deleted: bool
    source: str
    target: str
    type: str


# -- responses: KGs -----------------------------------------------------------------------------------------
KGInfoOut = response_model(KGInfo, "KGInfoOut", kind=Literal["native", "attached", "postgres"])
DegreeSummaryOut = response_model(DegreeSummary, "DegreeSummaryOut")
KGStatsOut = response_model(KGStats, "KGStatsOut")
KGDetail = response_model(KGInfo, "KGDetail", register=False, kind=Literal["native", "attached", "postgres"], stats=KGStatsOut)


class KGDeleted(BaseModel):
    db_id: str
    result: Literal["deleted", "detached"]


IssueOut = response_model(Issue, "IssueOut")
RuleOut = response_model(RuleResult, "RuleOut")
ValidationOut = response_model(ValidationReport, "ValidationOut")
ImportEmbeddingOut = response_model(ImportEmbedding, "ImportEmbeddingOut", fast=(
    response_model(EmbedReport, "EmbedReportOut") | None, None))
ImportOut = response_model(ImportReport, "ImportOut", embedding=(ImportEmbeddingOut | None, Field(
    None, description="How the upload gets embedded: `job_id` names the background job (fast tier, then the "
                      "default model; GET /api/jobs/{job_id}), or `skipped` says why not")))


class Health(BaseModel):
    """``kgs``: how many KGs the workspace holds; None with ``busy`` true when a long call holds the
    workspace (health never waits for it: it answers within 0.25 s, docs/limits.md)."""

    status: Literal["ok"]
    version: str
    kgs: int | None
    busy: bool = False


# -- responses: search ---------------------------------------------------------------------------------
class SearchIntent(DerivedModel):
    """The retrieval intent that chose the weights (``source``: pattern, length, default or explicit)."""

    category: str
    score: float
    source: str


class WeightsOut(DerivedModel):
    """The four weights used (alpha embedding, beta text, gamma graph, delta intent) and where they came
    from."""

    alpha: float
    beta: float
    gamma: float
    delta: float
    source: str


Components = response_model(RR.Components, rrf=omitted_when_none(float, "Mode rrf only: the fused reciprocal ranks, the whole score"))
EdgeAnnotation = response_model(RR.EdgeAnnotation)
register(ClassifiedIntent, SearchIntent)
register(Weights, WeightsOut)
SearchHit = response_model(
    RR.SearchHit, components=(Components | None, Field(description="null when explain is false")),
    edge_annotations=(list_of(EdgeAnnotation) | None, Field(description="null when explain is false")),
    source_kg=omitted_when_none(str, "The KG a hit comes from, in a search over several KGs"))
SearchOut = response_model(RR.SearchResult, "SearchOut")


# -- responses: query methods ------------------------------------------------------------------------------
IntentMatch = response_model(R.IntentMatch)
Classification = response_model(R.IntentClassification, "Classification", intent=IntentMatch | None)


class PathElement(BaseModel):
    """One element of a path: a node (``node``, ``name``, ``type``) or the edge between two nodes
    (``edge``, ``direction``), alternating (spec/000 method 9)."""

    node: str | None = Field(None, exclude_if=is_none)
    name: str | None = Field(None, exclude_if=is_none)
    type: str | None = Field(None, exclude_if=is_none)
    edge: str | None = Field(None, exclude_if=is_none)
    direction: str | None = Field(None, exclude_if=is_none)


PathOut = response_model(R.PathResult, "PathOut", path=list[PathElement])
GoalHit = response_model(R.GoalHit, path=list[PathElement])
WantToOut = response_model(R.WantToResult, "WantToOut")
CapabilityOut = response_model(R.CapabilityResult, "CapabilityOut",
                               status=Literal["yes", "yes_with_limitations", "no", "unknown"])
WhyNotOut = response_model(R.BlockerReport, "WhyNotOut")
CompositionOut = response_model(R.CompositionPlan, "CompositionOut")
SimilarRow = response_model(R.SimilarRow)
SimilarOut = response_model(R.SimilarResult, "SimilarOut")
AlternativesOut = response_model(R.AlternativesResult, "AlternativesOut")
ImpactedNode = response_model(R.ImpactedNode)
ImpactOut = response_model(R.ImpactResult, "ImpactOut")
ExplorationOut = response_model(R.ExplorationTree, "ExplorationOut")
KeywordOut = response_model(R.KeywordMatchResult, "KeywordOut")


BoostScore = api_model("BoostScore", node=NodeRef, boost=float)
BoostOut = response_model(R.BoostResult, "BoostOut", scores=list_of(BoostScore))
DimensionFilterOut = response_model(R.DimensionFilterResult, "DimensionFilterOut")
NodeDimensionsOut = response_model(R.NodeDimensions, "NodeDimensionsOut")
InferOut = response_model(R.AutoDimensionsReport, "InferOut")
CentralityOut = response_model(R.CentralityReport, "CentralityOut")
CommunitiesOut = response_model(R.CommunityReport, "CommunitiesOut")
GapsOut = response_model(R.GapReport, "GapsOut")
ResultEdge = response_model(R.ResultEdge)
# the hybrid search's components of the hit, as IntentHit declares them (a mapping: the signals it has)
SIGNALS = (dict[str, float], Field(description="Each signal of the hybrid score (embedding, text, graph, intent...), "
                                               "normalised to 0..1 before weighting"))
IntentHit = response_model(R.IntentHit, components=SIGNALS)
IntentSearchOut = response_model(R.IntentSearchResult, "IntentSearchOut")


# -- responses: /api/kgos (spec/000 section 10): the library's documents, reshaped as the spec shows -----
class SpecIntent(BaseModel):
    category: str
    score: float


SpecNode = response_model(R.NodeRef, "SpecNode", register=False, description=(str | None, None),
                          properties=Properties)
SpecHit = response_model(R.IntentHit, "SpecHit", register=False, node=SpecNode, components=SIGNALS)
SpecQueryOut = response_model(R.IntentSearchResult, "SpecQueryOut", register=False, intent=SpecIntent | None,
                              nodes=DROP, composition=DROP, results=list_of(SpecHit), total=int,
                              composition_plan=CompositionOut | None)
SpecImpactOut = response_model(R.ImpactResult, "SpecImpactOut", register=False, node_id=str,
                               critical_path=list[str], critical_path_nodes=list_of(NodeRef))


SpecStep = api_model("SpecStep", order=int, tool=str, action=str, node_id=str, node=NodeRef, score=float,
                     candidates=list_of(NodeRef))


class _ByName(DerivedModel):
    model_config = ConfigDict(populate_by_name=True)


SpecPlanEdge = response_model(R.PlanEdge, "SpecPlanEdge", register=False, base=_ByName,
                              from_=(str, Field(alias="from")), to=str, validated=bool)


SpecComposeOut = api_model("SpecComposeOut", goal=str, steps=list_of(SpecStep), edges=list_of(SpecPlanEdge),
                           prerequisites=list_of(json_type(R.Prerequisite)), warnings=list[str], is_valid=bool,
                           sub_goals=list[str], conflicts=list_of(json_type(R.PlanEdge)),
                           alternatives=list_of(json_type(R.Alternative)), notes=list[str])
SpecSimilarOut = api_model("SpecSimilarOut", source_node=NodeRef, similar=list_of(SimilarRow))


class DimensionOut(BaseModel):
    name: str
    category: str
    description: str
    low_description: str
    high_description: str
    range: tuple[float, float]


class DimensionsOut(BaseModel):
    dimensions: list[DimensionOut]
    total: int
    categories: dict[str, int]
