"""One way to register a backend (kgos.plugins): a plugin's embedder and predictor are usable by name,
`kgos plugins` lists them with their source, entry points load per package, and a broken or clashing
plugin is reported without breaking the built-ins."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kgos_toy_plugin
import numpy as np
import pytest
from click.testing import CliRunner

import kgos
from kgos import plugins
from kgos.cli import cli
from kgos.cli.plugins import load_builtins
from kgos.embed import available_embedders, get_embedder
from kgos.errors import InvalidArgument
from kgos.linkpred import link_predictor, predictor, predictors
from kgos.plugins import hookimpl


@pytest.fixture
def toy() -> Iterator[str]:
    name = plugins.register(kgos_toy_plugin, name="kgos-toy")
    yield name
    plugins.unregister(name)


def test_every_family_has_its_builtins_through_the_hooks() -> None:
    load_builtins()
    got = {f: {e.name: e.source for e in plugins.entries(f)} for f in plugins.FAMILIES}
    assert {"hash", "minilm", "fast", "openai"} <= set(got["embedders"])
    assert {"offline", "openai", "anthropic", "gemini", "ollama"} <= set(got["llm_providers"])
    assert {"ensemble", "adamic_adar", "complex"} <= set(got["predictors"])
    assert {"reciprocal_rank_fusion", "weighted"} <= set(got["fusions"])
    assert set(got["formats"]) == {"nodelink", "jsonl", "csv", "graphml"}
    assert {"python", "markdown", "pdf"} <= set(got["extractors"])
    assert {"search.multi", "reason.default", "ingest.files"} <= set(got["pipeline_modules"])
    assert all(source == plugins.BUILTIN for family in got.values() for source in family.values())


def test_a_plugins_embedder_and_predictor_are_usable_by_name(toy: str, ws: kgos.Workspace) -> None:
    emb = get_embedder("toyletters", cache=False)
    assert isinstance(emb, kgos_toy_plugin.LetterEmbedder)
    vecs = emb.embed(["banana", "anagram", "oboe"])
    assert vecs.shape == (3, 4) and float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2])
    assert "toyletters" in {row.spec for row in available_embedders()}
    assert "toy_indegree" in predictors()

    kg = ws.create("hub")
    with kg.batch():
        for name in ("a", "b", "c", "d", "hub"):
            kg.add_node(name, type="thing", id=name)
        for src in ("b", "c", "d"):
            kg.add_edge(src, "hub", "uses")
        kg.add_edge("a", "b", "uses")
    got = link_predictor(kg).tails("a", "uses", k=2, predictor="toy_indegree").predictions
    assert got[0].target == "hub"  # the node most edges point to, as the plugin scores it


def test_unregistering_a_plugin_removes_its_backends() -> None:
    name = plugins.register(kgos_toy_plugin, name="kgos-toy-once")
    assert "toy_indegree" in predictors()
    plugins.unregister(name)
    with pytest.raises(InvalidArgument, match="unknown predictor 'toy_indegree'"):
        predictor("toy_indegree")
    with pytest.raises(InvalidArgument, match="unknown embedder"):
        get_embedder("toyletters", cache=False)


def test_kgos_plugins_lists_each_family_with_its_source(toy: str) -> None:
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    families = json.loads(result.stdout)["families"]
    assert set(families) == set(plugins.FAMILIES)
    by_name = {(f, row["name"]): row for f, rows in families.items() for row in rows}
    assert by_name[("embedders", "toyletters")]["source"] == "kgos-toy"
    assert by_name[("predictors", "toy_indegree")]["object"] == "kgos_toy_plugin:InDegree"
    assert by_name[("predictors", "adamic_adar")]["source"] == "built-in"
    plain = CliRunner().invoke(cli, ["plugins", "--family", "predictors", "--plain"]).stdout.splitlines()
    assert "predictors\ttoy_indegree\tkgos-toy" in plain and all(r.startswith("predictors\t") for r in plain)


class Clash:
    """A plugin that tries to take a built-in name."""

    @hookimpl
    def register_embedders(self) -> dict:
        from kgos.embed.registry import Backend
        return {"hash": Backend("hash", "kgos_toy_plugin:LetterEmbedder", name="not-hash")}


def test_a_taken_name_keeps_the_builtin_and_is_reported() -> None:
    name = plugins.register(Clash(), name="clash")
    try:
        assert get_embedder("hash:64", cache=False).name == "hash-64"
        assert "built-in's is used" in plugins.errors()["embedders:hash"]
    finally:
        plugins.unregister(name)


def _install(site: Path, package: str, entry_points: str) -> None:
    """A distribution's metadata on ``site`` (what pip writes), declaring ``entry_points``."""
    info = site / f"{package.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_entry_points_load_per_package_and_a_broken_one_is_reported(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, "kgos-toy-plugin", "[kgos]\ntoy = kgos_toy_plugin\n")
    _install(tmp_path, "kgos-broken-plugin", "[kgos]\nbroken = kgos_no_such_module_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        plugins.reload()
        sources = {e.name: e.source for e in plugins.entries("predictors")}
        assert sources["toy_indegree"] == "kgos-toy-plugin" and sources["adamic_adar"] == "built-in"
        assert "ModuleNotFoundError" in plugins.errors()["broken"]
        out = CliRunner().invoke(cli, ["plugins"]).output
        assert "kgos-toy-plugin" in out and "broken" in out
    finally:
        monkeypatch.undo()
        plugins.reload()
    assert "toy_indegree" not in predictors() and sys.path[0] != str(tmp_path)
    assert np.isfinite(get_embedder("hash:16", cache=False).embed(["still works"])).all()


def test_a_plugins_provider_fusion_and_format_are_usable_by_name(toy: str, ws: kgos.Workspace,
                                                                 tmp_path: Path) -> None:
    from kgos.llm import Message, available_providers, get_provider
    from kgos.research.fusion import fuse

    provider = get_provider("echo:loud")
    assert provider.name == "echo:loud" and provider.complete([Message("user", "hi there")]) == "HI THERE"
    assert "echo" in {row["name"] for row in available_providers()}

    hits = {"a": [{"id": "x", "text": "x", "score": 1.0}], "b": [{"id": "y", "text": "y", "score": 9.0}]}
    assert [h["id"] for h in fuse("first_list_only", hits)] == ["x"]

    pairs = tmp_path / "tiny.tsv"
    pairs.write_text("tea\tpairs_with\tlemon\nlemon\tgrows_on\ttree\n", encoding="utf-8")
    ws.import_file("tiny", pairs, format="pairs")
    kg = ws.kg("tiny")
    assert kg.node_count() == 3 and kg.edge_count() == 2
    ws.export("tiny", tmp_path / "back.tsv", format="pairs")
    assert sorted((tmp_path / "back.tsv").read_text().splitlines()) == sorted(pairs.read_text().splitlines())


def test_a_plugins_extractor_reads_its_files_at_ingest(toy: str, ws: kgos.Workspace, tmp_path: Path) -> None:
    from kgos.ingest import ingest_into

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "setup.cfg").write_text("[metadata]\nname = x\n[options]\nzip_safe = false\n")
    (tmp_path / "repo" / "notes.txt").write_text("Plain notes.\n")
    report = ingest_into(ws, "cfg", [tmp_path / "repo"], tiers=(1,))
    assert report.files == {"ini": 1, "text": 1} and report.nodes["config_section"] == 2
    kg = ws.kg("cfg")
    assert [n.type for n in kg.find_nodes("metadata")] == ["config_section"]
    assert kg.get_node("section:repo/setup.cfg:options") is not None


def test_the_builtin_catalogue_is_what_the_registries_register() -> None:
    """`kgos plugins` lists the built-ins from kgos/plugins_builtin.json; it must match the registries
    (after adding a backend: kgos plugins --write-catalogue)."""
    load_builtins()
    stored = json.loads(plugins.CATALOGUE.read_text(encoding="utf-8"))
    assert stored == plugins.builtin_catalogue(), "stale catalogue: run kgos plugins --write-catalogue"


def test_kgos_plugins_lists_the_same_rows_without_importing_the_registries(toy: str) -> None:
    """The lazy listing equals the one after importing every registry (plugins included); in a fresh
    process it imports neither numpy nor the query layer."""
    lazy = CliRunner().invoke(cli, ["plugins", "--json"])
    loaded = CliRunner().invoke(cli, ["plugins", "--load", "--json"])
    assert lazy.exit_code == loaded.exit_code == 0 and json.loads(lazy.stdout) == json.loads(loaded.stdout)
    assert "toyletters" in lazy.stdout
    code = ("import sys; from click.testing import CliRunner; from kgos.cli import cli; "
            "r = CliRunner().invoke(cli, ['plugins', '--json']); assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in ('numpy', 'pydantic', 'kgos.kg.facade', 'kgos.linkpred', 'kgos.embed.registry')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_a_plugin_taking_a_builtin_name_is_reported_by_the_lazy_listing_too() -> None:
    name = plugins.register(Clash(), name="clash")
    try:
        rows = json.loads(CliRunner().invoke(cli, ["plugins", "--json"]).stdout)
        hashes = [r for r in rows["families"]["embedders"] if r["name"] == "hash"]
        assert [r["source"] for r in hashes] == ["built-in"] and "embedders:hash" in rows["errors"]
    finally:
        plugins.unregister(name)
