"""The ``kgos`` command: a thin shell over the library. Each command calls one library function and
turns a ``KGOSError`` into a one-line message on stderr and exit code 1.

Subcommands load lazily (as llm and datasette do): ``COMMANDS`` names the module that registers each
top-level command, imported only when that command runs or shows its help, so ``kgos --help`` and
``kgos --version`` import no numpy, scipy, pydantic or query layer.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

import click

from .. import __version__
from ..errors import KGOSError

if TYPE_CHECKING:
    from .output import Output


# command -> (the module of kgos.cli that registers it, the line ``kgos --help`` shows for it: the first
# sentence of its help, which tests/test_cli.py checks against the loaded command's own)
COMMANDS: dict[str, tuple[str, str]] = {
    "alternatives": ("methods", (
        "Alternatives to a node: declared ones (alternative_to, similar_to edges), then structurally similar "
        "nodes, and what conflicts with it."
    )),
    "analyze": ("analyze", "Graph analytics: critical components, bottlenecks, communities and gaps."),
    "boost": ("methods", (
        "Neighbours of seed nodes scored +0.5 along outgoing and +0.3 along incoming edges of the given "
        "types."
    )),
    "can-it": ("methods", (
        "Can the KG's subject do a capability? yes / yes_with_limitations / no / unknown, with the "
        "limitations, workarounds and prerequisites."
    )),
    "compose": ("methods", (
        "Plan a multi-step goal: steps validated by feeds_into / requires edges, missing prerequisites, "
        "conflicts (conflicts_with) and alternatives."
    )),
    "demo": ("demo", (
        "Load the demo KGs `demo` (LLM API cookbook) and `finance`, and their experts, into the workspace "
        "(safe to run again; conversations are kept)."
    )),
    "dims": ("methods", "Semantic dimensions: the 56-dimension catalog, node values, filters and auto-extraction."),
    "embed": ("search", (  # search.py adds `embed run` to the group embed.py makes
        "Embed a KG's nodes (`kgos embed KG`, short for `kgos embed run KG`), keep several models side by "
        "side (add, models), benchmark models and projections (bench) and compare models on probes (compare)."
    )),
    "eval": ("evaluate", (
        "Evaluate DB_ID's search on PROBES (.jsonl or .jsonl.gz): strict and lenient Recall@1/5/10, MRR@10 "
        "and nDCG@10, by probe level and by intent, with latency."
    )),
    "expert": ("expert", "Expert agents: a KG + persona + retrieval config + playbooks, answering with citations."),
    "feedback": ("expert", (
        "Vote on an expert's answer: TURN_ID up|down (the turn id a chat prints, or a /v1 completion id)."
    )),
    "gaps": ("expert", (
        "What DB_ID's experts failed to answer, and why: thumbs-down turns, answers that found nothing, and "
        "questions off the KG, clustered by topic."
    )),
    "explore": ("methods", (
        "A node's neighbourhood level by level (BFS), each level ranked by centrality and edge diversity, "
        "hubs marked."
    )),
    "impact": ("methods", (
        "What changing a node touches: breadth-first over its edges (forward = what it points to, backward = "
        "what points to it), each reached node with its depth and risk = 1/depth x edge weight x criticality."
    )),
    "ingest": ("ingest", "Build or update DB_ID from folders and files (code, configs, documents)."),
    "intent": ("methods", (
        "Classify QUERY into the 14 KG-OS intent categories and show the methods it routes to; with --kg, run"
        " the full intent_search."
    )),
    "intent-search": ("methods", (
        "Classify the query into the 14 intent categories, route it to the query methods they call for "
        "(want_to, can_it, compose_for...) and merge with hybrid search."
    )),
    "keyword": ("methods", "Nodes whose name, type or properties contain the query's terms."),
    "kg": ("kg", "Manage the knowledge graphs of the workspace."),
    "mcp": ("mcp", "Serve the KGs, query methods, experts and memory as an MCP server over stdio."),
    "memory": ("memory", "Agent memory: store notes and chat turns, grow a KG from them, get context back."),
    "plugins": ("plugins", (
        "List the installed backends of every family, each with its source (built-in, or the package that "
        "adds it through the `kgos` entry points; docs/plugins.md)."
    )),
    "predict": ("predict", "Link prediction: find the edges a KG is missing and review them before they enter it."),
    "research": ("research", (
        "Research a question over a corpus folder and KGs, looping until the evidence converges."
    )),
    "search": ("search", "Search one KG (or several, comma-separated) for QUERY, by intent-adaptive hybrid scoring."),
    "serve": ("serve", (
        "Serve the HTTP API: KGs, search and query methods under /api/kg, the spec's /api/kgos and "
        "/api/experts routes, OpenAPI at /openapi.json and interactive docs at /docs."
    )),
    "settings": ("settings", (
        "Show every KGOS_* setting in effect: its value (secrets masked) and where it came from (default or "
        "environment; docs/settings.md)."
    )),
    "similar": ("methods", (
        "Nodes structurally similar to a node (0.70 neighbour Jaccard + 0.20 same type + 0.10 name overlap)."
    )),
    "trace": ("methods", (
        "The shortest path between two nodes, each step with its edge type and direction; found is false when"
        " none exists within max_depth."
    )),
    "tune": ("evaluate", (
        "Search retrieval weights per intent on PROBES with k-fold cross-validation; report the held-out "
        "MRR@10 of the default and of the tuned weights, and optionally save them."
    )),
    "want-to": ("methods", (
        "Nodes that help reach a goal (\"reduce my API costs\"): goal keywords, then nodes linked to the goal "
        "by enables / optimizes / solves / contributes_to edges."
    )),
    "why-not": ("methods", "What blocks a node: limitations without workarounds, blocked prerequisites, conflicts."),
}


class KgosGroup(click.Group):
    """A group whose commands load on first use (``COMMANDS``) and report library errors cleanly
    instead of with a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"{__name__}.{COMMANDS[cmd_name][0]}")  # registers it on ``cli``
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``COMMANDS``, importing none of them."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        # a stand-in command shortens the line exactly as the real one would its help
        rows = [(n, (self.commands.get(n) or click.Command(n, help=COMMANDS[n][1])).get_short_help_str(limit))
                for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        ceiling = None
        try:
            ceiling = _memory_ceiling()  # inside: a bad KGOS_* value is one line on stderr, not a traceback
            return super().invoke(ctx)
        except MemoryError:  # KGOS_MAX_MEMORY_MB: the command stops, the KG stays as it was
            click.echo(f"Error: out of memory: the command needed more than KGOS_MAX_MEMORY_MB={ceiling} MB; "
                       "raise the ceiling or give it a smaller input", err=True)
            sys.exit(1)
        except KGOSError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:  # a path the user gave that cannot be read or written: no traceback for that
            click.echo(f"Error: {_describe(exc)}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)


def _memory_ceiling() -> int | None:
    """Cap this process's private memory at ``KGOS_MAX_MEMORY_MB`` when it is set (docs/limits.md)."""
    from ..settings import current

    mb = current().max_memory_mb
    if mb is None:
        return None
    from ..worker import cap_memory
    cap_memory(mb)
    return mb


def _describe(exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def _set_header(ctx: click.Context, _param: click.Parameter, value: bool | None) -> None:
    if value is not None:  # given after the command: overrides the one before it
        ctx.find_root().obj["header"] = value


HEADER_HELP = "With --plain: a first row naming the columns (default: no header, rows only)."


def output_options(f: Any) -> Any:
    """``--json`` / ``--plain`` / ``--header`` on every command (they may also be given before the command)."""
    f = click.option("--header/--no-header", default=None, expose_value=False, callback=_set_header,
                     help=HEADER_HELP)(f)
    f = click.option("--plain", "plain_", is_flag=True, help="Tab-separated output for pipes.")(f)
    return click.option("--json", "json_", is_flag=True, help="One JSON document on stdout.")(f)


def out(ctx: click.Context, json_: bool = False, plain_: bool = False) -> Output:
    root = ctx.find_root().obj
    from .output import Output  # rich: loaded by the commands that print, not by ``kgos --help``
    return Output(json=json_ or root["json"], plain=plain_ or root["plain"], header=root.get("header", False))


def workspace(ctx: click.Context) -> Any:
    from ..kg import Workspace
    root = ctx.find_root().obj
    if "ws" not in root:
        root["ws"] = Workspace(root["home"], database_url=root.get("database_url"))
        ctx.find_root().call_on_close(root["ws"].close)
    return root["ws"]


@click.group(cls=KgosGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False), envvar="KGOS_HOME",
              help="Workspace folder (default: $KGOS_HOME or ~/.kgos).")
@click.option("--database-url", envvar="KGOS_DATABASE_URL", metavar="URL",
              help="postgresql://... : create and list KGs in this PostgreSQL database (default: "
                   "$KGOS_DATABASE_URL; docs/postgres.md).")
@click.option("--json", "json_", is_flag=True, help="Machine output: one JSON document on stdout.")
@click.option("--plain", "plain_", is_flag=True, help="Plain tab-separated output for pipes.")
@click.option("--header/--no-header", default=False, help=HEADER_HELP)
@click.version_option(version=__version__, prog_name="kgos")  # not package metadata: 0.4 s to read
@click.pass_context
def cli(ctx: click.Context, home: str | None, database_url: str | None, json_: bool, plain_: bool,
        header: bool) -> None:
    """KG-OS: knowledge graphs in SQLite, queried by intent.

    Start with `kgos demo`, then try the commands it prints.
    """
    ctx.obj = {"home": home, "json": json_, "plain": plain_, "header": header, "database_url": database_url}


def main() -> None:
    cli(prog_name="kgos")


def load_all() -> None:
    """Import every command module (what tests and docs generators that walk ``cli.commands`` need)."""
    for module in sorted({m for m, _ in COMMANDS.values()}):
        importlib.import_module(f"{__name__}.{module}")
