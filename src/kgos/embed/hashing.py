"""A deterministic feature-hashing embedder (numpy only).

Features are lowercased word unigrams (Lucene's 33 English stop words dropped unless a text has
nothing else) and character 3- to 5-grams of each word padded with one space on both sides (fastText
style: ``" cat "`` gives ``" ca"``, ``"cat"``, ``"at "``...). Each feature is hashed to a column and a
sign (signed feature hashing, so collisions cancel in expectation instead of piling up). The word part
and the n-gram part are L2-normalised separately and mixed as ``word_weight * words + (1 - word_weight)
* ngrams`` (0.3 by default, the best of 0/0.15/0.3/0.5 on both bench dev sets), then normalised.

The hashes are fixed functions of the text (blake2b for words, FNV-1a + splitmix64 on code points for
n-grams), never Python's salted ``hash()``, so vectors are identical across processes, platforms and
releases. Changing any parameter changes ``name``.

It is a lexical model: it knows no synonyms. It exists for tests, for CI, and as a zero-dependency
fallback; see ``docs/embedders.md`` for how it compares.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from kgos.errors import InvalidArgument

from .base import Embedder, l2_normalize

__all__ = ["HashingEmbedder"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_M64 = (1 << 64) - 1
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_SM_A = np.uint64(0xBF58476D1CE4E5B9)
_SM_B = np.uint64(0x94D049BB133111EB)
_SPACE = 32

#: Lucene's English stop words (the list bm25s and Elasticsearch use)
STOPWORDS_EN = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)

_word_cache: dict[str, int] = {}
_WORD_CACHE_MAX = 500_000


def _word_hash(word: str) -> int:
    h = _word_cache.get(word)
    if h is None:
        d = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8, person=b"kgos-hash-w")
        h = int.from_bytes(d.digest(), "little")
        if len(_word_cache) >= _WORD_CACHE_MAX:
            _word_cache.clear()
        _word_cache[word] = h
    return h


def _splitmix(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * _SM_A
    z = z ^ (z >> np.uint64(27))
    z = z * _SM_B
    return z ^ (z >> np.uint64(31))


class HashingEmbedder(Embedder):
    """Signed feature hashing of words and character n-grams.

    ``dims``: output width (>= 8). ``ngram_range``: inclusive (min, max) character n-gram sizes, counted
    on the space-padded word. ``word_weight``: share of the word part (0..1); the n-gram part gets the rest.
    """

    min_batch = 1024

    def __init__(
        self,
        dims: int = 512,
        *,
        ngram_range: tuple[int, int] = (3, 5),
        word_weight: float = 0.3,
        stopwords: bool = True,
    ) -> None:
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 8 or dims > 1 << 20:
            raise InvalidArgument(f"hash embedder dims must be an integer in 8..1048576, got {dims!r}")
        lo, hi = ngram_range
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi <= 16):
            raise InvalidArgument(f"ngram_range must satisfy 1 <= min <= max <= 16, got {ngram_range!r}")
        if not 0.0 <= float(word_weight) <= 1.0:
            raise InvalidArgument(f"word_weight must be in [0, 1], got {word_weight!r}")
        self.dims = dims
        self.ngram_range = (lo, hi)
        self.word_weight = float(word_weight)
        self.stopwords = bool(stopwords)
        default = (lo, hi) == (3, 5) and self.word_weight == 0.3 and self.stopwords
        self.name = (
            f"hash-{dims}"
            if default
            else f"hash-{dims}-c{lo}{hi}-w{self.word_weight:g}" + ("" if self.stopwords else "-nostop")
        )
        self.spec = f"hash:{dims}"

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        n, d = len(texts), self.dims
        words_per_doc = [_WORD_RE.findall(t.lower()) for t in texts]
        if self.stopwords:
            words_per_doc = [[w for w in ws if w not in STOPWORDS_EN] or ws for ws in words_per_doc]

        # -- word unigrams: one cached 64-bit hash per distinct word
        counts = np.fromiter((len(w) for w in words_per_doc), dtype=np.int64, count=n)
        flat = [w for ws in words_per_doc for w in ws]
        wv = np.zeros(n * d, dtype=np.float64)
        if flat:
            hw = np.fromiter((_word_hash(w) for w in flat), dtype=np.uint64, count=len(flat))
            doc = np.repeat(np.arange(n, dtype=np.int64), counts)
            col = (hw % np.uint64(d)).astype(np.int64)
            sign = np.where((hw >> np.uint64(63)) == 1, -1.0, 1.0)
            wv = np.bincount(doc * d + col, weights=sign, minlength=n * d)
        word_part = l2_normalize(wv.reshape(n, d).astype(np.float32))

        # -- character n-grams over " w1 w2 ... " per document, windows may not contain an inner space
        docs = [" " + " ".join(ws) + " " for ws in words_per_doc]
        lens = np.fromiter((len(s) for s in docs), dtype=np.int64, count=n)
        cp = np.frombuffer("".join(docs).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(
            np.uint64
        )
        doc_of = np.repeat(np.arange(n, dtype=np.int64), lens)
        is_space = (cp == _SPACE).astype(np.int64)
        space_cum = np.concatenate(([0], np.cumsum(is_space)))
        total = cp.shape[0]
        keys: list[np.ndarray] = []
        signs: list[np.ndarray] = []
        lo, hi = self.ngram_range
        for k in range(lo, hi + 1):
            m = total - k + 1
            if m <= 0:
                continue
            pos = np.arange(m, dtype=np.int64)
            ok = doc_of[:m] == doc_of[k - 1 :]
            if k > 2:  # interior characters must not be spaces (stay inside one padded word)
                ok &= (space_cum[pos + k - 1] - space_cum[pos + 1]) == 0
            ok &= ~((cp[:m] == _SPACE) & (cp[k - 1 :] == _SPACE))  # not just " " padding
            pos = pos[ok]
            if pos.size == 0:
                continue
            h = np.full(pos.shape, _FNV_OFFSET ^ np.uint64(k), dtype=np.uint64)
            for j in range(k):
                h = (h ^ cp[pos + j]) * _FNV_PRIME
            h = _splitmix(h)
            keys.append(doc_of[pos] * d + (h % np.uint64(d)).astype(np.int64))
            signs.append(np.where((h >> np.uint64(63)) == 1, -1.0, 1.0))
        if keys:
            cv = np.bincount(np.concatenate(keys), weights=np.concatenate(signs), minlength=n * d)
        else:
            cv = np.zeros(n * d, dtype=np.float64)
        char_part = l2_normalize(cv.reshape(n, d).astype(np.float32))

        w = self.word_weight
        return w * word_part + (1.0 - w) * char_part
