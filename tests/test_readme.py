"""The README stays true for a newcomer with a fresh clone.

The fast tests check its shape: exactly two set-up commands on the first screen (install + demo +
search on the embedded default; the ordinary test command, which CI runs first), nothing that assumes an unpublished
package or files outside the clone, and links that resolve. The slow test runs its shell and Python
examples in the order a reader meets them, offline, in a scratch folder with a temporary KGOS_HOME;
only what cannot run there is left out, each for a stated reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

# Lines left out of the run, and why (everything else in a bash or python block runs).
NOT_RUN = {
    r"python3? -m venv|pip install": "installs from PyPI (network); the test runs in the installed package",
    r"^\. \.venv/bin/activate": "the virtual environment of the set-up command",
    r"\.ci/run": "the test suite itself (this test is part of it)",
    r"^kgos serve|^curl ": "a server on the fixed port 8765; serving is tested in test_serve.py",
    r"^python benchmarks/": "benchmarks take minutes; tested to exist below",
}


def readme() -> str:
    return README.read_text(encoding="utf-8")


def code_blocks(text: str | None = None) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text if text is not None else readme())]


def first_screen() -> str:
    """The README up to its first section heading."""
    return readme().split("\n## ", 1)[0]


def setup_commands() -> list[str]:
    [(lang, body)] = [b for b in code_blocks(first_screen())]
    assert lang == "bash"
    return [line for line in body.splitlines() if line.strip()]


def ci_commands() -> list[str]:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if re.match(r"\s*python -m pytest", line)]


# -- the first screen ---------------------------------------------------------------------------
def test_first_screen_gives_exactly_two_setup_commands():
    install, tests = setup_commands()
    for step in ("-m venv", "pip install -e .", "kgos demo", "kgos search demo"):
        assert step in install, step
    assert "[" not in install.split("kgos demo")[0], "the first command installs no extras"
    assert tests.endswith("pip install -e '.[dev]' && python -m pytest"), "the ordinary test command"
    assert "`.ci/run`" in first_screen(), "the full run is named"


def test_ci_runs_the_readme_test_command_first_then_the_slow_one():
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = text.index("python -m pip install -q -e '.[dev]'\n")
    fast, slow = ci_commands()
    assert fast == "python -m pytest" and install < text.index("\npython -m pytest\n")
    assert slow.startswith("python -m pytest -m slow") and "5" in slow  # exit code 5 = none collected


# Commands that need an extra, and the extra the README must name where it shows them.
EXTRAS = {"kgos mcp": "mcp", "KGOS_LLM_PROVIDER=local": "local"}


@pytest.mark.parametrize("command", EXTRAS)
def test_examples_that_need_an_extra_name_it(command):
    """The paragraph around each command's first mention names ``pip install -e '.[EXTRA]'``."""
    text = readme()
    at = text.index(command)
    paragraph = text[text.rfind("\n\n", 0, at):text.find("\n\n", at)]
    assert f"'.[{EXTRAS[command]}]'" in paragraph, paragraph


def test_first_screen_says_what_each_command_does():
    screen = first_screen()
    assert "clone" in screen and "offline" in screen and "SQLite" in screen


# -- nothing a fresh clone lacks ----------------------------------------------------------------
@pytest.mark.parametrize("assumption", ["pip install kgos", "'kgos[", '"kgos[', "../shared", "shared/bench/",
                                        "/path/to/"])
def test_no_example_assumes_what_a_fresh_clone_lacks(assumption):
    bodies = "\n".join(body for lang, body in code_blocks() if lang in ("bash", "python"))
    assert assumption not in bodies


def test_links_and_named_files_exist():
    text = readme()
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (ROOT / target).exists(), target
    for path in re.findall(r"(?:src|benchmarks|docs)/[\w./-]+\.(?:py|jsonl|md)", text):
        assert (ROOT / path).exists(), path


# -- the examples run ---------------------------------------------------------------------------
def runnable(lang: str, body: str) -> str:
    """The block without the lines that cannot run here (a trailing backslash continues a line)."""
    kept, skipping = [], False
    for line in body.splitlines():
        if not skipping and lang == "bash":
            skipping = any(re.search(p, line.strip()) for p in NOT_RUN)
        if not skipping:
            kept.append(line)
        skipping = skipping and line.rstrip().endswith("\\")
    return "\n".join(kept) + "\n"


def first_command_without_install() -> str:
    install, _ = setup_commands()
    return " && ".join(p for p in install.split(" && ") if not any(re.search(k, p.strip()) for k in NOT_RUN))


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KGOS_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))}
    env.update(KGOS_HOME=str(home), HF_HUB_OFFLINE="1", COLUMNS="120",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    return env


def run_block(lang: str, code: str, cwd: Path, env: dict[str, str]) -> None:
    if lang == "bash":
        cmd = ["bash", "-c", "set -euo pipefail\ntrap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n" + code]
    else:
        cmd = [sys.executable, "-c", code]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"README {lang} block failed:\n{code}\n--- stderr:\n{proc.stderr[-3000:]}"


@pytest.mark.slow
def test_readme_examples_run_as_written(tmp_path):
    """Every shell and Python example, in README order, from a folder laid out like the clone."""
    for name in ("src", "benchmarks", "docs", ".ci"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = environment(tmp_path / "home")
    run_block("bash", first_command_without_install(), tmp_path, env)
    for lang, body in code_blocks()[1:]:
        if lang in ("bash", "python"):
            run_block(lang, runnable(lang, body), tmp_path, env)


def test_skipped_benchmark_commands_name_real_scripts():
    for lang, body in code_blocks():
        for script in re.findall(r"^python (benchmarks/\S+\.py)", body, re.M):
            assert (ROOT / script).is_file(), script
