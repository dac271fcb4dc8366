"""``kgos ingest KG PATH...``: build or update a KG from code and documents (kgos.ingest)."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..errors import InvalidArgument
from ..ingest import IngestOptions, IngestReport, ingest, watch
from . import cli, out, output_options, workspace
from .output import table


def _tiers(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(t) for t in value.split(",") if t.strip())
    except ValueError:
        raise InvalidArgument(f"--tiers takes numbers separated by commas (e.g. 1,2), not {value!r}") from None


@cli.command("ingest")
@click.argument("db_id")
@click.argument("paths", nargs=-1, required=True)
@click.option("--include", multiple=True, metavar="GLOB", help="Only files matching GLOB (repeatable; e.g. '*.py').")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Leave out files matching GLOB (repeatable; e.g. 'tests/*').")
@click.option("--tiers", default="1,2", show_default=True,
              help="1 structure, 2 patterns and cue phrases, 3 LLM concepts (needs --provider).")
@click.option("--provider", help="LLM for tier 3 (e.g. openai:gpt-4o-mini, anthropic, ollama:MODEL).")
@click.option("--max-llm-calls", default=50, show_default=True, help="Tier 3: at most this many LLM calls per run.")
@click.option("--llm-write", is_flag=True,
              help="Tier 3: write its concepts into the KG; by default they wait in the review queue "
                   "(`kgos predict list KG --origin ingest.llm`).")
@click.option("--max-bytes", default=5_000_000, show_default=True,
              help="Skip files larger than this (at most 10,000,000: parsing takes ~150x a file in memory).")
@click.option("--keep-missing", is_flag=True, help="Keep the nodes of files that disappeared from a folder.")
@click.option("--no-embed", is_flag=True, help="Do not embed after the ingest.")
@click.option("--no-dims", is_flag=True, help="Do not infer dimensions after the ingest.")
@click.option("--embedder", default="default", show_default=True, help="The model search reaches.")
@click.option("--watch", "watch_", is_flag=True,
              help="Keep running: re-ingest whenever a file changes (Ctrl-C stops); with --json, one document per run.")
@click.option("--interval", default=2.0, show_default=True, help="With --watch: seconds between checks.")
@output_options
@click.pass_context
def ingest_cmd(ctx: click.Context, db_id: str, paths: tuple[str, ...], include: tuple[str, ...],
               exclude: tuple[str, ...], tiers: str, provider: str | None, max_llm_calls: int, llm_write: bool,
               max_bytes: int,
               keep_missing: bool, no_embed: bool, no_dims: bool, embedder: str, watch_: bool, interval: float,
               json_: bool, plain_: bool) -> None:
    """Build or update DB_ID from folders and files (code, configs, documents).

    Python (ast), JavaScript/TypeScript, Go and Rust (tree-sitter, kgos[ingest-code]), JSON/YAML/TOML,
    Markdown, HTML, PDF and text (kgos[ingest-docs]). A re-run reads only files whose content changed and
    replaces exactly their nodes and edges, in one transaction. Files that cannot be read are skipped
    and listed with the reason. See docs/ingest.md.
    """
    options = IngestOptions(include, exclude, _tiers(tiers), max_bytes, not no_embed, embedder, not no_dims,
                            True, not keep_missing, max_llm_calls, not llm_write)
    chat = None
    if provider or 3 in options.tiers:
        from ..llm.registry import get_provider
        chat = get_provider(provider)
    o = out(ctx, json_, plain_)
    ws = workspace(ctx)
    if watch_:
        for report in watch(ws, db_id, list(paths), options, interval, chat):
            _emit(o, report)
        return
    with o.progress(f"ingest {db_id}") as update, o.meter(f"embed {db_id}", "nodes") as meter:
        report = ingest(ws, db_id, list(paths), options, chat, _progress(update, meter))
    _emit(o, report)


def _progress(update: Any, meter: Any) -> Any:
    """Phases as live counters; the embedding as a bar with ETA (its total is known)."""
    seen = {"embed": 0}

    def progress(phase: str, done: int, total: int) -> None:
        if phase == "embed":
            if not seen["embed"]:
                meter.total(total)
            meter.advance(done - seen["embed"])
            seen["embed"] = done
        elif update is not None:
            update(phase, done)
    return progress


def _emit(o: Any, report: IngestReport) -> None:
    o.emit(report, lambda c: _print(c, report),
           lambda: [(report.db_id, sum(report.files.values()), report.changed, report.unchanged, report.deleted,
                     len(report.skipped), sum(report.nodes.values()), sum(report.edges.values()))],
           columns=("db_id", "files", "changed", "unchanged", "deleted", "skipped", "nodes", "edges"))


def _print(c: Console, r: IngestReport) -> None:
    files = ", ".join(f"{n:,} {kind}" for kind, n in sorted(r.files.items())) or "none"
    c.print(f"Ingested into [bold]{r.db_id}[/]: files {files}; {r.changed:,} changed, {r.unchanged:,} unchanged, "
            f"{r.deleted:,} removed ({r.lines:,} lines read, tiers {','.join(map(str, r.tiers))})")
    w = r.writes
    c.print(f"Wrote {w.groups_written:,} files' output: {w.nodes_upserted:,} nodes, {w.edges_written:,} edges "
            f"(removed {w.nodes_deleted:,} nodes, {w.edges_deleted:,} edges)")
    if r.nodes:
        c.print(table("Nodes and edges by type", ("kind", "type", "count"),
                      [("node", t, n) for t, n in sorted(r.nodes.items(), key=lambda x: -x[1])]
                      + [("edge", t, n) for t, n in sorted(r.edges.items(), key=lambda x: -x[1])]))
    for s in r.skipped[:20]:
        c.print(f"  skipped {escape(s.path)}: {escape(s.reason)}")
    if len(r.skipped) > 20:
        c.print(f"  ... and {len(r.skipped) - 20:,} more skipped (--json lists all)")
    if r.validation:
        v = r.validation
        c.print(f"Validation: {'ok' if v['ok'] else 'ERRORS'} ({v['errors']} errors, {v['warnings']} warnings, {v['infos']} infos)")
    if r.embedding:
        c.print(f"Embedding: {escape(str(r.embedding.get('note') or r.embedding))}")
    for note in r.notes:
        c.print(escape(note))
    c.print("Seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in r.seconds.items()))


__all__ = ["ingest_cmd"]
