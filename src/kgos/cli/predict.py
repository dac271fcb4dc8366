"""``kgos predict run|discover|validate|list|accept|reject|undo|eval``: link prediction and the review
queue of proposed edges (spec/003; docs/linkpred.md)."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..errors import InvalidArgument
from . import cli, out, output_options, workspace
from .output import table

PREDICTOR_HELP = ("Predictor: ensemble (default), complex, metapath, adamic_adar, resource_allocation, "
                  "common_neighbors, text or seed.")
STATUSES = ("pending", "accepted", "rejected", "all")


def _params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``--param epochs=50`` pairs; values are JSON when they parse, else strings."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidArgument(f"--param takes KEY=VALUE, not {pair!r}")
        try:
            params[key.strip()] = json.loads(value)
        except ValueError:
            params[key.strip()] = value
    return params


def predictor_options(f: Any) -> Any:
    f = click.option("--param", "param", multiple=True, metavar="KEY=VALUE",
                     help="A predictor parameter (repeatable), e.g. --param epochs=50.")(f)
    return click.option("--predictor", default="ensemble", show_default=True, help=PREDICTOR_HELP)(f)


def _kg(ctx: click.Context, db_id: str) -> Any:
    return workspace(ctx).kg(db_id)


def link_predictor(kg: Any) -> Any:
    """``kgos.linkpred.link_predictor``, imported when a command runs (``kgos predict --help`` stays light)."""
    from ..linkpred import link_predictor as of
    return of(kg)


@cli.group("predict")
def predict_group() -> None:
    """Link prediction: find the edges a KG is missing and review them before they enter it."""


def _predictions(c: Console, r: Any, title: str) -> None:
    rows = [(p.rank, f"{p.score:.4f}", "" if p.confidence is None else f"{p.confidence:.3f}", p.source, p.type,
             p.target, ", ".join(f"{k}={v:.3g}" for k, v in p.scores.items())) for p in r.predictions]
    c.print(table(title, ["#", "score", "confidence", "source", "relation", "target", "scores"], rows))
    if not r.predictions:
        c.print("[dim]no candidate: the predictors found nothing that supports a new edge[/]")


def _prediction_rows(preds: Any) -> list[tuple[Any, ...]]:
    return [(p.rank, f"{p.score:.6f}", p.source, p.type, p.target) for p in preds]


@predict_group.command("discover")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@click.option("-k", "k", default=10, show_default=True, help="Number of predictions.")
@click.option("--relation", "relations", multiple=True, help="Only this relation (repeatable; default all).")
@click.option("--side", type=click.Choice(["both", "out", "in"]), default="both", show_default=True,
              help="out: (node, relation, ?); in: (?, relation, node); both: either.")
@predictor_options
@output_options
@click.pass_context
def discover(ctx: click.Context, db_id: str, node: str, k: int, relations: tuple[str, ...], side: str,
             predictor: str, param: tuple[str, ...], json_: bool, plain_: bool) -> None:
    """The most likely missing edges of one node, with their evidence."""
    kg, params = _kg(ctx, db_id), _params(param)
    rels = list(relations) or None
    if side == "both":
        r = link_predictor(kg).discover(node, k=k, relations=rels, predictor=predictor, **params)
    elif rels is None or len(rels) != 1:
        raise InvalidArgument("--side out/in needs exactly one --relation")
    else:
        fn = link_predictor(kg).tails if side == "out" else link_predictor(kg).heads
        r = fn(node, rels[0], k=k, predictor=predictor, **params)
    out(ctx, json_, plain_).emit(r, lambda c: _predictions(c, r, f"Missing edges of {escape(node)} ({r.predictor})"),
                                 lambda: _prediction_rows(r.predictions),
                                 columns=("rank", "score", "source", "relation", "target"))


@predict_group.command("run")
@click.argument("db_id", metavar="KG")
@click.option("-k", "k", default=50, show_default=True, help="Predictions to stage for review.")
@click.option("--per-node", default=5, show_default=True, help="Candidates kept per scanned node.")
@click.option("--node", "nodes", multiple=True, help="Scan only this node (repeatable; default: all nodes of a "
              "small KG, else the 500 best connected).")
@click.option("--no-queue", is_flag=True, help="Only print the predictions; stage nothing.")
@predictor_options
@output_options
@click.pass_context
def run(ctx: click.Context, db_id: str, k: int, per_node: int, nodes: tuple[str, ...], no_queue: bool,
        predictor: str, param: tuple[str, ...], json_: bool, plain_: bool) -> None:
    """Predict missing edges and stage the best ones in the review queue."""
    o = out(ctx, json_, plain_)
    o.note(f"Predicting with {predictor}: its first run on a KG version trains it, then each node is scanned")
    with o.meter(f"predict {db_id}", "nodes") as meter:
        r = link_predictor(_kg(ctx, db_id)).run(nodes=list(nodes) or None, k=k, per_node=per_node, predictor=predictor,
                                        queue=not no_queue, progress=meter.advance, total=meter.total,
                                        **_params(param))

    def human(c: Console) -> None:
        _predictions(c, r, f"Predictions ({r.predictor}, {r.nodes} nodes scanned, {r.seconds:.1f} s)")
        q, cal = r.queued, r.calibration
        if cal:
            c.print(f"confidence: calibrated on {cal['withheld']} withheld edges ({cal['hits']} of {cal['candidates']} "
                    f"candidates were one): ECE {cal['ece']:.3f} (1/rank: {cal['ece_rank']:.3f}); ordered by "
                    "confidence x priority")
        c.print(f"queued: {len(q.added)} new, {len(q.merged)} merged into pending, {q.skipped_rejected} "
                f"skipped (rejected before); review with: kgos predict list {db_id}")
    o.emit(r, human, lambda: _prediction_rows(r.predictions),
                                 columns=("rank", "score", "source", "relation", "target"))


def _proposal_rows(ps: Any) -> list[tuple[Any, ...]]:
    return [(p.id, p.status, p.origin, f"{p.confidence if p.confidence is not None else p.score:.4f}",
             p.source, p.type, p.target, "" if p.llm_verdict is None else ("yes" if p.llm_verdict else "no"))
            for p in ps]


PROPOSAL_COLUMNS = ("id", "status", "origin", "confidence", "source", "relation", "target", "llm")


def _emit_proposals(ctx: click.Context, ps: list[Any], json_: bool, plain_: bool, title: str,
                    data: Any = None) -> None:
    out(ctx, json_, plain_).emit(data if data is not None else ps,
                                 lambda c: c.print(table(title, PROPOSAL_COLUMNS, _proposal_rows(ps))),
                                 lambda: _proposal_rows(ps), columns=PROPOSAL_COLUMNS)


@predict_group.command("list")
@click.argument("db_id", metavar="KG")
@click.option("--status", type=click.Choice(STATUSES), default="pending", show_default=True, help="Which proposals.")
@click.option("--origin", help="Only proposals from this source (a predictor, research...).")
@click.option("--relation", "type_", help="Only this relation.")
@click.option("--node", help="Only proposals touching this node id.")
@click.option("--min-confidence", type=float, help="Only proposals at least this confident.")
@click.option("--limit", default=50, show_default=True, help="Page size.")
@click.option("--offset", default=0, show_default=True, help="Skip this many.")
@output_options
@click.pass_context
def list_(ctx: click.Context, db_id: str, status: str, origin: str | None, type_: str | None, node: str | None,
          min_confidence: float | None, limit: int, offset: int, json_: bool, plain_: bool) -> None:
    """The review queue, most confident first."""
    kg = _kg(ctx, db_id)
    total, page = kg.proposals.list(None if status == "all" else status, origin, type_, node, min_confidence,
                                    limit, offset)
    data = {"total": total, "counts": kg.proposals.counts(), "proposals": page}
    _emit_proposals(ctx, page, json_, plain_, f"Proposals of {db_id}: {total} {status}", data)


def _review(ctx: click.Context, db_id: str, decision: str, ids: tuple[int, ...], origin: str | None,
            type_: str | None, min_confidence: float | None, limit: int, reviewer: str | None, note: str | None,
            json_: bool, plain_: bool) -> None:
    q = _kg(ctx, db_id).proposals
    if ids and (origin or type_ or min_confidence is not None):
        raise InvalidArgument("give proposal ids or a filter (--origin/--relation/--min-confidence), not both")
    if ids:
        done = q.accept_many(ids, reviewer, note) if decision == "accept" else q.reject_many(ids, reviewer, note)
    elif origin or type_ or min_confidence is not None:
        done = q.review_where(decision, origin, type_, min_confidence, limit, reviewer, note)
    else:
        raise InvalidArgument("give proposal ids, or a filter (--origin, --relation, --min-confidence) for a batch")
    verb = "accepted" if decision == "accept" else "rejected"
    _emit_proposals(ctx, done, json_, plain_, f"{len(done)} proposal(s) {verb}")


def review_options(f: Any) -> Any:
    """KG, ids or a batch filter, the reviewer's note and the output options of accept and reject."""
    for opt in reversed([
        click.argument("db_id", metavar="KG"),
        click.argument("ids", nargs=-1, type=int),
        click.option("--origin", help="Batch: the pending proposals from this source."),
        click.option("--relation", "type_", help="Batch: the pending proposals of this relation."),
        click.option("--min-confidence", type=float, help="Batch: the pending proposals at least this confident."),
        click.option("--limit", default=1000, show_default=True, help="Batch: at most this many."),
        click.option("--reviewer", help="Who reviews (stored with the decision)."),
        click.option("--note", help="Why (stored with the decision)."),
        output_options,
        click.pass_context,
    ]):
        f = opt(f)
    return f


@predict_group.command("accept")
@review_options
def accept(ctx: click.Context, db_id: str, **review: Any) -> None:
    """Accept proposals: each becomes an edge with {source, confidence, prediction_id} (all or none)."""
    _review(ctx, db_id, "accept", **review)


@predict_group.command("reject")
@review_options
def reject(ctx: click.Context, db_id: str, **review: Any) -> None:
    """Reject proposals; a rejected edge is never proposed again."""
    _review(ctx, db_id, "reject", **review)


@predict_group.command("undo")
@click.argument("db_id", metavar="KG")
@click.argument("proposal_id", type=int)
@output_options
@click.pass_context
def undo(ctx: click.Context, db_id: str, proposal_id: int, json_: bool, plain_: bool) -> None:
    """Undo a review: an accepted proposal's edge is removed (only if acceptance created it)."""
    p = _kg(ctx, db_id).proposals.undo(proposal_id)
    _emit_proposals(ctx, [p], json_, plain_, f"Proposal {p.id} is pending again", p)


@predict_group.command("validate")
@click.argument("db_id", metavar="KG")
@click.argument("ids", nargs=-1, type=int, required=True)
@click.option("--provider", help="LLM provider: openai, ollama, anthropic, gemini (or provider:model).")
@click.option("--model", help="The model name for the provider.")
@click.option("--auto-accept", type=float, help="Accept when the LLM says valid and the combined confidence is "
              "at least this (default: never accept automatically).")
@output_options
@click.pass_context
def validate(ctx: click.Context, db_id: str, ids: tuple[int, ...], provider: str | None, model: str | None,
             auto_accept: float | None, json_: bool, plain_: bool) -> None:
    """Ask an LLM whether proposed edges are true; the verdict is stored with each proposal."""
    from ..llm import get_provider
    kg, chat = _kg(ctx, db_id), get_provider(provider, model=model)
    verdicts = [link_predictor(kg).validate(i, chat, auto_accept=auto_accept) for i in ids]
    rows = [(v.proposal_id, "" if v.valid is None else ("yes" if v.valid else "no"),
             "" if v.confidence is None else f"{v.confidence:.3f}", "accepted" if v.accepted else "",
             v.error or v.reasoning) for v in verdicts]
    cols = ("id", "valid", "confidence", "action", "reasoning")
    out(ctx, json_, plain_).emit(verdicts, lambda c: c.print(table(f"LLM verdicts ({chat.name})", cols, rows)),
                                 lambda: rows, columns=cols)


@predict_group.command("eval")
@click.argument("db_id", metavar="KG", required=False)
@click.option("--split", "split", type=click.Path(file_okay=False), help="A split folder with train.tsv, valid.tsv, "
              "test.tsv (head<TAB>relation<TAB>tail), instead of a KG.")
@click.option("--test", "test", type=click.Path(dir_okay=False), help="JSONL test edges absent from the KG "
              "(one {source, target, type} per line).")
@click.option("--holdout", type=float, help="Hold out this fraction of the KG's edges as the test set (the KG is "
              "not changed).")
@click.option("--seed", default=0, show_default=True, help="Random seed of the holdout.")
@click.option("--max-test", type=int, help="Rank at most this many test edges (a random sample).")
@predictor_options
@output_options
@click.pass_context
def eval_(ctx: click.Context, db_id: str | None, split: str | None, test: str | None, holdout: float | None,
          seed: int, max_test: int | None, predictor: str, param: tuple[str, ...], json_: bool, plain_: bool) -> None:
    """Filtered MRR and Hits@1/3/10 (both directions) on a split folder or a KG's test edges."""
    from ..linkpred import evaluate_split
    params = _params(param)
    if split is not None:
        if db_id or test or holdout is not None:
            raise InvalidArgument("--split evaluates a split folder: give no KG, --test or --holdout with it")
        r = evaluate_split(split, predictor, **params)
    elif db_id is None:
        raise InvalidArgument("give a KG (with --test or --holdout) or --split DIR")
    else:
        r = link_predictor(_kg(ctx, db_id)).evaluate(predictor, test=test, holdout=holdout, seed=seed, max_test=max_test,
                                             **params)
    rows = [(r.predictor, f"{r.mrr:.4f}", f"{r.hits_at_1:.4f}", f"{r.hits_at_3:.4f}", f"{r.hits_at_10:.4f}", r.n,
             f"{r.seconds:.1f}")]
    cols = ("predictor", "mrr", "hits@1", "hits@3", "hits@10", "n", "seconds")
    out(ctx, json_, plain_).emit(r, lambda c: c.print(table("Filtered ranking", cols, rows)), lambda: rows,
                                 columns=cols)
