"""``kgos memory ...``: agent memory that grows a KG from text (spec/002's ``kg_cli`` commands).

add, get, delete, recall (memories) | search, neighbors, context (the memory KG) | stats, export,
import [--merge], rebuild [--dry-run] | recent (time ranges and "what was I working on last week?"),
aliases (entity merging review), decay (confidence decay of stale edges).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from . import cli, out, output_options, workspace
from .output import table


def service(ctx: click.Context) -> Any:
    from ..memory import MemoryService
    return MemoryService(workspace(ctx), db_id=ctx.find_root().obj.get("memory_db"))


@cli.group("memory")
@click.option("--db", "db_id", envvar="KGOS_MEMORY_DB", help="db_id of the memory KG (default: memory).")
@click.pass_context
def memory_group(ctx: click.Context, db_id: str | None) -> None:
    """Agent memory: store notes and chat turns, grow a KG from them, get context back."""
    ctx.find_root().obj["memory_db"] = db_id


# -- memories -----------------------------------------------------------------------------------------
@memory_group.command("add")
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--expert", "expert_id", help="The expert this memory belongs to.")
@click.option("--conversation", "conversation_id", help="The conversation this memory comes from.")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="A metadata entry (repeatable).")
@click.option("--llm/--no-llm", "enrich", default=None,
              help="LLM enrichment for this memory (default: $KGOS_MEMORY_LLM_ENRICH, off).")
@click.option("--provider", metavar="SPEC", help="The enrichment provider, e.g. openai:gpt-4o-mini (default: "
                                                 "$KGOS_MEMORY_LLM_PROVIDER, else the chat default).")
@output_options
@click.pass_context
def add(ctx: click.Context, text: str, tags: tuple[str, ...], expert_id: str | None, conversation_id: str | None,
        meta: tuple[str, ...], enrich: bool | None, provider: str | None, json_: bool, plain_: bool) -> None:
    """Remember TEXT ('-' reads standard input) and extract entities and relationships from it."""
    if text == "-":
        text = sys.stdin.read()
    svc = service(ctx)
    if provider:
        svc.config = svc.config.with_(llm_provider=provider)
    r = svc.add(text, tags, expert_id=expert_id, conversation_id=conversation_id, metadata=_meta(meta),
                enrich=enrich)
    out(ctx, json_, plain_).emit(r, lambda c: _print_added(c, r),
                                 lambda: [(r.id, r.memory.kg_status, len(r.entities), len(r.relations))], columns=("id", "kg_status", "entities", "relations"))


def _meta(pairs: tuple[str, ...]) -> dict[str, str]:
    meta = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--meta")
        meta[key.strip()] = value
    return meta


def _print_added(c: Console, r: Any) -> None:
    status = "" if r.memory.kg_status == "ok" else f" [yellow](KG enrichment {r.memory.kg_status})[/]"
    c.print(f"Stored [bold]{r.id}[/]{status}")
    for e in r.entities:
        c.print(escape(f"  entity  [{e.type}] {e.name}"))
    for x in r.relations:
        c.print(escape(f"  edge    {x.subject.name} --[{x.predicate}]--> [{x.object.type}] {x.object.name} "
                       f"(weight: {x.weight}, {x.pattern or x.src})"))


@memory_group.command("get")
@click.argument("memory_id")
@output_options
@click.pass_context
def get(ctx: click.Context, memory_id: str, json_: bool, plain_: bool) -> None:
    """Show one memory."""
    m = service(ctx).get(memory_id)
    out(ctx, json_, plain_).emit(m, lambda c: _print_memories(c, [m]), lambda: [_memory_row(m)],
                                 columns=MEMORY_COLUMNS)


@memory_group.command("delete")
@click.argument("memory_id")
@click.option("--rebuild", is_flag=True, help="Then rebuild the memory KG so nothing derived from it remains.")
@output_options
@click.pass_context
def delete(ctx: click.Context, memory_id: str, rebuild: bool, json_: bool, plain_: bool) -> None:
    """Delete a memory (its evidence leaves the KG at the next rebuild, or now with --rebuild)."""
    mem = service(ctx)
    mem.get(memory_id)
    deleted = mem.delete(memory_id)
    report = mem.rebuild() if rebuild else None
    data = {"id": memory_id, "deleted": deleted, "rebuild": report}
    out(ctx, json_, plain_).emit(data, lambda c: c.print(f"Deleted {memory_id}" + (" and rebuilt the KG" if report else "")),
                                 lambda: [(memory_id, "deleted")], columns=("id", "result"))


@memory_group.command("recall")
@click.argument("query")
@click.option("-k", "--limit", default=5, show_default=True, help="How many memories.")
@click.option("--tag", "tags", multiple=True, help="Only memories with this tag (repeatable: all of them).")
@click.option("--expert", "expert_id", help="Only this expert's memories.")
@click.option("--conversation", "conversation_id", help="Only this conversation's memories.")
@output_options
@click.pass_context
def recall(ctx: click.Context, query: str, limit: int, tags: tuple[str, ...], expert_id: str | None,
           conversation_id: str | None, json_: bool, plain_: bool) -> None:
    """Full-text search over memories (bm25), with filters: what the chat loop recalls."""
    hits = service(ctx).recall(query, limit, tags=tags, expert_id=expert_id, conversation_id=conversation_id)
    out(ctx, json_, plain_).emit(hits, lambda c: _print_memories(c, [h.memory for h in hits]),
                                 lambda: [(*_memory_row(h.memory), round(h.score, 3)) for h in hits],
                                 columns=(*MEMORY_COLUMNS, "score"))


MEMORY_COLUMNS = ("id", "created_at", "tags", "content")


def _memory_row(m: Any) -> tuple[Any, ...]:
    return m.id, m.created_at, ",".join(m.tags), m.content.replace("\n", " ")[:200]


def _print_memories(c: Console, memories: list[Any]) -> None:
    if not memories:
        c.print("No memories found.")
        return
    c.print(table(None, ["id", "created", "tags", "expert", "content"],
                  [(m.id, m.created_at[:19], ", ".join(m.tags), m.expert_id or "",
                    escape(m.content[:160] + ("..." if len(m.content) > 160 else ""))) for m in memories]))


# -- the memory KG ------------------------------------------------------------------------------------
@memory_group.command("search")
@click.argument("query")
@click.option("--type", "type_", help="Only entities of this type (project, tool, file, concept, decision).")
@click.option("-k", "--limit", default=10, show_default=True, help="How many entities.")
@output_options
@click.pass_context
def search(ctx: click.Context, query: str, type_: str | None, limit: int, json_: bool, plain_: bool) -> None:
    """Entities of the memory KG scored 1.0 exact / 0.7 partial / 0.5 word match (spec/002)."""
    entities, total = service(ctx).search(query, type_, limit)
    data = {"query": query, "total": total, "entities": entities}
    out(ctx, json_, plain_).emit(data, lambda c: c.print(
        table(f"{len(entities)} of {total} entities", ["score", "type", "name", "id"],
              [(e.score, e.type, escape(e.name), e.id) for e in entities])),
        lambda: [(e.score, e.type, e.name, e.id) for e in entities], columns=("score", "type", "name", "id"))


@memory_group.command("neighbors")
@click.argument("entity")
@click.option("--direction", type=click.Choice(["outgoing", "incoming", "both"]), default="both",
              show_default=True, help="Edges from the entity, to it, or both.")
@click.option("-k", "--limit", type=int, help="At most this many.")
@output_options
@click.pass_context
def neighbors(ctx: click.Context, entity: str, direction: str, limit: int | None, json_: bool, plain_: bool) -> None:
    """Relationships of ENTITY (an id such as entity:user:primary, a name, or 'user')."""
    found = service(ctx).neighbors(entity, direction, limit)
    rows = [(n.direction, n.edge.type, n.node.type, n.node.name, n.edge.weight,
             n.edge.properties.get("evidence_count", "")) for n in found]
    out(ctx, json_, plain_).emit(found, lambda c: c.print(
        table(None, ["direction", "predicate", "type", "name", "weight", "evidence"], rows)
        if rows else "No relationships."), lambda: rows, columns=("direction", "predicate", "type", "name", "weight", "evidence"))


@memory_group.command("context")
@click.argument("query")
@click.option("--expert", "expert_id", help="Only what this expert's memories evidence.")
@click.option("--max-edges", type=int, help="Relationship cap (default 20, KGOS_MEMORY_CONTEXT_MAX_EDGES).")
@click.option("--max-chars", type=int, help="Character cap (default 1500, KGOS_MEMORY_CONTEXT_MAX_CHARS).")
@click.option("--half-life", "half_life", type=float, help="Rank by weight decayed with this half-life in days.")
@output_options
@click.pass_context
def context(ctx: click.Context, query: str, expert_id: str | None, max_edges: int | None, max_chars: int | None,
            half_life: float | None, json_: bool, plain_: bool) -> None:
    """The knowledge-graph context block injected into prompts for QUERY (spec/002 format)."""
    result = service(ctx).context(query, expert_id, max_edges=max_edges, max_chars=max_chars,
                                  half_life_days=half_life)
    text = result.text or "(no knowledge-graph context for this query)"
    out(ctx, json_, plain_).emit(result, lambda c: click.echo(text), lambda: [(line,) for line in text.splitlines()], columns=("line",))


@memory_group.command("stats")
@output_options
@click.pass_context
def stats(ctx: click.Context, json_: bool, plain_: bool) -> None:
    """Memories, enrichment status and failures, entity/edge counts and top predicates."""
    s = service(ctx).stats()
    d = s.to_dict()
    out(ctx, json_, plain_).emit(s, lambda c: _print_stats(c, d),
                                 lambda: [(k, v) for k, v in d.items() if not isinstance(v, dict)], columns=("measure", "value"))


def _print_stats(c: Console, d: dict[str, Any]) -> None:
    c.print(table(f"memory ({d['db_id']})", ["measure", "value"],
                  [(k, f"{v:,}" if isinstance(v, int) else v) for k, v in d.items() if not isinstance(v, dict)]))
    for key in ("kg_status", "counters", "entity_types", "top_predicates", "aliases"):
        if d[key]:
            c.print(table(key.replace("_", " "), ["name", "count"], [(k, f"{v:,}") for k, v in d[key].items()]))


@memory_group.command("export")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@output_options
@click.pass_context
def export(ctx: click.Context, path: Path, json_: bool, plain_: bool) -> None:
    """Write the memory KG as a spec/002 snapshot (.json or .json.gz)."""
    r = service(ctx).export(path)
    out(ctx, json_, plain_).emit(r, lambda c: c.print(f"Exported {r.entities:,} entities and {r.edges:,} edges "
                                                     f"to {r.path}"), lambda: [(r.path, r.entities, r.edges)], columns=("path", "entities", "edges"))


@memory_group.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--merge", is_flag=True, help="Upsert into the memory KG instead of replacing it.")
@output_options
@click.pass_context
def import_(ctx: click.Context, path: Path, merge: bool, json_: bool, plain_: bool) -> None:
    """Load a spec/002 snapshot. All or nothing: a malformed file changes nothing."""
    r = service(ctx).import_snapshot(path, merge=merge)
    verb = "Merged" if merge else "Replaced the memory KG with"
    out(ctx, json_, plain_).emit(r, lambda c: c.print(f"{verb} {r.entities:,} entities and {r.edges:,} edges "
                                                     f"from {r.path}"), lambda: [(r.path, r.mode, r.entities, r.edges)], columns=("path", "mode", "entities", "edges"))


@memory_group.command("rebuild")
@click.option("--dry-run", is_flag=True, help="Only report what the rebuilt KG would hold.")
@output_options
@click.pass_context
def rebuild(ctx: click.Context, dry_run: bool, json_: bool, plain_: bool) -> None:
    """Re-derive the memory KG from all stored memories (deterministic; built aside, then swapped in)."""
    r = service(ctx).rebuild(dry_run=dry_run)
    verb = "Would rebuild" if dry_run else "Rebuilt"
    dropped = f"; {r.llm_edges_dropped:,} LLM-only edges dropped" if r.llm_edges_dropped else ""
    out(ctx, json_, plain_).emit(r, lambda c: c.print(
        f"{verb} [bold]{r.db_id}[/] from {r.memories:,} memories: {r.entities:,} entities, {r.edges:,} edges "
        f"(was {r.entities_before:,} / {r.edges_before:,}{dropped}) in {r.seconds:.2f} s"),
        lambda: [(r.db_id, r.memories, r.entities, r.edges, r.dry_run)], columns=("db_id", "memories", "entities", "edges", "dry_run"))


# -- beyond the spec: time, aliases, decay ------------------------------------------------------------
@memory_group.command("recent")
@click.argument("when", required=False, default="last 7 days")
@click.option("--predicate", type=click.Choice(["works_on", "uses", "prefers", "decided"]),
              help="Only this kind of relationship.")
@click.option("--expert", "expert_id", help="Only this expert's memories.")
@click.option("-k", "--limit", default=20, show_default=True, help="How many items and memories.")
@output_options
@click.pass_context
def recent(ctx: click.Context, when: str, predicate: str | None, expert_id: str | None, limit: int,
           json_: bool, plain_: bool) -> None:
    """What memories of a time range were about: WHEN is 'today', 'yesterday', 'last week',
    'last month', 'last 3 days', 'since 2026-01-01'... or a question ('what was I working on last week?')."""
    mem = service(ctx)
    if " " in when.strip() and not _is_range(when):
        timeline = mem.ask(when, expert_id=expert_id)
        timeline = timeline if predicate is None else mem.timeline(timeline.range, predicate, expert_id=expert_id)
    else:
        timeline = mem.timeline(when, predicate, expert_id=expert_id, limit=limit)
    memories = mem.recent(timeline.range, limit, expert_id=expert_id)
    data = {"timeline": timeline, "memories": memories}
    out(ctx, json_, plain_).emit(data, lambda c: _print_timeline(c, timeline, memories),
                                 lambda: [(i.predicate, i.type, i.name, i.mentions, i.last_seen) for i in timeline.items], columns=("predicate", "type", "name", "mentions", "last_seen"))


def _is_range(text: str) -> bool:
    from ..errors import InvalidArgument
    from ..memory import parse_time_range
    try:
        parse_time_range(text)
    except InvalidArgument:
        return False
    return True


def _print_timeline(c: Console, timeline: Any, memories: list[Any]) -> None:
    span = timeline.range
    c.print(f"[bold]{span.label}[/] ({span.since or 'the beginning'} .. {span.until or 'now'}): "
            f"{timeline.memories:,} memories")
    if timeline.items:
        c.print(table(None, ["predicate", "type", "name", "mentions", "last seen"],
                      [(i.predicate, i.type, escape(i.name), i.mentions, i.last_seen[:19]) for i in timeline.items]))
    _print_memories(c, memories)


@memory_group.group("aliases", invoke_without_command=True)
@click.pass_context
def aliases_group(ctx: click.Context) -> None:
    """Review entity merges ("python" / "Python3"): list, propose, add, accept, reject."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(alias_list)


@aliases_group.command("list")
@click.option("--status", type=click.Choice(["proposed", "accepted", "rejected"]), help="Only this status.")
@output_options
@click.pass_context
def alias_list(ctx: click.Context, status: str | None = None, json_: bool = False, plain_: bool = False) -> None:
    """List alias proposals and decisions."""
    _emit_aliases(ctx, service(ctx).aliases(status), json_, plain_)


@aliases_group.command("propose")
@click.option("--min-ratio", default=0.9, show_default=True, help="Spelling similarity needed (0..1).")
@output_options
@click.pass_context
def alias_propose(ctx: click.Context, min_ratio: float, json_: bool, plain_: bool) -> None:
    """Scan the memory KG for likely duplicate entities and list the open proposals."""
    _emit_aliases(ctx, service(ctx).propose_aliases(min_ratio), json_, plain_)


@aliases_group.command("add")
@click.argument("alias")
@click.argument("canonical")
@click.option("--type", "type_", required=True, help="Entity type of both (tool, project, concept...).")
@output_options
@click.pass_context
def alias_add(ctx: click.Context, alias: str, canonical: str, type_: str, json_: bool, plain_: bool) -> None:
    """Propose by hand that ALIAS is another name of CANONICAL."""
    _emit_aliases(ctx, [service(ctx).add_alias(alias, canonical, type_)], json_, plain_)


@aliases_group.command("accept")
@click.argument("proposal_id", type=int)
@output_options
@click.pass_context
def alias_accept(ctx: click.Context, proposal_id: int, json_: bool, plain_: bool) -> None:
    """Merge the alias into its canonical entity (edges move, evidence is kept)."""
    _emit_aliases(ctx, [service(ctx).accept_alias(proposal_id)], json_, plain_)


@aliases_group.command("reject")
@click.argument("proposal_id", type=int)
@output_options
@click.pass_context
def alias_reject(ctx: click.Context, proposal_id: int, json_: bool, plain_: bool) -> None:
    """Keep the two entities apart (the pair is not proposed again)."""
    _emit_aliases(ctx, [service(ctx).reject_alias(proposal_id)], json_, plain_)


def _emit_aliases(ctx: click.Context, proposals: list[Any], json_: bool, plain_: bool) -> None:
    rows = [(p.id, p.status, p.type, p.alias_name, p.canonical_name, p.reason, p.score) for p in proposals]
    out(ctx, json_, plain_).emit(proposals, lambda c: c.print(
        table(None, ["#", "status", "type", "alias", "canonical", "reason", "score"],
              [tuple(escape(str(v)) for v in r) for r in rows]) if rows else "No alias proposals."), lambda: rows, columns=("id", "status", "type", "alias", "canonical", "reason", "score"))


@memory_group.command("decay")
@click.option("--half-life", "half_life", type=float, required=True, help="Half-life in days.")
@click.option("--write", is_flag=True, help="Store the decayed weights (default: only report them).")
@output_options
@click.pass_context
def decay(ctx: click.Context, half_life: float, write: bool, json_: bool, plain_: bool) -> None:
    """Confidence decay of stale edges: weight x 0.5^(days since last evidence / half-life)."""
    r = service(ctx).decay(half_life, write=write)
    verb = "Decayed" if r.written else "Would decay"
    out(ctx, json_, plain_).emit(r, lambda c: c.print(f"{verb} {r.changed:,} of {r.edges:,} edges "
                                                     f"(half-life {half_life:g} days)"),
                                 lambda: [(d["source"], d["type"], d["target"], d["weight"], d["decayed"])
                                          for d in r.most_decayed], columns=("source", "type", "target", "weight", "decayed"))
