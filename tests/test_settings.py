"""Settings: every KGOS_* variable parsed once (each type, bad values), the docs table current, and
``kgos settings``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgos import settings as S
from kgos.errors import InvalidArgument
from kgos.settings import Settings

DOCS = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


def test_defaults_without_environment():
    s = Settings.from_env({})
    assert (s.home, s.pushdown, s.pg_pool_max, s.pg_pool_wait, s.max_workers) == (None, "auto", 8, 5.0, 2)
    assert s.home_path == Path.home() / ".kgos" and s.cors_origins == () and s.mcp_writes is False
    assert all(row["source"] == "default" for row in s.describe())


@pytest.mark.parametrize(("var", "raw", "name", "value"), [
    ("KGOS_HOME", "/tmp/kg home", "home", Path("/tmp/kg home")),                     # path
    ("KGOS_PG_POOL_MAX", " 3 ", "pg_pool_max", 3),                                 # int > 0
    ("KGOS_PG_POOL_WAIT", "0.25", "pg_pool_wait", 0.25),                           # float > 0
    ("KGOS_PUSHDOWN", " ON ", "pushdown", "on"),                                   # choice
    ("KGOS_PUSHDOWN_NODES", "0", "pushdown_nodes", 0),                             # int
    ("KGOS_LLM_MODEL", "  qwen2.5 ", "llm_model", "qwen2.5"),                      # text (stripped)
    ("KGOS_API_TOKEN", "t0k en", "api_token", "t0k en"),                           # raw
    ("KGOS_CORS_ORIGINS", "http://a:1, ,http://b", "cors_origins", ("http://a:1", "http://b")),  # comma list
    ("KGOS_INGEST_ROOTS", "/a::/b", "ingest_roots", ("/a", "/b")),                 # os.pathsep list
    ("KGOS_MCP_WRITES", "Yes", "mcp_writes", True),                                # on-words bool
    ("KGOS_MEMORY_LLM_ENRICH", "off", "memory_llm_enrich", False),                 # strict bool
    ("KGOS_MEMORY_DECAY_HALF_LIFE_DAYS", "off", "memory_decay_half_life_days", None),  # float or off
    ("KGOS_MEMORY_DECAY_HALF_LIFE_DAYS", "7.5", "memory_decay_half_life_days", 7.5),
    ("KGOS_IMPORT_WORKER_BYTES", "0", "import_worker_bytes", 0),                   # int >= 0
])
def test_every_type_parses(var, raw, name, value):
    s = Settings.from_env({var: raw})
    assert getattr(s, name) == value
    assert s.sources[name] == "environment"


@pytest.mark.parametrize(("var", "raw", "allowed"), [
    ("KGOS_PUSHDOWN", "sometimes", "on, off or auto"),
    ("KGOS_PG_POOL_MAX", "0", "a whole number > 0"),
    ("KGOS_PG_POOL_WAIT", "-1", "a number > 0"),
    ("KGOS_PUSHDOWN_TIMEOUT_MS", "5s", "a whole number"),
    ("KGOS_MEMORY_LLM_ENRICH", "maybe", "one of 1, true"),
    ("KGOS_MEMORY_DECAY_HALF_LIFE_DAYS", "soon", "a number, or off"),
    ("KGOS_FEDERATION_TIMEOUT", "soon", "a number"),
])
def test_bad_value_names_variable_value_and_what_is_allowed(var, raw, allowed):
    with pytest.raises(InvalidArgument) as err:
        Settings.from_env({var: raw})
    assert var in str(err.value) and repr(raw) in str(err.value) and allowed in str(err.value)


@pytest.mark.parametrize(("var", "raw", "name", "default"), [
    ("KGOS_MAX_WORKERS", "-3", "max_workers", 2),
    ("KGOS_MAX_STREAMS", "many", "max_streams", 64),
    ("KGOS_JOB_MEMORY_MB", "4G", "job_memory_mb", 4096),
    ("KGOS_MCP_WRITES", "please", "mcp_writes", False),
    ("KGOS_LOCAL_THREADS", "0", "local_threads", None),
])
def test_lenient_variables_keep_the_default_and_say_so(var, raw, name, default):
    s = Settings.from_env({var: raw})
    assert getattr(s, name) == default
    assert s.sources[name].startswith("environment ignored")


def test_memory_variables_parse_an_empty_value():
    """spec/002's rule, kept: an empty memory flag is false, an empty memory number is an error."""
    assert Settings.from_env({"KGOS_MEMORY_CONTEXT_ENABLED": ""}).memory_context_enabled is False
    with pytest.raises(InvalidArgument, match="KGOS_MEMORY_MAX_CHARS"):
        Settings.from_env({"KGOS_MEMORY_MAX_CHARS": ""})


def test_empty_means_default():
    assert Settings.from_env({"KGOS_PUSHDOWN": " ", "KGOS_PG_POOL_MAX": ""}) == Settings.from_env({})


def test_current_follows_the_environment(monkeypatch):
    monkeypatch.setenv("KGOS_MAX_STREAMS", "5")
    first = S.current()
    assert first.max_streams == 5 and S.current() is first  # cached while nothing changed
    monkeypatch.setenv("KGOS_MAX_STREAMS", "6")
    assert S.current().max_streams == 6
    monkeypatch.delenv("KGOS_MAX_STREAMS")
    assert S.current().max_streams == 64


def test_every_field_is_an_environment_variable_with_a_doc():
    names = [f.metadata["env"] for f in S.variables()]
    assert len(names) == len(set(names)) and all(n.startswith("KGOS_") for n in names)
    assert all(f.metadata["doc"] for f in S.variables())


def test_docs_table_is_current():
    """docs/settings.md is generated: regenerate with `python -m kgos.settings > docs/settings.md`."""
    assert DOCS.read_text(encoding="utf-8") == S.docs_table()
    for f in S.variables():
        assert f"`{f.metadata['env']}`" in S.docs_table()


def test_only_settings_reads_kgos_variables_from_the_environment():
    """No module but settings.py reads a KGOS_* variable from os.environ (the scattered reads stay gone)."""
    import re
    src = Path(S.__file__).parent
    direct = re.compile(r"(?:environ|getenv)(?:\.get)?[\(\[]\s*\"KGOS_")
    readers = sorted(str(p.relative_to(src)) for p in src.rglob("*.py")
                     if p.name != "settings.py" and direct.search(p.read_text(encoding="utf-8")))
    assert readers == [], readers


def test_cli_settings_json_masks_secrets_and_names_sources(monkeypatch, tmp_path):
    from kgos.cli import cli, load_all
    load_all()
    monkeypatch.setenv("KGOS_API_TOKEN", "s3cret-token")
    monkeypatch.setenv("KGOS_MAX_STREAMS", "9")
    result = CliRunner().invoke(cli, ["settings", "--json"])
    assert result.exit_code == 0, result.output
    assert "s3cret-token" not in result.output
    rows = {r["env"]: r for r in json.loads(result.output)["settings"]}
    assert rows["KGOS_API_TOKEN"]["value"] == "***" and rows["KGOS_API_TOKEN"]["source"] == "environment"
    assert rows["KGOS_MAX_STREAMS"]["value"] == 9 and rows["KGOS_PUSHDOWN"] == {
        "env": "KGOS_PUSHDOWN", "field": "pushdown", "value": "auto", "source": "default",
        "doc": rows["KGOS_PUSHDOWN"]["doc"]}
    assert len(rows) == len(S.variables())


def test_cli_settings_bad_value_is_a_clear_error(tmp_path):
    """The real command: a bad value is one line on stderr naming it, exit 1, no traceback."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "KGOS_PUSHDOWN": "bogus", "KGOS_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "kgos", "settings"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and "KGOS_PUSHDOWN='bogus'" in done.stderr and "on, off or auto" in done.stderr
    assert "Traceback" not in done.stderr
