"""``kgos settings``: the effective ``KGOS_*`` settings, where each value came from, secrets masked."""

from __future__ import annotations

from typing import Any

import click

from . import cli, out, output_options
from .output import table


@cli.command("settings")
@output_options
@click.pass_context
def settings(ctx: click.Context, json_: bool, plain_: bool) -> None:
    """Show every KGOS_* setting in effect: its value (secrets masked) and where it came from (default or
    environment; docs/settings.md)."""
    from ..settings import current

    described = current().describe()
    rows = [(r["env"], "" if r["value"] is None else str(r["value"]), r["source"]) for r in described]

    def human(c: Any) -> None:  # a rich Console
        c.print(table("Settings", ("variable", "value", "source"), rows))

    out(ctx, json_, plain_).emit({"settings": described}, human, lambda: rows, columns=("variable", "value", "source"))
