"""The name index: every node's name and aliases, looked up whole (issue 13, lever 2).

BM25 scores a query's words; it cannot tell "mitochondrion" the term from "mitochondrion inheritance"
with a shorter description. This index answers the question BM25 cannot: is the query *a name* of a
node? Each name and each alias (every short string of ``aliases``, ``synonyms``, ``lemmas``,
``keywords``, ``tags``, ... see ``alias_strings``) is normalised to a key; a query is matched

- exactly (the folded token sequence: ``"Mitochondrion"`` = ``"mitochondrion"``, ``"T-cell"`` = ``"t cell"``),
- as a token set (the stemmed, stopword-free words in any order: ``"inheritance, mitochondrial"``),
- as a prefix of a name (``"git sta"`` -> ``"git stash"``), weakest, and only for queries of 3+ characters.

Keys are kept sorted in plain lists, so a lookup is a bisection: no per-node work at query time.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..model import normalize_name
from .text import Analyzer, tokenize

#: properties whose strings are other names of the node (a string or a list of strings)
NAME_PROPERTIES = ("aliases", "alias", "synonyms", "synonym", "lemmas", "keywords", "tags", "labels",
                   "acronyms", "acronym", "abbreviations", "abbreviation", "also_known_as", "short_name")
MAX_ALIAS_WORDS = 8  # a list property counts as names only if every item is this short (not sentences)
MAX_ALIAS_CHARS = 120
MAX_ALIASES = 1000  # per node: a node with 10,000 aliases keeps the first 1,000 as names
PREFIX_MIN_CHARS = 3
PREFIX_LIMIT = 50  # a short prefix can open thousands of names: only the first few (shortest) count

# Match tiers, scores of the name signal (0..1). A name outranks an alias, whole outranks token set.
# The gap between the exact tiers and the others is > 1.05 (every other signal at 1 plus the
# diversity bonus), so an exact name or alias outranks a node that only has the same words.
NAME_EXACT, ALIAS_EXACT, NAME_SET, ALIAS_SET, PREFIX = 1.0, 0.9, 0.25, 0.2, 0.1


def _short(value: str) -> bool:
    return 0 < len(value) <= MAX_ALIAS_CHARS and len(value.split()) <= MAX_ALIAS_WORDS


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def alias_strings(properties: dict[str, Any]) -> list[str]:
    """The other names of a node: strings of the ``NAME_PROPERTIES`` keys, and every other property
    that is a list of short strings (up to ``MAX_ALIASES``)."""
    out: list[str] = []
    for key, value in properties.items():
        if isinstance(value, str) and key in NAME_PROPERTIES:
            out.append(value)
        elif _string_list(value) and (key in NAME_PROPERTIES or all(_short(v) for v in value)):
            out.extend(v for v in value if _short(v))
        if len(out) >= MAX_ALIASES:
            break
    return out[:MAX_ALIASES]


def exact_key(text: str) -> str:
    """``"Mitochondrial  Inheritance!"`` -> ``"mitochondrial inheritance"``; punctuation-only names
    (``"["``) keep their normalised form."""
    return " ".join(tokenize(text)) or normalize_name(text)


@dataclass
class _Keys:
    """Sorted unique keys, each with the rows (and match kind: 0 name, 1 alias) that have it."""

    keys: list[str]
    ptr: np.ndarray
    rows: np.ndarray
    alias: np.ndarray

    @classmethod
    def build(cls, entries: Iterable[tuple[str, int, int]]) -> _Keys:
        entries = sorted({e for e in entries if e[0]})
        keys = sorted({k for k, _, _ in entries})
        first = {k: i for i, k in enumerate(keys)}
        counts = np.bincount([first[k] for k, _, _ in entries], minlength=len(keys)) if entries else np.zeros(0, int)
        ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        rows = np.fromiter((r for _, r, _ in entries), np.int64, len(entries))
        alias = np.fromiter((a for _, _, a in entries), np.int8, len(entries))
        return cls(keys, ptr, rows, alias)

    def merged(self, new_of_old: np.ndarray, entries: Iterable[tuple[str, int, int]]) -> _Keys:
        """These keys' entries of the rows that carry over (``new_of_old[row]`` >= 0, renumbered) joined
        by ``entries`` of other rows: the same lists ``build`` would give for all of them. Keys are
        renumbered by counting (a few new keys bisected in), not re-sorted: 0.24 s -> ~0.03 s on go."""
        fresh_sorted = sorted({e for e in entries if e[0]})
        if self.rows.size and _appended(new_of_old, fresh_sorted):
            return self._appended(fresh_sorted)
        key_of = np.repeat(np.arange(len(self.keys)), np.diff(self.ptr))
        new_rows = new_of_old[self.rows] if self.rows.size else self.rows
        keep = np.flatnonzero(new_rows >= 0)
        fresh = fresh_sorted
        alive = np.zeros(len(self.keys), bool)
        alive[key_of[keep]] = True
        found: dict[str, int] = {}
        inserted: list[tuple[int, str]] = []  # (old key it goes before, new key), in key order
        for key in sorted({k for k, _, _ in fresh}):
            i = bisect.bisect_left(self.keys, key)
            if i < len(self.keys) and self.keys[i] == key:
                found[key] = i
                alive[i] = True
            else:
                inserted.append((i, key))
        before = np.concatenate([[0], np.cumsum(alive)]).astype(np.int64)  # alive old keys below each index
        at = np.fromiter((i for i, _ in inserted), np.int64, len(inserted))
        remap = before[:-1] + np.searchsorted(at, np.arange(len(self.keys)), side="right")
        new_ids = before[at] + np.arange(len(inserted))
        keys = np.empty(int(before[-1]) + len(inserted), object)
        kept_keys = np.flatnonzero(alive)
        keys[remap[kept_keys]] = np.array(self.keys, dtype=object)[kept_keys] if len(self.keys) else []
        keys[new_ids] = [k for _, k in inserted]
        first = {k: int(remap[i]) for k, i in found.items()} | {k: int(j) for (_, k), j in zip(inserted, new_ids)}
        key_ids = np.concatenate([remap[key_of[keep]], np.fromiter((first[k] for k, _, _ in fresh), np.int64, len(fresh))])
        rows = np.concatenate([new_rows[keep], np.fromiter((r for _, r, _ in fresh), np.int64, len(fresh))])
        alias = np.concatenate([self.alias[keep], np.fromiter((a for _, _, a in fresh), np.int8, len(fresh))])
        order = np.lexsort((alias, rows, key_ids))
        ptr = np.concatenate([[0], np.cumsum(np.bincount(key_ids, minlength=len(keys)))]).astype(np.int64)
        return _Keys(keys.tolist(), ptr, rows[order].astype(np.int64), alias[order].astype(np.int8))

    def _appended(self, fresh: list[tuple[str, int, int]]) -> _Keys:
        """``merged`` when every old row stays in place and the fresh rows are new ones after them
        (nodes added): the fresh entries go at the end of their key's list, new keys are inserted;
        no old entry moves relative to another, so nothing is re-sorted (a delta per added node)."""
        keys = list(self.keys)
        new_keys = sorted({k for k, _, _ in fresh} - set(self._find_many({k for k, _, _ in fresh})))
        for key in new_keys:
            keys.insert(bisect.bisect_left(keys, key), key)
        first = {k: i for k, i in zip(new_keys, (bisect.bisect_left(keys, k) for k in new_keys))}
        counts = np.diff(self.ptr)
        at = []  # where each fresh entry goes in the old arrays: after its key's old entries
        for key, _, _ in fresh:
            i = bisect.bisect_left(self.keys, key)
            at.append(self.ptr[i + 1] if key not in first else self.ptr[i])
        grown = np.zeros(len(keys), np.int64)
        is_new = np.zeros(len(keys), bool)
        is_new[list(first.values())] = True
        grown[~is_new] = counts
        for key, _, _ in fresh:
            grown[first[key] if key in first else bisect.bisect_left(keys, key)] += 1
        at_arr = np.asarray(at, np.int64)
        rows = np.insert(self.rows, at_arr, np.fromiter((r for _, r, _ in fresh), np.int64, len(fresh)))
        alias = np.insert(self.alias, at_arr, np.fromiter((a for _, _, a in fresh), np.int8, len(fresh)))
        ptr = np.concatenate([[0], np.cumsum(grown)]).astype(np.int64)
        return _Keys(keys, ptr, rows.astype(np.int64), alias.astype(np.int8))

    def _find_many(self, keys: set[str]) -> list[str]:
        """Those of ``keys`` this list has."""
        out = []
        for key in keys:
            i = bisect.bisect_left(self.keys, key)
            if i < len(self.keys) and self.keys[i] == key:
                out.append(key)
        return out

    def find(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return self.rows[self.ptr[i]:self.ptr[i + 1]], self.alias[self.ptr[i]:self.ptr[i + 1]]
        return self.rows[:0], self.alias[:0]

    def prefixed(self, key: str, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the keys that extend ``key`` (not equal to it), and each key's length."""
        lo = bisect.bisect_right(self.keys, key)
        hi = min(bisect.bisect_left(self.keys, key + "\U0010ffff"), lo + limit)
        if hi <= lo:
            return self.rows[:0], np.zeros(0)
        lengths = np.repeat([len(k) for k in self.keys[lo:hi]], np.diff(self.ptr[lo:hi + 1]))
        return self.rows[self.ptr[lo]:self.ptr[hi]], lengths

    def arrays(self) -> dict[str, np.ndarray]:
        return {"ptr": self.ptr, "rows": self.rows, "alias": self.alias}


def _appended(new_of_old: np.ndarray, fresh: list[tuple[str, int, int]]) -> bool:
    """Does every old row keep its number, with every fresh entry's row after them?"""
    n = new_of_old.size
    return bool(np.array_equal(new_of_old, np.arange(n))) and all(r >= n for _, r, _ in fresh)


class NameIndex:
    """Exact, token-set and prefix matches of a query against every node's names and aliases."""

    def __init__(self, n: int, exact: _Keys, sets: _Keys, analyzer: Analyzer) -> None:
        self.n, self.exact, self.sets, self.analyzer = n, exact, sets, analyzer

    @classmethod
    def build(cls, names: Sequence[str], aliases: Sequence[Sequence[str] | None], analyzer: Analyzer,
              previous: NameIndex | None = None, reuse: np.ndarray | None = None) -> NameIndex:
        """``names[i]`` and ``aliases[i]`` are node i's name and other names. With ``previous`` and
        ``reuse`` (``reuse[i]``: node i's row in ``previous`` if its names are unchanged, else -1; its
        ``aliases[i]`` may then be None), only the other nodes' names are analysed."""
        fresh = range(len(names)) if reuse is None or previous is None else np.flatnonzero(reuse < 0).tolist()
        exact: list[tuple[str, int, int]] = []
        sets: list[tuple[str, int, int]] = []
        for row in fresh:
            for kind, text in [(0, names[row])] + [(1, a) for a in aliases[row] or ()]:
                exact.append((exact_key(text), row, kind))
                sets.append((cls._set_key(text, analyzer.terms), row, kind))
        if reuse is None or previous is None:
            return cls(len(names), _Keys.build(exact), _Keys.build(sets), analyzer)
        new_of_old = np.full(previous.n, -1, np.int64)
        kept = np.flatnonzero(reuse >= 0)
        new_of_old[reuse[kept]] = kept
        return cls(len(names), previous.exact.merged(new_of_old, exact), previous.sets.merged(new_of_old, sets), analyzer)

    @staticmethod
    def _set_key(text: str, terms: Callable[[str], list[str]]) -> str:
        return " ".join(sorted(set(terms(text))))

    def scores(self, query: str, prefix: bool = True) -> np.ndarray:
        """One float32 per node: the best tier its names reach for ``query`` (0 when none matches)."""
        out = np.zeros(self.n, np.float32)
        key = exact_key(query)
        if prefix and len(key) >= PREFIX_MIN_CHARS:
            rows, lengths = self.exact.prefixed(key, PREFIX_LIMIT)
            np.maximum.at(out, rows, (PREFIX * len(key) / np.maximum(lengths, 1)).astype(np.float32))
        rows, alias = self.sets.find(self._set_key(query, self.analyzer.terms))
        np.maximum.at(out, rows, np.where(alias == 1, ALIAS_SET, NAME_SET).astype(np.float32))
        rows, alias = self.exact.find(key)
        np.maximum.at(out, rows, np.where(alias == 1, ALIAS_EXACT, NAME_EXACT).astype(np.float32))
        return out

    def coverage(self, query: str, rows: np.ndarray) -> np.ndarray:
        """For each of ``rows``: the share of the query's terms found in that node's names and aliases
        (1.0: the query only uses words of one of its names, so it names the node; 0: none of them)."""
        wanted = set(self.analyzer.terms(query))
        out = np.zeros(len(rows), np.float32)
        if not wanted:
            return out
        order, sorted_rows, starts = self._by_row
        for j, row in enumerate(np.asarray(rows, np.int64)):
            lo, hi = np.searchsorted(sorted_rows, [row, row + 1])
            own = {t for e in order[lo:hi] for t in self.sets.keys[int(np.searchsorted(starts, e, "right") - 1)].split()}
            out[j] = len(wanted & own) / len(wanted)
        return out

    @functools.cached_property
    def _by_row(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token-set entries in node-row order, their rows, and each key's first entry (an entry's key)."""
        order = np.argsort(self.sets.rows, kind="stable")
        return order, self.sets.rows[order], self.sets.ptr[:-1]

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for part, keys in (("exact", self.exact), ("sets", self.sets)):
            (folder / f"{part}.json").write_text(json.dumps(keys.keys))
            np.savez(folder / f"{part}.npz", **keys.arrays())
        (folder / "meta.json").write_text(json.dumps({"n": self.n}))

    @classmethod
    def load(cls, folder: Path, analyzer: Analyzer) -> NameIndex:
        parts = []
        for part in ("exact", "sets"):
            keys = json.loads((folder / f"{part}.json").read_text())
            with np.load(folder / f"{part}.npz") as z:
                parts.append(_Keys(keys, z["ptr"], z["rows"], z["alias"]))
        return cls(int(json.loads((folder / "meta.json").read_text())["n"]), parts[0], parts[1], analyzer)
