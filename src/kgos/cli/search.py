"""``kgos search`` and ``kgos embed``: hybrid retrieval with explained scores."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..retrieval.vocabulary import INTENTS, MODES
from . import cli, out, output_options, workspace
from .embed import embed_group


@cli.command("search")
@click.argument("db_ids", metavar="KG[,KG...]")
@click.argument("query")
@click.option("-k", "k", default=10, show_default=True, help="Number of results.")
@click.option("--intent", type=click.Choice(INTENTS), help="Force a retrieval intent (default: classified).")
@click.option("--weights", help="Explicit alpha,beta,gamma,delta (embedding,text,graph,intent); normalised to sum 1.")
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
              help="Scoring strategy (single signals, fixed hybrids and RRF are for comparisons).")
@click.option("--explain", is_flag=True, help="Show each hit's per-signal breakdown and why it ranked.")
@click.option("--model", help="Search with this embedding model's vectors (added with `kgos embed add`); "
                             "default: the KG's search model.")
@click.option("--filter", "filters", multiple=True, metavar="NAME<0.3",
              help="Dimension pre-filter (repeatable): only nodes meeting every one are scored.")
@output_options
@click.pass_context
def search(ctx: click.Context, db_ids: str, query: str, k: int, intent: str | None, weights: str | None,
           mode: str, explain: bool, filters: tuple[str, ...], model: str | None, json_: bool, plain_: bool) -> None:
    """Search one KG (or several, comma-separated) for QUERY, by intent-adaptive hybrid scoring."""
    from ..methods.dimensions import merge_filters
    ids = [d.strip() for d in db_ids.split(",") if d.strip()]
    ws = workspace(ctx)
    options: dict[str, Any] = {"weights": weights, "intent": intent, "mode": mode,
                               "filters": merge_filters(filters) if filters else None, "model": model}
    result = ws.kg(ids[0]).search(query, k=k, **options) if len(ids) == 1 else ws.search(ids, query, k=k, **options)
    out(ctx, json_, plain_).emit(result, lambda c: _print(c, result, explain),
                                 lambda: [(h.rank, f"{h.score:.4f}", h.node.id, h.node.name) for h in result.results], columns=("rank", "score", "id", "name"))
    warn(result.warnings)


def warn(warnings: Any) -> None:
    """Warnings about result quality go to stderr in every output mode (stdout stays one document)."""
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


def explanation(h: Any) -> str:
    """Every signal as weight x value, then every bonus, in the JSON's order; they add up to the score."""
    terms = [f"{h.weights.get(s, 0.0):.3f}x{v:.3f} {s}" for s, v in h.components.items()]
    terms += [f"{v:.3f} {b} bonus" for b, v in h.bonuses.items()]
    return " + ".join(terms) + f" = {h.explained():.3f}"


def _print(c: Console, r: Any, explain: bool) -> None:
    w = r.weights
    c.print(f"[bold]{escape(r.query)}[/]  intent [cyan]{r.intent.name}[/] ({r.intent.source})  "
            f"weights a={w.embedding:.2f} b={w.text:.2f} g={w.graph:.2f} d={w.intent:.2f} [dim]({w.source})[/]")
    if not r.results:
        c.print("No results.")
    for h in r.results:
        kg = f" [magenta]{h.source_kg}[/]" if h.source_kg else ""
        c.print(f"{h.rank:>3}  {h.score:.3f}  [bold]{escape(h.node.name)}[/]  [dim]{escape(h.node.id)} "
                f"({h.node.type})[/]{kg}  [green]{h.method}[/]")
        if explain:
            why = "; ".join(f"{'->' if a.direction == 'outgoing' else '<-'} {a.type} {escape(a.other_name)}"
                            for a in h.edge_annotations)
            c.print("           " + explanation(h))
            if why:
                c.print(f"           [dim]via {why}[/]")
            if h.missing_signals:
                c.print(f"           no {'/'.join(h.missing_signals)} yet: weights spread over its other signals")
    for note in r.notes:
        c.print(f"[dim]note: {note}[/]")
    c.print(f"[dim]{r.took_ms:.1f} ms[/]")


@embed_group.command("run")
@click.argument("db_id")
@click.option("--model", default=None,
              help="Embedder: default, minilm, hash[:dims], fast, static:PATH, openai:MODEL, gemini:MODEL "
                   "(default: the model an interrupted fill-in was heading for, else default).")
@click.option("--batch-size", default=64, show_default=True)
@click.option("--status", is_flag=True, help="Show which vectors search uses and how far a fill-in has come.")
@output_options
@click.pass_context
def embed(ctx: click.Context, db_id: str, model: str | None, batch_size: int, status: bool, json_: bool,
          plain_: bool) -> None:
    """Embed DB_ID's nodes (only those whose text changed) so search can use the embedding signal."""
    o = out(ctx, json_, plain_)
    kg = workspace(ctx).kg(db_id)
    if status:
        st = kg.embed_status()
        pending = f"; filling in {st.target}: {st.target_vectors:,}/{st.nodes:,} nodes" if st.target else ""
        o.emit(st, lambda c: c.print(f"{db_id}: search uses {st.search_model or 'no vectors'}{pending}"),
               lambda: [(db_id, st.search_model, st.target, st.target_vectors, st.nodes)],
               columns=("db_id", "search_model", "target", "target_vectors", "nodes"))
        return
    with o.meter(f"embed {db_id}", "nodes") as meter:
        report = kg.embed(model, batch_size=batch_size, progress=meter.advance, total=meter.total)
    o.emit(report, lambda c: c.print(
        f"Embedded {report.embedded:,} of {report.nodes:,} nodes of [bold]{db_id}[/] with {report.model} "
        f"({report.unchanged:,} unchanged) in {report.seconds:.1f} s"), lambda: [(db_id, report.model, report.embedded)], columns=("db_id", "model", "embedded"))
