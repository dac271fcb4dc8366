"""The ``kgos`` command: a thin shell over the library. Each command calls one library function and
turns a ``KGOSError`` into a one-line message on stderr and exit code 1."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..errors import KGOSError
from .output import Output


class KgosGroup(click.Group):
    """A group whose commands report library errors cleanly instead of with a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        ceiling = _memory_ceiling()
        try:
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
    raw = os.environ.get("KGOS_MAX_MEMORY_MB", "").strip()
    if not raw.isdigit() or int(raw) <= 0:
        return None
    from ..api.worker import cap_memory
    cap_memory(int(raw))
    return int(raw)


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
@click.version_option(package_name="kgos")
@click.pass_context
def cli(ctx: click.Context, home: str | None, database_url: str | None, json_: bool, plain_: bool,
        header: bool) -> None:
    """KG-OS: knowledge graphs in SQLite, queried by intent.

    Start with `kgos demo`, then try the commands it prints.
    """
    ctx.obj = {"home": home, "json": json_, "plain": plain_, "header": header, "database_url": database_url}


def main() -> None:
    cli(prog_name="kgos")


from . import demo, evaluate, expert, ingest, kg, mcp, memory, methods, predict, research, search, serve  # noqa: F401  (importing registers the commands)
