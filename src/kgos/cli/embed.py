"""``kgos embed``: embed a KG (``kgos embed KG``, the ``run`` subcommand), keep other models' vectors
beside it (``add``, ``models``), benchmark models x projections (``bench``, spec/003 3.6) and compare
models on a probe set (``compare``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from . import cli, out, output_options, workspace
from .output import table

DEFAULT_SUBCOMMAND = "run"
# ``kgos embed KG --adapt`` is ``kgos embed adapt KG``; ``--names`` is ``kgos embed names KG`` (each with --drop)
FLAG_SUBCOMMANDS = {"--adapt": ("adapt", None), "--drop-adapter": ("adapt", "--drop"),
                    "--names": ("names", None), "--drop-names": ("names", "--drop")}


class EmbedGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to ``run``: ``kgos embed KG``
    keeps working beside ``kgos embed bench KG`` (a KG named like a subcommand: ``kgos embed run NAME``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            flag = next((a for a in args if a in FLAG_SUBCOMMANDS), None)
            if flag is None:
                args = [DEFAULT_SUBCOMMAND, *args]
            else:
                command, extra = FLAG_SUBCOMMANDS[flag]
                args = [command, *(a for a in args if a != flag), *([extra] if extra else [])]
        return super().parse_args(ctx, args)


@cli.group("embed", cls=EmbedGroup)
def embed_group() -> None:
    """Embed a KG's nodes (`kgos embed KG`, short for `kgos embed run KG`), keep several models side
    by side (add, models), benchmark models and projections (bench) and compare models on probes
    (compare)."""


def _specs(models: str | None) -> list[str] | None:
    return [m.strip() for m in models.split(",") if m.strip()] if models else None


@embed_group.command("add")
@click.argument("db_id")
@click.option("--model", required=True, help="Embedder spec to add beside the search model (e.g. fast, minilm, hash).")
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(min=1))
@output_options
@click.pass_context
def add(ctx: click.Context, db_id: str, model: str, batch_size: int, json_: bool, plain_: bool) -> None:
    """Embed DB_ID with MODEL beside its search model's vectors (search keeps its model; use
    `kgos search --model MODEL` for these)."""
    o = out(ctx, json_, plain_)
    kg = workspace(ctx).kg(db_id)
    with o.meter(f"embed {db_id} ({model})", "nodes") as meter:
        report = kg.embed_side(model, batch_size=batch_size, progress=meter.advance, total=meter.total)
    o.emit(report, lambda c: c.print(f"Embedded {report.embedded:,} of {report.nodes:,} nodes of [bold]{db_id}[/] "
                                     f"with {report.model} beside the search model ({report.unchanged:,} unchanged)"),
           lambda: [(db_id, report.model, report.embedded)], columns=("db_id", "model", "embedded"))


CURRICULUM_HELP = ("Pseudo-queries: names = names and aliases (default); names+sentences also one description "
                   "sentence per node, for goal- and definition-style queries (measured: go +2.4%, python-stdlib "
                   "+1.1% over names, demo -0.2% (so not the default); 1.2-4.6x the training time; "
                   "docs/embedders.md).")
CURRICULA = ("names", "names+sentences")  # kgos.embed.adapter.CURRICULA (not imported: it loads scipy)


@embed_group.command("adapt")
@click.argument("db_id")
@click.option("--curriculum", type=click.Choice(CURRICULA), default="names", show_default=True,
              help=CURRICULUM_HELP)
@click.option("--drop", is_flag=True, help="Remove the query adapter: search uses the model's own query vectors.")
@click.option("--status", is_flag=True, help="Show whether a query adapter is stored (and what it was fitted on); change nothing.")
@output_options
@click.pass_context
def adapt(ctx: click.Context, db_id: str, curriculum: str, drop: bool, status: bool, json_: bool, plain_: bool) -> None:
    """Fit a query adapter of DB_ID's search model on the KG itself (`kgos embed KG --adapt`): names
    and aliases as pseudo-queries of their node, connected nodes as hard negatives; stored in the KG
    when it beats the model alone on held-out pairs, then used by every search. No labels, no probes."""
    o = out(ctx, json_, plain_)
    kg = workspace(ctx).kg(db_id)
    if status:
        st = kg.adapter_status()
        o.emit(st, lambda c: c.print(_adapter_line(st)), lambda: [_status_row(st)], columns=STATUS_COLUMNS)
    elif drop:
        dropped = kg.drop_adapter()
        o.emit({"db_id": db_id, "dropped": dropped}, lambda c: c.print(
            f"{db_id}: query adapter removed" if dropped else f"{db_id}: no query adapter to remove"),
            lambda: [(db_id, dropped)], columns=("db_id", "dropped"))
    else:
        with o.progress(f"adapt {db_id}") as update:  # a counter per phase (names embedded, epochs), terminals only
            r = kg.adapt(curriculum, (lambda phase, done, total: update(phase, done)) if update else None)
        verdict = "saved: search uses it" if r.saved else "not saved: no better than the model alone"
        o.emit(r, lambda c: c.print(
            f"{db_id}: query adapter of {r.model} ({curriculum}) on {r.pairs:,} pairs, {r.epochs} epochs, "
            f"{r.seconds:.1f} s ({r.fit_seconds:.1f} s fitting); held-out MRR "
            f"{r.val_mrr_before:.3f} -> {r.val_mrr_after:.3f} ({verdict})"),
            lambda: [_adapt_row(r)], columns=("db_id", "model", "pairs", "val_mrr_before", "val_mrr_after", "saved", "seconds"))


STATUS_COLUMNS = ("db_id", "model", "present", "curriculum", "pairs", "val_mrr")


def _adapter_line(st: Any) -> str:
    if st.model is None:
        return f"{st.db_id}: no vectors yet (run `kgos embed {st.db_id}` first), so no query adapter"
    if not st.present:
        return f"{st.db_id}: no query adapter of {st.model} (`kgos embed {st.db_id} --adapt` fits one)"
    return (f"{st.db_id}: query adapter of {st.model} stored ({st.curriculum or 'curriculum not recorded'}, "
            f"{st.pairs or 0:,} pairs, held-out MRR {st.val_mrr or 0:.3f}); search uses it")


def _status_row(st: Any) -> tuple[Any, ...]:
    return (st.db_id, st.model, st.present, st.curriculum, st.pairs, st.val_mrr)


def _adapt_row(r: Any) -> tuple[Any, ...]:
    return (r.db_id, r.model, r.pairs, f"{r.val_mrr_before:.4f}", f"{r.val_mrr_after:.4f}", r.saved, f"{r.seconds:.1f}")


@embed_group.command("names")
@click.argument("db_id")
@click.option("--drop", is_flag=True, help="Stop keeping name vectors and remove them.")
@click.option("--status", is_flag=True, help="Show whether name vectors are kept and how many nodes have one; change nothing.")
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(min=1))
@output_options
@click.pass_context
def names(ctx: click.Context, db_id: str, drop: bool, status: bool, batch_size: int, json_: bool, plain_: bool) -> None:
    """Keep a vector of each node's name and first aliases beside its full-text vector (`kgos embed KG
    --names`); the embedding signal then also scores them (index/nearest.py NAME_SCORING)."""
    o = out(ctx, json_, plain_)
    kg = workspace(ctx).kg(db_id)
    if status:
        st = kg.names_status()
        o.emit(st, lambda c: c.print(f"{db_id}: name vectors of {st.model or 'no model (no vectors yet)'} "
                                     f"{'kept' if st.kept else 'not kept'}, {st.nodes:,} nodes have one"),
               lambda: [(db_id, st.model, st.kept, st.nodes)], columns=("db_id", "model", "kept", "nodes"))
    elif drop:
        dropped = kg.drop_names()
        o.emit({"db_id": db_id, "dropped": dropped}, lambda c: c.print(
            f"{db_id}: name vectors removed" if dropped else f"{db_id}: no name vectors to remove"),
            lambda: [(db_id, dropped)], columns=("db_id", "dropped"))
    else:
        with o.meter(f"embed names of {db_id}", "names") as meter:
            done = kg.embed_names(batch_size, meter.advance)
        o.emit({"db_id": db_id, "embedded": done}, lambda c: c.print(f"{db_id}: name vectors of {done:,} nodes embedded"),
               lambda: [(db_id, done)], columns=("db_id", "embedded"))


@embed_group.command("models")
@click.argument("db_id")
@output_options
@click.pass_context
def models(ctx: click.Context, db_id: str, json_: bool, plain_: bool) -> None:
    """List the embedding models with vectors stored in DB_ID and the one search uses."""
    kg = workspace(ctx).kg(db_id)
    counts, status = kg.embedding_models(), kg.embed_status()
    data = {"db_id": db_id, "search_model": status.search_model, "nodes": status.nodes, "models": counts}
    rows = [(name, n) for name, n in sorted(counts.items())]
    out(ctx, json_, plain_).emit(data, lambda c: c.print(table(
        f"{db_id}: search uses {status.search_model or 'no vectors'} ({status.nodes:,} nodes)",
        ["model", "vectors"], [(m, f"{n:,}") for m, n in rows])), lambda: rows, columns=("model", "vectors"))


@embed_group.command("bench")
@click.argument("db_id")
@click.option("--models", help="Comma-separated embedder specs (default: every installed local embedder).")
@click.option("--dims", default=54, show_default=True, type=click.IntRange(min=2),
              help="Target dimensions of the projections.")
@click.option("--negatives", default=50, show_default=True, type=click.IntRange(min=1),
              help="Corrupted edges per true edge.")
@click.option("--sample", type=click.IntRange(min=2), help="Benchmark this many random nodes (and the edges among them).")
@click.option("--epochs", default=20, show_default=True, type=click.IntRange(min=0),
              help="Training epochs of the learned projection.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Seed of the sample, split and negatives.")
@output_options
@click.pass_context
def bench(ctx: click.Context, db_id: str, models: str | None, dims: int, negatives: int, sample: int | None,
          epochs: int, seed: int, json_: bool, plain_: bool) -> None:
    """The spec/003 3.6 benchmark on DB_ID: every model x projection (truncate, PCA, learned linear;
    split, blend, concat-PCA for pairs), scored by MRR of held-out true edges against corrupted ones,
    intra/inter-type similarity and PCA variance. Writes nothing to the KG."""
    from ..embed.bench import bench as run_bench
    ws = workspace(ctx)
    o = out(ctx, json_, plain_)
    report = run_bench(ws.kg(db_id).store, _specs(models), dims=dims, negatives=negatives, sample=sample,
                       epochs=epochs, seed=seed, cache_root=ws.cache_dir, progress=o.note)
    o.emit(report, lambda c: _print_bench(c, report), lambda: [_bench_row(r) for r in report.rows],
           columns=BENCH_COLUMNS)


BENCH_COLUMNS = ("config", "dims", "mrr", "intra", "inter", "separation", "pca_variance", "fit_s")


def _bench_row(r: Any) -> tuple[Any, ...]:
    return (r.config, r.dims, f"{r.mrr:.4f}", f"{r.intra:.3f}", f"{r.inter:.3f}", f"{r.separation:.3f}",
            "" if r.explained is None else f"{r.explained:.3f}", f"{r.fit_seconds:.2f}")


def _print_bench(c: Console, r: Any) -> None:
    c.print(table(f"{r.db_id}: {r.nodes:,} nodes, {r.types} types; MRR of {r.test_edges:,} held-out edges vs "
                  f"{r.negatives} corrupted tails each", ["configuration", "dims", "MRR", "intra", "inter",
                                                          "separation", "PCA var", "fit s"],
                  [_bench_row(x) for x in r.rows]))
    c.print(table("models", ["spec", "model", "dims", "ms/node", "load MB", "reused"],
                  [(m.spec, m.name, m.dims, f"{m.seconds_per_node * 1000:.3f}",
                    "" if m.load_mb is None else f"{m.load_mb:.0f}", f"{m.reused:,}") for m in r.models]))
    best = r.best()
    c.print(f"best MRR: {best.config} {best.mrr:.4f}")


@embed_group.command("compare")
@click.argument("db_id")
@click.argument("probes", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--models", required=True, help="Comma-separated embedder specs, e.g. minilm,fast,hash.")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(min=1), help="Depth of the ranking scored.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(("embedding", "hybrid")),
              help="Search mode(s) to compare (repeatable; default: both).")
@click.option("--no-embed", is_flag=True, help="Do not embed missing vectors: a model without vectors is an error.")
@output_options
@click.pass_context
def compare(ctx: click.Context, db_id: str, probes: Path, models: str, k: int, modes: tuple[str, ...],
            no_embed: bool, json_: bool, plain_: bool) -> None:
    """Compare embedding models on PROBES: each model's vectors beside the others in DB_ID (embedded
    where missing), the probes searched with each, Recall@1/5/10, MRR@10 and nDCG@10 per model and mode."""
    from ..eval.models import MODES, compare_models
    from ..eval.probes import load_probes
    o = out(ctx, json_, plain_)
    result = compare_models(workspace(ctx).kg(db_id), load_probes(probes), _specs(models) or [], k,
                            modes or MODES, embed=not no_embed, progress=o.note)
    o.emit(result, lambda c: _print_compare(c, result), lambda: [_compare_row(r) for r in result.rows],
           columns=COMPARE_COLUMNS)
    for w in dict.fromkeys(w for r in result.rows for w in r.report.warnings):  # stderr: stdout stays one document
        click.echo(f"warning: {w}", err=True)


METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
COMPARE_COLUMNS = ("model", "mode", "probes", *METRICS, "lenient_recall@10", "p50_ms")


def _compare_row(r: Any, digits: int = 4) -> tuple[Any, ...]:
    rep = r.report
    return (r.model, r.mode, rep.n, *(f"{rep.strict[m]:.{digits}f}" for m in METRICS),
            f"{rep.lenient['recall@10']:.{digits}f}", f"{rep.latency_ms['p50']:.{min(digits, 2)}f}")


def _print_compare(c: Console, result: Any) -> None:
    c.print(table(f"{result.db_id}: models compared on {result.rows[0].report.n} probes (strict; lenient R@10)",
                  ["model", "mode", "n", "R@1", "R@5", "R@10", "MRR", "nDCG", "lenR@10", "p50 ms"],
                  [_compare_row(r, 3) for r in result.rows]))
