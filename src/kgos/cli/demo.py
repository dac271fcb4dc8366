"""``kgos demo``: load the demo KGs and show what to try next."""

from __future__ import annotations

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


@cli.command("demo")
@click.option("--embedder", default="default", show_default=True,
              help="Embedder for the demo KGs' vectors ('none' to skip).")
@output_options
@click.pass_context
def demo(ctx: click.Context, embedder: str, json_: bool, plain_: bool) -> None:
    """Load the demo KGs `demo` (LLM API cookbook) and `finance`, and their experts, into the
    workspace (idempotent; conversations are kept)."""
    from ..data import load_demo
    reports = load_demo(workspace(ctx), None if embedder == "none" else embedder)
    rows = [(r.db_id, f"{r.nodes:,}", f"{r.edges:,}") for r in reports]

    def human(c: object) -> None:
        c.print(table("Loaded demo KGs", ["db_id", "nodes", "edges"], rows))  # type: ignore[attr-defined]
        c.print(table("Try next", ["command", "shows"], NEXT_STEPS))  # type: ignore[attr-defined]
    out(ctx, json_, plain_).emit({"loaded": reports, "next": [cmd for cmd, _ in NEXT_STEPS]}, human,
                                 lambda: [(r.db_id, r.nodes, r.edges) for r in reports], columns=("db_id", "nodes", "edges"))
