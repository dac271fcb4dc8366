"""Writing an ingest into a native KG incrementally, in one transaction.

Every node and edge belongs to one group: the file it came from (its ``rel``), or a shared group
(``@patterns``, ``@concepts``, ``@external``). The table ``kgos_ingest_files`` in the KG file remembers,
per group, the content hash of the file, its cached tier-1 facts (so an unchanged file is never parsed
again), the hash of the group's last output and the ids of what it wrote. A run rewrites only the
groups whose output hash changed, and only their own rows:

* nodes the group no longer produces (and no other group does) are deleted, with their edges;
* the group's old edges are deleted and its new edges inserted;
* its nodes are upserted by id, so a node keeps its row (and the edges other files point at it with).

All of it happens in one unit of work of the store (``store.writing()``) with one version bump: an
interrupted or failed run leaves the KG exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ..model import normalize_name
from ..pipeline.digest import content_hash
from ..store.limits import check_properties
from ..store.migrations import now_iso
from ..store.base import GraphStore
from ..store.vocabulary import declared_list
from ..store.writing import Writer

TABLE = "kgos_ingest_files"
SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
  rel TEXT PRIMARY KEY, sha256 TEXT NOT NULL, kind TEXT NOT NULL, facts BLOB NOT NULL,
  out_hash TEXT NOT NULL DEFAULT '', out BLOB NOT NULL DEFAULT '{{}}')"""
INGEST_EDGE_TYPES = ("calls", "imports", "inherits", "implements", "decorated_by", "links_to", "mentions",
                     "references", "contains", "pattern_instance_of", "pattern_alternative_to", "requires",
                     "enables", "has_limitation", "has_workaround", "feeds_into", "alternative_to")


@dataclass(frozen=True)
class CachedGroup:
    """A group as the last run left it; ``facts`` and ``out`` are decoded only when asked for (an
    unchanged re-ingest compares hashes and never needs them)."""

    rel: str
    sha256: str
    kind: str
    raw_facts: bytes
    out_hash: str
    raw_out: bytes

    @property
    def facts(self) -> dict[str, Any]:
        return orjson.loads(self.raw_facts)  # type: ignore[no-any-return]

    @property
    def out(self) -> dict[str, Any]:
        return orjson.loads(self.raw_out)  # type: ignore[no-any-return]


@dataclass
class GroupOutput:
    """What a group writes now: its nodes and edges (node-link dicts)."""

    rel: str
    sha256: str
    kind: str
    facts: dict[str, Any]
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]

    @property
    def out_hash(self) -> str:
        return content_hash({"nodes": self.nodes, "edges": self.edges})


@dataclass(frozen=True)
class WriteCounts:
    groups_written: int
    groups_deleted: int
    nodes_upserted: int
    nodes_deleted: int
    edges_written: int
    edges_deleted: int


def load_cache(store: GraphStore) -> dict[str, CachedGroup]:
    """Every group's cached state (empty for a KG never ingested into)."""
    if not store.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)).fetchone():
        return {}
    out = {}
    for rel, sha, kind, facts, out_hash, written in store.conn.execute(
            f"SELECT rel, sha256, kind, facts, out_hash, out FROM {TABLE}"):
        out[rel] = CachedGroup(rel, sha, kind, facts, out_hash, written)
    return out


def write(store: GraphStore, outputs: list[GroupOutput], deleted: Iterable[str],
          cache: dict[str, CachedGroup], tiers: Iterable[int] = (1,)) -> WriteCounts:
    """Apply the changed groups and the deleted ones in one unit of work (see the module docstring).
    Nodes and edges go through the store's ``writing()`` (bulk mode: the ingest embeds the changed
    nodes after it, by content hash); the group table rides in the same transaction."""
    keep = {n["id"] for g in outputs for n in g.nodes}
    changed = [g for g in outputs if g.rel not in cache or cache[g.rel].out_hash != g.out_hash
               or cache[g.rel].sha256 != g.sha256]
    deleted = [rel for rel in deleted if rel in cache]
    counts = [0, 0, 0, 0]  # nodes upserted, nodes deleted, edges written, edges deleted
    with store.writing(bulk=True) as w, store.transaction() as conn:
        conn.execute(SCHEMA)
        store.set_meta(ingest_tiers=tiers_key(tiers), **_edge_types(store))
        for rel in deleted:
            _remove(w, cache[rel].out, keep, counts)
            conn.execute(f"DELETE FROM {TABLE} WHERE rel = ?", (rel,))
        for g in changed:
            if g.rel in cache:
                _remove(w, cache[g.rel].out, keep, counts)
            _upsert_nodes(w, g.nodes, counts)
        keys = w.node_keys() if changed else {}
        for g in changed:  # edges after every group's nodes: an edge may point into another changed group
            _insert_edges(w, keys, g.edges, counts)
            written = {"nodes": [n["id"] for n in g.nodes], "edges": [[e["source"], e["target"], e["type"]] for e in g.edges]}
            conn.execute(f"INSERT OR REPLACE INTO {TABLE} VALUES (?,?,?,?,?,?)",
                         (g.rel, g.sha256, g.kind, orjson.dumps(g.facts), g.out_hash, orjson.dumps(written)))
    return WriteCounts(len(changed), len(deleted), *counts)


def tiers_key(tiers: Iterable[int]) -> str:
    """How the KG's metadata records the tiers of the last run (``ingest_tiers``)."""
    return ",".join(map(str, sorted(set(tiers))))


def _edge_types(store: GraphStore) -> dict[str, str]:
    """The KG's edge vocabulary with the ingest relations added (validation rule 7), if that changes it."""
    declared = declared_list(store.meta(), "edge_types") or frozenset()
    wanted = sorted(declared | set(INGEST_EDGE_TYPES))
    return {"edge_types": json.dumps(wanted)} if set(wanted) != declared else {}


def _remove(w: Writer, out: dict[str, Any], keep: set[str], counts: list[int]) -> None:
    for s, t, type_ in out.get("edges", ()):
        if w.edge(s, t, type_) is not None:
            counts[3] += int(w.delete_edge(s, t, type_))
    for nid in out.get("nodes", ()):
        if nid not in keep and w.node(nid) is not None:
            w.delete_node(nid)
            counts[1] += 1


def _upsert_nodes(w: Writer, nodes: list[dict[str, Any]], counts: list[int]) -> None:
    ts = now_iso()
    rows = [(n["id"], n["name"], normalize_name(n["name"]), n["type"], n["description"],
             check_properties(n["properties"]), ts, ts) for n in nodes]
    w.merge_node_rows(rows, ts)
    counts[0] += len(rows)


def _insert_edges(w: Writer, keys: dict[str, Any], edges: list[dict[str, Any]], counts: list[int]) -> None:
    ts = now_iso()
    rows = [(keys[e["source"]], keys[e["target"]], e["type"], float(e["weight"]), check_properties(e["properties"]),
             ts, None) for e in edges if e["source"] in keys and e["target"] in keys]
    w.merge_edge_rows(rows)
    counts[2] += len(rows)
