"""``kgos dims list | show | set | auto | drift``: the 56 semantic dimensions (spec/000 section 5); ``dims filter``
comes from the method catalogue (``kgos.cli.methods``)."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..errors import InvalidArgument
from . import cli, out, output_options, workspace
from .output import table


@cli.group("dims")
def dims_group() -> None:
    """Semantic dimensions: the 56-dimension catalog, node values, filters and auto-extraction."""


@dims_group.command("list")
@click.option("--category", help="Only this category (e.g. 'Performance & Cost').")
@output_options
@click.pass_context
def list_(ctx: click.Context, category: str | None, json_: bool, plain_: bool) -> None:
    """The 56-dimension catalog: name, category, description, what 0.0 and 1.0 mean."""
    from ..methods import CATALOG, CATEGORIES
    if category is not None and category not in CATEGORIES:
        raise InvalidArgument(f"unknown category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    dims = [d for d in CATALOG if category is None or d.category == category]
    rows = [(d.name, d.category, d.description, d.low, d.high) for d in dims]
    out(ctx, json_, plain_).emit(dims, lambda c: c.print(table(f"{len(dims)} dimensions",
                                 ["name", "category", "description", "0.0", "1.0"], rows)), lambda: rows, columns=("name", "category", "description", "low", "high"))


@dims_group.command("show")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@output_options
@click.pass_context
def show(ctx: click.Context, db_id: str, node: str, json_: bool, plain_: bool) -> None:
    """The dimension values of NODE (catalog ones first), marking those `dims auto` inferred."""
    r = workspace(ctx).kg(db_id).dimensions(node)
    rows = [(v.name, f"{v.value:.2f}", v.category or "custom", v.inferred or "set") for v in r.values]

    def human(c: Console) -> None:
        c.print(f"[bold]{escape(r.node.name)}[/] [dim]{escape(r.node.id)}[/]")
        c.print(table(None, ["dimension", "value", "category", "source"], rows) if rows else "No dimension values.")
    out(ctx, json_, plain_).emit(r, human, lambda: rows, columns=("dimension", "value", "category", "source"))


@dims_group.command("set")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@click.argument("assignments", nargs=-1, required=True, metavar="NAME=VALUE ...")
@click.option("--custom", is_flag=True, help="Allow names outside the 56-dimension catalog.")
@output_options
@click.pass_context
def set_(ctx: click.Context, db_id: str, node: str, assignments: tuple[str, ...], custom: bool, json_: bool,
         plain_: bool) -> None:
    """Set dimension values of NODE (0.0 to 1.0), e.g. pricing_tier=0.2; `dims auto` never overwrites them."""
    values: dict[str, Any] = {}
    for item in assignments:
        name, sep, value = item.partition("=")
        if not sep:
            raise InvalidArgument(f"cannot read {item!r}: write NAME=VALUE, e.g. pricing_tier=0.2")
        values[name.strip()] = value.strip()
    r = workspace(ctx).kg(db_id).set_dimensions(node, values, custom=custom)
    out(ctx, json_, plain_).emit(r, lambda c: c.print(f"Set {', '.join(values)} on [bold]{escape(r.node.id)}[/]"),
                                 lambda: [(v.name, v.value) for v in r.values if v.name in values], columns=("dimension", "value"))


@dims_group.command("auto")
@click.argument("db_id", metavar="KG")
@click.option("--only", "only", multiple=True, help="Run only this rule's dimension (repeatable).")
@click.option("--dry-run", is_flag=True, help="Show what would be inferred without writing.")
@output_options
@click.pass_context
def auto(ctx: click.Context, db_id: str, only: tuple[str, ...], dry_run: bool, json_: bool, plain_: bool) -> None:
    """Infer dimension values from the graph and the text (degree, requires edges, cost words, ...);
    values a person set are kept, inferred ones are marked in `_inferred_dimensions`."""
    r = workspace(ctx).kg(db_id).infer_dimensions(only or None, dry_run=dry_run)

    def human(c: Console) -> None:
        counts: dict[str, int] = {}
        for v in r.inferred:
            counts[v.dimension] = counts.get(v.dimension, 0) + 1
        verb = "Would infer" if r.dry_run else "Inferred"
        c.print(f"{verb} {len(r.inferred)} value(s) on {len({v.node for v in r.inferred})} of {r.nodes} nodes; "
                f"kept {r.kept_human} value(s) a person set")
        if counts:
            c.print(table(None, ["dimension", "values"], sorted(counts.items())))
    out(ctx, json_, plain_).emit(r, human, lambda: [(v.node, v.dimension, v.value, v.rule) for v in r.inferred], columns=("node", "dimension", "value", "rule"))


@dims_group.command("drift")
@click.argument("db_id", metavar="KG")
@click.option("--days", type=click.IntRange(1, 3650), default=90, show_default=True, help="Use of the KG to read.")
@click.option("--limit", type=click.IntRange(1, 1000), default=200, show_default=True, help="Alerts at most.")
@output_options
@click.pass_context
def drift_(ctx: click.Context, db_id: str, days: int, limit: int, json_: bool, plain_: bool) -> None:
    """Alert on dimension values that use contradicts: nodes an expert's filter excludes that people
    used (rated-up answers cited them, accepted proposals touch them), and values a user's statement
    reads the other way. Nothing is written: fix the value with `kgos dims set` or the filter."""
    from ..experts.drift import drift
    r = drift(workspace(ctx), db_id, days=days, limit=limit)

    def human(c: Console) -> None:
        c.print(f"{len(r.alerts)} alert(s) from {r.turns_read} turn(s) since {r.since[:10]}; "
                f"{r.experts_with_filters} expert(s) filter this KG by dimension")
        for a in r.alerts:
            value = "unset" if a.value is None else f"{a.value:g} (set by {a.set_by})"
            why = f"excluded by {a.expert}'s filter {a.bound}" if a.kind == "excluded_but_used" else "contradicted"
            c.print(f"- {escape(a.name)} [{escape(a.node)}] {a.dimension} = {value}: {why}")
            for e in a.evidence:
                said = f" (reads {e.value:g})" if e.value is not None else ""
                c.print(f"    {e.kind} {escape(e.ref)}: {escape(e.text)}{said}")
    out(ctx, json_, plain_).emit(r, human, lambda: [(a.node, a.dimension, a.value, a.kind, len(a.evidence))
                                                    for a in r.alerts],
                                 columns=("node", "dimension", "value", "kind", "evidence"))
