"""The query-method commands (spec/000 section 6, the Flags Toolkit's intent and exploration flags):
``kgos want-to | can-it | compose | similar | alternatives | why-not | impact | trace | explore |
intent``, plus ``kgos dims ...`` and ``kgos analyze ...`` (imported at the bottom).

Node arguments take an id or an unambiguous name; an ambiguous name lists the candidates, an
unknown one suggests close matches (the library's errors, printed by the ``kgos`` group).
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from . import cli, out, output_options, workspace
from .output import table

STATUS_STYLE = {"yes": "green", "yes_with_limitations": "yellow", "no": "red", "unknown": "dim"}


def _name(ref: Any) -> str:
    return f"[bold]{escape(ref.name)}[/] [dim]{escape(ref.id)}[/]"


def _notes(c: Console, notes: Any) -> None:
    for note in notes:
        c.print(f"[dim]note: {escape(note)}[/]")


def _arrow(edge_type: str | None, direction: str | None) -> str:
    """``--enables-->`` or ``<--enables--`` (an edge pointing back along the path)."""
    return f"--{edge_type}-->" if direction == "forward" else f"<--{edge_type}--"


def _path(steps: Any) -> str:
    parts = []
    for step in steps:
        if step.edge_type is not None:
            parts.append(f"[cyan]{escape(_arrow(step.edge_type, step.direction))}[/]")
        parts.append(escape(step.node.id))
    return " ".join(parts)


# -- want-to, can-it, compose -------------------------------------------------------------------------
@cli.command("want-to")
@click.argument("db_id", metavar="KG")
@click.argument("goal")
@click.option("-k", "k", default=10, show_default=True, help="Number of results.")
@output_options
@click.pass_context
def want_to(ctx: click.Context, db_id: str, goal: str, k: int, json_: bool, plain_: bool) -> None:
    """Nodes that help reach GOAL ("reduce my API costs"): goal keywords, then goal edges."""
    r = workspace(ctx).kg(db_id).want_to(goal, k=k)

    def human(c: Console) -> None:
        c.print(f"[bold]{escape(r.goal)}[/]  keywords: {', '.join(r.keywords)}"
                + (f"  [dim](x5: {', '.join(r.intent_keywords)})[/]" if r.intent_keywords else ""))
        rows = [(i, f"{h.score:.3f}", h.node.id, h.node.type, _plain_path(h.path[1:])) for i, h in enumerate(r.results, 1)]
        c.print(table(None, ["#", "score", "node", "type", "via"], rows) if rows else "No results.")
        _notes(c, r.notes)
    out(ctx, json_, plain_).emit(r, human, lambda: [(f"{h.score:.4f}", h.node.id, h.node.name) for h in r.results], columns=("score", "id", "name"))


def _plain_path(steps: Any) -> str:
    return " ".join(f"{_arrow(s.edge_type, s.direction)} {s.node.id}" for s in steps)


@cli.command("can-it")
@click.argument("db_id", metavar="KG")
@click.argument("capability")
@output_options
@click.pass_context
def can_it(ctx: click.Context, db_id: str, capability: str, json_: bool, plain_: bool) -> None:
    """Can the KG's subject do CAPABILITY? yes / yes_with_limitations / no / unknown, with the
    limitations, workarounds and prerequisites."""
    r = workspace(ctx).kg(db_id).can_it(capability)

    def human(c: Console) -> None:
        style = STATUS_STYLE[r.status]
        c.print(f"[{style} bold]{r.status}[/]  {escape(r.explanation)}")
        if r.node is not None:
            c.print(f"capability: {_name(r.node)} [dim](match {r.match_score:.2f})[/]")
        for lim in r.limitations:
            fixes = ", ".join(w.id for w in lim.workarounds) or ("[red]none[/]" if lim.blocking else "see workarounds")
            c.print(f"  [yellow]limitation[/] {_name(lim.node)}  -> {fixes}")
        for w in r.workarounds:
            c.print(f"  [green]workaround[/] {_name(w)}")
        for p in r.prerequisites:
            c.print(f"  [blue]requires[/]   {_name(p)}")
        for cand in r.candidates:
            c.print(f"  [dim]also matched {escape(cand.node.id)} ({cand.status})[/]")
    out(ctx, json_, plain_).emit(r, human, lambda: [(r.status, r.node.id if r.node else "")]
                                 + [("limitation", l.node.id) for l in r.limitations]
                                 + [("workaround", w.id) for w in r.workarounds]
                                 + [("prerequisite", p.id) for p in r.prerequisites], columns=("kind", "id"))


@cli.command("compose")
@click.argument("db_id", metavar="KG")
@click.argument("goal")
@click.option("--max-tools", default=5, show_default=True, help="At most this many steps.")
@output_options
@click.pass_context
def compose(ctx: click.Context, db_id: str, goal: str, max_tools: int, json_: bool, plain_: bool) -> None:
    """Plan a multi-step GOAL ("read CSV data, analyze trends and generate a report"): steps
    validated by feeds_into edges, missing prerequisites, conflicts and alternatives."""
    r = workspace(ctx).kg(db_id).compose_for(goal, max_tools=max_tools)

    def human(c: Console) -> None:
        verdict = "[green]valid[/]" if r.valid else "[yellow]needs attention[/]"
        c.print(f"[bold]{escape(r.goal)}[/]  plan: {verdict}")
        links = {e.source: e for e in r.edges}
        for step in r.steps:
            c.print(f"  {step.index}. {_name(step.node)}  [dim]<- {escape(step.sub_goal)}[/]")
            link = links.get(step.node.id)
            if link is not None:
                mark = {"direct": "[green]feeds_into[/]", "via": f"[green]feeds_into via {', '.join(link.via)}[/]",
                        "reversed": "[yellow]reversed feeds_into[/]", "missing": "[red]no feeds_into[/]"}[link.status]
                c.print(f"     | {mark}")
        for p in r.prerequisites:
            c.print(f"  [blue]prerequisite[/] {_name(p.node)} [dim](for {', '.join(p.needed_by)})[/]")
        for a in r.alternatives:
            c.print(f"  [green]alternative[/] {_name(a.node)} [dim]instead of {escape(a.for_step)}[/]")
        for w in r.warnings:
            c.print(f"  [yellow]warning[/] {escape(w)}")
    out(ctx, json_, plain_).emit(r, human, lambda: [(s.index, s.node.id, s.sub_goal) for s in r.steps], columns=("step", "id", "sub_goal"))


# -- similar, alternatives, why-not -------------------------------------------------------------------------
@cli.command("similar")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@click.option("-k", "k", default=10, show_default=True, help="Number of results.")
@output_options
@click.pass_context
def similar(ctx: click.Context, db_id: str, node: str, k: int, json_: bool, plain_: bool) -> None:
    """Nodes structurally similar to NODE: 0.70 Jaccard + 0.20 type + 0.10 name overlap."""
    r = workspace(ctx).kg(db_id).similar_to(node, k=k)
    rows = [(i, f"{x.score:.3f}", f"{x.jaccard:.3f}", int(x.type_match), f"{x.name_overlap:.2f}", x.node.id)
            for i, x in enumerate(r.results, 1)]

    def human(c: Console) -> None:
        c.print(f"Similar to {_name(r.node)}")
        c.print(table(None, ["#", "score", "jaccard", "type", "name", "node"], rows) if rows else "No results.")
    out(ctx, json_, plain_).emit(r, human, lambda: [(f"{x.score:.4f}", x.node.id) for x in r.results], columns=("score", "id"))


@cli.command("alternatives")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@click.option("-k", "k", default=5, show_default=True, help="Structural alternatives to list.")
@output_options
@click.pass_context
def alternatives(ctx: click.Context, db_id: str, node: str, k: int, json_: bool, plain_: bool) -> None:
    """Alternatives to NODE: declared (alternative_to, similar_to) then structurally similar ones."""
    r = workspace(ctx).kg(db_id).alternatives(node, k=k)

    def human(c: Console) -> None:
        c.print(f"Alternatives to {_name(r.node)}")
        for a in r.explicit:
            c.print(f"  [green]{a.edge_type}[/] {_name(a.node)}")
        for x in r.structural:
            c.print(f"  [dim]similar {x.score:.2f}[/] {_name(x.node)}")
        for x in r.conflicts:
            c.print(f"  [red]conflicts with[/] {_name(x)}")
    out(ctx, json_, plain_).emit(r, human, lambda: [(a.edge_type, a.node.id) for a in r.explicit]
                                 + [("similar", x.node.id) for x in r.structural], columns=("relation", "id"))


@cli.command("why-not")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@output_options
@click.pass_context
def why_not(ctx: click.Context, db_id: str, node: str, json_: bool, plain_: bool) -> None:
    """What blocks NODE: limitations without workarounds, blocked prerequisites, conflicts."""
    r = workspace(ctx).kg(db_id).why_not(node)

    def human(c: Console) -> None:
        c.print(f"{_name(r.node)}  [{STATUS_STYLE.get(r.status, 'white')}]{r.status}[/]")
        for reason in r.reasons:
            c.print(f"  - {escape(reason)}")
        for lim in r.limitations:
            fixes = ", ".join(w.id for w in lim.workarounds) or ("[red]no workaround[/]" if lim.blocking else "node-level workarounds")
            c.print(f"  [yellow]limitation[/] {escape(lim.node.id)} -> {fixes}")
        for p in r.prerequisites:
            c.print(f"  [blue]requires[/] {escape(p.node.id)} [dim](depth {p.depth})[/]")
        for x in r.conflicts:
            c.print(f"  [red]conflicts with[/] {escape(x.id)}")
        for x in r.alternatives:
            c.print(f"  [green]alternative[/] {escape(x.id)}")
    out(ctx, json_, plain_).emit(r, human, lambda: [("reason", x) for x in r.reasons], columns=("kind", "text"))


# -- impact, trace, explore -------------------------------------------------------------------------------------
@cli.command("impact")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@click.option("--direction", type=click.Choice(["forward", "backward", "both"]), default="both", show_default=True,
              help="forward: what NODE affects (outgoing edges); backward: what affects it.")
@click.option("--max-depth", default=3, show_default=True, help="Hops to follow (capped at 10).")
@click.option("--per-depth", default=20, show_default=True, help="Riskiest nodes listed per depth.")
@output_options
@click.pass_context
def impact(ctx: click.Context, db_id: str, node: str, direction: str, max_depth: int, per_depth: int,
           json_: bool, plain_: bool) -> None:
    """What changing NODE touches: BFS with risk = 1/depth x edge weight x criticality."""
    r = workspace(ctx).kg(db_id).impact_analysis(node, direction=direction, max_depth=max_depth, per_depth=per_depth)

    def human(c: Console) -> None:
        c.print(f"Impact of {_name(r.node)} ({r.direction}, depth {r.max_depth}): "
                f"[bold]{r.total_impacted}[/] nodes  " + "  ".join(f"d{d}: {n}" for d, n in r.counts_by_depth.items()))
        # the edge as seen from the listed node: "--requires--> parent" when the node requires its parent
        rows = [(d, f"{x.risk:.3f}", x.node.id, f"{_arrow(x.edge_type, 'backward' if x.direction == 'forward' else 'forward')} {x.parent}")
                for d, level in r.risk_by_depth.items() for x in level]
        if rows:
            c.print(table(None, ["depth", "risk", "node", "edge to the node it was reached from"], rows))
        c.print("critical path: " + " -> ".join(escape(n.id) for n in r.critical_path))
        c.print("edge types: " + ", ".join(f"{t} {n}" for t, n in r.edge_types_traversed.items()))
        _notes(c, r.notes)
    out(ctx, json_, plain_).emit(r, human, lambda: [(x.depth, f"{x.risk:.4f}", x.node.id)
                                                    for level in r.risk_by_depth.values() for x in level], columns=("depth", "risk", "id"))


@cli.command("trace")
@click.argument("refs", nargs=-1, required=True, metavar="KG A B | KG_A:A KG_B:B")
@click.option("--max-depth", default=5, show_default=True, help="Longest path to look for, in edges (capped at 10; "
                                                                "8 across KGs).")
@output_options
@click.pass_context
def trace(ctx: click.Context, refs: tuple[str, ...], max_depth: int, json_: bool, plain_: bool) -> None:
    """The shortest connection from A to B, each edge with its type and direction. With two KG:NODE
    arguments the path may cross KGs over their cross-KG edges (kgos kg link)."""
    if len(refs) == 2:
        _trace_across(ctx, refs, max_depth, json_, plain_)
        return
    if len(refs) != 3:
        raise click.UsageError("give KG A B (one KG), or KG_A:A KG_B:B (across KGs)")
    db_id, node_a, node_b = refs
    r = workspace(ctx).kg(db_id).trace_path(node_a, node_b, max_depth=max_depth)

    def human(c: Console) -> None:
        if not r.found:
            c.print(f"No path from {_name(r.source)} to {_name(r.target)} within {r.max_depth} edges.")
        else:
            c.print(f"{r.length} edge(s):")
            for step in r.path:
                if step.edge_type is not None:
                    c.print(f"    [cyan]{'|' if step.direction == 'forward' else '^'} {step.edge_type}"
                            f"{'' if step.direction == 'forward' else ' (backward)'}[/]")
                c.print(f"  {_name(step.node)} [dim]({escape(step.node.type)})[/]")
        _notes(c, [n for n in r.notes if not n.startswith("no path")])
    line = f"{r.path[0].node.id} {_plain_path(r.path[1:])}".strip() if r.path else ""
    out(ctx, json_, plain_).emit(r, human, lambda: [(r.found, "" if r.length is None else r.length, line)], columns=("found", "length", "path"))


@cli.command("explore")
@click.argument("db_id", metavar="KG")
@click.argument("node")
@click.option("--depth", default=2, show_default=True, help="BFS depth (capped at 10).")
@click.option("--per-level", default=15, show_default=True, help="Nodes listed per level, best ranked first.")
@output_options
@click.pass_context
def explore(ctx: click.Context, db_id: str, node: str, depth: int, per_level: int, json_: bool, plain_: bool) -> None:
    """Explore around NODE: BFS levels ranked by centrality and edge diversity, hubs marked."""
    r = workspace(ctx).kg(db_id).explore_smart(node, depth=depth, per_level=per_level)
    out(ctx, json_, plain_).emit(r, lambda c: c.print(_tree(r)),
                                 lambda: [(n.depth, f"{n.rank_score:.3f}", n.node.id, "hub" if n.is_hub else "")
                                          for level in r.levels for n in level.nodes], columns=("depth", "rank_score", "id", "hub"))


def _tree(r: Any) -> Tree:
    """A rich Tree: each listed node under its BFS parent, hubs starred, counts per level."""
    root = Tree(f"{_name(r.root)}  [dim]" + ", ".join(f"d{lv.depth}: {lv.count}" for lv in r.levels[1:]) + "[/]")
    branches = {r.root.id: root}
    for level in r.levels[1:]:
        for n in level.nodes:
            parent = branches.get(n.parent or "", root)
            hub = " [magenta]* hub[/]" if n.is_hub else ""
            branches[n.node.id] = parent.add(f"[cyan]{escape(_arrow(n.edge_type, n.direction))}[/] {_name(n.node)} "
                                             f"[dim]deg {n.degree}, {n.edge_diversity} edge types[/]{hub}")
    return root


# -- intent ------------------------------------------------------------------------------------------------------
@cli.command("intent")
@click.argument("query")
@click.option("--kg", "db_id", help="Also run intent_search on this KG (classify, route, merge).")
@click.option("-k", "k", default=10, show_default=True, help="Results of intent_search.")
@click.option("--filter", "filters", multiple=True, metavar="NAME<0.3",
              help="With --kg: dimension pre-filter (repeatable), only nodes meeting every one are considered.")
@output_options
@click.pass_context
def intent(ctx: click.Context, query: str, db_id: str | None, k: int, filters: tuple[str, ...], json_: bool,
           plain_: bool) -> None:
    """Classify QUERY into the 14 KG-OS intent categories and show the methods it routes to;
    with --kg, run the full intent_search."""
    from ..methods import classify_intent
    from ..methods.dimensions import merge_filters
    from .search import warn
    if db_id is None:
        r = classify_intent(query)
        out(ctx, json_, plain_).emit(r, lambda c: _print_intents(c, r), lambda: [(m.category, m.score) for m in r.intents], columns=("intent", "score"))
        return
    config = {"k": k, "dimension_filters": merge_filters(filters) if filters else None}
    res = workspace(ctx).kg(db_id).intent_search(query, config)
    out(ctx, json_, plain_).emit(res, lambda c: _print_search(c, res),
                                 lambda: [(h.rank, f"{h.score:.4f}", h.node.id, h.method) for h in res.nodes], columns=("rank", "score", "id", "method"))
    warn(res.warnings)


def _print_intents(c: Console, r: Any) -> None:
    rows = [(m.category, f"{m.score:.1f}", ", ".join(m.phrases), ", ".join(m.keywords)) for m in r.intents]
    c.print(table(None, ["category", "score", "phrases", "keywords"], rows) if rows else "No KG-OS category matched.")
    c.print(f"retrieval intent: [cyan]{r.retrieval_intent}[/]   routes: {', '.join(r.routes) or '(hybrid search only)'}")


def _print_search(c: Console, r: Any) -> None:
    top = f"{r.intent.category} ({r.intent.score:.1f})" if r.intent else "none"
    c.print(f"[bold]{escape(r.query)}[/]  intent {top}  routes: {', '.join(r.routes) or 'none'}")
    rows = [(h.rank, f"{h.score:.3f}", h.node.id, h.method) for h in r.nodes]
    c.print(table(None, ["#", "score", "node", "signals / methods"], rows) if rows else "No results.")
    if r.composition is not None:
        c.print("plan: " + " -> ".join(s.node.id for s in r.composition.steps))
    if r.capability is not None:
        c.print(f"capability: {r.capability.status}")
    _notes(c, r.notes)


from . import analyze, dims  # noqa: F401  (importing registers the dims and analyze groups)


def _trace_across(ctx: click.Context, refs: tuple[str, ...], max_depth: int, json_: bool, plain_: bool) -> None:
    from ..kg.links import CrossLinks
    r = CrossLinks(workspace(ctx)).trace(refs[0], refs[1], max_depth=max_depth)

    def human(c: Console) -> None:
        if not r.found:
            c.print(escape(f"No path from {r.source} to {r.target} within {r.max_depth} edges."))
            return
        c.print(f"{r.length} edge(s) across {len({s.ref.kg for s in r.path})} KG(s):")
        for step in r.path:
            if step.edge_type is not None:
                kind = " (cross-KG)" if step.cross else ""
                arrow = "|" if step.direction == "forward" else "^"
                c.print(escape(f"    {arrow} {step.edge_type}{kind}"), style="cyan")
            c.print(escape(f"  {step.ref}  {step.name} ({step.type})"))
    rows = [(str(s.ref), s.edge_type or "", "cross" if s.cross else "") for s in r.path]
    out(ctx, json_, plain_).emit(r, human, lambda: rows, columns=("node", "edge", "cross"))
