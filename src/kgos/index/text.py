"""The in-memory text index: BM25 over node name, type, description and text-like properties.

Scores are precomputed per (term, node) into a CSC matrix, as bm25s does, so a query is a sum of a
few column slices. Tokenisation mirrors SQLite FTS5's ``unicode61 remove_diacritics 2`` (runs of
letters and digits, case- and accent-folded) so that this index and the FTS5 channel agree on what a
term is; the stemmer is selectable (``porter`` matches FTS5's ``porter`` tokenizer).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidArgument

_TOKEN_RE = re.compile(r"[^\W_]+")
STEMMERS = ("porter", "snowball", "spec", "none")
FIELDS = ("name", "extra", "type", "description")

# A short English list (the usual function words); FTS5 keeps them, but they only add noise and
# cost to OR queries, so neither channel searches for them.
STOPWORDS = frozenset("""a an and are as at be but by for from has have i if in into is it its me my of on
or our so such that the their then there these they this to was we were what when where which who will
with you your do does how can""".split())


def fold(text: str) -> str:
    """Lower-case and strip diacritics (FTS5 ``remove_diacritics 2``)."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Alphanumeric runs of the folded text: ``"Prompt-caching v2"`` -> ``["prompt", "caching", "v2"]``."""
    return _TOKEN_RE.findall(fold(text))


_SPEC_SUFFIXES = ("ation", "tion", "sion", "ment", "ness", "able", "ible", "ful", "less", "ous", "ive",
                  "ing", "ed", "er", "est", "ly", "al", "ity")


def spec_stem(token: str) -> str:
    """The 18-suffix stemmer of spec/001 1.4: strip the longest listed suffix leaving >= 3 characters.

    (The spec's example says "optimization" -> "optim", which its own rule does not give: stripping
    "ation" leaves "optimiz". The retrieval layer's ``keyword_weight`` matches stems by prefix, so
    both forms meet.)

    >>> spec_stem("optimization"), spec_stem("reduce"), spec_stem("caching")
    ('optimiz', 'reduce', 'cach')
    """
    for suffix in sorted(_SPEC_SUFFIXES, key=len, reverse=True):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def make_stemmer(name: str) -> Callable[[str], str]:
    if name not in STEMMERS:
        raise InvalidArgument(f"unknown stemmer {name!r}; choose one of {', '.join(STEMMERS)}")
    if name == "none":
        return lambda t: t
    if name == "spec":
        return lru_cache(maxsize=200_000)(spec_stem)
    import Stemmer  # PyStemmer: the Snowball C implementations
    stemmer = Stemmer.Stemmer("porter" if name == "porter" else "english")
    return lru_cache(maxsize=200_000)(stemmer.stemWord)


@dataclass(frozen=True)
class TextConfig:
    """How node text is analysed and scored. Defaults are chosen by docs/quality.md."""

    stemmer: str = "porter"
    stopwords: bool = True
    k1: float = 1.5
    b: float = 0.75
    name_weight: float = 1.0
    extra_weight: float = 1.0
    type_weight: float = 1.0
    description_weight: float = 1.0

    def field_weights(self) -> tuple[float, ...]:
        return (self.name_weight, self.extra_weight, self.type_weight, self.description_weight)

    def key(self) -> str:
        return "-".join(str(v) for v in (self.stemmer, int(self.stopwords), self.k1, self.b, *self.field_weights()))


class Analyzer:
    """text -> terms (tokenise, drop stopwords, stem)."""

    def __init__(self, config: TextConfig) -> None:
        self.stem = make_stemmer(config.stemmer)
        self.stop = STOPWORDS if config.stopwords else frozenset()

    def terms(self, text: str) -> list[str]:
        return [self.stem(t) for t in tokenize(text) if t not in self.stop]


def bm25_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """IDF(t) = ln((N - df + 0.5) / (df + 0.5) + 1): spec/001 1.4, the Lucene variant (bm25s "lucene")."""
    return np.log((n_docs - df + 0.5) / (df + 0.5) + 1.0)


def bm25_tf(tf: np.ndarray, doc_len: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl)): the saturation term of spec/001 1.4.

    Robertson's form; Lucene and bm25s's "lucene" method drop the constant (k1 + 1), which scales every
    score alike and changes no ranking.
    """
    return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * doc_len / max(avgdl, 1e-9)))


class TextIndex:
    """BM25 over a fixed list of documents; ``scores(terms)`` gives one float32 score per document.

    Columns are the terms in sorted order, so an index updated from a previous version (``build`` with
    ``previous``) and one built from scratch over the same documents are the same arrays. ``tf`` (the
    field-weighted term counts per document) is kept beside the scores: the next version reuses the
    rows of unchanged documents and analyses only the others, and recomputes every score from the new
    corpus statistics (N, df, avgdl), since any write moves them."""

    def __init__(self, matrix: sp.csc_matrix, vocab: dict[str, int], config: TextConfig,
                 tf: sp.csr_matrix | None = None) -> None:
        self.matrix = matrix
        self.vocab = vocab
        self.config = config
        self.analyzer = Analyzer(config)
        self.tf = tf  # None for an index saved before tf was kept: the next version builds from scratch

    @property
    def n_docs(self) -> int:
        return int(self.matrix.shape[0])

    @classmethod
    def build(cls, docs: Sequence[Sequence[str] | None], config: TextConfig = TextConfig(),
              previous: TextIndex | None = None, reuse: np.ndarray | None = None,
              analyzer: Analyzer | None = None) -> TextIndex:
        """``docs[i]`` is the tuple of field texts (name, extra, type, description) of document i.

        With ``previous`` and ``reuse`` (``reuse[i]``: the row of document i in ``previous`` if its
        text is unchanged, else -1), only the documents with ``reuse[i] < 0`` are analysed (the others
        may be None) and the rest take their term counts from ``previous``. ``analyzer``: one of
        ``config`` to use (e.g. one that remembers its answers), else a new one."""
        if previous is not None and previous.config != config:
            previous = reuse = None  # counts of another analysis: nothing to reuse
        analyzer = previous.analyzer if previous is not None else analyzer or Analyzer(config)
        n = len(docs)
        fresh = np.arange(n) if reuse is None else np.flatnonzero(reuse < 0)
        local: dict[str, int] = {}
        rows, cols, vals = _postings([docs[i] for i in fresh.tolist()], analyzer, config, local)
        terms = list(local)
        rows = fresh[rows]
        if reuse is not None and previous is not None and previous.tf is not None:
            terms, rows, cols, vals = _with_reused(previous, reuse, terms, rows, cols, vals)
        tf = _sorted_tf(n, terms, rows, cols, vals)
        vocab = {t: i for i, t in enumerate(tf[1])}
        return cls(_bm25_matrix(tf[0], config), vocab, config, tf[0])

    @classmethod
    def updated(cls, previous: TextIndex, docs: Sequence[Sequence[str] | None], reuse: np.ndarray) -> TextIndex:
        """``build(docs, previous.config, previous, reuse)`` for a few changed documents, without
        re-sorting every posting: the reused rows' counts are copied row by row into the new order,
        their columns shifted past the new terms (columns stay in term order), and terms no document
        uses any more dropped. Same arrays as ``build`` (tested); ~3x faster on go."""
        config, old = previous.config, previous.tf
        if old is None:
            return cls.build(docs, config, previous, reuse)
        fresh = np.flatnonzero(reuse < 0)
        local: dict[str, int] = {}
        rows, cols, vals = _postings([docs[i] for i in fresh.tolist()], previous.analyzer, config, local)
        vocab, terms = previous.vocab, previous.terms
        added = sorted(t for t in local if t not in vocab)
        # old column c moves up by the number of new terms sorting before it; no object arrays of all terms
        before = np.fromiter((bisect.bisect_left(terms, t) for t in added), np.int64, len(added))
        shift = np.searchsorted(before, np.arange(len(terms)), side="right") if added else None
        col = np.fromiter((vocab[t] + bisect.bisect_left(added, t) if t in vocab else
                           bisect.bisect_left(terms, t) + bisect.bisect_left(added, t) for t in local), np.int64, len(local))
        n_terms = len(terms) + len(added)
        fresh_tf = sp.csr_matrix((vals, (rows, col[cols] if len(local) else cols)), shape=(fresh.size, n_terms),
                                 dtype=np.float32)
        fresh_tf.sum_duplicates()
        fresh_tf.sort_indices()
        tf = _spliced(old, reuse, fresh, fresh_tf, shift, n_terms)
        tf, live = _without_unused(tf, _merged_terms(terms, added))
        index = cls(_bm25_matrix(tf, config), vocab if live is terms else dict(zip(live, range(len(live)))), config, tf)
        index.__dict__["terms"] = live  # the cached property, known already
        return index

    @functools.cached_property
    def terms(self) -> list[str]:
        """The terms in column order (sorted)."""
        return sorted(self.vocab, key=self.vocab.__getitem__)

    def query_terms(self, text: str, weight: Callable[[str], float] | None = None) -> list[tuple[int, float]]:
        """(column, query weight) for each known term; raw tokens decide the weight (5x keywords)."""
        out = []
        for token in tokenize(text):
            if token in self.analyzer.stop:
                continue
            col = self.vocab.get(self.analyzer.stem(token))
            if col is not None:
                out.append((col, weight(token) if weight else 1.0))
        return out

    def scores(self, terms: Iterable[tuple[int, float]]) -> np.ndarray:
        """Sum of w x BM25(t, d) over the query terms, for every document (float32, length n)."""
        out = np.zeros(self.n_docs, np.float32)
        m = self.matrix
        for col, w in terms:
            lo, hi = m.indptr[col], m.indptr[col + 1]
            out[m.indices[lo:hi]] += np.float32(w) * m.data[lo:hi]
        return out

    def save(self, folder: Path) -> None:
        sp.save_npz(folder / "bm25.npz", self.matrix, compressed=False)
        if self.tf is not None:
            sp.save_npz(folder / "bm25_tf.npz", self.tf, compressed=False)
        np.save(folder / "bm25_vocab.npy", np.array(sorted(self.vocab, key=self.vocab.__getitem__), dtype=object),
                allow_pickle=True)

    @classmethod
    def load(cls, folder: Path, config: TextConfig) -> TextIndex:
        matrix = sp.load_npz(folder / "bm25.npz").tocsc()
        terms = np.load(folder / "bm25_vocab.npy", allow_pickle=True)
        tf = sp.load_npz(folder / "bm25_tf.npz").tocsr() if (folder / "bm25_tf.npz").exists() else None
        return cls(matrix, {t: i for i, t in enumerate(terms.tolist())}, config, tf)

    # flat arrays a reader maps (``np.load(mmap_mode="r")``): no zip, no pickle; without ``tf``, so
    # for an index that is only read (a research corpus), never updated by a delta
    _FLAT = ("data", "indices", "indptr")

    def save_flat(self, folder: Path) -> None:
        """Save the BM25 matrix as ``bm25_{data,indices,indptr}.npy`` and the terms as text lines."""
        for name in self._FLAT:
            np.save(folder / f"bm25_{name}.npy", getattr(self.matrix, name))
        (folder / "bm25_terms.txt").write_text("\n".join(self.terms), encoding="utf-8")

    @classmethod
    def load_mapped(cls, folder: Path, n_docs: int, config: TextConfig) -> TextIndex:
        """What ``save_flat`` saved, its arrays mapped read-only, not read into memory."""
        if not n_docs:
            return cls.build([], config)
        data, indices, indptr = (np.load(folder / f"bm25_{name}.npy", mmap_mode="r") for name in cls._FLAT)
        text = (folder / "bm25_terms.txt").read_text(encoding="utf-8")
        terms = text.split("\n") if text else []
        matrix = sp.csc_matrix((data, indices, indptr), shape=(n_docs, len(terms)), copy=False)
        return cls(matrix, {t: i for i, t in enumerate(terms)}, config)


def _postings(docs: Sequence[Sequence[str] | None], analyzer: Analyzer, config: TextConfig,
              vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc index, term id, field weight) of every term occurrence in ``docs``; grows ``vocab``."""
    rows: list[np.ndarray] = [np.zeros(0, np.int64)]
    cols: list[np.ndarray] = [np.zeros(0, np.int64)]
    vals: list[np.ndarray] = [np.zeros(0, np.float32)]
    for f, weight in enumerate(config.field_weights()):
        if weight <= 0:
            continue
        r, c = _field_postings((d[f] for d in docs), analyzer, vocab)  # type: ignore[index]
        rows.append(r)
        cols.append(c)
        vals.append(np.full(r.shape[0], weight, np.float32))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def _with_reused(previous: TextIndex, reuse: np.ndarray, terms: list[str], rows: np.ndarray, cols: np.ndarray,
                 vals: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The postings of the fresh documents joined by the reused rows of ``previous.tf``; the term list
    is the previous one followed by the fresh documents' new terms."""
    old_terms = sorted(previous.vocab, key=previous.vocab.__getitem__)
    known = previous.vocab
    extra = [t for t in terms if t not in known]
    col_of = np.fromiter((known.get(t, -1) for t in terms), np.int64, len(terms))
    new = col_of < 0
    col_of[new] = len(old_terms) + np.arange(int(new.sum()))
    kept = np.flatnonzero(reuse >= 0)
    assert previous.tf is not None  # checked by build
    old = previous.tf[reuse[kept]]  # CSR rows of the unchanged documents, in their new order
    old_rows = np.repeat(kept, np.diff(old.indptr))
    return (old_terms + extra, np.concatenate([old_rows, rows]),
            np.concatenate([old.indices.astype(np.int64), col_of[cols]]),
            np.concatenate([old.data.astype(np.float32), vals]))


def _merged_terms(terms: list[str], added: list[str]) -> list[str]:
    """Two sorted term lists as one sorted list."""
    return sorted(terms + added) if added else terms


def _spliced(old: sp.csr_matrix, reuse: np.ndarray, fresh: np.ndarray, fresh_tf: sp.csr_matrix,
             shift: np.ndarray | None, n_terms: int) -> sp.csr_matrix:
    """The count matrix of the new document order: row i is ``old``'s row ``reuse[i]`` (its columns
    moved up by ``shift``, the new terms sorting before each) or the next row of ``fresh_tf``."""
    kept = np.flatnonzero(reuse >= 0)
    lengths = np.zeros(reuse.size, np.int64)
    lengths[kept] = np.diff(old.indptr)[reuse[kept]]
    lengths[fresh] = np.diff(fresh_tf.indptr)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.empty(int(indptr[-1]), np.int64)
    data = np.empty(int(indptr[-1]), np.float32)
    for rows_new, matrix, rows_src, remap in ((kept, old, reuse[kept], shift), (fresh, fresh_tf, np.arange(fresh.size), None)):
        src, _ = _row_positions(matrix.indptr, rows_src)
        dst, _ = _row_positions(indptr, rows_new)
        cols = matrix.indices[src].astype(np.int64)
        indices[dst] = cols if remap is None else cols + remap[cols]
        data[dst] = matrix.data[src]
    return sp.csr_matrix((data, indices, indptr), shape=(reuse.size, n_terms))


def _row_positions(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(entry positions of the given CSR rows, concatenated; how many each row has)."""
    starts = indptr[rows].astype(np.int64)
    counts = indptr[rows + 1].astype(np.int64) - starts
    shift = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return shift + np.arange(shift.size, dtype=np.int64), counts


def _without_unused(tf: sp.csr_matrix, terms: list[str]) -> tuple[sp.csr_matrix, list[str]]:
    """Drop the columns no document uses (a deleted or changed document was their last)."""
    used = np.bincount(tf.indices, minlength=len(terms)) > 0
    if used.all():
        return tf, terms
    new_col = np.cumsum(used) - 1
    tf = sp.csr_matrix((tf.data, new_col[tf.indices], tf.indptr), shape=(tf.shape[0], int(used.sum())))
    return tf, [t for t, u in zip(terms, used.tolist()) if u]


def _sorted_tf(n: int, terms: list[str], rows: np.ndarray, cols: np.ndarray,
               vals: np.ndarray) -> tuple[sp.csr_matrix, list[str]]:
    """The (n, terms in use) count matrix with its columns in term order; terms no document uses go."""
    used = np.flatnonzero(np.bincount(cols, minlength=len(terms)) > 0) if len(terms) else np.zeros(0, np.int64)
    live = [terms[i] for i in used.tolist()]
    order = sorted(range(len(live)), key=live.__getitem__)
    rank = np.empty(len(live), np.int64)
    rank[np.asarray(order, np.int64)] = np.arange(len(live))
    final = np.full(len(terms), -1, np.int64)
    final[used] = rank
    tf = sp.csr_matrix((vals, (rows, final[cols])), shape=(n, len(live)), dtype=np.float32)
    tf.sum_duplicates()
    tf.sort_indices()
    return tf, [live[i] for i in order]


def _field_postings(texts: Iterable[str], analyzer: Analyzer, vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(doc index, term id) of every term occurrence in one field; grows ``vocab``."""
    rows: list[int] = []
    cols: list[int] = []
    setdefault = vocab.setdefault
    for i, text in enumerate(texts):
        if not text:
            continue
        ids = [setdefault(t, len(vocab)) for t in analyzer.terms(text)]
        rows.extend([i] * len(ids))
        cols.extend(ids)
    return np.asarray(rows, np.int64), np.asarray(cols, np.int64)


def _bm25_matrix(tf: sp.csr_matrix, config: TextConfig) -> sp.csc_matrix:
    n = tf.shape[0]
    doc_len = np.asarray(tf.sum(axis=1)).ravel()
    avgdl = float(doc_len.mean()) if n else 0.0
    df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
    idf = bm25_idf(df, n)
    row_of = np.repeat(np.arange(n), np.diff(tf.indptr))
    data = bm25_tf(tf.data.astype(np.float64), doc_len[row_of], avgdl, config.k1, config.b) * idf[tf.indices]
    scored = sp.csr_matrix((data.astype(np.float32), tf.indices, tf.indptr), shape=tf.shape)
    return scored.tocsc()
