"""The kgos command: help everywhere, clean JSON on stdout, clean errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner
from conftest import write_nodelink

from kgos.cli import COMMANDS, cli, load_all

load_all()  # the commands load lazily; walking them needs every one


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, cmd in group.commands.items():
        found.append(prefix + (name,))
        if isinstance(cmd, click.Group):
            found += all_commands(cmd, prefix + (name,))
    return found


@pytest.fixture
def run(tmp_path):
    runner = CliRunner()

    def invoke(*args: str, code: int = 0):
        result = runner.invoke(cli, ["--home", str(tmp_path / "home"), *args])
        assert result.exit_code == code, (result.output, result.stderr, result.exception)
        return result
    return invoke


@pytest.mark.parametrize("path", all_commands(cli), ids=" ".join)
def test_every_command_has_help(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    cmd = cli
    for name in path:
        cmd = cmd.commands[name]
    assert cmd.help and len(cmd.help.strip()) > 10, f"{' '.join(path)} has no help text"
    assert "Usage:" in result.output


def test_the_help_list_shows_each_command_its_own_help() -> None:
    assert set(COMMANDS) == set(cli.commands)
    for name, (_, line) in COMMANDS.items():
        for limit in (45, 300):
            assert click.Command(name, help=line).get_short_help_str(limit) == \
                cli.commands[name].get_short_help_str(limit), name


LIGHT = ("numpy", "scipy", "pydantic", "rich", "kgos.kg", "kgos.methods", "kgos.store")


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_load_no_heavy_module(args: list[str]) -> None:
    """``kgos --help`` starts in a fraction of a second because it imports no command module, no
    numpy, scipy, pydantic or rich (benchmarks/cli_start.py measures the time)."""
    code = ("import sys; from kgos.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', sorted(m for m in {LIGHT!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, check=True)
    assert "Usage:" in done.stdout or "version" in done.stdout
    assert done.stdout.rsplit("LOADED", 1)[1].strip() == "[]"
    assert "want-to" in done.stdout or "version" in done.stdout


HEAVY = ("numpy", "scipy", "kgos.kg", "kgos.methods", "kgos.store", "kgos.retrieval.hybrid")


@pytest.mark.parametrize("command", ["kg", "search", "demo", "expert", "memory", "mcp", "serve", "predict"])
def test_a_commands_help_loads_no_query_stack(command: str) -> None:
    """``kgos COMMAND --help`` imports the command's module only, not numpy or the KG layers below it."""
    code = ("import sys; from kgos.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, command, "--help"], capture_output=True, text=True,
                          timeout=60, check=True)
    assert "Usage:" in done.stdout and done.stdout.rsplit("LOADED", 1)[1].strip() == "[]"


def test_version_is_the_package_version() -> None:
    from importlib.metadata import version
    assert CliRunner().invoke(cli, ["--version"]).output.strip() == f"kgos, version {version('kgos')}"


def test_kg_lifecycle_with_json_output(run, tmp_path, tiny_graph):
    src = write_nodelink(tmp_path / "g.json", *tiny_graph)
    report = json.loads(run("kg", "import", "t", str(src), "--json").stdout)
    assert (report["nodes"], report["edges"], report["mode"]) == (3, 2, "create")
    listing = json.loads(run("--json", "kg", "list").stdout)
    assert [(k["db_id"], k["nodes"], k["edges"]) for k in listing] == [("t", 3, 2)]
    stats = json.loads(run("kg", "stats", "t", "--json").stdout)
    assert (stats["nodes"], stats["edges"]) == (3, 2)
    out = tmp_path / "out.json.gz"
    run("kg", "export", "t", str(out))
    run("kg", "import", "t", str(out), "--replace")
    assert "t\tdeleted" in run("kg", "delete", "t", "--yes", "--plain").stdout
    assert json.loads(run("kg", "list", "--json").stdout) == []


def test_plain_output_is_tab_separated(run, tmp_path, tiny_graph):
    run("kg", "import", "t", str(write_nodelink(tmp_path / "g.json", *tiny_graph)))
    assert run("kg", "list", "--plain").stdout.splitlines() == ["t\tnative\tnative\t3\t2"]


def test_errors_are_one_line_on_stderr_with_exit_1(run, tmp_path, tiny_graph):
    src = write_nodelink(tmp_path / "g.json", *tiny_graph)
    run("kg", "import", "t", str(src))
    result = run("kg", "import", "t", str(src), "--json", code=1)
    assert result.stdout == ""
    assert result.stderr.startswith("Error: KG 't' already exists") and "Traceback" not in result.stderr
    assert "invalid KG name" in run("kg", "create", "../x", code=1).stderr
    assert "no KG named 'nope'" in run("kg", "stats", "nope", code=1).stderr
    (tmp_path / "bad.json").write_text('{"nodes": [{"id": "a"}, {"id": "a"}], "edges": []}')
    assert "nodes[1]: duplicate node id" in run("kg", "import", "u", str(tmp_path / "bad.json"), code=1).stderr
    assert "choose one of" in run("kg", "import", "t", str(src), "--merge", "--replace", code=2).stderr


def test_delete_asks_for_confirmation(run, tmp_path):
    run("kg", "create", "t")
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "kg", "delete", "t"], input="n\n")
    assert result.exit_code == 1
    assert json.loads(run("kg", "list", "--json").stdout)[0]["db_id"] == "t"


def test_validate_exits_nonzero_on_errors(run, tmp_path):
    nodes = [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}]
    edges = [{"source": "a", "target": "b", "type": "requires"}, {"source": "b", "target": "a", "type": "requires"}]
    run("kg", "import", "cyc", str(write_nodelink(tmp_path / "c.json", nodes, edges)))
    report = json.loads(run("kg", "validate", "cyc", "--json", code=1).stdout)
    assert report["ok"] is False and any(i["rule"] == 9 for i in report["issues"])
    edges.pop()
    run("kg", "import", "cyc", str(write_nodelink(tmp_path / "c.json", nodes, edges)), "--replace")
    assert json.loads(run("kg", "validate", "cyc", "--json").stdout)["ok"] is True


def test_console_script_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kgos", "--home", str(tmp_path), "--json", "kg", "list"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


@pytest.mark.parametrize("args", [
    ("expert", "import", "{missing}"),
    ("expert", "update", "demo", "--file", "{missing}"),
    ("expert", "create", "X", "--file", "{missing}"),
    ("memory", "export", "{under_a_file}"),
])
def test_unreadable_and_unwritable_paths_are_clean_errors(run, tmp_path, args):
    (tmp_path / "a_file").write_text("x")
    paths = {"missing": str(tmp_path / "nope.json"), "under_a_file": str(tmp_path / "a_file" / "out.json")}
    result = run(*(a.format(**paths) for a in args), code=1)
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.output
    assert str(tmp_path) in result.stderr


@pytest.mark.parametrize("damage", ["[]", "{}", "not json", '{"format": "kgos-graph-index/1", "n": 3}'])
@pytest.mark.parametrize("which", ["meta.json", "graph/meta.json"])
def test_a_damaged_index_cache_is_rebuilt_not_a_traceback(run, tmp_path, tiny_graph, which, damage):
    run("kg", "import", "t", str(write_nodelink(tmp_path / "g.json", *tiny_graph)), "--no-embed")  # one version
    first = json.loads(run("search", "t", "prompt caching", "--json").stdout)
    [meta] = (tmp_path / "home" / "cache" / "t" / "snapshots").glob(f"*/{which}")
    meta.write_text(damage)
    again = json.loads(run("search", "t", "prompt caching", "--json").stdout)
    assert [h["node"]["id"] for h in again["results"]] == [h["node"]["id"] for h in first["results"]]


def test_plain_header_row_names_the_columns(run, tmp_path, tiny_graph):
    run("kg", "import", "t", str(write_nodelink(tmp_path / "g.json", *tiny_graph)))
    assert run("kg", "list", "--plain").stdout.splitlines() == ["t\tnative\tnative\t3\t2"]
    expected = ["db_id\tkind\tprofile\tnodes\tedges", "t\tnative\tnative\t3\t2"]
    assert run("kg", "list", "--plain", "--header").stdout.splitlines() == expected
    assert run("--plain", "--header", "kg", "list").stdout.splitlines() == expected
    assert run("--header", "kg", "list", "--plain", "--no-header").stdout.splitlines() == expected[1:]
    assert json.loads(run("kg", "list", "--json", "--header").stdout)[0]["db_id"] == "t"  # JSON: no effect


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> str:
    home = str(tmp_path_factory.mktemp("demo") / "home")
    result = CliRunner().invoke(cli, ["--home", home, "demo", "--embedder", "hash", "--plain"])
    assert result.exit_code == 0, result.output
    return home


@pytest.mark.parametrize("args", [
    ("demo", "--embedder", "none"), ("kg", "stats", "demo"), ("kg", "validate", "demo"),
    ("search", "demo", "reduce costs"), ("embed", "demo", "--model", "hash"),
    ("want-to", "demo", "reduce costs"), ("can-it", "demo", "stream responses"), ("compose", "demo", "reduce costs"),
    ("similar", "demo", "feature:batch_api"), ("alternatives", "demo", "feature:batch_api"),
    ("why-not", "demo", "feature:batch_api"), ("impact", "demo", "feature:batch_api"),
    ("trace", "demo", "feature:batch_api", "feature:prompt_caching"), ("explore", "demo", "feature:batch_api"),
    ("intent", "how do I reduce costs"), ("intent", "how do I reduce costs", "--kg", "demo"),
    ("analyze", "critical", "demo"), ("analyze", "bottlenecks", "demo"), ("analyze", "communities", "demo"),
    ("analyze", "gaps", "demo"), ("dims", "list"), ("dims", "show", "demo", "feature:batch_api"),
    ("dims", "filter", "demo", "pricing_tier<0.5"), ("expert", "list"), ("expert", "show", "demo"),
    ("memory", "add", "I use Python for the chatbot"), ("memory", "search", "Python"), ("memory", "stats"),
    ("memory", "recall", "Python"), ("memory", "neighbors", "user"), ("memory", "recent"),
], ids=" ".join)
def test_every_plain_header_is_as_wide_as_its_rows(demo_home, args):
    result = CliRunner().invoke(cli, ["--home", demo_home, "--plain", "--header", *args])
    assert result.exit_code in (0, 1), result.output  # validate exits 1 on issues
    header, *rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert all(header) and len(set(header)) == len(header), header
    assert all(len(row) == len(header) for row in rows), (header, rows[:3])


@pytest.mark.parametrize("path", [p for p in all_commands(cli) if not isinstance(cli.get_command(None, p[0]), click.Group)
                                  or len(p) > 1], ids=" ".join)
def test_every_command_with_plain_output_takes_header(path):
    help_text = CliRunner().invoke(cli, [*path, "--help"]).output
    assert ("--plain" in help_text) == ("--header / --no-header" in help_text), path


def _nodes(run, tmp_path, n: int) -> None:
    nodes = [{"id": f"n{i}", "name": f"Node {i}", "description": f"thing number {i}"} for i in range(n)]
    run("kg", "import", "t", str(write_nodelink(tmp_path / "g.json", nodes, [])), "--no-embed")


def test_embed_progress_without_a_terminal_is_periodic_lines_with_total_and_eta(run, tmp_path, monkeypatch):
    from kgos.cli.output import _LineMeter
    _nodes(run, tmp_path, 2500)
    monkeypatch.setattr(_LineMeter, "every", 0.0)  # a line per batch (1,024 texts) instead of one every 5 s
    result = run("--plain", "embed", "t", "--model", "hash")
    lines = [line for line in result.stderr.splitlines() if line.startswith("embed t: ")]
    assert [line.split(": ")[1].split("/")[0] for line in lines] == ["0", "1,024", "2,048", "2,500"]
    assert lines[0].startswith("embed t: 0/2,500 nodes (0%)") and lines[1].startswith("embed t: 1,024/2,500 nodes (41%)")
    assert lines[-1].startswith("embed t: 2,500/2,500 nodes (100%)")
    assert "ETA" in lines[1] and "ETA" not in lines[-1]
    assert result.stdout == "t\thash-512\t2500\n"
    again = run("--plain", "embed", "t", "--model", "hash")  # nothing changed: nothing to show
    assert "embed t:" not in again.stderr and again.stdout == "t\thash-512\t0\n"
    assert run("--json", "embed", "t", "--model", "hash:64").stderr == ""  # JSON: stdout only


def test_embed_progress_in_a_terminal_is_a_bar_with_count_percentage_and_eta(run, tmp_path, monkeypatch):
    _nodes(run, tmp_path, 40)
    monkeypatch.setattr("kgos.cli.output.stderr_is_terminal", lambda: True)
    err = run("embed", "t", "--model", "hash").stderr
    assert "embed t" in err and "40/40" in err and "100%" in err and "ETA" in err


def test_demo_rerun_keeps_changed_demo_kgs_unless_reset(run, tmp_path, monkeypatch):
    import kgos

    def nodes(db_id: str) -> int:
        return json.loads(run("kg", "stats", db_id, "--json").stdout)["nodes"]

    def add_node(db_id: str) -> None:
        with kgos.Workspace(tmp_path / "home") as ws:
            ws.kg(db_id).add_node("Zanzibar quokka", id="mine:quokka")

    run("demo", "--embedder", "none")
    original = {db_id: nodes(db_id) for db_id in ("demo", "finance")}
    run("demo", "--embedder", "none")  # unchanged: loading again is fine
    add_node("demo")
    refused = run("demo", "--embedder", "none", code=1)  # no terminal to ask in: refused
    assert "demo KG(s) demo changed" in refused.stderr and "--reset" in refused.stderr
    assert "Traceback" not in refused.output and nodes("demo") == original["demo"] + 1
    monkeypatch.setattr("kgos.cli.demo.stdin_is_terminal", lambda: True)
    home = ["--home", str(tmp_path / "home"), "demo", "--embedder", "none"]
    kept = CliRunner().invoke(cli, home, input="n\n")
    assert kept.exit_code == 1 and "Replace them with the originals" in kept.stderr
    assert nodes("demo") == original["demo"] + 1
    run("demo", "--embedder", "none", "--reset")
    assert nodes("demo") == original["demo"]
    add_node("finance")
    asked = CliRunner().invoke(cli, home, input="y\n")
    assert asked.exit_code == 0 and "demo KG(s) finance" in asked.stderr and nodes("finance") == original["finance"]
