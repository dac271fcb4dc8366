"""Triples as integer arrays: what every predictor trains on and the evaluation protocol ranks.

A ``Triples`` holds aligned ``head``/``relation``/``tail`` codes into its ``entities`` and
``relations`` names. ``LinkGraph`` is a training graph: its triples plus what the feature-based
predictors read of the nodes (type codes, text vectors). ``read_split`` loads a standard split
folder (``train.tsv``/``valid.tsv``/``test.tsv`` of head, relation, tail, as in PyKEEN's datasets).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidArgument
from ..store.arrays import codes

SPLIT_FILES = ("train.tsv", "valid.tsv", "test.tsv")


@dataclass(frozen=True)
class Triples:
    head: np.ndarray  # int64 entity codes
    relation: np.ndarray  # int64 relation codes
    tail: np.ndarray
    entities: tuple[str, ...]
    relations: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.head.shape[0])

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_relations(self) -> int:
        return len(self.relations)

    def subset(self, rows: np.ndarray) -> Triples:
        return Triples(self.head[rows], self.relation[rows], self.tail[rows], self.entities, self.relations)

    def stack(self) -> np.ndarray:
        """(m, 3) int64 rows of (head, relation, tail)."""
        return np.stack([self.head, self.relation, self.tail], axis=1)

    def relation_matrix(self, r: int) -> sp.csr_array:
        """0/1 adjacency (n x n, CSR) of relation ``r``'s edges."""
        keep = self.relation == r
        n = self.n_entities
        m = sp.csr_array((np.ones(int(keep.sum()), np.float32), (self.head[keep], self.tail[keep])), shape=(n, n))
        m.sum_duplicates()
        m.data[:] = 1.0
        return m


@dataclass(frozen=True)
class LinkGraph:
    """Training triples plus node features: ``node_types`` (int codes into ``type_names``) and
    ``vectors`` (unit text vectors, one row per entity, zero rows for nodes without one), each
    None when the source has none (the benchmark splits)."""

    triples: Triples
    node_types: np.ndarray | None = None
    type_names: tuple[str, ...] = ()
    vectors: np.ndarray | None = None

    @property
    def n_entities(self) -> int:
        return self.triples.n_entities


@dataclass(frozen=True)
class Split:
    train: Triples
    valid: Triples
    test: Triples


def _read_rows(path: Path) -> list[tuple[str, str, str]]:
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise InvalidArgument(f"{path}:{i}: expected head<TAB>relation<TAB>tail, got {line[:80]!r}")
        rows.append((parts[0].strip(), parts[1].strip(), parts[2].strip()))
    return rows


def read_split(folder: str | Path) -> Split:
    """A split folder with train.tsv, valid.tsv and test.tsv (``.txt`` accepted too); one shared
    vocabulary over the three files."""
    folder = Path(folder)
    parts = []
    for name in SPLIT_FILES:
        path = folder / name
        if not path.exists() and path.with_suffix(".txt").exists():
            path = path.with_suffix(".txt")
        if not path.is_file():
            raise InvalidArgument(f"{folder} is not a split folder: it has no {name} (head<TAB>relation<TAB>tail lines)")
        parts.append(_read_rows(path))
    if not parts[0]:
        raise InvalidArgument(f"{folder}/train.tsv has no triples")
    ent_codes, entities = codes([x for rows in parts for r in rows for x in (r[0], r[2])])
    rel_codes, relations = codes([r[1] for rows in parts for r in rows])
    out, start = [], 0
    for rows in parts:
        m = len(rows)
        ent = ent_codes[2 * start: 2 * (start + m)].astype(np.int64)
        out.append(Triples(ent[0::2], rel_codes[start:start + m].astype(np.int64), ent[1::2], entities, relations))
        start += m
    return Split(*out)


def concat(*parts: Triples) -> Triples:
    """The triples of several parts sharing one vocabulary."""
    return Triples(np.concatenate([p.head for p in parts]), np.concatenate([p.relation for p in parts]),
                   np.concatenate([p.tail for p in parts]), parts[0].entities, parts[0].relations)
