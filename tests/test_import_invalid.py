"""Bad records: an import fails whole on the first one, or with ``skip_invalid`` leaves them out,
counts them and shows the first few (issue 14, bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import write_nodelink

import kgos
from kgos.cli import cli
from kgos.errors import ImportFailed

DEEP: dict = {}
_level = DEEP
for _ in range(40):
    _level["x"] = {}
    _level = _level["x"]

GOOD = [{"id": f"n{i}", "name": f"Node {i}", "type": "thing"} for i in range(6)]
BAD_NODES = [{"id": "b1", "name": 7}, {"id": "b2", "name": "Deep", "properties": DEEP}, {"name": "no id"},
             {"id": "n0", "name": "Node 0 again"}]
EDGES = [{"source": "n0", "target": "n1", "type": "links"}, {"source": "n1", "target": "n2", "type": "links"},
         {"source": "n2", "target": "b1", "type": "links"},  # to a node left out: left out too
         {"source": "n3", "target": "n4", "type": "links", "weight": "heavy"}]


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    return write_nodelink(tmp_path / "bad.json", GOOD[:3] + BAD_NODES + GOOD[3:], EDGES)


def test_a_bad_record_fails_the_whole_import(ws: kgos.Workspace, bad_file: Path) -> None:
    with pytest.raises(ImportFailed, match=r"nodes\[3\]"):
        ws.import_file("t", bad_file)
    assert not ws.exists("t")


def test_skip_invalid_leaves_bad_records_out_and_counts_them(ws: kgos.Workspace, bad_file: Path) -> None:
    report = ws.import_file("t", bad_file, skip_invalid=True)
    assert (report.nodes, report.edges, report.skipped_invalid) == (6, 2, 6)
    assert len(report.invalid_examples) == 5 and "nodes[3]" in report.invalid_examples[0]
    kg = ws.kg("t")
    assert kg.get_node("n0").name == "Node 0"  # the first of two equal ids stays
    assert kg.get_node("b1") is None and kg.stats().edges == 2


def test_merge_with_skip_invalid_keeps_the_kg_transactional_otherwise(ws: kgos.Workspace, bad_file: Path,
                                                                        tmp_path: Path) -> None:
    ws.import_file("t", write_nodelink(tmp_path / "good.json", GOOD, []))
    with pytest.raises(ImportFailed):
        ws.import_file("t", bad_file, mode="merge")
    assert ws.kg("t").stats().edges == 0
    report = ws.import_file("t", bad_file, mode="merge", skip_invalid=True)
    assert (report.skipped_invalid, ws.kg("t").stats().edges) == (6, 2)


def test_cli_reports_the_records_left_out(tmp_path: Path, bad_file: Path) -> None:
    home = ["--home", str(tmp_path / "home")]
    result = CliRunner().invoke(cli, [*home, "kg", "import", "t", str(bad_file), "--skip-invalid", "--no-embed"])
    assert result.exit_code == 0, result.output
    assert "Left out 6 invalid records" in result.output and "nodes[3]" in result.output
    result = CliRunner().invoke(cli, [*home, "kg", "import", "u", str(bad_file), "--skip-invalid", "--no-embed",
                                      "--json"])
    assert json.loads(result.output)["skipped_invalid"] == 6
