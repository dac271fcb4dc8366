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
        o.emit({"conversation_id": turn.conversation_id, "turn_id": turn.turn_id, "answer": "".join(answer),
                "error": error, "sources": [n.to_dict() for n in turn.context.nodes],
                "citations": done.get("citations"), "usage": done.get("usage"),
                "finish_reason": done.get("finish_reason")})
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
        if done.get("turn_id"):
            click.echo(f"rate this answer: kgos feedback {done['turn_id']} up|down", err=True)


def _report_failure(done: dict[str, Any], error: str | None, cid: str) -> None:
    """A failed turn is still saved (the question with an empty, error-marked answer), so say where."""
    if error:
        click.echo(f"Error: {error}", err=True)
    if done.get("saved") is False:
        click.echo("Error: this turn could not be saved to the conversation (see the log above)", err=True)
    elif error:
        click.echo(f"your question is saved in conversation {cid}; ask again with --conversation {cid}", err=True)


# -- feedback ---------------------------------------------------------------------------------------------
@cli.command("feedback")
@click.argument("turn_id", required=False)
@click.argument("rating", required=False, type=click.Choice(["up", "down"]))
@click.option("--comment", help="Why (kept with the vote; secrets are redacted).")
@click.option("--list", "list_", is_flag=True, help="List votes instead (newest first).")
@click.option("--expert", "expert_id", help="With --list: only this expert's turns.")
@click.option("--rating", "only", type=click.Choice(["up", "down"]), help="With --list: only these votes.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@output_options
@click.pass_context
def feedback(ctx: click.Context, turn_id: str | None, rating: str | None, comment: str | None, list_: bool,
             expert_id: str | None, only: str | None, limit: int, json_: bool, plain_: bool) -> None:
    """Vote on an expert's answer: TURN_ID up|down (the turn id a chat prints, or a /v1 completion id).
    Voting again replaces the vote. With --list, show the votes and their counts."""
    from ..experts.feedback import FeedbackService
    svc, o = FeedbackService(workspace(ctx)), out(ctx, json_, plain_)
    if list_:
        rows = svc.list(expert_id, only, limit)
        doc = {"feedback": rows, "summary": svc.summary(expert_id).to_dict()}
        cells = [(f.turn_id, f.expert_id, f.rating, f.updated_at, f.query, f.comment) for f in rows]
        o.emit(doc, lambda c: c.print(table(f"Feedback ({doc['summary']['up']} up, {doc['summary']['down']} down)",
                                            ["turn", "expert", "rating", "when", "question", "comment"], cells)),
               lambda: cells, columns=("turn_id", "expert_id", "rating", "updated_at", "query", "comment"))
        return
    if not turn_id or not rating:
        raise click.UsageError("give TURN_ID and up|down (or --list)")
    fb = svc.give(turn_id, rating, comment)
    o.emit(fb, lambda c: c.print(f"Recorded [bold]{fb.rating}[/] for {escape(fb.turn_id)} "
                                 f"(expert {escape(fb.expert_id)})"),
           lambda: [(fb.turn_id, fb.rating, fb.revisions)], columns=("turn_id", "rating", "revisions"))


@cli.command("gaps")
@click.argument("db_id")
@click.option("--limit", default=200, show_default=True, type=click.IntRange(1, 1000), help="Failures to report.")
@click.option("--dry-run", is_flag=True, help="Report only: do not put the suggested nodes in the review queue.")
@output_options
@click.pass_context
def gaps(ctx: click.Context, db_id: str, limit: int, dry_run: bool, json_: bool, plain_: bool) -> None:
    """What DB_ID's experts failed to answer, and why: thumbs-down turns, answers that found nothing, and
    questions off the KG, clustered by topic. Missing nodes become proposals (kgos predict list DB_ID)."""
    from ..experts.gaps import GapDetector
    r = GapDetector(workspace(ctx)).report(db_id, limit=limit, propose=not dry_run)
    rows = [(f.topic, f.cause, ",".join(f.reasons), f.query) for f in r.failures]
    out(ctx, json_, plain_).emit(r, lambda c: _print_gaps(c, r), lambda: rows,
                                 columns=("topic", "cause", "reasons", "query"))


def _print_gaps(c: Console, r: Any) -> None:
    c.print(f"[bold]{escape(r.kg)}[/]: {len(r.failures)} failure(s) in {r.turns} turn(s) — "
            + (", ".join(f"{n} {k.replace('_', ' ')}" for k, n in r.causes().items()) or "none"))
    if r.failures:
        c.print(table("Topics", ["topic", "label", "failures", "cause", "example"],
                      [(t.id, t.label, t.failures, t.cause, t.queries[0]) for t in r.topics]))
    for s in r.suggestions:
        queued = f" [dim](proposal {s.proposal_id})[/]" if s.proposal_id else ""
        c.print(f"- {escape(s.text)}{queued}")


# -- A/B tests --------------------------------------------------------------------------------------------
@expert_group.group("ab")
def ab_group() -> None:
    """A/B tests of an expert's config: variants served per conversation, compared on feedback."""


def _ab(ctx: click.Context) -> Any:
    from ..experts.ab import ABService
    return ABService(workspace(ctx))


def _variants(specs: tuple[str, ...], split: str | None) -> list[dict[str, Any]]:
    out = []
    for spec in specs:
        name, sep, patch = spec.partition("=")
        try:
            overrides = json.loads(patch) if sep else {}
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"{spec!r}: the part after '=' must be a JSON object ({exc.msg})",
                                     param_hint="--variant") from None
        out.append({"name": name.strip(), "overrides": overrides})
    if split:
        parts = split.split(",")
        if len(parts) != len(out):
            raise click.BadParameter(f"give one weight per variant ({len(out)})", param_hint="--split")
        try:
            for v, w in zip(out, parts, strict=True):
                v["weight"] = float(w)
        except ValueError:
            raise click.BadParameter(f"{split!r} is not a list of numbers", param_hint="--split") from None
    return out


@ab_group.command("create")
@click.argument("expert_id")
@click.option("--variant", "variants", multiple=True, required=True, metavar="NAME[=JSON]",
              help='A variant: a name and a JSON merge patch of the config, e.g. '
                   'text=\'{"retrieval": {"beta": 0.8}}\' (repeat; a bare NAME is the config as it is).')
@click.option("--split", help="Traffic weights, one per variant (default: equal), e.g. 80,20.")
@click.option("--min-votes", default=30, show_default=True, type=click.IntRange(1, 1_000_000),
              help="Votes every variant needs before the report decides.")
@click.option("--id", "test_id", help="The test's id (default: ab_<random>).")
@output_options
@click.pass_context
def ab_create(ctx: click.Context, expert_id: str, variants: tuple[str, ...], split: str | None, min_votes: int,
              test_id: str | None, json_: bool, plain_: bool) -> None:
    """Start an A/B test of EXPERT_ID's config (one active test per expert)."""
    t = _ab(ctx).create(expert_id, _variants(variants, split), test_id=test_id, min_votes=min_votes)
    out(ctx, json_, plain_).emit(t, lambda c: c.print(f"Started A/B test [bold]{escape(t.id)}[/] of {escape(expert_id)}: "
                                                      + ", ".join(escape(v.name) for v in t.variants)),
                                 lambda: [(t.id, t.expert_id, len(t.variants))], columns=("id", "expert_id", "variants"))


@ab_group.command("list")
@click.argument("expert_id", required=False)
@output_options
@click.pass_context
def ab_list(ctx: click.Context, expert_id: str | None, json_: bool, plain_: bool) -> None:
    """List A/B tests (of one expert)."""
    tests = _ab(ctx).list(expert_id)
    rows = [(t.id, t.expert_id, t.status, ",".join(v.name for v in t.variants), t.created_at) for t in tests]
    out(ctx, json_, plain_).emit({"tests": tests}, lambda c: c.print(table("A/B tests", ["id", "expert", "status",
                                                                                        "variants", "created"], rows)),
                                 lambda: rows, columns=("id", "expert_id", "status", "variants", "created_at"))


@ab_group.command("report")
@click.argument("test_id")
@output_options
@click.pass_context
def ab_report(ctx: click.Context, test_id: str, json_: bool, plain_: bool) -> None:
    """Per variant: turns, votes, positive rate with its 95% interval, feedback rate, citation use,
    latency; and the decision."""
    r = _ab(ctx).report(test_id)
    rows = [(v.name, v.turns, v.votes, _pct(v.positive_rate), _interval(v.interval), _pct(v.feedback_rate),
             _pct(v.citation_use), v.latency_p50_ms) for v in r.variants]
    cols = ["variant", "turns", "votes", "positive", "95% interval", "feedback rate", "citation use", "p50 ms"]
    out(ctx, json_, plain_).emit(r, lambda c: (c.print(table(f"A/B test {r.test.id} ({r.test.status})", cols, rows)),
                                               c.print(escape(r.decision))),
                                 lambda: rows, columns=tuple(c.replace(" ", "_") for c in cols))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _interval(iv: tuple[float, float] | None) -> str:
    return "-" if iv is None else f"{iv[0]:.1%}-{iv[1]:.1%}"


@ab_group.command("stop")
@click.argument("test_id")
@output_options
@click.pass_context
def ab_stop(ctx: click.Context, test_id: str, json_: bool, plain_: bool) -> None:
    """Stop an A/B test: new turns use the expert's own config again (the report stays)."""
    t = _ab(ctx).stop(test_id)
    out(ctx, json_, plain_).emit(t, lambda c: c.print(f"Stopped [bold]{escape(t.id)}[/]"),
                                 lambda: [(t.id, t.status)], columns=("id", "status"))
