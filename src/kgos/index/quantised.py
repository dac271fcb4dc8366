"""An int8 copy of a snapshot's vectors, scanned by onnxruntime's integer matrix product.

The exact scan of a mid-sized KG is memory-bound: go's 43,558 x 384 float32 rows are 67 MB read per
query, 7.7 ms with one BLAS thread. Symmetric int8 quantisation with one scale per dimension (the
scheme of Jacob et al. 2018, "Quantization and Training of Neural Networks for Efficient
Integer-Arithmetic-Only Inference", section 2, zero point 0) reads a quarter of that, and
onnxruntime's ``MatMulInteger`` kernel (a core dependency, already loaded by the default embedder)
does the products in SIMD integer arithmetic: ~2 ms on go. The query absorbs the scales:
``q . v ~= sum_d (q_d s_d) v8_d`` and ``q_d s_d`` is quantised to uint8 about 128 with its own scale.
The rows use 7 bits (-63..63), not 8: the uint8 x int8 kernels without VNNI add pairs of products in
saturating int16 (``vpmaddubsw``), and 255 x 127 x 2 overflows it (errors of 0.1 were measured),
while 255 x 63 x 2 does not. Each copy has its own session, the int8 rows an initializer of it, so
onnxruntime packs them for its kernel once, not per query (2.4 ms against 4.5 ms on go).

The scores are approximate (within ~0.01 of the cosine), so ``index.nearest`` re-scores the best
``RESCORE`` rows exactly: the ranking's top and the maximum the signal is divided by are the exact
ones. Between ``MIN_ROWS`` and the approximate index's size (``ann.MIN_ROWS``) a snapshot gets its
copy built in a background thread at its third query (a one-off search builds none); until the copy is
ready, queries scan the float32 rows, so a write is never slower to show up in search.

The ONNX graph (``assets/int8-scan.onnx``, one ``MatMulInteger`` node, opset 13) was written with
``onnx.helper``: inputs ``query`` uint8 [1, dims] and ``query_zero`` uint8, and a 1 x 1 placeholder
initializer ``matrix`` that each session replaces with the rows (``SessionOptions.add_initializer``).
"""

from __future__ import annotations

import atexit
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import ann

MIN_ROWS = 20_000  # below it the float32 scan is under ~3 ms and a copy is not worth its memory
START_AFTER = 2  # float32 scans of a snapshot before its copy is built: a one-off CLI search builds none
RESCORE = 256  # rows re-scored exactly: the fused ranking normalises over the top 100
LEVELS = 63  # int8 codes of the rows: -63..63 (7 bits, see above)
CHUNK = 16_384  # rows quantised at a time, so a memory-mapped matrix is not copied whole as float32
MODEL = Path(__file__).parent / "assets" / "int8-scan.onnx"
FAILED = "failed"  # a snapshot whose copy could not be built: not tried again
log = logging.getLogger(__name__)
_BUILDS = ann.Builds()  # one build per snapshot (keyed by its id while it lives)


@dataclass(frozen=True)
class QuantisedVectors:
    """``matrix`` int8 (dims, rows), transposed for the product; ``scale`` float32 per dimension;
    ``session`` the onnxruntime session holding ``matrix`` (``value`` keeps its buffer alive)."""

    version: str
    model: str
    rows: int
    matrix: np.ndarray
    scale: np.ndarray
    value: Any = field(default=None, repr=False)
    session: Any = field(default=None, repr=False)


def quantise(vectors: np.ndarray, version: str = "", model: str = "") -> QuantisedVectors:
    """Per-dimension symmetric 7-bit codes of ``vectors`` (rows x dims), ``v ~= v8 * scale``, and the
    session that scans them."""
    peak = np.zeros(vectors.shape[1], np.float32)
    for start in range(0, len(vectors), CHUNK):
        peak = np.maximum(peak, np.abs(np.asarray(vectors[start:start + CHUNK], np.float32)).max(axis=0))
    scale = np.where(peak > 0, peak / LEVELS, 1.0).astype(np.float32)
    matrix = np.empty((vectors.shape[1], len(vectors)), np.int8)
    for start in range(0, len(vectors), CHUNK):
        block = np.asarray(vectors[start:start + CHUNK], np.float32) / scale
        matrix[:, start:start + len(block)] = np.clip(np.rint(block), -LEVELS, LEVELS).astype(np.int8).T
    value, session = _session(matrix)
    return QuantisedVectors(version, model, len(vectors), matrix, scale, value, session)


def scan(q8: QuantisedVectors, query: np.ndarray) -> np.ndarray:
    """Approximate dot products of ``query`` with every row (float32, one onnxruntime call)."""
    weighted = np.asarray(query, np.float32) * q8.scale
    step = float(np.abs(weighted).max()) / 127.0
    if step == 0.0:
        return np.zeros(q8.rows, np.float32)
    codes = (np.clip(np.rint(weighted / step), -127, 127) + 128).astype(np.uint8)[None, :]
    dots = q8.session.run(None, {"query": codes, "query_zero": np.array(128, np.uint8)})[0]
    return dots[0].astype(np.float32) * np.float32(step)


def _session(matrix: np.ndarray) -> tuple[Any, Any]:
    """(the OrtValue over ``matrix``, a one-thread session whose ``matrix`` initializer it is): the
    session reads the OrtValue's buffer, so both live as long as the copy does."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1  # nearest.single_thread_blas's rule
    options.log_severity_level = 3  # the placeholder's 1 x 1 shape would warn on every run
    value = ort.OrtValue.ortvalue_from_numpy(matrix)
    options.add_initializer("matrix", value)
    return value, ort.InferenceSession(str(MODEL), options, providers=["CPUExecutionProvider"])


def fresh(derived: Any, snap: Any) -> bool:
    """Is ``derived`` (this int8 copy, or an ``ann`` index) made from exactly this snapshot's version,
    model and rows? None and ``FAILED`` are not."""
    if derived is None or derived is FAILED:
        return False
    return (derived.version, derived.model, derived.rows) == (snap.version, snap.embedder, snap.n)


def wanted(snap: Any, upper: int) -> bool:
    """Does this snapshot's scan gain from an int8 copy (between ``MIN_ROWS`` and ``upper`` rows)?"""
    return snap.vectors is not None and MIN_ROWS <= snap.n < upper


def attach(snap: Any, wait: bool = False) -> None:
    """Count a float32 scan of the snapshot and, from its ``START_AFTER`` + 1-th, build its int8 copy in
    the background (once per snapshot); ``wait`` builds it now and joins the build."""
    if snap.quantised is FAILED or fresh(snap.quantised, snap):
        return
    snap.scans += 1
    if snap.scans <= START_AFTER and not wait:
        return
    thread = _BUILDS.start(id(snap), lambda: _build(snap), "kgos-int8-copy")
    if wait:
        thread.join()


def join_builds(timeout: float) -> None:
    """Wait (at most ``timeout`` seconds in all) for the copies being built: at exit, so no build is cut
    off inside onnxruntime while the interpreter shuts down."""
    _BUILDS.join(timeout)


atexit.register(join_builds, 30.0)


def _build(snap: Any) -> None:
    try:
        snap.quantised = quantise(snap.vectors, snap.version, snap.embedder)
    except Exception:  # memory, a broken onnxruntime: this snapshot keeps the float32 scan
        log.exception("int8 copy of %s's vectors failed; its searches scan the float32 rows", snap.db_id)
        snap.quantised = FAILED
