"""Entity merging (spec/002 "Future Extensions" 6: deduplicate "python" vs "Python3"), reviewable.

``propose`` scans the memory KG for entities of one type whose names differ only by case, punctuation,
a version suffix or a known synonym ("Python3" / "python", "Node.js" / "nodejs", "Postgres" /
"PostgreSQL"), or are spelled almost the same ("Meshalyzer" / "Meshalyser"), and stores proposals in
``memory_aliases``. Nothing changes in the KG until a person accepts one. Accepting merges the alias
entity into the canonical one in one KG transaction: its edges move over (upserted, so weights take the
max and evidence is kept and merged), its name joins the canonical entity's ``aliases`` property
(which full-text search indexes) and it is deleted; later memories that mention the alias are written
to the canonical entity. Rejected proposals are remembered and not proposed again.
"""

from __future__ import annotations

import difflib
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import AliasNotFound, InvalidArgument
from ..model import Node, normalize_name
from ..store.base import GraphStore
from ..store.migrations import now_iso
from .extract import EntityRef
from .graph import GraphWriter, as_list

MERGEABLE_TYPES = ("tool", "project", "concept")
SYNONYMS = {"postgres": "postgresql", "golang": "go", "js": "javascript", "ts": "typescript",
            "k8s": "kubernetes", "py": "python", "mongo": "mongodb", "nvim": "neovim", "vscode": "vscode"}
_COLS = ("id, db_id, type, alias_norm, alias_name, canonical_norm, canonical_name, reason, score, status, "
         "created_at, decided_at")


@dataclass(frozen=True)
class AliasProposal:
    id: int
    db_id: str
    type: str
    alias_norm: str
    alias_name: str
    canonical_norm: str
    canonical_name: str
    reason: str
    score: float
    status: str  # proposed | accepted | rejected
    created_at: str
    decided_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def alias_key(name: str) -> str:
    """What two spellings of one thing share: lower case, no punctuation, no version suffix, synonyms
    folded ("Python 3.11" -> "python", "Node.js" -> "nodejs", "Postgres" -> "postgresql")."""
    key = normalize_name(name)
    key = re.sub(r"[\s._-]*v?\d+(?:\.\d+)*$", "", key) or key
    key = re.sub(r"[^\w+#]+", "", key)
    return SYNONYMS.get(key, key)


# -- finding candidates -----------------------------------------------------------------------------
def candidates(store: GraphStore, min_ratio: float = 0.9) -> list[tuple[Node, Node, str, float]]:
    """(alias, canonical, reason, score) pairs; the canonical entity is the better connected one."""
    degree = _degrees(store)
    by_type: dict[str, list[Node]] = defaultdict(list)
    for node in store.iter_nodes():
        if node.type in MERGEABLE_TYPES:
            by_type[node.type].append(node)
    pairs: list[tuple[Node, Node, str, float]] = []
    for nodes in by_type.values():
        pairs += _same_key(nodes, degree) + _similar(nodes, degree, min_ratio)
    return pairs


def _degrees(store: GraphStore) -> dict[str, int]:
    arrays = store.graph_arrays()
    counts = np.bincount(np.concatenate([arrays.src, arrays.dst]), minlength=len(arrays.node_ids))
    return dict(zip(arrays.node_ids, counts.tolist()))


def _rank(degree: dict[str, int]) -> Any:
    return lambda n: (-degree.get(n.id, 0), len(n.name), n.created_at or "", n.id)


def _same_key(nodes: list[Node], degree: dict[str, int]) -> list[tuple[Node, Node, str, float]]:
    groups: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        groups[alias_key(node.name)].append(node)
    out = []
    for group in groups.values():
        if len(group) > 1:
            canonical, *rest = sorted(group, key=_rank(degree))
            out += [(alias, canonical, "same name up to case, punctuation, version or synonym", 0.95)
                    for alias in rest]
    return out


def _similar(nodes: list[Node], degree: dict[str, int], min_ratio: float) -> list[tuple[Node, Node, str, float]]:
    """Near-identical spellings, compared only within blocks sharing the first three letters."""
    blocks: dict[str, dict[str, Node]] = defaultdict(dict)
    for node in sorted(nodes, key=_rank(degree)):
        key = alias_key(node.name)
        if len(key) >= 6:
            blocks[key[:3]].setdefault(key, node)
    out = []
    for block in blocks.values():
        keys = list(block)[:200]  # a block this large is a vocabulary, not a typo
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                ratio = difflib.SequenceMatcher(None, a, b).ratio()
                if ratio >= min_ratio:
                    canonical, alias = sorted((block[a], block[b]), key=_rank(degree))
                    out.append((alias, canonical, "similar spelling", round(ratio, 3)))
    return out


# -- the review table -------------------------------------------------------------------------------
class AliasTable:
    def __init__(self, conn: sqlite3.Connection, db_id: str) -> None:
        self.conn = conn
        self.db_id = db_id

    def add(self, pairs: Iterable[tuple[EntityRef, EntityRef, str, float]]) -> int:
        """Store new proposals; pairs already proposed, accepted or rejected are left as they are."""
        rows = [(self.db_id, a.type, a.key[0], a.name, c.key[0], c.name, reason, score, now_iso())
                for a, c, reason, score in pairs if a.key != c.key]
        sql = ("INSERT OR IGNORE INTO memory_aliases (db_id, type, alias_norm, alias_name, canonical_norm, "
               "canonical_name, reason, score, created_at) VALUES (?,?,?,?,?,?,?,?,?)")
        # one statement each: the count of rows added reads the same on SQLite and PostgreSQL
        return sum(max(0, self.conn.execute(sql, row).rowcount) for row in rows)

    def list(self, status: str | None = None) -> list[AliasProposal]:
        if status not in (None, "proposed", "accepted", "rejected"):
            raise InvalidArgument(f"status must be proposed, accepted or rejected, not {status!r}")
        sql, args = f"SELECT {_COLS} FROM memory_aliases WHERE db_id = ?", [self.db_id]
        if status:
            sql, args = sql + " AND status = ?", [*args, status]
        return [AliasProposal(*r) for r in self.conn.execute(sql + " ORDER BY id", args)]

    def get(self, proposal_id: int) -> AliasProposal:
        row = self.conn.execute(f"SELECT {_COLS} FROM memory_aliases WHERE id = ? AND db_id = ?",
                                (proposal_id, self.db_id)).fetchone()
        if row is None:
            raise AliasNotFound(f"no alias proposal #{proposal_id}; list them with: kgos memory aliases list")
        return AliasProposal(*row)

    def decide(self, proposal_id: int, status: str) -> AliasProposal:
        self.conn.execute("UPDATE memory_aliases SET status = ?, decided_at = ? WHERE id = ?",
                          (status, now_iso(), proposal_id))
        return self.get(proposal_id)

    def accepted_map(self) -> dict[tuple[str, str], str]:
        """(alias norm, type) -> canonical display name, chains (a -> b -> c) followed to the end."""
        pairs = {(r.alias_norm, r.type): (r.canonical_norm, r.canonical_name) for r in self.list("accepted")}
        resolved = {}
        for key, (norm, name) in pairs.items():
            for _ in range(len(pairs)):  # bounded: a cycle cannot loop forever
                if (norm, key[1]) not in pairs or (norm, key[1]) == key:
                    break
                norm, name = pairs[(norm, key[1])]
            resolved[key] = name
        return resolved


# -- merging ----------------------------------------------------------------------------------------
def merge(store: GraphStore, alias: Node, canonical: Node, evidence_cap: int = 20) -> int:
    """Fold ``alias`` into ``canonical`` in one transaction; returns the number of edges moved."""
    if alias.id == canonical.id or alias.type != canonical.type:
        raise InvalidArgument(f"cannot merge {alias.id} into {canonical.id}: they must be two entities of one type")
    neighbours = store.neighbors(alias.id, "both")
    names = [*as_list(canonical.properties.get("aliases")), alias.name, *as_list(alias.properties.get("aliases"))]
    with GraphWriter(store, evidence_cap).session() as session:
        for nb in neighbours:
            s, o = (canonical.id, nb.node.id) if nb.direction == "outgoing" else (nb.node.id, canonical.id)
            if s != o:
                session.edge(s, o, nb.edge.type, nb.edge.weight, as_list(nb.edge.properties.get("evidence")),
                             nb.edge.created_at or now_iso())
        merged_props = {**{k: v for k, v in alias.properties.items() if k != "aliases"}, **canonical.properties,
                        "aliases": list(dict.fromkeys(n for n in names if isinstance(n, str)))}
        session.w.update_node(canonical.id, properties=merged_props, replace_properties=True)
        session.w.delete_node(alias.id)  # its edges go with it
    return len(neighbours)
