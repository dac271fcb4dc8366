"""``kgos expert ...``: expert agents (spec/000 section 8) — create, list, show, update, delete,
duplicate, export, import, conversations, and chat (streamed in the terminal, conversation kept)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..errors import InvalidArgument
from . import cli, out, output_options, workspace
from .output import table


def service(ctx: click.Context) -> Any:
    from ..experts import ExpertService
    return ExpertService(workspace(ctx))


def _json_file(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"{path} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None


def _assignments(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``retrieval.alpha=0.3`` ... as a nested merge patch (values parsed as JSON, else text)."""
    patch: dict[str, Any] = {}
    for pair in pairs:
        path, sep, raw = pair.partition("=")
        if not sep or not path.strip():
            raise click.BadParameter(f"{pair!r} is not PATH=VALUE (e.g. retrieval.alpha=0.3)", param_hint="--set")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        node = patch
        *parents, leaf = path.strip().split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return patch


def _combine(a: Any, b: Any) -> Any:
    """Two patches into one, keeping their nulls (a merge patch would apply them)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return b
    return {**a, **{k: _combine(a.get(k), v) if k in a else v for k, v in b.items()}}


def _weights(text: str | None) -> dict[str, float]:
    if not text:
        return {}
    parts = text.split(",")
    if len(parts) != 4:
        raise click.BadParameter("give four numbers: alpha,beta,gamma,delta", param_hint="--weights")
    try:
        return dict(zip(("alpha", "beta", "gamma", "delta"), (float(p) for p in parts), strict=True))
    except ValueError:
        raise click.BadParameter(f"{text!r} holds something that is not a number", param_hint="--weights") from None


@cli.group("expert")
def expert_group() -> None:
    """Expert agents: a KG + persona + retrieval config + playbooks, answering with citations."""


@expert_group.command("create")
@click.argument("name")
@click.option("--kg", "kgs", multiple=True, help="db_id of a KG the expert answers from (repeatable).")
@click.option("--id", "expert_id", help="The expert's id (default: expert_<name>).")
@click.option("--file", "file_", type=click.Path(dir_okay=False, allow_dash=True),
              help="A JSON expert config to start from (flags override it).")
@click.option("--description", help="What the expert knows.")
@click.option("--persona-name", help="The persona's display name.")
@click.option("--instructions", help="The persona's instructions (system prompt).")
@click.option("--style", help="professional, casual, academic, concise, friendly or technical.")
@click.option("--greeting", help="The first message of a conversation.")
@click.option("--weights", help="alpha,beta,gamma,delta (default 0.35,0.40,0.15,0.10).")
@click.option("--limit", type=int, help="KG nodes in context (1-50, default 10).")
@click.option("--boost", "boost_types", multiple=True, help="An edge type to boost (repeatable).")
@click.option("--skill", "skills", multiple=True, help="A playbook the expert may inject (repeatable).")
@click.option("--filter", "filters", multiple=True, metavar="EXPR", help="Dimension filter, e.g. pricing_tier<0.3.")
@output_options
@click.pass_context
def create(ctx: click.Context, name: str, kgs: tuple[str, ...], expert_id: str | None, file_: str | None,
           description: str | None, persona_name: str | None, instructions: str | None, style: str | None,
           greeting: str | None, weights: str | None, limit: int | None, boost_types: tuple[str, ...],
           skills: tuple[str, ...], filters: tuple[str, ...], json_: bool, plain_: bool) -> None:
    """Create an expert NAME over one or more KGs."""
    from ..experts import merge_patch
    from ..methods.dimensions import merge_filters
    base = _json_file(file_) if file_ else {}
    persona = {k: v for k, v in (("name", persona_name), ("instructions", instructions), ("style", style),
                                 ("greeting", greeting)) if v is not None}
    retrieval = {**_weights(weights), **({"limit": limit} if limit else {}),
                 **({"boost_types": list(boost_types)} if boost_types else {})}
    patch: dict[str, Any] = {"name": name, **({"description": description} if description else {}),
                             **({"persona": persona} if persona else {}), **({"retrieval": retrieval} if retrieval else {}),
                             **({"playbook_skills": list(skills)} if skills else {}),
                             **({"dimension_filters": merge_filters(filters)} if filters else {})}
    if kgs:
        patch.update({"kg_db_id": kgs[0], "kg_db_ids": list(kgs) if len(kgs) > 1 else []})
    e = service(ctx).create(merge_patch(base, patch), expert_id)
    out(ctx, json_, plain_).emit(e, lambda c: c.print(f"Created expert [bold]{escape(e.id)}[/] over "
                                                    f"{', '.join(e.config.kgs)}"), lambda: [(e.id, e.config.name)], columns=("id", "name"))


@expert_group.command("list")
@output_options
@click.pass_context
def list_(ctx: click.Context, json_: bool, plain_: bool) -> None:
    """The experts of the workspace, with their conversation counts."""
    rows = service(ctx).list()
    data = [(r.id, r.name, ",".join(r.kg_db_ids), r.conversation_count, r.last_active or "") for r in rows]
    out(ctx, json_, plain_).emit(rows, lambda c: c.print(table("Experts", ["id", "name", "KGs", "conversations",
                                                                           "last active"], data)), lambda: data, columns=("id", "name", "kgs", "conversations", "last_active"))


@expert_group.command("show")
@click.argument("expert_id")
@output_options
@click.pass_context
def show(ctx: click.Context, expert_id: str, json_: bool, plain_: bool) -> None:
    """An expert's full configuration."""
    e = service(ctx).get(expert_id)
    out(ctx, json_, plain_).emit(e, lambda c: c.print_json(json.dumps(e.to_dict())),
                                 lambda: [(k, json.dumps(v)) for k, v in e.to_dict().items()], columns=("field", "value"))


@expert_group.command("update")
@click.argument("expert_id")
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE", help="e.g. retrieval.alpha=0.3 (repeatable).")
@click.option("--file", "file_", type=click.Path(dir_okay=False, allow_dash=True), help="A JSON merge patch.")
@output_options
@click.pass_context
def update(ctx: click.Context, expert_id: str, sets: tuple[str, ...], file_: str | None, json_: bool, plain_: bool) -> None:
    """Change some fields (a JSON merge patch: objects merge, null removes)."""
    patch = _combine(_json_file(file_) if file_ else {}, _assignments(sets))
    if not patch:
        raise click.UsageError("nothing to change: give --set PATH=VALUE or --file PATCH.json")
    e = service(ctx).update(expert_id, patch)
    out(ctx, json_, plain_).emit(e, lambda c: c.print(f"Updated [bold]{escape(e.id)}[/]"), lambda: [(e.id, e.updated_at)], columns=("id", "updated_at"))


@expert_group.command("delete")
@click.argument("expert_id")
@click.option("--conversations", is_flag=True, help="Delete its conversations too.")
@output_options
@click.pass_context
def delete(ctx: click.Context, expert_id: str, conversations: bool, json_: bool, plain_: bool) -> None:
    """Delete an expert (its conversations stay unless --conversations)."""
    r = service(ctx).delete(expert_id, conversations)
    out(ctx, json_, plain_).emit(r, lambda c: c.print(f"Deleted {escape(expert_id)} "
                                                    f"({r['conversations_deleted']} conversations deleted)"),
                                 lambda: [(expert_id, r["conversations_deleted"])], columns=("id", "conversations_deleted"))


@expert_group.command("duplicate")
@click.argument("expert_id")
@click.option("--name", "new_name", help="The copy's name.")
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE", help="An override (repeatable).")
@output_options
@click.pass_context
def duplicate(ctx: click.Context, expert_id: str, new_name: str | None, sets: tuple[str, ...], json_: bool,
              plain_: bool) -> None:
    """Copy an expert under a new id, with overrides."""
    e = service(ctx).duplicate(expert_id, new_name, _assignments(sets))
    out(ctx, json_, plain_).emit(e, lambda c: c.print(f"Created [bold]{escape(e.id)}[/]"), lambda: [(e.id, e.config.name)], columns=("id", "name"))


@expert_group.command("export")
@click.argument("expert_id")
@click.argument("path", required=False, default="-")
@click.pass_context
def export(ctx: click.Context, expert_id: str, path: str) -> None:
    """Write an expert as portable JSON to PATH (default: standard output)."""
    text = json.dumps(service(ctx).export(expert_id), ensure_ascii=False, indent=2)
    if path == "-":
        click.echo(text)
    else:
        Path(path).write_text(text + "\n", encoding="utf-8")
        click.echo(f"Wrote {path}", err=True)


@expert_group.command("import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--id", "expert_id", help="Store it under this id.")
@click.option("--replace", is_flag=True, help="Overwrite an expert with the same id (its conversations stay).")
@output_options
@click.pass_context
def import_(ctx: click.Context, path: str, expert_id: str | None, replace: bool, json_: bool, plain_: bool) -> None:
    """Create an expert from an exported JSON file ('-' reads standard input)."""
    e = service(ctx).import_(_json_file(path), expert_id, replace)
    out(ctx, json_, plain_).emit(e, lambda c: c.print(f"Imported [bold]{escape(e.id)}[/]"), lambda: [(e.id, e.config.name)], columns=("id", "name"))


@expert_group.command("conversations")
@click.argument("expert_id")
@click.argument("conversation_id", required=False)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 200))
@output_options
@click.pass_context
def conversations(ctx: click.Context, expert_id: str, conversation_id: str | None, limit: int, json_: bool,
                  plain_: bool) -> None:
    """List an expert's conversations, or show one with its messages."""
    svc = service(ctx)
    if conversation_id:
        conv = svc.conversation(expert_id, conversation_id)
        out(ctx, json_, plain_).emit(conv, lambda c: _print_conversation(c, conv),
                                     lambda: [(m.role, m.timestamp, m.content) for m in conv.messages], columns=("role", "timestamp", "content"))
        return
    page = svc.conversations(expert_id, limit)
    rows = [(c["id"], c["message_count"], c["last_message_at"], c["preview"]) for c in page["conversations"]]
    out(ctx, json_, plain_).emit(page, lambda c: c.print(table(f"Conversations of {expert_id} ({page['total']})",
                                                               ["id", "messages", "last message", "preview"], rows)),
                                 lambda: rows, columns=("id", "messages", "last_message_at", "preview"))


def _print_conversation(c: Console, conv: Any) -> None:
    for m in conv.messages:
        c.print(f"[bold]{m.role}[/] [dim]{m.timestamp}[/]")
        c.print(escape(m.content) + "\n")


# -- chat -------------------------------------------------------------------------------------------
@expert_group.command("chat")
@click.argument("expert_id")
@click.argument("query", required=False)
@click.option("--conversation", "conversation_id", help="Continue this conversation (default: a new one).")
@click.option("--provider", help="LLM provider: offline, openai, ollama, anthropic, gemini (or provider:model). "
                                 "Default: $KGOS_LLM_PROVIDER, else OpenAI-compatible if a base URL is set, else offline.")
@click.option("--model", help="The model name for the provider.")
@click.option("--no-memory", is_flag=True, help="Neither recall nor store memories for this chat.")
@click.option("--sources/--no-sources", default=True, show_default=True, help="Print the KG nodes used.")
@output_options
@click.pass_context
def chat(ctx: click.Context, expert_id: str, query: str | None, conversation_id: str | None, provider: str | None,
         model: str | None, no_memory: bool, sources: bool, json_: bool, plain_: bool) -> None:
    """Ask EXPERT_ID a question (QUERY), or chat interactively without one ('exit' or Ctrl-D ends).
    Answers stream as they are written; every turn is kept in the conversation."""
    from ..experts.chat import ExpertChat
    from ..llm import get_provider
    o = out(ctx, json_, plain_)
    engine = ExpertChat(workspace(ctx), get_provider(provider, model=model), use_memory=not no_memory)
    if query is not None:
        _, failed = _turn(engine, o, expert_id, query, conversation_id, sources)
        ctx.exit(1 if failed else 0)
    greeting = engine.experts.get(expert_id).config.persona.greeting
    if greeting and o.human:
        o.out.print(f"[bold]{escape(greeting)}[/]")
    any_failed = False
    while (line := _prompt()) is not None:
        if line.strip():
            conversation_id, failed = _turn(engine, o, expert_id, line, conversation_id, sources)
            any_failed |= failed
    ctx.exit(1 if any_failed else 0)  # a session with a failed turn is not a success for scripts


def _prompt() -> str | None:
    try:
        line = click.prompt("you", prompt_suffix="> ", default="", show_default=False)
    except (EOFError, click.Abort):
        return None
    return None if line.strip().lower() in ("exit", "quit") else line


def _turn(engine: Any, o: Any, expert_id: str, query: str, conversation_id: str | None,
          show_sources: bool) -> tuple[str, bool]:
    """One turn, streamed; returns (conversation id, whether the turn failed)."""
    turn = engine.start(expert_id, query, conversation_id=conversation_id)
    answer, done, error = [], {}, None
    for event in engine.events(turn):
        kind = event["type"]
        if kind == "token":
            answer.append(event["content"])
            if not o.json:
                click.echo(event["content"], nl=False)
                sys.stdout.flush()
        elif kind == "sources" and show_sources and o.human:
            names = ", ".join(n["name"] for n in event["nodes"][:8])
            o.err.print(f"[dim]sources: {escape(names)}[/]", soft_wrap=True)
        elif kind == "error":
            error = event["content"]
        elif kind == "done":
            done = event
    if o.json:
        o.emit({"conversation_id": turn.conversation_id, "answer": "".join(answer), "error": error,
                "sources": [n.to_dict() for n in turn.context.nodes], "citations": done.get("citations"),
                "usage": done.get("usage"), "finish_reason": done.get("finish_reason")})
    else:
        click.echo()
        _report(o, done, turn.conversation_id)
    _report_failure(done, error, turn.conversation_id)
    return turn.conversation_id, bool(error) or done.get("saved") is False


def _report(o: Any, done: dict[str, Any], cid: str) -> None:
    unknown = done.get("unknown_citations") or []
    if unknown:
        o.err.print(f"[yellow]unknown citations:[/] {escape(', '.join(unknown))}")
    if done.get("saved") is not False:
        click.echo(f"conversation {cid} (continue with --conversation {cid})", err=True)


def _report_failure(done: dict[str, Any], error: str | None, cid: str) -> None:
    """A failed turn is still saved (the question with an empty, error-marked answer), so say where."""
    if error:
        click.echo(f"Error: {error}", err=True)
    if done.get("saved") is False:
        click.echo("Error: this turn could not be saved to the conversation (see the log above)", err=True)
    elif error:
        click.echo(f"your question is saved in conversation {cid}; ask again with --conversation {cid}", err=True)
