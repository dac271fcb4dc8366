"""The embedder plugin interface.

An :class:`Embedder` turns text into unit-norm float32 vectors. Every embedder has a stable ``name``
(stored next to the vectors it produced, so vectors of different models are never mixed) and a fixed
``dims``. Empty (or whitespace-only) text embeds to an all-zero row: it has no direction, so its cosine
to anything is 0.

``progress`` callbacks receive the number of texts finished since the previous call (an increment, as
``tqdm.update`` and rich's ``advance`` expect), never a running total.
"""

from __future__ import annotations

import abc
import hashlib
import re
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from kgos.errors import EmbeddingServiceError, InvalidArgument

__all__ = [
    "Embedder",
    "EmbeddingServiceError",
    "Progress",
    "content_hash",
    "l2_normalize",
]

Progress = Callable[[int], None]


def content_hash(model_name: str, text: str) -> str:
    """Hex digest identifying ``text`` as embedded by ``model_name``.

    Stable across processes and platforms (blake2b, 16 bytes). Store it next to a vector and re-embed a
    node only when the hash of its current text differs.
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(model_name.encode("utf-8"))
    h.update(b"\x00")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


_WORD = re.compile(r"\w")


def fill_unknown(out: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    """Give each text of no word characters (only emoji, symbols, zero-width characters) that came back as
    a zero row a unit vector hashed from its characters, so the node counts as embedded (no "no vector
    yet" warning that re-embedding cannot clear) and an equal query finds it. Texts of words the model
    does not know stay zero (the static model's contract)."""
    for i in np.flatnonzero(~out.any(axis=1)):
        chars = [] if _WORD.search(texts[i]) else [c for c in texts[i] if not c.isspace()]
        for c in chars:
            h = int.from_bytes(hashlib.blake2b(c.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
            out[i, h % out.shape[1]] += 1.0 if h >> 63 else -1.0
        if chars:
            out[i] = l2_normalize(out[i])
    return out


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation in place (float32); zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        n = float(np.linalg.norm(x))
        if n > 0:
            x /= n
        return x
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidArgument("embed() takes a sequence of texts, not one string: use embed_query(text)")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InvalidArgument(f"texts[{i}] is {type(t).__name__}, not str")
    return out


def _check_batch_size(batch_size: int) -> None:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise InvalidArgument(f"batch_size must be a positive integer, got {batch_size!r}")


def batches(n: int, batch_size: int) -> Iterator[slice]:
    for start in range(0, n, batch_size):
        yield slice(start, min(start + batch_size, n))


class Embedder(abc.ABC):
    """Base class of every embedder plugin.

    Subclasses set ``name`` and ``dims`` and implement :meth:`_embed_batch` (a list of non-empty texts to
    an (n, dims) array, not necessarily normalised). The base class handles argument checks, empty texts,
    batching, progress reporting and normalisation. Subclasses may override :meth:`embed` entirely
    (e.g. to sort texts by length first) as long as they keep its contract.
    """

    #: stable identifier stored next to the vectors, e.g. ``"minilm-l6-int8"`` or ``"hash-256"``
    name: str
    #: vector width
    dims: int
    #: the spec string :func:`kgos.embed.get_embedder` accepts to rebuild this embedder
    spec: str = ""
    #: cheap embedders work in batches of at least this many texts whatever ``batch_size`` says
    min_batch: int = 1

    # -- public API -------------------------------------------------------------------------------

    def embed(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 64,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Embed ``texts``: float32 array of shape (len(texts), dims), rows unit-norm or zero (empty text)."""
        items = _check_texts(texts)
        _check_batch_size(batch_size)
        out: np.ndarray | None = None
        keep = [i for i, t in enumerate(items) if t.strip()]
        for sl in batches(len(keep), max(batch_size, self.min_batch)):
            idx = keep[sl]
            vecs = np.asarray(self._embed_batch([items[i] for i in idx]), dtype=np.float32)
            if out is None:  # allocated from the first answer: remote models may not know dims up front
                out = np.zeros((len(items), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            if progress is not None:
                progress(len(idx))
        if progress is not None and len(keep) < len(items):
            progress(len(items) - len(keep))
        if out is None:
            out = np.zeros((len(items), self.dims), dtype=np.float32)
        return fill_unknown(l2_normalize(out), items)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: 1-D float32 of length ``dims``, unit norm (all zeros for empty text)."""
        if not isinstance(text, str):
            raise InvalidArgument(f"query must be str, not {type(text).__name__}")
        if not text.strip():
            return np.zeros(self.dims, dtype=np.float32)
        return fill_unknown(l2_normalize(np.asarray(self._embed_query(text), dtype=np.float32).reshape(1, -1)), [text])[0]

    def embed_queries(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Embed many queries at once (evaluation, batch search): rows equal :meth:`embed_query`.

        Symmetric models embed queries and documents alike, so this is :meth:`embed`; models with a
        query mode (e.g. Gemini's RETRIEVAL_QUERY) override it.
        """
        return self.embed(texts, batch_size=batch_size)

    def content_hash(self, text: str) -> str:
        """Hash of (this embedder's name, text): equal hashes mean the stored vector is still valid."""
        return content_hash(self.name, text)

    # -- for subclasses ---------------------------------------------------------------------------

    @abc.abstractmethod
    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed non-empty texts; returns (len(texts), dims), normalisation optional."""

    def _embed_query(self, text: str) -> np.ndarray:
        return self._embed_batch([text])[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dims={self.dims})"
