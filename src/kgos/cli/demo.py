"""``kgos demo``: load the demo KGs and show what to try next."""

from __future__ import annotations

import sys

import click

from . import cli, out, output_options, workspace
from .output import table

NEXT_STEPS = [
    ('kgos search demo "I want to reduce my API costs" --explain', "hybrid search, every score explained"),
    ("kgos kg list", "the KGs in your workspace"),
    ('kgos expert chat demo "How do I reduce my API costs?"', "the demo expert answers, citing graph nodes"),
    ("kgos serve", "the HTTP API on http://127.0.0.1:8765 (docs at /docs)"),
    ("kgos kg stats demo", "what the LLM-API cookbook KG holds"),
    ("kgos kg validate demo", "the 12 structural quality rules"),
    ("kgos kg export demo demo.graphml", "open it in Gephi, Cytoscape or networkx"),
]


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


@cli.command("demo")
@click.option("--embedder", default="default", show_default=True,
              help="Embedder for the demo KGs' vectors ('none' to skip).")
@click.option("--reset", is_flag=True, help="Restore the original demo KGs even if you changed them.")
@output_options
@click.pass_context
def demo(ctx: click.Context, embedder: str, reset: bool, json_: bool, plain_: bool) -> None:
    """Load the demo KGs `demo` (LLM API cookbook) and `finance`, and their experts, into the
    workspace (safe to run again; conversations are kept). Demo KGs you changed are left alone:
    in a terminal you are asked, otherwise it stops; --reset restores them."""
    from ..data import changed_demo_kgs, load_demo
    ws, o = workspace(ctx), out(ctx, json_, plain_)
    changed = [] if reset else changed_demo_kgs(ws)
    if changed and o.human and stdin_is_terminal():
        reset = click.confirm(f"You changed the demo KG(s) {', '.join(changed)}. Replace them with the "
                              "originals (your changes are lost)?", default=False, err=True)
        if not reset:
            raise click.ClickException("nothing was loaded; your demo KGs are unchanged")
    reports = load_demo(ws, None if embedder == "none" else embedder, reset=reset)
    rows = [(r.db_id, f"{r.nodes:,}", f"{r.edges:,}") for r in reports]

    def human(c: object) -> None:
        c.print(table("Loaded demo KGs", ["db_id", "nodes", "edges"], rows))  # type: ignore[attr-defined]
        c.print(table("Try next", ["command", "shows"], NEXT_STEPS))  # type: ignore[attr-defined]
    o.emit({"loaded": reports, "next": [cmd for cmd, _ in NEXT_STEPS]}, human,
           lambda: [(r.db_id, r.nodes, r.edges) for r in reports], columns=("db_id", "nodes", "edges"))
