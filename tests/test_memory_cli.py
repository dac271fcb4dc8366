"""``kgos memory ...``: every command with --json, help, and clean errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import kgos.cli.memory  # noqa: F401  (registers the memory group)
from kgos.cli import cli


@pytest.fixture
def run(tmp_path):
    runner = CliRunner()

    def invoke(*args: str, code: int = 0, input: str | None = None):
        result = runner.invoke(cli, ["--home", str(tmp_path / "home"), *args], input=input)
        assert result.exit_code == code, (result.output, result.stderr, result.exception)
        return result
    return invoke


def js(result) -> object:
    return json.loads(result.stdout)


def test_every_memory_command_has_help():
    group = cli.commands["memory"]
    names = [(n,) for n in group.commands] + [("aliases", n) for n in group.commands["aliases"].commands]
    assert {"add", "search", "neighbors", "stats", "export", "import", "rebuild", "context", "recall",
            "recent", "aliases", "decay", "get", "delete"} <= set(group.commands)
    for path in names:
        result = CliRunner().invoke(cli, ["memory", *path, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, path


def test_add_search_neighbors_context_stats(run):
    added = js(run("memory", "add", "I'm working on meshalyzer using Python.", "--tag", "work",
                   "--expert", "py", "--meta", "source=cli", "--json"))
    assert added["memory"]["kg_status"] == "ok" and added["memory"]["metadata"]["source"] == "cli"
    assert ("works_on", "Meshalyzer") in {(r["predicate"], r["object"]["name"]) for r in added["relations"]}
    assert "--[prefers]--> [concept] Dark Mode" in run("memory", "add", "I prefer dark mode.").stdout  # not markup
    found = js(run("memory", "search", "meshalyzer", "--json"))
    assert found["entities"][0]["score"] == 1.0 and found["total"] == 1
    nbs = js(run("memory", "neighbors", "Meshalyzer", "--direction", "incoming", "--json"))
    assert [n["edge"]["type"] for n in nbs] == ["works_on"]
    assert len(js(run("memory", "neighbors", "user", "--json"))) == 3
    ctx = run("memory", "context", "meshalyzer").stdout
    assert ctx.startswith("=== Knowledge Graph Context ===") and "Evidence IDs: mem_" in ctx
    ctx_json = js(run("memory", "context", "meshalyzer", "--max-edges", "1", "--json"))
    assert len(ctx_json["edges"]) == 1 and ctx_json["edges_total"] == 2
    stats = js(run("memory", "stats", "--json"))
    assert (stats["memories"], stats["kg_status"]) == (2, {"ok": 2})
    hits = js(run("memory", "recall", "meshalyzer", "--expert", "py", "--json"))
    assert len(hits) == 1 and js(run("memory", "get", hits[0]["memory"]["id"], "--json"))["tags"] == ["work"]


def test_add_from_stdin_and_errors(run):
    assert js(run("memory", "add", "-", "--json", input="I prefer Rust.\n"))["relations"][0]["object"]["name"] == "Rust"
    err = run("memory", "add", "   ", code=1)
    assert "empty" in err.stderr and err.stdout == ""
    assert "no memory" in run("memory", "get", "mem_nope", code=1).stderr
    assert "no node" in run("memory", "neighbors", "Nothing", code=1).stderr
    assert "KEY=VALUE" in run("memory", "add", "x", "--meta", "novalue", code=2).stderr


def test_export_import_rebuild_and_malformed_file(run, tmp_path):
    run("memory", "add", "I'm working on Atlas using Docker.")
    out = tmp_path / "snap.json"
    assert js(run("memory", "export", str(out), "--json"))["edges"] == 3
    assert js(run("memory", "import", str(out), "--merge", "--json"))["mode"] == "merge"
    assert js(run("memory", "import", str(out), "--json"))["mode"] == "replace"
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": "1.0", "entities": [{"id": "x"}], "edges": []}')
    assert "entities[0]" in run("memory", "import", str(bad), code=1).stderr
    dry = js(run("memory", "rebuild", "--dry-run", "--json"))
    assert dry["dry_run"] and dry["edges"] == dry["edges_before"] == 3
    assert js(run("memory", "rebuild", "--json"))["memories"] == 1
    assert "Rebuilt" in run("memory", "rebuild").stdout


def test_recent_aliases_decay_and_delete(run):
    first = js(run("memory", "add", "I'm working on Atlas using Python.", "--json"))["memory"]["id"]
    run("memory", "add", "I prefer python3.")
    today = js(run("memory", "recent", "today", "--json"))
    assert today["timeline"]["memories"] == 2 and len(today["memories"]) == 2
    asked = js(run("memory", "recent", "what was I working on today?", "--json"))
    assert [i["name"] for i in asked["timeline"]["items"]] == ["Atlas"]
    assert "cannot read a time range" in run("memory", "recent", "whenever", code=1).stderr
    proposals = js(run("memory", "aliases", "propose", "--json"))
    assert proposals[0]["alias_name"] == "Python3"
    assert js(run("memory", "aliases", "accept", str(proposals[0]["id"]), "--json"))[0]["status"] == "accepted"
    assert "accepted" in run("memory", "aliases").stdout
    assert js(run("memory", "aliases", "list", "--status", "proposed", "--json")) == []
    assert js(run("memory", "decay", "--half-life", "30", "--json"))["written"] is False
    deleted = js(run("memory", "delete", first, "--rebuild", "--json"))
    assert deleted["deleted"] and deleted["rebuild"]["memories"] == 1


def test_db_option_selects_another_memory_kg(run):
    run("memory", "--db", "notes-mem", "add", "I prefer Rust.")
    assert js(run("--json", "kg", "list"))[0]["db_id"] == "notes-mem"
    assert js(run("memory", "--db", "notes-mem", "stats", "--json"))["entities"] == 2
