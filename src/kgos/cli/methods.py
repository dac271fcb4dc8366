"""The query-method commands, generated from the method catalogue (``kgos.kg.catalogue``):
``kgos want-to | can-it | compose | similar | alternatives | why-not | impact | trace | explore |
keyword | boost | intent-search | dims filter``, plus ``kgos intent`` (classify a query without a KG),
``kgos dims ...`` and ``kgos analyze ...`` (imported at the bottom).

Each command takes the KG, the method's positional parameters (``cli_args``), and an ``--option`` per
other parameter, its help the parameter's description. Numbers go to the library as given (it caps
depths with a note and names a bad value). What stays here is presentation: a ``View`` per method.

Node arguments take an id or an unambiguous name; an ambiguous name lists the candidates, an
unknown one suggests close matches (the library's errors, printed by the ``kgos`` group).
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Union, cast, get_args, get_origin

import click
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from ..errors import InvalidArgument
from ..kg.catalogue import DIRECTION_ALIASES, METHODS, Method, parse_params
from . import cli, out, output_options, workspace
from .output import table

STATUS_STYLE = {"yes": "green", "yes_with_limitations": "yellow", "no": "red", "unknown": "dim"}
METAVARS = {"filters": "NAME<0.3 NAME>=0.7 ...", "seeds": "SEED..."}


def _name(ref: Any) -> str:
    return f"[bold]{escape(ref.name)}[/] [dim]{escape(ref.id)}[/]"


def _notes(c: Console, notes: Any) -> None:
    for note in notes:
        c.print(f"[dim]note: {escape(note)}[/]")


def _marked(c: Console, *groups: tuple[str, str, Any, Callable[[Any], str]]) -> None:
    """One indented line ``label text`` per item, for each ``(style, label, items, text)`` group in order:
    how every method lists its limitations, prerequisites, conflicts and alternatives."""
    for style, label, items, text in groups:
        for item in items:
            c.print(f"  [{style}]{label}[/] {text(item)}")


def _fixes(lim: Any, none: str, otherwise: str) -> str:
    """A limitation's workaround ids, else ``none`` in red when it blocks, else ``otherwise``."""
    return ", ".join(w.id for w in lim.workarounds) or (f"[red]{none}[/]" if lim.blocking else otherwise)


def _id(ref: Any) -> str:
    return escape(ref.id)


def _arrow(edge_type: str | None, direction: str | None) -> str:
    """``--enables-->`` or ``<--enables--`` (an edge pointing back along the path)."""
    return f"--{edge_type}-->" if direction == "forward" else f"<--{edge_type}--"


def _plain_path(steps: Any) -> str:
    return " ".join(f"{_arrow(s.edge_type, s.direction)} {s.node.id}" for s in steps)


# -- the commands, from the catalogue ----------------------------------------------------------------------
@dataclass(frozen=True)
class View:
    """How a method's result prints: ``human`` (rich), and ``rows`` under ``columns`` for --plain."""

    human: Callable[[Console, Any], None]
    rows: Callable[[Any], list[tuple[Any, ...]]]
    columns: tuple[str, ...] | Callable[[Any], tuple[str, ...]]


def method_command(method: Method, view: View) -> click.Command:
    """The click command of a catalogue method."""
    fields = method.params.model_fields
    params: list[click.Parameter] = [click.Argument(["db_id"], metavar="KG")]
    params += [_argument(method, name, fields[name].annotation) for name in method.cli_args]
    params += [_option(method, name, info) for name, info in fields.items() if name not in method.cli_args]

    def run(db_id: str, json_: bool, plain_: bool, **values: Any) -> None:
        ctx = click.get_current_context()
        r = method.run(workspace(ctx).kg(db_id), method.params.model_construct(**_values(method, values)))
        columns = view.columns(r) if callable(view.columns) else view.columns
        out(ctx, json_, plain_).emit(r, lambda c: view.human(c, r), lambda: view.rows(r), columns=columns)
    command = click.Command(method.cli[-1], callback=run, params=params, help=cli_help(method.summary))
    return output_options(command)


def cli_help(summary: str) -> str:
    """The summary without its spec number ("Method 2: nodes ..." -> "Nodes ...")."""
    text = re.sub(r"^Method \d+: ", "", summary)
    return text[:1].upper() + text[1:]


def _argument(method: Method, name: str, annotation: Any) -> click.Argument:
    many = name in method.cli_parse or _origin(annotation) is list
    return click.Argument([name], metavar=METAVARS.get(name, name.upper()), nargs=-1 if many else 1, required=True)


def _option(method: Method, name: str, info: Any) -> click.Option:
    flags = [f"--{name.replace('_', '-')}", *([method.cli_flags[name]] if name in method.cli_flags else [])]
    kind = _bare(info.annotation)
    help_ = info.description or name.replace("_", " ")
    if _origin(kind) is list:
        return click.Option([*flags, name], multiple=True, help=f"{help_} (repeatable)")
    if isinstance(kind, type) and issubclass(kind, BaseModel) or _origin(kind) is dict:
        return click.Option([*flags, name], metavar="JSON", help=f"{help_} (a JSON object)")
    default = info.get_default(call_default_factory=False)
    if _origin(kind) is Literal:
        choices = [*get_args(kind), *(DIRECTION_ALIASES if name == "direction" else ())]
        return click.Option([*flags, name], type=click.Choice(choices), default=default, show_default=True, help=help_)
    return click.Option([*flags, name], type=kind if kind in (int, float, str) else str, default=default,
                        show_default=True, help=help_)


def _values(method: Method, values: dict[str, Any]) -> dict[str, Any]:
    """The command line's values as the parameter type's: parsed text, no empty repeatables."""
    fields = method.params.model_fields
    given: dict[str, Any] = {}
    for name, value in values.items():
        if value is None or value == ():
            continue  # the parameter type's default
        kind = _bare(fields[name].annotation)
        if name in method.cli_parse:
            value = method.cli_parse[name](value)
        elif isinstance(kind, type) and issubclass(kind, BaseModel):
            value = parse_params(kind, _json(name, value), f"--{name.replace('_', '-')}")
        elif _origin(kind) is dict:
            value = _json(name, value)
        elif name == "direction":
            value = DIRECTION_ALIASES.get(value, value)
        given[name] = list(value) if isinstance(value, tuple) else value
    return given


def _json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidArgument(f"--{name.replace('_', '-')} must be JSON ({exc})") from None


def _origin(annotation: Any) -> Any:
    return get_origin(annotation)


def _bare(annotation: Any) -> Any:
    """``X`` of ``X | None``."""
    if _origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


# -- the views -----------------------------------------------------------------------------------------------
def _want_to(c: Console, r: Any) -> None:
    c.print(f"[bold]{escape(r.goal)}[/]  keywords: {', '.join(r.keywords)}"
            + (f"  [dim](x5: {', '.join(r.intent_keywords)})[/]" if r.intent_keywords else ""))
    rows = [(i, f"{h.score:.3f}", h.node.id, h.node.type, _plain_path(h.path[1:])) for i, h in enumerate(r.results, 1)]
    c.print(table(None, ["#", "score", "node", "type", "via"], rows) if rows else "No results.")
    _notes(c, r.notes)


def _can_it(c: Console, r: Any) -> None:
    style = STATUS_STYLE[r.status]
    c.print(f"[{style} bold]{r.status}[/]  {escape(r.explanation)}")
    if r.node is not None:
        c.print(f"capability: {_name(r.node)} [dim](match {r.match_score:.2f})[/]")
    _marked(c, ("yellow", "limitation", r.limitations,
                lambda lim: f"{_name(lim.node)}  -> {_fixes(lim, 'none', 'see workarounds')}"),
            ("green", "workaround", r.workarounds, _name), ("blue", "requires  ", r.prerequisites, _name))
    for cand in r.candidates:
        c.print(f"  [dim]also matched {escape(cand.node.id)} ({cand.status})[/]")


def _can_it_rows(r: Any) -> list[tuple[Any, ...]]:
    return ([(r.status, r.node.id if r.node else "")] + [("limitation", x.node.id) for x in r.limitations]
            + [("workaround", w.id) for w in r.workarounds] + [("prerequisite", p.id) for p in r.prerequisites])


LINK_MARKS = {"direct": "[green]feeds_into[/]", "reversed": "[yellow]reversed feeds_into[/]",
              "missing": "[red]no feeds_into[/]"}


def _compose(c: Console, r: Any) -> None:
    verdict = "[green]valid[/]" if r.valid else "[yellow]needs attention[/]"
    c.print(f"[bold]{escape(r.goal)}[/]  plan: {verdict}")
    links = {e.source: e for e in r.edges}
    for step in r.steps:
        c.print(f"  {step.index}. {_name(step.node)}  [dim]<- {escape(step.sub_goal)}[/]")
        link = links.get(step.node.id)
        if link is not None:
            mark = f"[green]feeds_into via {', '.join(link.via)}[/]" if link.status == "via" else LINK_MARKS[link.status]
            c.print(f"     | {mark}")
    _marked(c, ("blue", "prerequisite", r.prerequisites,
                lambda p: f"{_name(p.node)} [dim](for {', '.join(p.needed_by)})[/]"),
            ("green", "alternative", r.alternatives,
             lambda a: f"{_name(a.node)} [dim]instead of {escape(a.for_step)}[/]"),
            ("yellow", "warning", r.warnings, escape))


def _similar(c: Console, r: Any) -> None:
    rows = [(i, f"{x.score:.3f}", f"{x.jaccard:.3f}", int(x.type_match), f"{x.name_overlap:.2f}", x.node.id)
            for i, x in enumerate(r.results, 1)]
    c.print(f"Similar to {_name(r.node)}")
    c.print(table(None, ["#", "score", "jaccard", "type", "name", "node"], rows) if rows else "No results.")


def _alternatives(c: Console, r: Any) -> None:
    c.print(f"Alternatives to {_name(r.node)}")
    for a in r.explicit:
        c.print(f"  [green]{a.edge_type}[/] {_name(a.node)}")
    for x in r.structural:
        c.print(f"  [dim]similar {x.score:.2f}[/] {_name(x.node)}")
    _marked(c, ("red", "conflicts with", r.conflicts, _name))


def _why_not(c: Console, r: Any) -> None:
    c.print(f"{_name(r.node)}  [{STATUS_STYLE.get(r.status, 'white')}]{r.status}[/]")
    for reason in r.reasons:
        c.print(f"  - {escape(reason)}")
    _marked(c, ("yellow", "limitation", r.limitations,
                lambda lim: f"{_id(lim.node)} -> {_fixes(lim, 'no workaround', 'node-level workarounds')}"),
            ("blue", "requires", r.prerequisites, lambda p: f"{_id(p.node)} [dim](depth {p.depth})[/]"),
            ("red", "conflicts with", r.conflicts, _id), ("green", "alternative", r.alternatives, _id))


def _impact(c: Console, r: Any) -> None:
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


def _trace(c: Console, r: Any) -> None:
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


def _trace_rows(r: Any) -> list[tuple[Any, ...]]:
    line = f"{r.path[0].node.id} {_plain_path(r.path[1:])}".strip() if r.path else ""
    return [(r.found, "" if r.length is None else r.length, line)]


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


def _keyword(c: Console, r: Any) -> None:
    rows = [(i, h.score, h.node.id, h.node.type, ", ".join(h.terms)) for i, h in enumerate(r.results, 1)]
    c.print(table(None, ["#", "terms matched", "node", "type", "terms"], rows) if rows else "No results.")


def _boost(c: Console, r: Any) -> None:
    rows = [(i, f"{boost:.3f}", node.id, node.type) for i, (node, boost) in enumerate(r.scores, 1)]
    c.print(table(None, ["#", "boost", "node", "type"], rows) if rows else "No neighbours along those edges.")


OPERATORS = {"min": ">=", "max": "<=", "gt": ">", "lt": "<", "exact": "="}


def _filter_rows(r: Any) -> list[tuple[Any, ...]]:
    return [(m.node.id, m.node.type, *(f"{m.values[n]:.2f}" for n in r.filters)) for m in r.results]


def _filter(c: Console, r: Any) -> None:
    rows = _filter_rows(r)
    conditions = " and ".join(f"{name}{OPERATORS[op]}{bound:g}" for name, bounds in r.filters.items()
                              for op, bound in bounds.items())
    c.print(f"[bold]{r.total}[/] node(s) match {conditions}" + (f"; first {len(rows)}" if r.total > len(rows) else ""))
    if rows:
        c.print(table(None, ["node", "type", *r.filters], rows))
    _notes(c, r.notes)


VIEWS: dict[str, View] = {
    "intent_search": View(lambda c, r: _print_search(c, r), lambda r: [(h.rank, f"{h.score:.4f}", h.node.id, h.method)
                                                                      for h in r.nodes], ("rank", "score", "id", "method")),
    "want_to": View(_want_to, lambda r: [(f"{h.score:.4f}", h.node.id, h.node.name) for h in r.results],
                    ("score", "id", "name")),
    "can_it": View(_can_it, _can_it_rows, ("kind", "id")),
    "compose_for": View(_compose, lambda r: [(s.index, s.node.id, s.sub_goal) for s in r.steps], ("step", "id", "sub_goal")),
    "similar_to": View(_similar, lambda r: [(f"{x.score:.4f}", x.node.id) for x in r.results], ("score", "id")),
    "alternatives": View(_alternatives, lambda r: [(a.edge_type, a.node.id) for a in r.explicit]
                         + [("similar", x.node.id) for x in r.structural], ("relation", "id")),
    "why_not": View(_why_not, lambda r: [("reason", x) for x in r.reasons], ("kind", "text")),
    "impact_analysis": View(_impact, lambda r: [(x.depth, f"{x.risk:.4f}", x.node.id) for level in r.risk_by_depth.values()
                                                for x in level], ("depth", "risk", "id")),
    "trace_path": View(_trace, _trace_rows, ("found", "length", "path")),
    "explore_smart": View(lambda c, r: c.print(_tree(r)), lambda r: [(n.depth, f"{n.rank_score:.3f}", n.node.id,
                                                                     "hub" if n.is_hub else "")
                                                                    for level in r.levels for n in level.nodes],
                          ("depth", "rank_score", "id", "hub")),
    "keyword_match": View(_keyword, lambda r: [(h.score, h.node.id) for h in r.results], ("score", "id")),
    "edge_type_boost": View(_boost, lambda r: [(f"{b:.4f}", n.id) for n, b in r.scores], ("boost", "id")),
    "dimension_filter": View(_filter, _filter_rows, lambda r: ("node", "type", *r.filters)),
}


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


def _register() -> None:
    """A command per catalogue method, under its group (``dims filter``) or the top level."""
    for method in METHODS:
        *groups, _ = method.cli
        parent: click.Command = cli
        for name in groups:
            parent = cast(click.Group, parent).commands[name]
        cast(click.Group, parent).add_command(method_command(method, VIEWS[method.name]))


_register()


class TraceCommand(click.Command):
    """``kgos trace KG A B`` (the catalogue's trace_path), or ``kgos trace KG_A:A KG_B:B``: a path that
    may cross KGs over their cross-KG edges (``kgos kg link``; docs/learning.md). A db_id holds no
    ':', so two leading ``KG:NODE`` arguments are unambiguous."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if len(args) >= 2 and all(":" in a and not a.startswith("-") for a in args[:2]):
            ctx.meta["kgos_across"] = tuple(args[:2])
            args = ["-", *args]  # the KG argument's place: each ref names its own KG
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        across = ctx.meta.get("kgos_across")
        if across is None:
            return super().invoke(ctx)
        p = ctx.params
        return _trace_across(ctx, across, p.get("max_depth") or 5, p.get("json_", False), p.get("plain_", False))


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


def _cross_kg_trace() -> None:
    made = cli.commands["trace"]
    cli.commands["trace"] = TraceCommand(
        made.name, callback=made.callback, params=made.params,
        help=f"{made.help}\n\nWith two KG:NODE arguments (kgos trace demo:A finance:B) the path may cross KGs "
             "over their cross-KG edges (kgos kg link).")


_cross_kg_trace()
