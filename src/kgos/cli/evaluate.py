"""``kgos eval``: recall, MRR and nDCG of a KG's search on a probe file, and the ablation table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ..retrieval.hybrid import MODES
from ..retrieval.intents import INTENTS
from . import cli, out, output_options, workspace
from .output import table
from .search import warn


@cli.command("eval")
@click.argument("db_id")
@click.argument("probes", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-k", "k", default=10, show_default=True, help="Depth of the ranking scored.")
@click.option("--ablation", is_flag=True, help="Compare single signals, fixed hybrids, RRF and the default.")
@click.option("--mode", type=click.Choice(MODES), help="Scoring strategy to evaluate (default: hybrid).")
@click.option("--weights", help="Explicit alpha,beta,gamma,delta to evaluate.")
@click.option("--intent", type=click.Choice(INTENTS), help="Force one retrieval intent for every probe.")
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help='JSON: {"mode", "weights", "intent", "text": {...}, "options": {...}}.')
@click.option("--per-probe", is_flag=True, help="Include each probe's top 10 and metrics in --json output.")
@output_options
@click.pass_context
def eval_(ctx: click.Context, db_id: str, probes: Path, k: int, ablation: bool, mode: str | None,
          weights: str | None, intent: str | None, config: Path | None, per_probe: bool, json_: bool,
          plain_: bool) -> None:
    """Evaluate DB_ID's search on PROBES (.jsonl or .jsonl.gz): strict and lenient Recall@1/5/10,
    MRR@10 and nDCG@10, by probe level and by intent, with latency."""
    from ..eval.ablation import ablation as run_ablation
    from ..eval.ablation import evaluate_config, load_config
    from ..eval.probes import load_probes
    kg = workspace(ctx).kg(db_id)
    cfg = {**load_config(config), **{key: v for key, v in (("mode", mode), ("weights", weights), ("intent", intent)) if v}}
    probe_list = load_probes(probes)
    o = out(ctx, json_, plain_)
    if ablation:
        reports = run_ablation(kg, probe_list, k, cfg)
        o.emit({"db_id": db_id, "probes": str(probes), "configs": [r.to_dict(per_probe) for r in reports]},
               lambda c: _print_ablation(c, reports), lambda: [_plain_row(r) for r in reports], columns=PLAIN_COLUMNS)
        warn(dict.fromkeys(w for r in reports for w in r.warnings))
        return
    report = evaluate_config(kg, probe_list, cfg, k)
    o.emit(report.to_dict(per_probe), lambda c: _print_report(c, db_id, report), lambda: [_plain_row(report)], columns=PLAIN_COLUMNS)
    warn(report.warnings)


METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
PLAIN_COLUMNS = ("configuration", "probes", *METRICS, "lenient_recall@10", "p50_ms")


def _plain_row(r: Any) -> tuple[Any, ...]:
    return (r.label, r.n, *(f"{r.strict[m]:.4f}" for m in METRICS), f"{r.lenient['recall@10']:.4f}",
            f"{r.latency_ms['p50']:.2f}")


def _print_ablation(c: Console, reports: list[Any]) -> None:
    rows = [(r.label, *(f"{r.strict[m]:.3f}" for m in METRICS), f"{r.lenient['recall@10']:.3f}",
             f"{r.latency_ms['p50']:.1f}") for r in reports]
    c.print(table(f"Ablation ({reports[0].n} probes, strict)", ["configuration", "R@1", "R@5", "R@10", "MRR@10",
                                                                "nDCG@10", "lenient R@10", "p50 ms"], rows))


def _print_report(c: Console, db_id: str, r: Any) -> None:
    rows = [(m, f"{r.strict[m]:.3f}", f"{r.lenient[m]:.3f}") for m in METRICS]
    c.print(table(f"{db_id}: {r.n} probes ({r.label})", ["metric", "strict", "lenient"], rows))
    for title, groups in (("by level", r.by_level), ("by intent", r.by_intent)):
        c.print(table(title, ["group", "n", "R@1", "R@10", "MRR@10", "lenient R@10"],
                      [(g, v["n"], f"{v['strict']['recall@1']:.3f}", f"{v['strict']['recall@10']:.3f}",
                        f"{v['strict']['mrr@10']:.3f}", f"{v['lenient']['recall@10']:.3f}") for g, v in groups.items()]))
    c.print(f"latency p50 {r.latency_ms['p50']:.1f} ms, p99 {r.latency_ms['p99']:.1f} ms")


@cli.command("tune")
@click.argument("db_id")
@click.argument("probes", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--folds", default=5, show_default=True, help="k of the k-fold cross-validation.")
@click.option("--step", default=0.1, show_default=True, help="Grid step over the weight simplex.")
@click.option("--save", is_flag=True, help="Store the fitted weights for this KG if they win on held-out folds.")
@click.option("--force", is_flag=True, help="With --save: store them even without a held-out gain.")
@click.option("--reset", is_flag=True, help="Remove this KG's tuned weights and return to the spec profiles.")
@output_options
@click.pass_context
def tune(ctx: click.Context, db_id: str, probes: Path, folds: int, step: float, save: bool, force: bool,
         reset: bool, json_: bool, plain_: bool) -> None:
    """Search retrieval weights per intent on PROBES with k-fold cross-validation; report the
    held-out MRR@10 of the default and of the tuned weights, and optionally save them."""
    from ..eval.tuning import tune as tune_weights
    kg = workspace(ctx).kg(db_id)
    if reset:
        kg.save_weight_profiles(None)
    report = tune_weights(kg, probes, folds=folds, step=step, save=save, force=force)
    out(ctx, json_, plain_).emit(report, lambda c: _print_tune(c, db_id, report, save),
                                 lambda: [(k, *v) for k, v in report.weights.items()], columns=("intent", "alpha", "beta", "gamma", "delta"))


def _print_tune(c: Console, db_id: str, r: Any, saved: bool) -> None:
    c.print(f"{db_id}: {r.n} probes, {r.folds}-fold held-out MRR@10: default {r.heldout_default_mrr:.4f}, "
            f"tuned {r.heldout_tuned_mrr:.4f} ({r.gain:+.4f}; per fold "
            + ", ".join(f"{g:+.3f}" for g in r.fold_gains) + ")")
    c.print(table("weights fitted on all probes", ["intent", "alpha", "beta", "gamma", "delta"],
                  [(k, *(f"{x:.2f}" for x in v)) for k, v in r.weights.items()]))
    if saved:
        c.print(f"Saved: search on this KG now uses these weights (explicit weights still win); {r.scope}.")
    elif not r.worth_saving:
        c.print("No held-out gain: keep the current profiles.")
