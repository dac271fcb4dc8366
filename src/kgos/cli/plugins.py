"""``kgos plugins``: the backends of every family (embedders, LLM providers, predictors, fusion
strategies, formats, ingest extractors, pipeline modules), each with its source: built-in, or the package that adds it."""

from __future__ import annotations

import json
from typing import Any

import click

from ..plugins import FAMILIES
from . import cli, out, output_options
from .output import table


def load_builtins() -> None:
    """Import each family's registry: importing one registers its built-in plugin (kgos.plugins)."""
    from .. import linkpred  # noqa: F401  (its modules' @register fill the built-in predictors)
    from ..embed import registry as _embed  # noqa: F401
    from ..ingest import ingestion as _ingest  # noqa: F401
    from ..llm import registry as _llm  # noqa: F401
    from ..pipeline import registry as _pipeline  # noqa: F401
    from ..research import fusion as _fusion  # noqa: F401
    from ..store import formats as _formats  # noqa: F401


@cli.command("plugins")
@click.option("--family", type=click.Choice(FAMILIES), help="List one family only.")
@click.option("--load", is_flag=True, help="Import every family's registry and list what it registers "
              "(slower; the built-ins are otherwise read from their catalogue).")
@click.option("--write-catalogue", is_flag=True, hidden=True, help="Rewrite kgos/plugins_builtin.json.")
@output_options
@click.pass_context
def plugins(ctx: click.Context, family: str | None, load: bool, write_catalogue: bool, json_: bool,
            plain_: bool) -> None:
    """List the installed backends of every family, each with its source (built-in, or the package that
    adds it through the `kgos` entry points; docs/plugins.md)."""
    from .. import plugins as registry

    if load or write_catalogue:
        load_builtins()
    if write_catalogue:
        registry.CATALOGUE.write_text(json.dumps(registry.builtin_catalogue(), indent=1) + "\n", encoding="utf-8")
    found = registry.installed() if load else registry.listing()
    rows = [(e.family, e.name, e.source) for e in found.entries if family in (None, e.family)]
    data = found.to_dict()
    if family:
        data["families"] = {family: data["families"][family]}

    def human(c: Any) -> None:  # a rich Console
        c.print(table("Installed backends", ("family", "name", "source"), rows))
        for name, error in found.errors.items():
            c.print(f"[red]{name}[/]: {error}")

    out(ctx, json_, plain_).emit(data, human, lambda: rows, columns=("family", "name", "source"))
