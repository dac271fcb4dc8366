"""Every command, given names that do not exist, paths that cannot be read or written, and option
values of the wrong kind, ends with a one-line error and a non-zero exit code, never a traceback."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from kgos.cli import cli, load_all

load_all()  # the commands load lazily; walking them needs every one (not only those other tests loaded)

SKIP = {"serve", "chat"}  # serve would listen; chat without a question reads a terminal (test_expert_cli)
BAD_ARGUMENTS = {"db_id": "nope", "db_ids": "demo,nope", "node": "nope", "node_a": "feature:batch_api",
                 "node_b": "nope", "path": "{missing}/x.json", "probes": "{missing}/p.jsonl",
                 "exprs": "pricing_tier<<abc", "assignments": "pricing_tier=abc", "expert_id": "nope",
                 "memory_id": "nope", "proposal_id": "999", "conversation_id": "nope"}
# Values of the right kind where an option needs one, so its own check is what fails.
GOOD_ARGUMENTS = {"db_id": "demo", "db_ids": "demo", "node": "feature:batch_api", "node_a": "feature:batch_api",
                  "node_b": "feature:prompt_caching", "path": "{tmp}/out.json", "probes": "{tmp}/p.jsonl",
                  "exprs": "pricing_tier<0.3", "assignments": "pricing_tier=0.2", "expert_id": "demo"}


def leaves(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = []
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            found += leaves(cmd, (*prefix, name))
        elif name not in SKIP:
            found.append(((*prefix, name), cmd))
    return found


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> str:
    h = str(tmp_path_factory.mktemp("errors") / "home")
    assert CliRunner().invoke(cli, ["--home", h, "demo", "--embedder", "hash"]).exit_code == 0
    return h


def clean(result: click.testing.Result) -> bool:
    """Ended by click (usage error: 2; a declined confirmation), by a one-line ``Error:`` (1), or
    succeeded (0)."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return False
    declined = result.stderr.rstrip().endswith("Aborted!")
    return result.exit_code in (0, 2) or (result.exit_code == 1 and ("Error: " in result.stderr or declined))


def arguments(cmd: click.Command, values: dict[str, str], tmp: str) -> list[str]:
    return [values.get(p.name or "", "nope").format(missing=f"{tmp}/missing", tmp=tmp)
            for p in cmd.params if isinstance(p, click.Argument) and p.required]


@pytest.mark.parametrize(("path", "cmd"), leaves(cli), ids=lambda x: " ".join(x) if isinstance(x, tuple) else "")
def test_bad_input_is_a_clean_error(home, tmp_path, path, cmd):
    runner = CliRunner()
    bad = runner.invoke(cli, ["--home", home, *path, *arguments(cmd, BAD_ARGUMENTS, str(tmp_path))], input="")
    assert clean(bad), (bad.output, repr(bad.exception))
    good = arguments(cmd, GOOD_ARGUMENTS, str(tmp_path))
    for opt in cmd.params:
        if isinstance(opt, click.Option) and not opt.is_flag and opt.expose_value:
            for value in ("-1", f"{tmp_path}/missing/x"):  # a number out of range / text; a bad path
                result = runner.invoke(cli, ["--home", home, *path, *good, opt.opts[0], value], input="")
                assert clean(result), (opt.opts[0], value, result.output, repr(result.exception))
