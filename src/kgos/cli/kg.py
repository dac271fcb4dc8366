"""``kgos kg ...``: create, import, export, attach, list, inspect, validate and delete KGs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..errors import InvalidArgument, KGOSError
from . import cli, out, output_options, workspace
from .output import table, to_jsonable


@cli.group("kg")
def kg_group() -> None:
    """Manage the knowledge graphs of the workspace."""


@kg_group.command("create")
@click.argument("db_id")
@click.option("--name", help="Display name (default: the db_id).")
@click.option("--description", default="", help="One paragraph about the KG.")
@output_options
@click.pass_context
def create(ctx: click.Context, db_id: str, name: str | None, description: str, json_: bool, plain_: bool) -> None:
    """Create an empty native KG named DB_ID."""
    kg = workspace(ctx).create(db_id, name=name, description=description)
    info = workspace(ctx).info(kg.db_id)
    out(ctx, json_, plain_).emit(info, lambda c: c.print(f"Created KG [bold]{db_id}[/] at {info.path}"),
                                 lambda: [(info.db_id, info.path)], columns=("db_id", "path"))


# not a click.Choice: a plugin may add formats (docs/plugins.md); an unknown one is a clean error
FORMAT_HELP = ("File format: nodelink, jsonl, csv, graphml or a plugin's (`kgos plugins --family formats`; "
               "default: from the file name).")


@kg_group.command("import")
@click.argument("db_id")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", metavar="FORMAT", help=FORMAT_HELP)
@click.option("--merge", is_flag=True, help="Add to an existing KG (upsert nodes and edges).")
@click.option("--replace", is_flag=True, help="Replace an existing KG with the file's content.")
@click.option("--skip-dangling", is_flag=True, help="Drop edges whose source or target is missing (counted).")
@click.option("--skip-invalid", is_flag=True,
              help="Leave out records that fail their checks (counted, first few shown) instead of failing.")
@click.option("--no-embed", is_flag=True, help="Do not embed: search by text and graph only until `kgos embed`.")
@click.option("--no-dims", is_flag=True,
              help="Do not infer dimension values (`kgos dims auto` does it later).")
@click.option("--fast-only", is_flag=True,
              help="Embed with the fast tier only (seconds); `kgos embed DB_ID` fills in the default model later.")
@click.option("--embedder", default="default", show_default=True,
              help="The model search reaches (default, minilm, hash[:dims], openai:MODEL, ...).")
@output_options
@click.pass_context
def import_(ctx: click.Context, db_id: str, path: Path, fmt: str | None, merge: bool, replace: bool,
            skip_dangling: bool, skip_invalid: bool, no_embed: bool, no_dims: bool, fast_only: bool, embedder: str,
            json_: bool, plain_: bool) -> None:
    """Import PATH (node-link .json[.gz], .jsonl[.gz], .graphml[.gz] or a CSV folder) into DB_ID.

    The import is all or nothing: on any error the KG is left exactly as it was. A KG without vectors
    is then embedded: first with the fast tier (searchable by meaning within seconds), then with the
    default model filling in behind it (progress and ETA; other processes can search meanwhile).
    Interrupt the fill-in at any time: `kgos embed DB_ID` continues where it stopped.
    """
    if merge and replace:
        raise click.UsageError("choose one of --merge and --replace")
    mode = "merge" if merge else "replace" if replace else "create"
    o = out(ctx, json_, plain_)
    with o.progress(f"import {db_id}") as progress:
        report = workspace(ctx).import_file(db_id, path, fmt, mode, skip_dangling, progress, skip_invalid,
                                            dimensions=not no_dims)
    o.emit(report, lambda c: _print_import(c, report), lambda: [(report.db_id, report.nodes, report.edges)], columns=("db_id", "nodes", "edges"))
    kg = workspace(ctx).kg(db_id)
    if not no_embed:
        _build_fast_tier(o, embedder)
    from ..kg.embedding import embed_after_import  # the facade and search stack: not for `kgos kg --help`
    done = embed_after_import(kg, embedder, enabled=not no_embed)
    if done.error is not None:  # the import stands; search runs on text and graph until `kgos embed`
        o.note(f"Imported, but not embedded ({done.error}); search uses text and graph until `kgos embed {db_id}`.")
    if (fast := done.fast) is None:
        return
    o.note(f"Searchable by meaning: {fast.embedded:,} nodes embedded with {fast.model} in {fast.seconds:.1f} s")
    if fast_only or not done.fill_in:
        return
    try:
        with o.meter(f"fill-in {db_id}", "nodes") as meter:
            full = kg.embed(progress=meter.advance, total=meter.total)
    except KeyboardInterrupt:  # the committed vectors stay; search keeps the fast tier until the end
        o.note(f"Fill-in stopped; search uses {fast.model} meanwhile. `kgos embed {db_id}` continues it.")
        raise
    o.note(f"Full quality: {full.embedded:,} nodes embedded with {full.model} in {full.seconds:.1f} s")


def _build_fast_tier(o: Any, embedder: str) -> None:
    """An install without the shipped fast tier distills it once per KGOS_HOME (about 91 s): with a bar
    and an ETA, rather than inside a silent first embedding."""
    from ..kg.embedding import build_fast_tier, fast_tier_unbuilt
    if not fast_tier_unbuilt(embedder):
        return
    o.note("Building the fast embedding tier (once for this workspace; later imports are searchable in seconds)")
    with o.meter("fast tier", "tokens") as meter:
        seen: list[int] = []  # tokens done so far; empty until the total is known

        def progress(done: int, total: int) -> None:
            if not seen:
                meter.total(total)
                seen.append(0)
            meter.advance(done - seen[0])
            seen[0] = done
        build_fast_tier(progress)


def _print_import(c: Console, r: Any) -> None:
    rate = f"{r.nodes / r.seconds:,.0f} nodes/s" if r.seconds > 0 else ""
    c.print(f"Imported [bold]{r.nodes:,}[/] nodes and [bold]{r.edges:,}[/] edges into "
            f"[bold]{r.db_id}[/] ({r.mode}, {r.format}) in {r.seconds:.2f} s {rate}")
    if r.skipped_dangling:
        c.print(f"Skipped {r.skipped_dangling:,} edges whose source or target does not exist.")
    if r.skipped_invalid:
        c.print(f"Left out {r.skipped_invalid:,} invalid records (--skip-invalid), for example:")
        for example in r.invalid_examples:
            c.print(f"  {escape(example)}")
    if r.duplicate_edges:
        c.print(f"Collapsed {r.duplicate_edges:,} duplicate edges (same source, target and type).")
    if r.dimensions and r.dimensions["values"]:
        words = "structure and word rules" if r.dimensions["word_rules"] else "structure rules only"
        c.print(f"Inferred {r.dimensions['values']:,} dimension values on {r.dimensions['nodes_written']:,} nodes "
                f"({words}; `kgos dims drift {escape(r.db_id)}` watches them).")


@kg_group.command("export")
@click.argument("db_id")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", metavar="FORMAT", help=FORMAT_HELP)
@output_options
@click.pass_context
def export(ctx: click.Context, db_id: str, path: Path, fmt: str | None, json_: bool, plain_: bool) -> None:
    """Export DB_ID to PATH (format from the name: .json[.gz], .jsonl[.gz], .graphml, folder for CSV)."""
    o = out(ctx, json_, plain_)
    with o.progress(f"export {db_id}") as progress:
        written = workspace(ctx).export(db_id, path, fmt, progress)
    o.emit({"db_id": db_id, "path": str(written)}, lambda c: c.print(f"Exported [bold]{db_id}[/] to {written}"),
           lambda: [(db_id, written)], columns=("db_id", "path"))


@kg_group.command("attach")
@click.argument("db_id")
@click.argument("path")
@click.option("--profile", help="Schema profile (default: detected): unified, standard, claude, hal, "
                                "from_node, entities, memory or heuristic.")
@click.option("--writable", is_flag=True, help="Allow KG-OS to write to the file (read-only by default).")
@click.option("--vectors-model", metavar="MODEL",
              help="The KG-OS embedder the file's own vectors were made with (default: the model the file "
                   "names, when KG-OS knows it): they are read instead of embedding the KG again.")
@output_options
@click.pass_context
def attach(ctx: click.Context, db_id: str, path: str, profile: str | None, writable: bool,
           vectors_model: str | None, json_: bool, plain_: bool) -> None:
    """Attach an existing SQLite KG file of another schema as DB_ID (the file stays where it is), or a
    KG of a PostgreSQL database: PATH = postgresql://user@host/db#name (name defaults to DB_ID)."""
    ws = workspace(ctx)
    ws.attach(db_id, path if path.startswith(("postgresql://", "postgres://")) else Path(path),
              profile=profile, writable=writable)
    info = ws.info(db_id)
    mode = "read-only" if info.read_only else "writable"
    kg = ws.kg(db_id)
    detection = kg.store.detection() if hasattr(kg.store, "detection") else []  # how a foreign file was read
    try:
        detection += _adopted(kg, vectors_model, ws.cache_dir)
    except KGOSError:
        ws.delete(db_id)  # detaches (the file is left alone): a failed attach leaves nothing behind
        raise

    def human(c: Any) -> None:
        c.print(f"Attached [bold]{db_id}[/] ({info.profile} profile, {mode}): {info.nodes:,} nodes, {info.edges:,} edges")
        for line in detection:
            c.print(f"  {escape(line)}")

    out(ctx, json_, plain_).emit({**to_jsonable(info), "detection": detection}, human,
                                 lambda: [(db_id, info.profile, info.nodes, info.edges)],
                                 columns=("db_id", "profile", "nodes", "edges"))


def _adopted(kg: Any, vectors_model: str | None, cache_dir: Path) -> list[str]:
    """Read the file's own vectors when their model is known or named; the line saying what happened."""
    from ..embed.adopt import adopt_vectors, known_model
    tables = kg.store.vector_tables() if hasattr(kg.store, "vector_tables") else []
    if not tables:
        if vectors_model:
            raise InvalidArgument(f"--vectors-model {vectors_model}: the file has no vector table to read")
        return []
    model = vectors_model or known_model(kg.store)
    if model is None:
        return ["vectors not read: KG-OS does not know the file's model; name it with --vectors-model MODEL"]
    stored = {m for t in tables for m in t.models}
    r = adopt_vectors(kg.store, model, model if model in stored else None, cache_dir)
    embedded = kg.embed(r.model).embedded  # the nodes the file had no vector for; then search uses the model
    return [(f"vectors read as {r.model}: {r.adopted:,} nodes ({r.skipped:,} ids not in the KG skipped), "
            f"{embedded:,} embedded")]


@kg_group.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--to", "backend", type=click.Choice(["native", "postgres"]),
              help="Backend of the copy (default: postgres with a database URL, else native).")
@click.option("--to-url", "to_url", metavar="URL",
              help="The PostgreSQL database of the copy (default: --database-url); attached as DST.")
@output_options
@click.pass_context
def copy(ctx: click.Context, src: str, dst: str, backend: str | None, to_url: str | None,
         json_: bool, plain_: bool) -> None:
    """Copy KG SRC into a new KG DST, e.g. from a SQLite file into PostgreSQL: every node and edge with its
    id, timestamps and properties, the settings and the vectors."""
    report = workspace(ctx).copy(src, dst, backend=backend, database_url=to_url)
    info = workspace(ctx).info(dst)
    out(ctx, json_, plain_).emit(report, lambda c: c.print(
        f"Copied [bold]{src}[/] to [bold]{dst}[/] ({info.kind}): {report.nodes:,} nodes, {report.edges:,} edges "
        f"in {report.seconds:.1f} s"), lambda: [(dst, info.kind, report.nodes, report.edges)],
        columns=("db_id", "kind", "nodes", "edges"))


@kg_group.command("share-workspace")
@output_options
@click.pass_context
def share_workspace(ctx: click.Context, json_: bool, plain_: bool) -> None:
    """Copy this home's experts, conversations, feedback, A/B tests, links, memory items and research runs
    from workspace.db into the --database-url database, where every server shares them (once, for a
    workspace used with SQLite before; rows already there are kept)."""
    copied = workspace(ctx).share_local()
    rows = [(table, n) for table, n in copied.items()]
    out(ctx, json_, plain_).emit(copied, lambda c: c.print(table(None, ["table", "rows copied"],
                                                                 [(t, f"{n:,}") for t, n in rows])),
                                 lambda: rows, columns=("table", "rows"))


@kg_group.command("list")
@output_options
@click.pass_context
def list_(ctx: click.Context, json_: bool, plain_: bool) -> None:
    """List the KGs of the workspace."""
    infos = workspace(ctx).list()
    rows = [(i.db_id, i.kind, i.profile, f"{i.nodes:,}", f"{i.edges:,}", i.name) for i in infos]
    o = out(ctx, json_, plain_)
    o.emit(infos, lambda c: c.print(table(None, ["db_id", "kind", "profile", "nodes", "edges", "name"], rows)
                                    if infos else "No KGs yet. Try: kgos demo"),
           lambda: [(i.db_id, i.kind, i.profile, i.nodes, i.edges) for i in infos], columns=("db_id", "kind", "profile", "nodes", "edges"))


@kg_group.command("stats")
@click.argument("db_id")
@output_options
@click.pass_context
def stats(ctx: click.Context, db_id: str, json_: bool, plain_: bool) -> None:
    """Counts by type, degree summary, orphans and connected components of DB_ID."""
    s = workspace(ctx).kg(db_id).stats()
    d = s.to_dict()
    out(ctx, json_, plain_).emit(s, lambda c: _print_stats(c, db_id, d),
                                 lambda: [(k, v) for k, v in d.items() if not isinstance(v, dict)], columns=("measure", "value"))


def _print_stats(c: Console, db_id: str, d: dict[str, Any]) -> None:
    scalars = [(k, f"{v:,}" if isinstance(v, int) else f"{v:.4g}" if isinstance(v, float) else v)
               for k, v in d.items() if not isinstance(v, dict)]
    c.print(table(f"KG {db_id}", ["measure", "value"], scalars))
    for key in ("node_types", "edge_types"):
        c.print(table(key.replace("_", " "), ["type", "count"], [(t, f"{n:,}") for t, n in d[key].items()]))
    degrees = {k: v for k, v in d.items() if isinstance(v, dict) and k not in ("node_types", "edge_types")}
    for key, summary in degrees.items():
        c.print(table(key.replace("_", " "), list(summary), [[f"{v:.4g}" if isinstance(v, float) else v
                                                              for v in summary.values()]]))


@kg_group.command("validate")
@click.argument("db_id")
@click.option("--max-examples", default=20, show_default=True, help="Examples listed per failed rule.")
@output_options
@click.pass_context
def validate(ctx: click.Context, db_id: str, max_examples: int, json_: bool, plain_: bool) -> None:
    """Check DB_ID against the 12 validation rules; exit 1 if any ERROR is found."""
    report = workspace(ctx).kg(db_id).validate(max_examples=max_examples)
    out(ctx, json_, plain_).emit(report, lambda c: _print_report(c, report),
                                 lambda: [(i.rule, i.severity, i.count, i.title) for i in report.issues], columns=("rule", "severity", "count", "check"))
    if report.errors:
        ctx.exit(1)


def _print_report(c: Console, report: Any) -> None:
    rows = [(i.rule, i.severity, f"{i.count:,}", i.title, ", ".join(i.examples[:5])) for i in report.issues]
    if rows:
        c.print(table(f"Validation of {report.db_id}", ["rule", "severity", "count", "check", "examples"], rows))
    verdict = "[green]no errors[/]" if report.ok else f"[red]{report.errors} rule(s) with errors[/]"
    c.print(f"{verdict}, {report.warnings} warning(s), {report.infos} info(s)")


@kg_group.command("delete")
@click.argument("db_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@output_options
@click.pass_context
def delete(ctx: click.Context, db_id: str, yes: bool, json_: bool, plain_: bool) -> None:
    """Delete a native KG (its file), or detach an attached one (its file is kept)."""
    ws = workspace(ctx)
    if not ws.exists(db_id):
        ws.kg(db_id)  # raises KGNotFound with the list of known KGs
    if not yes and not click.confirm(f"Delete KG '{db_id}'?", default=False, err=True):
        raise click.Abort()
    what = ws.delete(db_id)
    out(ctx, json_, plain_).emit({"db_id": db_id, "result": what},
                                 lambda c: c.print(f"KG [bold]{db_id}[/] {what}."), lambda: [(db_id, what)], columns=("db_id", "result"))


# -- cross-KG edges ------------------------------------------------------------------------------------------
@kg_group.command("link")
@click.argument("source", metavar="KG_A:NODE")
@click.argument("target", metavar="KG_B:NODE")
@click.argument("type", metavar="TYPE")
@click.option("--weight", default=1.0, show_default=True, type=float, help="Edge weight (an update keeps the max).")
@output_options
@click.pass_context
def link(ctx: click.Context, source: str, target: str, type: str, weight: float, json_: bool, plain_: bool) -> None:
    """Add an edge between nodes of two KGs (node by id or unambiguous name): kgos kg link
    demo:goal:cost_reduction finance:goal:lower_investment_costs relates_to. `kgos trace` follows it."""
    from ..kg.links import CrossLinks
    e = CrossLinks(workspace(ctx)).add(source, target, type, weight)
    out(ctx, json_, plain_).emit(e, lambda c: c.print(escape(f"Linked {e.source} -[{e.type}]-> {e.target}")),
                                 lambda: [(str(e.source), e.type, str(e.target), e.weight)],
                                 columns=("source", "type", "target", "weight"))


@kg_group.command("unlink")
@click.argument("source", metavar="KG_A:NODE")
@click.argument("target", metavar="KG_B:NODE")
@click.argument("type", metavar="TYPE")
@click.pass_context
def unlink(ctx: click.Context, source: str, target: str, type: str) -> None:
    """Delete a cross-KG edge (the ids as `kgos kg links` shows them)."""
    from ..kg.links import CrossLinks
    CrossLinks(workspace(ctx)).delete(source, target, type)
    click.echo(f"Unlinked {source} -[{type}]-> {target}", err=True)


@kg_group.command("links")
@click.argument("db_id", metavar="KG", required=False)
@output_options
@click.pass_context
def links(ctx: click.Context, db_id: str | None, json_: bool, plain_: bool) -> None:
    """List the cross-KG edges (of one KG)."""
    from ..kg.links import CrossLinks
    found = CrossLinks(workspace(ctx)).list(db_id)
    rows = [(str(e.source), e.type, str(e.target), e.weight) for e in found]
    out(ctx, json_, plain_).emit({"links": found}, lambda c: c.print(table("Cross-KG edges", ["source", "type", "target",
                                                                                            "weight"], rows)),
                                 lambda: rows, columns=("source", "type", "target", "weight"))
