"""Meaning-search right after import: the fast tier at once, the default model filling in behind it
(resumable), one model's vectors per scan, and the torch-free distillation of the fast tier."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import write_nodelink

import kgos
from kgos.cli import cli
from kgos.embed import get_embedder
from kgos.embed import nodes as embed_nodes
from kgos.index.vectors import models

WORDS = ["tar archive", "network socket", "disk quota", "user password", "cron schedule", "mail queue"]


@pytest.fixture
def tiers(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Target hash:64, fast tier hash:32: two deterministic models of different widths."""
    monkeypatch.setenv("KGOS_EMBEDDER", "hash:64")
    monkeypatch.setenv("KGOS_FAST_EMBEDDER", "hash:32")
    return "hash-64", "hash-32"


def _graph(tmp_path: Path, n: int = 30) -> Path:
    nodes = [{"id": f"n{i}", "name": f"{WORDS[i % len(WORDS)]} {i}", "type": "tool",
              "description": f"Manage the {WORDS[i % len(WORDS)]} of host {i}."} for i in range(n)]
    return write_nodelink(tmp_path / "g.json", nodes, [])


def _cli(home: Path, *args: str, code: int = 0):
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result


def test_import_embeds_by_default_fast_tier_then_default_model(tmp_path, tiers):
    target, _ = tiers
    result = _cli(tmp_path / "home", "kg", "import", "t", str(_graph(tmp_path)), "--plain")
    assert "Searchable by meaning: 30 nodes embedded with hash-32" in result.stderr
    assert "Full quality: 30 nodes embedded with hash-64" in result.stderr
    kg = kgos.Workspace(tmp_path / "home").kg("t")
    status = kg.embed_status()
    assert (status.search_model, status.target) == ("hash:64", None)
    assert models(kg.store) == {target: 30}  # the fill-in replaced the fast tier's vectors
    hits = kg.search("tar archive", k=3)
    assert hits.results[0].node.name.startswith("tar archive") and not hits.warnings


def test_an_import_that_must_build_the_fast_tier_first_shows_its_progress(tmp_path, tiers, monkeypatch):
    """The once-per-home distillation runs before the first import's embedding, with a meter and ETA
    (lines on stderr without a terminal), not silently inside it."""
    import kgos.kg.embedding as tiers_module
    built: list[int] = []

    def build(progress):
        for done in (40, 80, 100):
            progress(done, 100)
        built.append(1)
        return "fast"
    monkeypatch.setattr(tiers_module, "fast_tier_unbuilt", lambda model="default": not built)
    monkeypatch.setattr(tiers_module, "build_fast_tier", build)
    first = _cli(tmp_path / "home", "kg", "import", "t", str(_graph(tmp_path)), "--plain")
    assert "Building the fast embedding tier" in first.stderr and "fast tier: 100/100 tokens (100%)" in first.stderr
    again = _cli(tmp_path / "home", "kg", "import", "u", str(_graph(tmp_path)), "--plain")
    assert built == [1] and "Building the fast embedding tier" not in again.stderr


def test_no_embed_skips_embedding(tmp_path, tiers):
    _cli(tmp_path / "home", "kg", "import", "t", str(_graph(tmp_path)), "--no-embed")
    kg = kgos.Workspace(tmp_path / "home").kg("t")
    assert models(kg.store) == {} and kg.embed_status().search_model is None
    assert any("no node vectors" in w for w in kg.search("tar archive").warnings)


def test_fast_only_then_kgos_embed_fills_in(tmp_path, tiers):
    target, fast = tiers
    home = tmp_path / "home"
    _cli(home, "kg", "import", "t", str(_graph(tmp_path)), "--fast-only")
    kg = kgos.Workspace(home).kg("t")
    assert (kg.embed_status().search_model, kg.embed_status().target) == ("hash:32", "hash:64")
    assert _cli(home, "--plain", "embed", "t", "--status").stdout == "t\thash:32\thash:64\t0\t30\n"
    assert kg.engine.snapshot().embedder == fast and kg.engine.snapshot().vectors.shape == (30, 32)
    assert json.loads(_cli(home, "--json", "embed", "t").stdout)["model"] == target  # no --model: the target
    kg = kgos.Workspace(home).kg("t")
    assert kg.embed_status().target is None and models(kg.store) == {target: 30}


class _Interrupting:
    """The target embedder, interrupted (Ctrl-C) on its ``calls``-th batch."""

    def __init__(self, inner, calls: int) -> None:
        self.inner, self.calls = inner, calls
        self.name, self.dims, self.spec = inner.name, inner.dims, inner.spec

    def embed(self, texts, **kw):
        self.calls -= 1
        if self.calls == 0:
            raise KeyboardInterrupt
        return self.inner.embed(texts, **kw)


def test_an_interrupted_fill_in_keeps_its_work_and_resumes_where_it_stopped(ws, tmp_path, tiers, monkeypatch):
    target, fast = tiers
    ws.import_file("t", _graph(tmp_path, 50))
    kg = ws.kg("t")
    kg.embed_fast()
    monkeypatch.setattr(embed_nodes, "FILL_CHUNK", 10)
    stopper = _Interrupting(get_embedder("hash:64"), calls=3)
    from kgos.kg import vectors  # kg.embedding's module, where kg.embed runs
    monkeypatch.setattr(vectors, "get_embedder", lambda spec: stopper if spec == "hash:64" else get_embedder(spec))
    with pytest.raises(KeyboardInterrupt):
        kg.embed()
    status = kg.embed_status()
    assert (status.search_model, status.target, status.target_vectors) == ("hash:32", "hash:64", 20)
    snap = kg.engine.snapshot()  # search goes on with the fast tier: one model, every row
    assert snap.embedder == fast and snap.vectors.shape == (50, 32) and snap.vectorless.size == 0
    monkeypatch.setattr(vectors, "get_embedder", get_embedder)
    report = kg.embed()  # resumed: only the 30 nodes the interrupted run did not commit
    assert (report.model, report.embedded, report.unchanged) == (target, 30, 20)
    assert models(kg.store) == {target: 50} and kg.engine.snapshot().vectors.shape == (50, 64)


def test_vectors_of_two_models_are_never_scanned_together(ws, tmp_path, tiers):
    target, fast = tiers
    ws.import_file("t", _graph(tmp_path, 20))
    kg = ws.kg("t")
    kg.embed_fast()
    embed_nodes.embed_nodes(kg.store, get_embedder("hash:64"), [f"n{i}" for i in range(10)])  # half filled in
    assert models(kg.store) == {fast: 20, target: 10}
    kg.engine.invalidate()
    snap = kg.engine.snapshot()
    assert snap.embedder == fast and snap.vectors.shape == (20, 32)  # the fast tier alone, all rows
    assert kg.engine.embed_query("tar").shape == (32,)  # and a query vector of the same model
    kg.add_node("tar archive extra", "tool", "written during the fill-in", id="late")  # embedded with the fast tier
    assert kg.embed().embedded == 11  # 10 missing + the late node
    snap = kg.engine.snapshot()
    assert snap.embedder == target and snap.vectors.shape == (21, 64) and snap.vectorless.size == 0
    assert kg.engine.embed_query("tar").shape == (64,)


def test_an_explicit_model_ends_a_pending_fill_in(ws, tmp_path, tiers):
    ws.import_file("t", _graph(tmp_path, 12))
    kg = ws.kg("t")
    kg.embed_fast()
    kg.embed("hash:16")
    assert kg.embed_status().target is None and models(kg.store) == {"hash-16": 12}


def test_a_cheap_target_is_embedded_directly(ws, tmp_path, monkeypatch):
    ws.import_file("t", _graph(tmp_path, 12))
    kg = ws.kg("t")
    assert kg.embed_fast("hash").model == "hash-512"
    assert kg.embed_status().target is None and models(kg.store) == {"hash-512": 12}


# -- the fast tier's model ----------------------------------------------------------------------------------


def test_distill_onnx_writes_a_static_model_the_static_embedder_reads(tmp_path, monkeypatch):
    from kgos.embed import static

    def fake_token_vectors(onnx_path, vocab, keep, batch, progress=None):  # the model pass, fixed vectors
        return np.random.default_rng(0).normal(size=(int(keep.sum()), 24)).astype(np.float32)

    monkeypatch.setattr(static, "_token_vectors", fake_token_vectors)
    out = static.distill_onnx(tmp_path / "fast", pca_dims=8)
    tensors = static.read_safetensors(out / "model.safetensors")
    emb, scales = tensors["embeddings"], tensors["scales"]
    vocab = (Path(static.__file__).parent / "assets" / "minilm-vocab.txt").read_text().split("\n")[:-1]
    assert emb.shape == (len(vocab), 8) and emb.dtype == np.int8 and scales.shape == (len(vocab),)
    unused = np.array([t.startswith("[unused") for t in vocab])
    assert not emb[unused].any() and emb[~unused].any(1).all()  # [unusedN] tokens have no vector
    e = static.StaticEmbedder(out)
    assert e.name == "minilm-int8-static-8" and e.embed(["tar archive", ""]).shape == (2, 8)
    assert json.loads((out / "kgos.json").read_text())["method"].startswith("model2vec")
    assert not list(tmp_path.glob(".fast*"))  # published by rename: no temp folder left


def test_the_fast_tier_is_built_once(tmp_path, monkeypatch):
    from kgos.embed import static

    built = []
    monkeypatch.setattr(static, "distill_onnx", lambda out, overwrite=False, progress=None: built.append(out) or
                        (Path(out).mkdir(parents=True), (Path(out) / "model.safetensors").write_bytes(b"x")))
    static.ensure_fast_static(tmp_path / "m")
    static.ensure_fast_static(tmp_path / "m")
    assert built == [tmp_path / "m"]


class Stop(Exception):
    pass


def test_a_distillation_stopped_by_its_progress_writes_nothing_and_the_next_one_builds(tmp_path, monkeypatch):
    """The real token pass on the default ONNX model, stopped after its second batch: the exception
    reaches the caller, no folder (or temp folder) is left, and the lock does not keep the next build out."""
    pytest.importorskip("onnxruntime")
    from kgos.embed import static
    seen: list[tuple[int, int]] = []

    def stop_at_second(done: int, total: int) -> None:
        seen.append((done, total))
        if len(seen) == 2:
            raise Stop("the server is stopping")
    with pytest.raises(Stop):
        static.ensure_fast_static(tmp_path / "fast", progress=stop_at_second)
    total = seen[0][1]
    assert seen == [(512, total), (1024, total)] and total > 20_000  # batches of 512 of ~30k tokens
    assert not (tmp_path / "fast").exists() and not list(tmp_path.glob(".fast*.tmp"))
    built, real = [], static.distill_onnx
    monkeypatch.setattr(static, "_token_vectors", lambda *a, **k: built.append(1) or
                        np.random.default_rng(0).normal(size=(int(a[2].sum()), 24)).astype(np.float32))
    monkeypatch.setattr(static, "distill_onnx", lambda out, overwrite=False, progress=None: real(out, pca_dims=8,
                                                                                                  overwrite=overwrite))
    assert (static.ensure_fast_static(tmp_path / "fast") / "model.safetensors").is_file() and built == [1]


@pytest.mark.slow
def test_distill_onnx_from_the_real_default_model(tmp_path):
    """The real build (91 s): the packaged model's vectors (on the machine that built it, the same
    bytes: `python -m kgos.embed build-fast --package` checks that)."""
    pytest.importorskip("onnxruntime")
    from kgos.embed.static import PACKAGED_FAST, StaticEmbedder, distill_onnx

    e = StaticEmbedder(distill_onnx(tmp_path / "fast"))
    dog, puppy, invoice = e.embed(["dog", "puppy", "invoice"])
    assert e.dims == 256 and float(dog @ puppy) > float(dog @ invoice)
    shipped = StaticEmbedder(PACKAGED_FAST).embed(WORDS)
    assert np.min(np.sum(shipped * e.embed(WORDS), axis=1)) > 0.999


# -- the packaged fast tier -----------------------------------------------------------------------------------


def test_the_packaged_fast_tier_is_used_without_a_build(tmp_path, monkeypatch):
    """A fresh home: the fast embedder loads the model shipped in kgos/embed/assets (sha256 checked),
    with no distillation and no lock file in the home."""
    from kgos.embed import static
    from kgos.kg.embedding import fast_tier_unbuilt
    monkeypatch.setenv("KGOS_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(static, "distill_onnx", lambda *a, **k: pytest.fail("the fast tier was distilled"))
    assert static.ensure_fast_static() == static.PACKAGED_FAST and static.fast_static_folder() == static.PACKAGED_FAST
    e = static.fast_static_embedder()
    assert (e.name, e.spec, e.dims) == ("minilm-int8-static-256", "fast", 256) and not fast_tier_unbuilt("default")
    dog, puppy, invoice = e.embed(["dog", "puppy", "invoice"])
    assert float(dog @ puppy) > float(dog @ invoice)
    assert not (tmp_path / "home").exists()  # nothing built, no lock taken
    assert "Apache License" in (static.PACKAGED_FAST / "LICENSE").read_text()  # the source model's, beside it


def test_a_packaged_model_that_is_not_the_pinned_file_is_refused(tmp_path, monkeypatch):
    import shutil

    from kgos.embed import static
    from kgos.errors import InvalidArgument
    copy = shutil.copytree(static.PACKAGED_FAST, tmp_path / "shipped")
    raw = bytearray((copy / "model.safetensors").read_bytes())
    raw[-1] ^= 1  # one bit of one vector
    (copy / "model.safetensors").write_bytes(bytes(raw))
    monkeypatch.setattr(static, "PACKAGED_FAST", copy)
    with pytest.raises(InvalidArgument, match="sha256 .* expected 6557533d.*not the packaged fast tier"):
        static.fast_static_embedder()


def test_an_install_without_the_packaged_model_distills_it_into_the_home(tmp_path, monkeypatch):
    """A stripped install (no assets folder) falls back to the build of issue 30, once per home."""
    from kgos.embed import static
    monkeypatch.setenv("KGOS_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(static, "PACKAGED_FAST", tmp_path / "stripped")
    monkeypatch.setattr(static, "_token_vectors", lambda onnx, vocab, keep, batch, progress=None:
                        np.random.default_rng(0).normal(size=(int(keep.sum()), 24)).astype(np.float32))
    real = static.distill_onnx
    monkeypatch.setattr(static, "distill_onnx", lambda out, overwrite=False, progress=None: real(out, pca_dims=8,
                                                                                                  overwrite=overwrite))
    assert static.fast_static_folder() is None
    built = static.ensure_fast_static()
    assert built == static.fast_static_path() and static.fast_static_folder() == built
    assert static.fast_static_embedder().dims == 8


def test_int8_rows_with_scales_embed_like_the_floats_they_came_from(tmp_path):
    from kgos.embed import static
    from kgos.errors import InvalidArgument
    vocab = (Path(static.__file__).parent / "assets" / "minilm-vocab.txt").read_text().split("\n")[:-1]
    floats = np.random.default_rng(1).normal(size=(len(vocab), 16)).astype(np.float16)
    floats[5] = 0  # a zero row keeps scale 1
    rows, scales = static.quantise_rows(floats)
    assert rows.dtype == np.int8 and np.abs(rows).max() == 127 and scales[5] == 1.0
    for name, tensors in (("f16", {"embeddings": floats}), ("i8", {"embeddings": rows, "scales": scales}),
                          ("bad", {"embeddings": rows})):
        (tmp_path / name).mkdir()
        static._write_safetensors(tmp_path / name / "model.safetensors", tensors)
        (tmp_path / name / "tokenizer.json").write_text(json.dumps(static._tokenizer_json(vocab)))
    a, b = (static.StaticEmbedder(tmp_path / n).embed(WORDS) for n in ("f16", "i8"))
    assert np.min(np.sum(a * b, axis=1)) > 0.999
    with pytest.raises(InvalidArgument, match="'scales' tensor"):
        static.StaticEmbedder(tmp_path / "bad")


def test_fill_in_chunks_leave_the_version_alone_until_the_switch(ws, tmp_path, tiers, monkeypatch):
    ws.import_file("t", _graph(tmp_path, 30))
    kg = ws.kg("t")
    kg.embed_fast()
    before = kg.store.version()
    monkeypatch.setattr(embed_nodes, "FILL_CHUNK", 10)
    embed_nodes.embed_store(kg.store, get_embedder("hash:64"), bump=False)  # 3 chunks of a fill-in
    assert kg.store.version() == before  # readers keep their fast-tier snapshot: nothing they read changed
    kg.embed()
    assert kg.store.version() != before and kg.engine.snapshot().embedder == "hash-64"
    kg.add_node("tar archive late", "tool", id="late")  # the model search uses: a write bumps as ever
    assert kg.engine.snapshot().vectors.shape == (31, 64) and kg.engine.snapshot().vectorless.size == 0


def test_a_merge_import_keeps_the_model_search_uses(tmp_path, tiers):
    home = tmp_path / "home"
    _cli(home, "kg", "import", "t", str(_graph(tmp_path)))
    extra = write_nodelink(tmp_path / "more.json", [{"id": "x", "name": "tar archive extra", "type": "tool"}], [])
    _cli(home, "kg", "import", "t", str(extra), "--merge")
    kg = kgos.Workspace(home).kg("t")
    assert kg.embed_status().search_model == "hash:64" and models(kg.store) == {"hash-64": 31}


def test_an_embedder_that_cannot_run_leaves_the_import_standing(tmp_path, monkeypatch):
    monkeypatch.setenv("KGOS_EMBEDDER", "openai:some-model")
    monkeypatch.setenv("KGOS_FAST_EMBEDDER", "none")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = _cli(tmp_path / "home", "kg", "import", "t", str(_graph(tmp_path)))
    assert "Imported, but not embedded" in result.stderr
    assert kgos.Workspace(tmp_path / "home").kg("t").node_count() == 30


def test_build_fast_package_fails_unless_the_rebuild_is_the_pinned_file(monkeypatch, capsys):
    """`python -m kgos.embed build-fast --package` exits 1 when the rebuilt file's sha256 is not the pinned
    one (the real rebuild, 91 s, is the slow test above; here the build step returns a given hash)."""
    from kgos.embed import static
    from kgos.embed.__main__ import main
    for sha, code in ((static.FAST_STATIC_SHA256, 0), ("f" * 64, 1)):
        monkeypatch.setattr(static, "build_packaged_fast", lambda sha=sha: (static.PACKAGED_FAST, sha))
        assert main(["build-fast", "--package"]) == code
        assert ("byte for byte" in capsys.readouterr().out) == (code == 0)
