"""``kgos analyze critical | bottlenecks | communities | gaps``: the Flags Toolkit's critical-components
and gap tools (spec/000 section 4)."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from . import cli, out, output_options, workspace
from .output import table


@cli.group("analyze")
def analyze_group() -> None:
    """Graph analytics: critical components, bottlenecks, communities and gaps."""


def _ranking(c: Console, r: Any, title: str) -> None:
    rows = [(x.rank, f"{x.score:.4f}", x.node.id, x.degree, f"{x.betweenness:.4f}", f"{x.pagerank:.4f}",
             "yes" if x.articulation else "") for x in r.results]
    c.print(table(f"{title} ({r.method})" if r.method != "not computed" else title,
                  ["#", r.metric, "node", "degree", "betweenness", "pagerank", "cut vertex"], rows))
    for note in r.notes:
        c.print(f"[dim]note: {escape(note)}[/]")


@analyze_group.command("critical")
@click.argument("db_id", metavar="KG")
@click.option("--metric", type=click.Choice(["combined", "degree", "betweenness", "pagerank"]), default="combined",
              show_default=True, help="Rank by this centrality (combined: mean of the three, each scaled to 1).")
@click.option("-k", "k", default=20, show_default=True, help="Number of nodes.")
@output_options
@click.pass_context
def critical(ctx: click.Context, db_id: str, metric: str, k: int, json_: bool, plain_: bool) -> None:
    """The most central nodes: what to test and protect first."""
    r = workspace(ctx).kg(db_id).analytics.centrality(metric, k=k)
    out(ctx, json_, plain_).emit(r, lambda c: _ranking(c, r, f"Critical components by {metric}"),
                                 lambda: [(x.rank, f"{x.score:.6f}", x.node.id) for x in r.results], columns=("rank", "score", "id"))


@analyze_group.command("bottlenecks")
@click.argument("db_id", metavar="KG")
@click.option("-k", "k", default=20, show_default=True, help="Number of nodes.")
@output_options
@click.pass_context
def bottlenecks(ctx: click.Context, db_id: str, k: int, json_: bool, plain_: bool) -> None:
    """Cut vertices (removing one disconnects part of the graph), by betweenness."""
    r = workspace(ctx).kg(db_id).analytics.bottlenecks(k=k)
    out(ctx, json_, plain_).emit(r, lambda c: _ranking(c, r, "Bottlenecks"),
                                 lambda: [(x.rank, f"{x.betweenness:.6f}", x.node.id) for x in r.results], columns=("rank", "betweenness", "id"))


@analyze_group.command("communities")
@click.argument("db_id", metavar="KG")
@click.option("-k", "k", default=20, show_default=True, help="Number of communities (largest first).")
@output_options
@click.pass_context
def communities(ctx: click.Context, db_id: str, k: int, json_: bool, plain_: bool) -> None:
    """Communities (Leiden on the undirected graph), with their hubs and node types."""
    r = workspace(ctx).kg(db_id).analytics.communities(k=k)
    rows = [(x.id, x.size, x.internal_edges, x.external_edges, ", ".join(n.id for n in x.top[:3]),
             ", ".join(f"{t} {n}" for t, n in list(x.node_types.items())[:3])) for x in r.communities]

    def human(c: Console) -> None:
        c.print(f"{r.count} communities, modularity {r.modularity:.3f}")
        c.print(table(None, ["id", "size", "inside", "leaving", "top nodes", "types"], rows))
    out(ctx, json_, plain_).emit(r, human, lambda: [(x.id, x.size, x.top[0].id if x.top else "") for x in r.communities], columns=("community", "size", "top_node"))


@analyze_group.command("gaps")
@click.argument("db_id", metavar="KG")
@click.option("--limit", default=20, show_default=True, help="Examples listed per kind of gap.")
@output_options
@click.pass_context
def gaps(ctx: click.Context, db_id: str, limit: int, json_: bool, plain_: bool) -> None:
    """What the KG is missing: orphans, cut-off components, limitations without workarounds,
    actionable nodes without dimensions, nodes without descriptions."""
    r = workspace(ctx).kg(db_id).analytics.gaps(limit=limit)

    def human(c: Console) -> None:
        c.print(f"orphans: [bold]{r.orphan_count}[/]  " + ", ".join(n.id for n in r.orphans))
        c.print(f"components: [bold]{r.components}[/]; cut off from the main one: {len(r.small_components)}")
        for comp in r.small_components:
            c.print("  - " + ", ".join(n.id for n in comp))
        c.print(f"limitations without workaround: [bold]{len(r.unmitigated_limitations)}[/]  "
                + ", ".join(n.id for n in r.unmitigated_limitations))
        c.print(f"actionable nodes without dimensions: [bold]{r.without_dimensions_count}[/]  "
                + ", ".join(n.id for n in r.without_dimensions))
        c.print(f"nodes without a description: [bold]{r.without_description_count}[/]")
    out(ctx, json_, plain_).emit(r, human, lambda: [("orphan", n.id) for n in r.orphans]
                                 + [("unmitigated_limitation", n.id) for n in r.unmitigated_limitations]
                                 + [("without_dimensions", n.id) for n in r.without_dimensions], columns=("gap", "id"))
