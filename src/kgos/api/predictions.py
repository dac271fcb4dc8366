"""Link prediction and the review queue over HTTP (docs/linkpred.md).

``/api/kg/{db_id}/predictions...``: list, propose, discover, run, review (one or a batch by filter),
undo, LLM validation and evaluation. Plus the three routes of spec/003's explore page:
``POST /api/explore/predictions/save``, ``POST /api/explore/predictions/review`` and
``GET /api/explore/predictions``. Each route makes one library call under the runtime's lock, except
the ones that train: ``run`` (training and staging) and ``eval`` run in a capped worker process
(``worker.py``); ``discover`` answers in the request only with a trained predictor (under that KG's
link predictor's own lock, not the workspace's) and otherwise trains in a worker, whose fitted
predictor the server keeps. No lock is held across a training.
"""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from pydantic import AfterValidator, Field

from ..errors import InvalidArgument
from ..kg import KG, Workspace, check_db_id
from ..linkpred import Predict, link_predictor
from ..linkpred.predict import Trained
from ..linkpred.protocol import RankMetrics
from ..linkpred.results import PredictionList, RunReport, Verdict
from ..store.proposals import MAX_BATCH, STATUSES, Proposal, ProposeReport
from .errors import RESPONSES
from .kg import on_kg, read_kg
from .models import MAX_INT64, Strict
from .runtime import Runtime, runtime
from .schemas import api_model, list_of, response_model
from ..worker import run_in_worker

router = APIRouter(prefix="/api", responses=RESPONSES, tags=["predictions"])
Rt = Annotated[Runtime, Depends(runtime)]
DbId = Annotated[str, Path(description="The KG's db_id", examples=["demo"]), AfterValidator(check_db_id)]
Pid = Annotated[int, Path(ge=1, le=2**62, description="A proposal id")]
Status = Literal["pending", "accepted", "rejected", "all"]
Params: Any = Field(default_factory=dict, description="Predictor parameters, e.g. {\"epochs\": 50}")
Name = Annotated[str, Field(min_length=1, max_length=1000)]

ProposalOut = response_model(Proposal, "ProposalOut")
ProposeReportOut = response_model(ProposeReport, "ProposeReportOut")
PredictionListOut = response_model(PredictionList, "PredictionListOut")
RunReportOut = response_model(RunReport, "RunReportOut")
VerdictOut = response_model(Verdict, "VerdictOut")
ProposalPage = api_model("ProposalPage", "One page of the review queue and the count per status.",
                         total=int, counts=dict[str, int], proposals=list_of(ProposalOut))
MetricsOut = api_model("MetricsOut", RankMetrics.__doc__, **{"mrr": float, "hits@1": float, "hits@3": float,
                                                             "hits@10": float, "n": int, "predictor": str,
                                                             "seconds": float})


class Propose(Strict):
    source: Name
    target: Name
    type: Name
    origin: Name = "manual"
    score: float = 0.0
    scores: dict[str, float] = Field(default_factory=dict)
    evidence: dict[str, Any] = Field(default_factory=dict)
    weight: float = 1.0


class Discover(Strict):
    node: Name
    k: int = Field(10, ge=1, le=1000)
    relations: list[Name] | None = None
    side: Literal["both", "out", "in"] = "both"
    predictor: str = "ensemble"
    params: dict[str, Any] = Params
    explain: bool = True


class Run(Strict):
    k: int = Field(50, ge=1, le=1000)
    per_node: int = Field(5, ge=1, le=100)
    nodes: list[Name] | None = Field(None, max_length=MAX_BATCH)
    predictor: str = "ensemble"
    params: dict[str, Any] = Params
    queue: bool = True
    calibrated: bool = True  # fit the confidence on withheld edges (False: stage 1/rank, uncalibrated)


class Review(Strict):
    reviewer: str | None = Field(None, max_length=200)
    note: str | None = Field(None, max_length=2000)


class BatchReview(Review):
    decision: Literal["accept", "reject"]
    ids: list[Annotated[int, Field(ge=0, le=MAX_INT64)]] | None = Field(None, max_length=MAX_BATCH, description="These proposals, or else the filter")
    origin: str | None = None
    relation: str | None = None
    min_confidence: float | None = None
    limit: int = Field(1000, ge=1, le=MAX_BATCH)


class Validate(Strict):
    provider: str | None = None
    model: str | None = None
    auto_accept: float | None = Field(None, ge=0, le=1)


class Evaluate(Strict):
    predictor: str = "ensemble"
    holdout: float | None = Field(None, gt=0, lt=1)
    test: list[dict[str, str]] | None = Field(None, max_length=100_000, description="Edges absent from the KG")
    seed: int = Field(0, ge=0, le=2**32 - 1)
    max_test: int | None = Field(None, ge=1, le=10_000_000)
    params: dict[str, Any] = Params


class ExploreSave(Strict):
    """spec/003's save body: a discovery kept as a pending proposal."""

    db_id: Annotated[str, AfterValidator(check_db_id)]
    source_node_id: Name
    target_node_id: Name
    predicted_relation: Name
    ultra_score: float = 0.0
    predictor: str = "ensemble"


class ExploreReview(Review):
    db_id: Annotated[str, AfterValidator(check_db_id)]
    prediction_id: int = Field(ge=1, le=MAX_INT64)
    action: Literal["accept", "reject"]


def _page(kg: KG, status: str, origin: str | None, relation: str | None, node: str | None,
          min_confidence: float | None, limit: int, offset: int) -> dict[str, Any]:
    total, page = kg.proposals.list(None if status == "all" else status, origin, relation, node, min_confidence,
                                    limit, offset)
    return {"total": total, "counts": kg.proposals.counts(), "proposals": [p.to_dict() for p in page]}


# -- the queue ---------------------------------------------------------------------------------------
@router.get("/kg/{db_id}/predictions", response_model=ProposalPage)
def list_predictions(db_id: DbId, rt: Rt, status: Status = "pending", origin: str | None = None,
                     relation: str | None = None, node: str | None = None, min_confidence: float | None = None,
                     limit: Annotated[int, Query(ge=1, le=MAX_BATCH)] = 50,
                     offset: Annotated[int, Query(ge=0, le=2**62)] = 0) -> Any:
    """The review queue, most confident first, with counts per status."""
    return on_kg(rt, db_id, lambda kg: _page(kg, status, origin, relation, node, min_confidence, limit, offset))


@router.post("/kg/{db_id}/predictions", response_model=ProposeReportOut, status_code=201)
def propose(db_id: DbId, body: Propose, rt: Rt) -> Any:
    """Stage an edge proposal from any source (a rejected edge is skipped, a pending one merged)."""
    return on_kg(rt, db_id, lambda kg: kg.proposals.propose_edge(
        body.source, body.target, body.type, body.origin, body.score, body.scores, body.evidence,
        body.weight).to_dict())


@router.post("/kg/{db_id}/predictions/discover", response_model=PredictionListOut)
def discover(db_id: DbId, body: Discover, rt: Rt) -> Any:
    """The most likely missing edges of one node (all relations, or one relation and side). A trained
    predictor answers here (go: p50 0.19 s at load 9); an untrained one trains in a capped worker,
    which answers, and the server keeps what it trained for the next query (a 503 when every slot is
    busy). The workspace lock is never held across the training."""
    answer = read_kg(rt, db_id, lambda kg: _discover_if_trained(kg, body))
    if answer is not None:
        return answer
    ws = rt.workspace
    done = run_in_worker(discover_job, (ws.home, ws.database_url, db_id, body.model_dump()), _quiet, wait=False)
    read_kg(rt, db_id, lambda kg: _adopt(link_predictor(kg), done["trained"]))
    return done["answer"]


def _adopt(lp: Predict, trained: Trained) -> bool:
    with lp.lock:
        return lp.adopt(trained)


def _discover_if_trained(kg: KG, body: Discover) -> dict[str, Any] | None:
    """The answer when the predictor is trained on the KG's current version, else None (checked
    first: a bad request or an unknown node is a 4xx without a worker's start). Under the KG's link
    predictor's own lock, not the workspace's: a query, no training."""
    if body.side != "both" and (not body.relations or len(body.relations) != 1):
        raise InvalidArgument("side out/in needs exactly one relation in 'relations'")
    kg.resolve(body.node)
    lp = link_predictor(kg)
    with lp.lock:
        return _discovered(lp, body).to_dict() if lp.is_trained(body.predictor, **body.params) else None


def _discovered(lp: Predict, body: Discover) -> PredictionList:
    if body.side == "both":
        return lp.discover(body.node, body.k, body.relations, body.predictor, body.explain, **body.params)
    assert body.relations is not None
    fn = lp.tails if body.side == "out" else lp.heads
    return fn(body.node, body.relations[0], body.k, body.predictor, body.explain, **body.params)


def discover_job(home: FilePath, database_url: str | None, db_id: str, body: dict[str, Any],
                 progress: Any) -> dict[str, Any]:
    """A discovery in a worker process: it trains, answers, and hands the fitted predictor back."""
    query = Discover(**body)
    with Workspace(home, database_url) as ws:
        lp = link_predictor(ws.kg(db_id))
        answer = _discovered(lp, query).to_dict()
        return {"answer": answer, "trained": lp.export(query.predictor, **query.params)}


def _quiet(*_: Any) -> None:
    """Progress of a worker a request waits for: nothing to relay."""


@router.post("/kg/{db_id}/predictions/run", response_model=RunReportOut)
def run(db_id: DbId, body: Run, rt: Rt) -> Any:
    """Predict missing edges and stage the best ones for review. The training and the scan run in a
    worker process with its own memory ceiling (``worker.py``): 20+ s and GBs on a big KG would
    otherwise hold the server's GIL and memory; a 503 when every worker slot is busy."""
    rt.workspace.kg(db_id)  # an unknown KG is a 404 now, not after a process start
    ws = rt.workspace
    return run_in_worker(run_job, (ws.home, ws.database_url, db_id, body.model_dump()), _quiet, wait=False)


def run_job(home: FilePath, database_url: str | None, db_id: str, body: dict[str, Any],
            progress: Any) -> dict[str, Any]:
    """``LinkPredictor.run`` in a worker process, on a workspace of its own: the proposals it stages are
    rows of the KG (its file or schema), which the server reads on its next query."""
    run = Run(**body)
    with Workspace(home, database_url) as ws:
        return link_predictor(ws.kg(db_id)).run(run.nodes, run.k, run.per_node, run.predictor, queue=run.queue,
                                                calibrated=run.calibrated, **run.params).to_dict()


@router.post("/kg/{db_id}/predictions/review", response_model=list_of(ProposalOut))
def review_batch(db_id: DbId, body: BatchReview, rt: Rt) -> Any:
    """Accept or reject several proposals (ids, or the pending ones matching a filter), all or none."""
    def call(kg: KG) -> Any:
        q = kg.proposals
        if body.ids:
            fn = q.accept_many if body.decision == "accept" else q.reject_many
            return fn(body.ids, body.reviewer, body.note)
        return q.review_where(body.decision, body.origin, body.relation, body.min_confidence, body.limit,
                              body.reviewer, body.note)
    return on_kg(rt, db_id, lambda kg: [p.to_dict() for p in call(kg)])


@router.post("/kg/{db_id}/predictions/eval", response_model=MetricsOut)
def evaluate(db_id: DbId, body: Evaluate, rt: Rt) -> Any:
    """Filtered MRR and Hits@1/3/10 on test edges or a holdout of the KG (the KG is not changed). The
    training runs in a capped worker process (seconds to minutes), as ``run``: the answer when it ends,
    a 503 when every worker slot is busy; no lock is held meanwhile."""
    rt.workspace.kg(db_id)  # an unknown KG is a 404 now, not after a process start
    ws = rt.workspace
    return run_in_worker(eval_job, (ws.home, ws.database_url, db_id, body.model_dump()), _quiet, wait=False)


def eval_job(home: FilePath, database_url: str | None, db_id: str, body: dict[str, Any],
             progress: Any) -> dict[str, Any]:
    """``LinkPredictor.evaluate`` in a worker process, on a workspace of its own (it writes nothing)."""
    e = Evaluate(**body)
    with Workspace(home, database_url) as ws:
        return link_predictor(ws.kg(db_id)).evaluate(e.predictor, e.test, e.holdout, e.seed, e.max_test,
                                                     **e.params).to_dict()


@router.get("/kg/{db_id}/predictions/{proposal_id}", response_model=ProposalOut)
def get_prediction(db_id: DbId, proposal_id: Pid, rt: Rt) -> Any:
    """One proposal with its scores, evidence and review."""
    return on_kg(rt, db_id, lambda kg: kg.proposals.get(proposal_id).to_dict())


@router.post("/kg/{db_id}/predictions/{proposal_id}/accept", response_model=ProposalOut)
def accept(db_id: DbId, proposal_id: Pid, rt: Rt, body: Review | None = None) -> Any:
    """Promote a proposal to an edge with {source, confidence, prediction_id} (409 if decided already)."""
    b = body or Review()
    return on_kg(rt, db_id, lambda kg: kg.proposals.accept(proposal_id, b.reviewer, b.note).to_dict())


@router.post("/kg/{db_id}/predictions/{proposal_id}/reject", response_model=ProposalOut)
def reject(db_id: DbId, proposal_id: Pid, rt: Rt, body: Review | None = None) -> Any:
    """Reject a proposal; it is never proposed again."""
    b = body or Review()
    return on_kg(rt, db_id, lambda kg: kg.proposals.reject(proposal_id, b.reviewer, b.note).to_dict())


@router.post("/kg/{db_id}/predictions/{proposal_id}/undo", response_model=ProposalOut)
def undo(db_id: DbId, proposal_id: Pid, rt: Rt) -> Any:
    """Undo a review: the edge an acceptance created is removed; the proposal is pending again."""
    return on_kg(rt, db_id, lambda kg: kg.proposals.undo(proposal_id).to_dict())


@router.post("/kg/{db_id}/predictions/{proposal_id}/validate", response_model=VerdictOut)
def validate(db_id: DbId, proposal_id: Pid, rt: Rt, body: Validate | None = None) -> Any:
    """An LLM's verdict on the proposed edge, stored with it; accepts only under ``auto_accept``."""
    b = body or Validate()
    provider = rt.provider(b.provider, b.model)
    return on_kg(rt, db_id, lambda kg: link_predictor(kg).validate(proposal_id, provider, b.auto_accept).to_dict())


# -- spec/003's explore routes ------------------------------------------------------------------------
@router.post("/explore/predictions/save", response_model=ProposeReportOut, status_code=201)
def explore_save(body: ExploreSave, rt: Rt) -> Any:
    """Save a discovery as a pending prediction (spec/003)."""
    return on_kg(rt, body.db_id, lambda kg: kg.proposals.propose_edge(
        body.source_node_id, body.target_node_id, body.predicted_relation, body.predictor, body.ultra_score,
        {"score": body.ultra_score}).to_dict())


@router.post("/explore/predictions/review", response_model=ProposalOut)
def explore_review(body: ExploreReview, rt: Rt) -> Any:
    """Accept (promote to an edge) or reject a saved prediction (spec/003)."""
    def call(kg: KG) -> Any:
        fn = kg.proposals.accept if body.action == "accept" else kg.proposals.reject
        return fn(body.prediction_id, body.reviewer, body.note).to_dict()
    return on_kg(rt, body.db_id, call)


@router.get("/explore/predictions", response_model=ProposalPage)
def explore_list(rt: Rt, db_id: Annotated[str, Query(), AfterValidator(check_db_id)], status: Status = "pending",
                 limit: Annotated[int, Query(ge=1, le=MAX_BATCH)] = 50,
                 offset: Annotated[int, Query(ge=0, le=2**62)] = 0) -> Any:
    """Predictions of one KG by status (spec/003)."""
    return on_kg(rt, db_id, lambda kg: _page(kg, status, None, None, None, None, limit, offset))


__all__ = ["STATUSES", "router"]
