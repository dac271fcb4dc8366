"""``kgos research``: the two-loop research pipeline of spec/004 (docs/research.md).

``kgos research "question" --corpus DIR --kg KG [--into KG] ...`` runs it; ``runs``, ``show``, ``replay``,
``diff``, ``resume``, ``ask`` and ``modules`` look after saved runs. Thin: each command is one call of
``kgos.research``.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..errors import InvalidArgument
from . import cli, out, output_options, workspace
from .output import table

STAGE_NAMES = ("query", "search", "ingest", "extract", "merge", "store", "reason", "output")


class ResearchGroup(click.Group):
    """``kgos research "question" ...`` runs; a first word naming a subcommand runs that instead."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        first = next((a for a in args if not a.startswith("-")), None)
        if first is not None and first not in self.commands and not {"-h", "--help"} & set(args[:1]):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@cli.group("research", cls=ResearchGroup)
def research_group() -> None:
    """Research a question over a corpus folder and KGs, looping until the evidence converges.

    \b
    kgos research "How do I exclude files from a tar archive?" --corpus DIR --kg cli-man --into notes
    kgos research runs | show RUN | replay RUN | diff RUN_A RUN_B | resume RUN | ask RUN "answer"
    """


def _config(pairs: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``--set search.strategy=round_robin`` pairs: stage.key=JSON-or-string."""
    configs: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        stage, dot, name = key.strip().partition(".")
        if not sep or not dot or not name:
            raise InvalidArgument(f"--set takes STAGE.KEY=VALUE (e.g. search.k=20), not {pair!r}")
        try:
            configs.setdefault(stage, {})[name] = json.loads(value)
        except ValueError:
            configs.setdefault(stage, {})[name] = value
    return configs


def _modules(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        stage, sep, module_id = pair.partition("=")
        if not sep or not stage.strip() or not module_id.strip():
            raise InvalidArgument(f"--module takes STAGE=ID (e.g. extract=extract.mine), not {pair!r}")
        out[stage.strip()] = module_id.strip()
    return out


def _prompt(o: Any) -> Any:
    """A person at a terminal answers an ask in-line; otherwise the run waits (``kgos research ask``)."""
    if o.json or not sys.stdin.isatty():
        return None
    return lambda question: click.prompt(question, default="", show_default=False, err=True)


@research_group.command("run")
@click.argument("question")
@click.option("--corpus", type=click.Path(exists=True, file_okay=False), help="A folder of documents to search.")
@click.option("--kg", "kgs", multiple=True, help="A KG to search (repeatable).")
@click.option("--into", help="The KG the findings are written to (created if missing).")
@click.option("--store", "store_mode", type=click.Choice(["auto", "apply", "propose", "none"]), default="auto",
              show_default=True, help="Write the KG delta into --into, stage it in its review queue, or neither; "
              "auto: write into a KG this run created, propose into any other.")
@click.option("--max-iterations", type=int, help="Iteration cap (default: the reasoner's, 10).")
@click.option("--budget-seconds", type=float, help="Time budget of the run.")
@click.option("--budget-tokens", type=int, help="Token budget (LLM answers).")
@click.option("--reasoner", default="reason.default", show_default=True,
              help="Reasoning strategy: reason.default, reason.conservative or a plugin's.")
@click.option("--strategy", type=click.Choice(["reciprocal_rank_fusion", "interleave_by_score", "round_robin",
                                               "union_dedupe", "weighted"]),
              help="How search backends are merged (default reciprocal_rank_fusion).")
@click.option("--provider", default="", help="An LLM provider spec for the answer (default: extractive, offline).")
@click.option("--embedder", default="default", show_default=True, help="Embedder of the corpus vectors.")
@click.option("--set", "settings", multiple=True, metavar="STAGE.KEY=VALUE",
              help="A module setting (repeatable), e.g. --set search.k=20 --set reason.min_sources=2.")
@click.option("--module", "module_ids", multiple=True, metavar="STAGE=ID",
              help="Use another registered module for a stage (repeatable), e.g. --module extract=extract.mine.")
@click.option("--on-failure", type=click.Choice(["stop", "skip"]), default="stop", show_default=True,
              help="When a stage raises: stop the run, or go on with its empty output.")
@output_options
@click.pass_context
def run_cmd(ctx: click.Context, question: str, corpus: str | None, kgs: tuple[str, ...], into: str | None,
            store_mode: str, max_iterations: int | None, budget_seconds: float | None, budget_tokens: int | None,
            reasoner: str, strategy: str | None, provider: str, embedder: str, settings: tuple[str, ...],
            module_ids: tuple[str, ...], on_failure: str, json_: bool, plain_: bool) -> None:
    """Research QUESTION (the default command: `kgos research "QUESTION" ...`)."""
    from ..research import RunControl, research
    o = out(ctx, json_, plain_)
    configs = _config(settings)
    if strategy:
        configs.setdefault("search", {})["strategy"] = strategy
    control = RunControl()
    with o.err.status("researching... (Ctrl-C stops after the current stage)") if o.human else _nothing(), \
            _interrupt_stops(control):
        r = research(workspace(ctx), question, corpus=corpus, kgs=kgs, into=into, store_mode=store_mode,
                     max_iterations=max_iterations, budget_seconds=budget_seconds, budget_tokens=budget_tokens,
                     reasoner=reasoner, configs=configs, provider=provider, embedder=embedder,
                     modules=_modules(module_ids), on_failure=on_failure, on_ask=_prompt(o), control=control)
    o.emit(r, lambda c: _print_result(c, r), lambda: _rows(r), columns=("n", "source", "span", "sentence"))
    if r.status == "waiting":
        o.note(f"Run {r.run_id} waits for an answer: {escape(r.pending_question or '')}\n"
               f"Answer with: kgos research ask {r.run_id} \"...\"")


@contextmanager
def _interrupt_stops(control: Any) -> Iterator[None]:
    """The first Ctrl-C is spec/004's user interrupt (the run stops after its current stage and still
    writes its answer and manifest); a second one interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def first(_sig: int, _frame: Any) -> None:
        control.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    old = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _rows(r: Any) -> list[tuple[Any, ...]]:
    by_n = {n: s["text"] for s in r.sentences for n in s["citations"]}
    return [(c["n"], c["source"], f"{c['span'][0]}-{c['span'][1]}", by_n.get(c["n"], "")) for c in r.citations]


def _print_result(c: Console, r: Any) -> None:
    if r.status == "waiting":
        return  # the note on stderr says what it asks and how to answer
    c.print(escape(r.answer) if r.answer else "[dim](no answer)[/dim]")
    if r.citations:
        c.print()
        for cit in r.citations:
            c.print(f"[dim][{cit['n']}][/dim] {escape(cit['source'])} chars {cit['span'][0]}-{cit['span'][1]}")
    c.print(f"\n[dim]{r.status}: stopped by {r.stopped_by or '-'} after {r.iterations} iteration(s); confidence "
            f"{r.confidence:.2f}, coverage {r.coverage:.2f}; run {r.run_id}; output {r.output_sha256}[/dim]")


@research_group.command("runs")
@click.option("--limit", type=int, default=50, show_default=True, help="How many runs, newest first.")
@output_options
@click.pass_context
def runs_cmd(ctx: click.Context, limit: int, json_: bool, plain_: bool) -> None:
    """List the workspace's research runs, newest first."""
    from ..research import runs
    rows = runs(workspace(ctx), limit)
    cols = ("run_id", "status", "iterations", "stopped_by", "confidence", "coverage", "question")
    o = out(ctx, json_, plain_)
    o.emit(rows, lambda c: c.print(table(None, cols, [[r[k] for k in cols] for r in rows])),
           lambda: [[r[k] for k in cols] for r in rows], columns=cols)


@research_group.command("show")
@click.argument("run_id")
@click.option("--stage", type=click.Choice(STAGE_NAMES), help="Show one stage's snapshot (input, output, config).")
@click.option("--iteration", type=int, default=1, show_default=True, help="The iteration of --stage (0: output).")
@output_options
@click.pass_context
def show_cmd(ctx: click.Context, run_id: str, stage: str | None, iteration: int, json_: bool, plain_: bool) -> None:
    """Show a run: its iterations, stages, decisions and answer (or one stage's snapshot)."""
    from ..research import run_manifest, stage_snapshot
    o = out(ctx, json_, plain_)
    if stage:
        snap = stage_snapshot(workspace(ctx), run_id, 0 if stage == "output" else iteration, stage)
        o.emit(snap, lambda c: c.print_json(json.dumps(snap, default=str)))
        return
    m = run_manifest(workspace(ctx), run_id)
    o.emit(m, lambda c: _print_manifest(c, m),
           lambda: [(it["iteration"], e["stage"], e["module"], e["status"], e["output_hash"])
                    for it in m["iterations"] for e in it["stages"]],
           columns=("iteration", "stage", "module", "status", "output_hash"))


def _print_manifest(c: Console, m: dict[str, Any]) -> None:
    s = m["summary"]
    c.print(f"[bold]{escape(s['question'])}[/bold]  {m['run_id']}  {s['status']}"
            f"{'' if m['sealed'] else '  [red](manifest edited: seal broken)[/red]'}")
    for it in m["iterations"]:
        r = it.get("reasoning") or {}
        stages = " > ".join(f"{e['stage']}{'' if e['status'] == 'complete' else '!'}" for e in it["stages"])
        c.print(f"  {it['iteration']}. {escape(it['reason'])}: {stages}")
        if r:
            c.print(f"     [dim]{escape(r['decision'])}: {escape(r['rationale'])}[/dim]")
    if m.get("pending_question"):
        c.print(f"[yellow]waits for an answer:[/yellow] {escape(m['pending_question'])}")
    if m.get("answer"):
        c.print("\n" + escape(m["answer"]["answer"]))


@research_group.command("replay")
@click.argument("run_id")
@click.option("--from-iteration", type=int, default=1, show_default=True, help="Re-execute from this iteration.")
@output_options
@click.pass_context
def replay_cmd(ctx: click.Context, run_id: str, from_iteration: int, json_: bool, plain_: bool) -> None:
    """Re-execute a run offline from its manifest and check every output hash (exit 1 if one differs)."""
    from ..research import replay
    rep = replay(workspace(ctx), run_id, from_iteration)
    o = out(ctx, json_, plain_)
    o.emit(rep, lambda c: _print_replay(c, rep),
           lambda: [(s["iteration"], s["stage"], s["module"], s["same"], s["replayed"]) for s in rep.stages],
           columns=("iteration", "stage", "module", "same", "replayed"))
    if not rep.identical:
        sys.exit(1)


def _print_replay(c: Console, rep: Any) -> None:
    for s in rep.stages:
        mark = "[green]same[/green]" if s["same"] else f"[red]differs[/red] (recorded {s['recorded']})"
        c.print(f"  {s['iteration'] or 'output'} {s['stage']:8} {s['module']:20} {s['replayed']} {mark}")
    c.print(f"{'identical' if rep.identical else 'NOT identical'}: output {rep.output_sha256}")


@research_group.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@output_options
@click.pass_context
def diff_cmd(ctx: click.Context, run_a: str, run_b: str, json_: bool, plain_: bool) -> None:
    """Compare two runs stage by stage (module, config, input and output hashes)."""
    from ..research import diff_runs
    d = diff_runs(workspace(ctx), run_a, run_b)
    rows = [(s["iteration"], s["stage"], *(("same" if v else "differs") for v in s["same"].values()))
            for s in d["stages"]]
    cols = ("iteration", "stage", "module", "config", "input", "output")
    o = out(ctx, json_, plain_)
    o.emit(d, lambda c: (c.print(table(None, cols, rows)),
                         c.print(f"output: {'same' if d['same_output'] else 'differs'}")), lambda: rows, columns=cols)


@research_group.command("resume")
@click.argument("run_id")
@output_options
@click.pass_context
def resume_cmd(ctx: click.Context, run_id: str, json_: bool, plain_: bool) -> None:
    """Continue a run that was stopped, interrupted, or waits for an answer (asked at the terminal)."""
    from ..research import resume
    o = out(ctx, json_, plain_)
    r = resume(workspace(ctx), run_id, on_ask=_prompt(o))
    o.emit(r, lambda c: _print_result(c, r), lambda: _rows(r), columns=("n", "source", "span", "sentence"))


@research_group.command("ask")
@click.argument("run_id")
@click.argument("answer")
@output_options
@click.pass_context
def ask_cmd(ctx: click.Context, run_id: str, answer: str, json_: bool, plain_: bool) -> None:
    """Answer the question a waiting run asked, and let it go on."""
    from ..research import resume
    o = out(ctx, json_, plain_)
    r = resume(workspace(ctx), run_id, answer, on_ask=_prompt(o))
    o.emit(r, lambda c: _print_result(c, r), lambda: _rows(r), columns=("n", "source", "span", "sentence"))


@research_group.command("modules")
@click.option("--category", help="Only this category (query, search, ingest, extract, merge, store, reason, output).")
@output_options
@click.pass_context
def modules_cmd(ctx: click.Context, category: str | None, json_: bool, plain_: bool) -> None:
    """List the registered pipeline modules and reasoners (installed plugins included)."""
    import kgos.research  # noqa: F401  (registers the built-in modules)

    from ..pipeline import REGISTRY
    rows = REGISTRY.describe(category)
    cols = ("id", "category", "version", "name")
    o = out(ctx, json_, plain_)
    o.emit(rows, lambda c: c.print(table(None, cols, [[r[k] for k in cols] for r in rows])),
           lambda: [[r[k] for k in cols] for r in rows], columns=cols)
