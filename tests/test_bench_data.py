"""The real benchmark KGs import through the CLI with the published counts (issue 2, done-when)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgos.cli import cli

from conftest import BENCH

COUNTS = {"go": (43_558, 84_172), "cli-man": (3_073, 12_343)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COUNTS))
def test_bench_kg_import_and_stats(tmp_path, name):
    path = BENCH / name / "kg.json.gz"
    if not path.exists():
        pytest.skip(f"{path} not present (shared/bench sits beside the repo in CI)")
    runner = CliRunner()
    home = ["--home", str(tmp_path)]
    imported = runner.invoke(cli, [*home, "kg", "import", name, str(path), "--json", "--no-embed"])  # import alone
    assert imported.exit_code == 0, imported.stderr
    stats = json.loads(runner.invoke(cli, [*home, "kg", "stats", name, "--json"]).stdout)
    assert (stats["nodes"], stats["edges"]) == COUNTS[name]
    report = json.loads(runner.invoke(cli, [*home, "kg", "validate", name, "--json"]).stdout)
    assert report["ok"] is True
