"""The spec/004 module protocol and registry: config validation and hot reload, state, snapshots,
replay with recorded outside responses, tamper detection and entry-point discovery."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from kgos.errors import InvalidConfig, InvalidName, ModuleNotFound, ReplayMiss, SnapshotMismatch
from kgos.pipeline import (
    BaseModule,
    PipelineModule,
    ProcessContext,
    Registry,
    Snapshot,
    StageInput,
    StageOutput,
    content_hash,
)


class Upper(BaseModule):
    """Upper-cases ``text``, optionally asking an outside service for a suffix."""

    id = "test.upper"
    name = "Upper"
    version = "1.2.0"
    category = "extract"
    config_schema = {"type": "object", "additionalProperties": False, "properties": {  # noqa: RUF012
        "repeat": {"type": "integer", "minimum": 1, "default": 1},
        "api_key": {"type": "string", "secret": True, "default": ""},
        "remote": {"type": "boolean", "default": False}}}
    calls_out = 0

    async def run(self, input, context, config):
        text = str(input.data["text"]).upper() * config["repeat"]
        if config["remote"]:
            text += context.external.fetch(f"suffix:{text}", self._remote)
        return StageOutput({"text": text})

    def _remote(self) -> str:
        type(self).calls_out += 1
        return "!"


def run(coro):
    return asyncio.run(coro)


def test_a_base_module_satisfies_the_protocol() -> None:
    m = Upper()
    assert isinstance(m, PipelineModule)
    assert m.get_config() == {"repeat": 1, "api_key": "", "remote": False}
    assert m.config_schema["properties"]["repeat"]["minimum"] == 1


def test_configure_validates_and_keeps_the_old_config_on_error() -> None:
    m = Upper({"repeat": 2})
    with pytest.raises(InvalidConfig) as err:
        m.configure({"repeat": 0, "colour": "red"})
    assert "repeat" in err.value.fields and "(config)" in err.value.fields  # additionalProperties
    assert m.get_config()["repeat"] == 2
    with pytest.raises(InvalidConfig):
        m.configure(["not", "a", "dict"])  # type: ignore[arg-type]


def test_hot_reload_applies_to_the_next_call() -> None:
    m = Upper()
    ctx = ProcessContext()
    assert run(m.process(StageInput({"text": "ab"}), ctx)).data == {"text": "AB"}
    m.configure({"repeat": 3})
    assert run(m.process(StageInput({"text": "ab"}), ctx)).data == {"text": "ABABAB"}


def test_state_counts_calls_errors_and_last_hashes() -> None:
    m = Upper()
    assert m.get_state().status == "idle"
    inp = StageInput({"text": "x"})
    out = run(m.process(inp, ProcessContext()))
    st = m.get_state()
    assert (st.status, st.calls, st.errors) == ("complete", 1, 0)
    assert st.last_input_sha256 == inp.sha256 == content_hash({"text": "x"})
    assert st.last_output_sha256 == out.sha256
    with pytest.raises(KeyError):
        run(m.process(StageInput({}), ProcessContext()))
    st = m.get_state()
    assert (st.status, st.calls, st.errors) == ("error", 2, 1) and "KeyError" in st.last_error


def test_snapshot_hashes_and_masks_secrets() -> None:
    m = Upper({"api_key": "sk-secret", "remote": True})
    inp = StageInput({"text": "hi"})
    out = run(m.process(inp, ProcessContext()))
    snap = m.snapshot(inp, out)
    assert snap.config["api_key"] == "***" and "sk-secret" not in str(snap.to_dict())
    assert snap.config_sha256 == content_hash(snap.config)
    assert snap.input_sha256 == content_hash({"text": "hi"}) and snap.output_sha256 == out.sha256
    assert snap.external == {"suffix:HI": "!"}
    assert Snapshot.from_dict(snap.to_dict()) == snap


def test_replay_gives_the_same_output_hash_without_calling_out() -> None:
    m = Upper({"repeat": 2, "remote": True})
    inp = StageInput({"text": "ok"})
    out = run(m.process(inp, ProcessContext()))
    snap = m.snapshot(inp, out)
    before = Upper.calls_out
    other = Upper()  # a fresh instance with another config: replay restores the snapshot's
    again = run(other.replay(snap))
    assert again.sha256 == out.sha256 == snap.output_sha256
    assert Upper.calls_out == before  # the recorded response served it
    assert other.get_config()["repeat"] == 1  # the live config is untouched


def test_replay_refuses_a_tampered_snapshot_naming_the_hash() -> None:
    m = Upper()
    inp = StageInput({"text": "ok"})
    snap = m.snapshot(inp, run(m.process(inp, ProcessContext()))).to_dict()
    snap["input"] = {"text": "changed"}
    with pytest.raises(SnapshotMismatch) as err:
        run(m.replay(Snapshot.from_dict(snap)))
    assert err.value.field == "input_sha256" and err.value.expected == content_hash({"text": "ok"})


def test_replay_without_the_recorded_response_does_not_reach_out() -> None:
    m = Upper({"remote": True})
    inp = StageInput({"text": "ok"})
    d = m.snapshot(inp, run(m.process(inp, ProcessContext()))).to_dict()
    d["external"] = {}
    with pytest.raises(ReplayMiss):
        run(m.replay(Snapshot.from_dict(d)))


def test_registry_decorator_ids_and_suggestions() -> None:
    reg = Registry(group="kgos.test-none")

    @reg.register("search.my_backend")
    class MyBackend(BaseModule):  # spec/004's example: short id, dotted registration
        id = "my_backend"
        category = "search"

    assert MyBackend.id == "search.my_backend" and reg.get("search.my_backend") is MyBackend
    assert reg.ids("search") == ["search.my_backend"] and reg.ids("merge") == []
    assert isinstance(reg.create("search.my_backend"), MyBackend)
    with pytest.raises(ModuleNotFound) as err:
        reg.get("search.my_backnd")
    assert err.value.suggestions == ["search.my_backend"]
    with pytest.raises(InvalidName):
        reg.register("search.my_backend")(type("Other", (BaseModule,), {}))
    with pytest.raises(InvalidName):
        reg.register("x.y")(type("Bad", (BaseModule,), {"id": "z"}))
    assert reg.describe("search")[0]["config_schema"] == BaseModule.config_schema


def test_entry_point_discovery_loads_an_installed_plugin(tmp_path: Path, monkeypatch) -> None:
    """A plugin registers by being installed: a distribution on sys.path with an entry point."""
    pkg = tmp_path / "kgos_plugin_demo.py"
    pkg.write_text(textwrap.dedent("""
        from kgos.pipeline import BaseModule, StageOutput

        class Echo(BaseModule):
            id = "search.echo"
            category = "search"

            async def run(self, input, context, config):
                return StageOutput(dict(input.data))

        def broken():
            raise RuntimeError("plugin bug")
    """))
    dist = tmp_path / "kgos_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kgos-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[kgos.test-plugins]\necho = kgos_plugin_demo:Echo\nbad = kgos_plugin_demo:broken\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry(group="kgos.test-plugins")
    assert reg.ids() == ["search.echo"]
    assert "plugin bug" in reg.errors["bad"]
    out = run(reg.create("search.echo").process(StageInput({"a": 1}), ProcessContext()))
    assert out.data == {"a": 1}
    sys.modules.pop("kgos_plugin_demo", None)
