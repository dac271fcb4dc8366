"""Writing an ingest into a native KG incrementally, in one transaction.

Every node and edge belongs to one group: the file it came from (its ``rel``), or a shared group
(``@patterns``, ``@concepts``, ``@external``). The table ``kgos_ingest_files`` in the KG file remembers,
per group, the content hash of the file, its cached tier-1 facts (so an unchanged file is never parsed
again), the hash of the group's last output and the ids of what it wrote. A run rewrites only the
groups whose output hash changed, and only their own rows:

* nodes the group no longer produces (and no other group does) are deleted, with their edges;
* the group's old edges are deleted and its new edges inserted;
* its nodes are upserted by id, so a node keeps its row (and the edges other files point at it with).

All of it happens in one ``BEGIN IMMEDIATE`` transaction with one version bump: an interrupted or
failed run leaves the KG exactly as it was.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ..model import normalize_name
from ..pipeline.digest import content_hash
from ..store.limits import check_properties
from ..store.migrations import now_iso
from ..store.native import NativeStore
from ..store.vocabulary import declared_list

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


def load_cache(store: NativeStore) -> dict[str, CachedGroup]:
    """Every group's cached state (empty for a KG never ingested into)."""
    if not store.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)).fetchone():
        return {}
    out = {}
    for rel, sha, kind, facts, out_hash, written in store.conn.execute(
            f"SELECT rel, sha256, kind, facts, out_hash, out FROM {TABLE}"):
        out[rel] = CachedGroup(rel, sha, kind, facts, out_hash, written)
    return out


def write(store: NativeStore, outputs: list[GroupOutput], deleted: Iterable[str],
          cache: dict[str, CachedGroup], tiers: Iterable[int] = (1,)) -> WriteCounts:
    """Apply the changed groups and the deleted ones in one transaction (see the module docstring)."""
    keep = {n["id"] for g in outputs for n in g.nodes}
    changed = [g for g in outputs if g.rel not in cache or cache[g.rel].out_hash != g.out_hash
               or cache[g.rel].sha256 != g.sha256]
    deleted = [rel for rel in deleted if rel in cache]
    counts = [0, 0, 0, 0]  # nodes upserted, nodes deleted, edges written, edges deleted
    with store.transaction() as conn:
        conn.execute(SCHEMA)
        _declare_edge_types(store, conn)
        conn.execute("INSERT OR REPLACE INTO kg_meta VALUES ('ingest_tiers', ?)", (tiers_key(tiers),))
        for rel in deleted:
            _remove(conn, cache[rel].out, keep, counts)
            conn.execute(f"DELETE FROM {TABLE} WHERE rel = ?", (rel,))
        for g in changed:
            if g.rel in cache:
                _remove(conn, cache[g.rel].out, keep, counts)
            _upsert_nodes(conn, g.nodes, counts)
        for g in changed:  # edges after every group's nodes: an edge may point into another changed group
            _insert_edges(conn, g.edges, counts)
            written = {"nodes": [n["id"] for n in g.nodes], "edges": [[e["source"], e["target"], e["type"]] for e in g.edges]}
            conn.execute(f"INSERT OR REPLACE INTO {TABLE} VALUES (?,?,?,?,?,?)",
                         (g.rel, g.sha256, g.kind, orjson.dumps(g.facts), g.out_hash, orjson.dumps(written)))
    return WriteCounts(len(changed), len(deleted), *counts)


def tiers_key(tiers: Iterable[int]) -> str:
    """How the KG's metadata records the tiers of the last run (``ingest_tiers``)."""
    return ",".join(map(str, sorted(set(tiers))))


def _declare_edge_types(store: NativeStore, conn: sqlite3.Connection) -> None:
    """Add the ingest relations to the KG's edge vocabulary (validation rule 7)."""
    row = conn.execute("SELECT value FROM kg_meta WHERE key = 'edge_types'").fetchone()
    declared = declared_list({"edge_types": row[0]} if row else {}, "edge_types") or frozenset()
    wanted = sorted(declared | set(INGEST_EDGE_TYPES))
    if set(wanted) != declared:
        conn.execute("INSERT OR REPLACE INTO kg_meta VALUES ('edge_types', ?)", (json.dumps(wanted),))


def _remove(conn: sqlite3.Connection, out: dict[str, Any], keep: set[str], counts: list[int]) -> None:
    for s, t, type_ in out.get("edges", ()):
        cur = conn.execute("DELETE FROM edges WHERE source = (SELECT rowid FROM nodes WHERE id = ?) AND "
                           "target = (SELECT rowid FROM nodes WHERE id = ?) AND type = ?", (s, t, type_))
        counts[3] += cur.rowcount
    gone = [(nid,) for nid in out.get("nodes", ()) if nid not in keep]
    for chunk in _chunks(gone, 500):
        cur = conn.executemany("DELETE FROM nodes WHERE id = ?", chunk)
        counts[1] += cur.rowcount


def _upsert_nodes(conn: sqlite3.Connection, nodes: list[dict[str, Any]], counts: list[int]) -> None:
    ts = _now()
    rows = [(n["id"], n["name"], normalize_name(n["name"]), n["type"], n["description"],
             check_properties(n["properties"]), ts, ts) for n in nodes]
    conn.executemany(
        "INSERT INTO nodes (id, name, norm_name, type, description, properties, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET name=excluded.name, norm_name=excluded.norm_name, "
        "type=excluded.type, description=excluded.description, "
        "properties=json_patch(nodes.properties, excluded.properties), updated_at=excluded.updated_at "
        "WHERE nodes.name IS NOT excluded.name OR nodes.type IS NOT excluded.type OR nodes.description IS NOT "
        "excluded.description OR json_patch(nodes.properties, excluded.properties) IS NOT nodes.properties", rows)
    counts[0] += len(rows)


def _insert_edges(conn: sqlite3.Connection, edges: list[dict[str, Any]], counts: list[int]) -> None:
    ts = _now()
    rows = [(e["source"], e["target"], e["type"], float(e["weight"]), check_properties(e["properties"]), ts)
            for e in edges]
    conn.executemany(
        "INSERT INTO edges (source, target, type, weight, properties, created_at) "
        "SELECT s.rowid, t.rowid, ?3, ?4, ?5, ?6 FROM nodes s, nodes t WHERE s.id = ?1 AND t.id = ?2 "
        "ON CONFLICT(source, target, type) DO UPDATE SET weight=excluded.weight, properties=excluded.properties",
        rows)
    counts[2] += len(rows)


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _now() -> str:
    return now_iso()
