"""Schema profiles: how the tables of a foreign SQLite KG map onto nodes and edges.

A ``Profile`` names the node table, the edge table and the columns that hold each field. The seven
named profiles are ``spec/000`` appendix B plus ``memory`` (the entities/edges layout of ``spec/002``);
``heuristic`` is the fallback that probes table and column names. ``detect_profile`` picks one for an
open connection. Identifiers come only from the file's own schema and reach SQL only through
``quote_ident``; values are always bound parameters.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..errors import SchemaNotRecognized


@dataclass(frozen=True)
class Profile:
    """Where a foreign file keeps each node and edge field; ``None`` means "the file has no such column"."""

    name: str
    node_table: str
    node_id: str
    node_name: str
    edge_table: str
    edge_source: str
    edge_target: str
    edge_type: str
    node_type: str | None = None
    node_description: str | None = None
    node_properties: str | None = None
    node_norm_name: str | None = None
    node_created: str | None = None
    node_updated: str | None = None
    edge_weight: str | None = None
    edge_properties: str | None = None
    edge_id: str | None = None
    edge_created: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        """The inverse of ``to_dict``; unknown keys are ignored so older registries still load."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def node_columns(self) -> list[str]:
        """The node-table columns this profile uses (required ones first)."""
        return _present(self.node_id, self.node_name, self.node_type, self.node_description,
                        self.node_properties, self.node_norm_name, self.node_created, self.node_updated)

    def edge_columns(self) -> list[str]:
        return _present(self.edge_source, self.edge_target, self.edge_type, self.edge_weight,
                        self.edge_properties, self.edge_id, self.edge_created)


def _present(*columns: str | None) -> list[str]:
    return [c for c in columns if c is not None]


# The six profiles of spec/000 appendix B plus spec/002's memory layout. Optional columns are left
# out here; ``resolve`` fills them from OPTIONAL_NODE / OPTIONAL_EDGE with what the file really has.
NAMED: dict[str, Profile] = {p.name: p for p in (
    Profile("unified", "unified_nodes", "node_id", "name", "unified_edges",
            "source_node_id", "target_node_id", "edge_type"),
    Profile("standard", "nodes", "id", "name", "edges", "source", "target", "type"),
    Profile("claude", "nodes", "node_id", "name", "edges", "source_node_id", "target_node_id", "edge_type"),
    Profile("hal", "nodes", "id", "name", "edges", "source_id", "target_id", "edge_type"),
    Profile("from_node", "nodes", "id", "name", "edges", "from_node", "to_node", "type"),
    Profile("entities", "entities", "id", "name", "relations", "source_id", "target_id", "relation_type"),
    Profile("memory", "entities", "id", "name", "edges", "subject_id", "object_id", "predicate"),
)}

# Most specific first: profiles with unique table names, then those whose edge columns are
# distinctive, and ``standard`` (plain source/target/type) last because the others are supersets of it.
DETECTION_ORDER: tuple[str, ...] = ("unified", "memory", "entities", "claude", "hal", "from_node", "standard")

OPTIONAL_NODE: dict[str, tuple[str, ...]] = {
    "node_type": ("type", "node_type", "entity_type", "kind", "category"),
    "node_description": ("description", "desc", "summary", "definition", "content"),
    "node_properties": ("properties", "metadata", "props", "attributes", "attrs", "data", "meta"),
    "node_norm_name": ("normalized_name", "norm_name", "name_normalized"),
    "node_created": ("created_at", "created_ts", "created"),
    "node_updated": ("updated_at", "updated_ts", "updated", "modified_at"),
}
OPTIONAL_EDGE: dict[str, tuple[str, ...]] = {
    "edge_weight": ("weight", "confidence", "strength", "score"),
    "edge_properties": ("properties", "metadata", "evidence", "props", "attributes", "attrs", "data"),
    "edge_id": ("id", "edge_id"),
    "edge_created": ("created_at", "created_ts", "created"),
}

# Heuristic vocabulary, best guess first within each tuple.
ID_NAMES = ("id", "node_id", "entity_id", "uid", "uuid", "key", "nid", "identifier")
NAME_NAMES = ("name", "label", "title", "node_name", "entity_name", "display_name", "term", "text", "value")
ENDPOINT_BASES = (("source", "target"), ("src", "dst"), ("from", "to"), ("subject", "object"),
                  ("head", "tail"), ("start", "end"), ("source_node", "target_node"),
                  ("from_node", "to_node"), ("parent", "child"))
ENDPOINT_SUFFIXES = ("", "_id", "_node_id", "_node")
TYPE_NAMES = ("type", "edge_type", "relation", "relation_type", "relationship", "relationship_type",
              "predicate", "label", "kind", "rel", "rel_type", "link_type")
NODE_TABLE_HINTS = ("node", "entit", "concept", "vert", "item", "object")
EDGE_TABLE_HINTS = ("edge", "relation", "link", "triple", "rel", "connection")
JOIN_SAMPLE = 20

LOOKS_FOR = ("KG-OS looks for a node table with an id (id, node_id, <table>_id or the primary key) and a "
             "name column (name, label, title...) and an edge table with two "
             "endpoint columns (source/target, from/to, subject/object, head/tail, src/dst or their _id "
             "forms) and a type column (type, edge_type, relation, predicate, label, kind); named profiles: "
             + ", ".join(DETECTION_ORDER))


def quote_ident(name: str) -> str:
    """An SQL identifier, double-quoted with embedded quotes doubled: safe for any table or column name."""
    if "\x00" in name:
        raise SchemaNotRecognized(f"identifier {name!r} contains a NUL character")
    return '"' + name.replace('"', '""') + '"'


class Schema:
    """Table and column names of one open database, read lazily and matched case-insensitively."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").fetchall()
        except sqlite3.DatabaseError as exc:
            raise SchemaNotRecognized(f"not an SQLite database ({exc}); {LOOKS_FOR}") from None
        self.tables: dict[str, str] = {r[0].lower(): r[0] for r in rows}
        self._columns: dict[str, dict[str, str]] = {}

    def table(self, name: str) -> str | None:
        """The file's spelling of table ``name``, or ``None``."""
        return self.tables.get(name.lower())

    def columns(self, table: str) -> dict[str, str]:
        """lower-cased column name -> the file's spelling."""
        if table not in self._columns:
            rows = self.conn.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
            self._columns[table] = {r[0].lower(): r[0] for r in rows}
        return self._columns[table]

    def column(self, table: str, *candidates: str, exclude: Collection[str] = ()) -> str | None:
        """The first of ``candidates`` the table has (and that is not in ``exclude``)."""
        cols = self.columns(table)
        for cand in candidates:
            actual = cols.get(cand.lower())
            if actual is not None and actual not in exclude:
                return actual
        return None

    def is_native(self) -> bool:
        """A KG-OS native file: its edges point at node rowids, so no foreign profile reads it."""
        return (self.table("kg_meta") is not None and self.table("kg_migrations") is not None
                and self.table("nodes") is not None and "norm_name" in self.columns(self.tables["nodes"]))


# -- named profiles ------------------------------------------------------------------------------
def resolve(template: Profile, schema: Schema) -> Profile | None:
    """``template`` in the file's spelling with its optional columns filled in, or ``None`` if the
    file lacks one of its tables or required columns."""
    nt, et = schema.table(template.node_table), schema.table(template.edge_table)
    if nt is None or et is None:
        return None
    required = {}
    for attr in ("node_id", "node_name"):
        required[attr] = schema.column(nt, getattr(template, attr))
    for attr in ("edge_source", "edge_target", "edge_type"):
        required[attr] = schema.column(et, getattr(template, attr))
    if None in required.values():
        return None
    return fill_optional(replace(template, node_table=nt, edge_table=et, **required), schema)


def fill_optional(profile: Profile, schema: Schema) -> Profile:
    """Set every optional column the profile leaves ``None`` to the first candidate the file has."""
    found: dict[str, str] = {}
    for table, options, used in ((profile.node_table, OPTIONAL_NODE, profile.node_columns()),
                                 (profile.edge_table, OPTIONAL_EDGE, profile.edge_columns())):
        taken = set(used)
        for attr, candidates in options.items():
            if getattr(profile, attr) is None:
                col = schema.column(table, *candidates, exclude=taken)
                if col is not None:
                    found[attr] = col
                    taken.add(col)
    return replace(profile, **found)


def missing_columns(profile: Profile, schema: Schema) -> list[str]:
    """``table.column`` names the profile uses but the file lacks (checked exactly, as given)."""
    missing = []
    for table, cols in ((profile.node_table, profile.node_columns()),
                        (profile.edge_table, profile.edge_columns())):
        if table not in schema.tables.values():
            missing.append(table)
            continue
        have = set(schema.columns(table).values())
        missing += [f"{table}.{c}" for c in cols if c not in have]
    return missing


# -- heuristic -----------------------------------------------------------------------------------
def endpoint_pairs() -> list[tuple[str, str]]:
    """Every (source, target) column-name pair the heuristic accepts, best guess first."""
    return [(a + sfx, b + sfx) for a, b in ENDPOINT_BASES for sfx in ENDPOINT_SUFFIXES]


def _singular(table: str) -> list[str]:
    """``concepts`` -> [concepts, concept]; ``entities`` -> [entities, entity]; ``classes`` -> [.., class]."""
    t = table.lower()
    out = [t]
    if t.endswith("ies"):
        out.append(t[:-3] + "y")
    if t.endswith(("ses", "xes", "ches", "shes")):
        out.append(t[:-2])
    if t.endswith("s"):
        out.append(t[:-1])
    return out


def primary_key(schema: Schema, table: str) -> str | None:
    """The table's single-column declared primary key, if it has one."""
    rows = schema.conn.execute("SELECT name, pk FROM pragma_table_info(?)", (table,)).fetchall()
    keys = [r[0] for r in rows if r[1]]
    return keys[0] if len(keys) == 1 else None


def id_column(schema: Schema, table: str) -> str | None:
    """A table's node-id column: a usual id name, else ``<table, singular>_id`` (``concepts.concept_id``),
    else its declared single-column primary key."""
    return (schema.column(table, *ID_NAMES)
            or schema.column(table, *(f"{stem}_id" for stem in _singular(table)))
            or primary_key(schema, table))


def node_candidates(schema: Schema) -> list[tuple[str, str, str]]:
    """(table, id column, name column) for every table that could hold nodes."""
    out = []
    for table in schema.tables.values():
        id_col = id_column(schema, table)
        name_col = schema.column(table, *NAME_NAMES, exclude=(id_col,) if id_col else ())
        if id_col is not None and name_col is not None:
            out.append((table, id_col, name_col))
    return out


def edge_candidates(schema: Schema) -> list[tuple[str, str, str, str, int]]:
    """(table, source, target, type column, rank of the endpoint pair) for tables that could hold edges."""
    out = []
    pairs = endpoint_pairs()
    for table in schema.tables.values():
        for rank, (a, b) in enumerate(pairs):
            src, dst = schema.column(table, a), schema.column(table, b)
            if src is None or dst is None:
                continue
            type_col = schema.column(table, *TYPE_NAMES, exclude={src, dst})
            if type_col is not None:
                out.append((table, src, dst, type_col, rank))
                break
    return out


def join_rate(conn: sqlite3.Connection, node: tuple[str, str, str], edge: tuple[str, ...]) -> float:
    """Share of the endpoints of a few sampled edges that are ids in the node table (0 if no edges)."""
    q = quote_ident
    nt, nid = q(node[0]), q(node[1])
    et, src, dst = q(edge[0]), q(edge[1]), q(edge[2])
    sql = (f"SELECT count(*), coalesce(sum(EXISTS (SELECT 1 FROM {nt} n WHERE n.{nid} = e.s)"
           f" + EXISTS (SELECT 1 FROM {nt} n WHERE n.{nid} = e.t)), 0) "
           f"FROM (SELECT {src} AS s, {dst} AS t FROM {et} LIMIT ?) e")
    total, hits = conn.execute(sql, (JOIN_SAMPLE,)).fetchone()
    return hits / (2 * total) if total else 0.0


def _hint(table: str, hints: tuple[str, ...]) -> int:
    return int(any(h in table.lower() for h in hints))


def heuristic_profile(conn: sqlite3.Connection, schema: Schema | None = None) -> Profile | None:
    """The best-fitting (node table, edge table) mapping by names, preferring edges that join."""
    schema = schema or Schema(conn)
    best: tuple[tuple[float, ...], Profile] | None = None
    for node in node_candidates(schema):
        for edge in edge_candidates(schema):
            if node[0] == edge[0]:
                continue
            # Joining endpoints beat names; then table-name hints; then the earlier (likelier) pair.
            hints = _hint(node[0], NODE_TABLE_HINTS) + _hint(edge[0], EDGE_TABLE_HINTS)
            usual_id = ID_NAMES.index(node[1].lower()) if node[1].lower() in ID_NAMES else len(ID_NAMES)
            score = (join_rate(conn, node, edge), hints, -edge[4], -usual_id)
            if best is None or score > best[0]:
                best = (score, Profile("heuristic", *node, *edge[:4]))
    return fill_optional(best[1], schema) if best else None


# -- vectors the file already has (spec/001 1.5) -------------------------------------------------------
VECTOR_TABLES = ("embeddings", "node_embeddings", "vec_embeddings")
VECTOR_COLUMNS = ("embedding", "vector", "vec", "emb", "embedding_blob", "data", "blob")
VECTOR_IDS = ("node_id", "entity_id", "concept_id", "id", "node", "key")
MODEL_COLUMNS = ("model", "model_name", "embedder", "embedding_model")


@dataclass(frozen=True)
class VectorTable:
    """A table of float32 BLOB vectors keyed by node id, per model when it has a model column."""

    table: str
    node_id: str
    vector: str
    model: str | None  # the model column
    models: dict[str, int]  # model name ("" without a model column) -> vectors
    dims: int


def vector_tables(schema: Schema) -> list[VectorTable]:
    """The vector tables spec/001 1.5 names, when their columns and first BLOB read as float32 vectors
    (a sqlite-vec virtual table the connection cannot read is left out)."""
    out = []
    for name in VECTOR_TABLES:
        table = schema.table(name)
        if table is None:
            continue
        try:
            found = _vector_table(schema, table)
        except sqlite3.Error:
            continue
        if found is not None:
            out.append(found)
    return out


def _vector_table(schema: Schema, table: str) -> VectorTable | None:
    node_id, vector = schema.column(table, *VECTOR_IDS), schema.column(table, *VECTOR_COLUMNS)
    if node_id is None or vector is None:
        return None
    model = schema.column(table, *MODEL_COLUMNS)
    q = quote_ident
    sample = schema.conn.execute(f"SELECT {q(vector)} FROM {q(table)} WHERE {q(vector)} IS NOT NULL LIMIT 1").fetchone()
    if sample is None or not isinstance(sample[0], bytes) or not sample[0] or len(sample[0]) % 4:
        return None
    group = q(model) if model else "''"
    models = {str(m or ""): int(n) for m, n in schema.conn.execute(
        f"SELECT {group}, count(*) FROM {q(table)} WHERE {q(vector)} IS NOT NULL GROUP BY 1")}
    return VectorTable(table, node_id, vector, model, models, len(sample[0]) // 4)


def explain(profile: Profile, schema: Schema) -> list[str]:
    """How the file was read, for people: which tables and columns hold what, why this mapping, and
    the vectors it already has."""
    how = (f"matched the named profile '{profile.name}'" if profile.name in NAMED else
           "no named profile fits; the heuristic picked the tables whose edge endpoints join the node ids")
    node_extra = ", ".join(f"{label} {col}" for label, col in (
        ("type", profile.node_type), ("description", profile.node_description),
        ("properties", profile.node_properties)) if col) or "no type, description or properties columns"
    lines = [f"profile: {profile.name} ({how})",
             (f"nodes: {profile.node_table} (id {profile.node_id}{_why_id(profile, schema)}, name {profile.node_name}; "
             f"{node_extra})"),
             f"edges: {profile.edge_table} ({profile.edge_source} -> {profile.edge_target}, type {profile.edge_type}"
             + (f", weight {profile.edge_weight})" if profile.edge_weight else ")")]
    for v in vector_tables(schema):
        models = ", ".join(f"{m or 'unnamed model'}: {n:,}" for m, n in v.models.items())
        lines.append(f"vectors: {v.table} ({v.node_id} -> {v.vector}, {v.dims}-d float32; {models})")
    return lines


def _why_id(profile: Profile, schema: Schema) -> str:
    col = profile.node_id.lower()
    if profile.name in NAMED or col in ID_NAMES:
        return ""
    if col in (f"{stem}_id" for stem in _singular(profile.node_table)):
        return ", the <table>_id column"
    return ", the primary key"


# -- entry points --------------------------------------------------------------------------------
def detect_profile(conn: sqlite3.Connection) -> Profile:
    """The first named profile (in ``DETECTION_ORDER``) the file fits, else the heuristic mapping.

    Raises ``SchemaNotRecognized`` for a file that is not SQLite or has no recognisable KG tables.
    """
    schema = Schema(conn)
    if schema.is_native():
        raise SchemaNotRecognized("this is a KG-OS native KG file (its edges point at node rowids); "
                                  "open it as a native KG or import it instead of attaching it")
    for name in DETECTION_ORDER:
        profile = resolve(NAMED[name], schema)
        if profile is not None:
            return profile
    profile = heuristic_profile(conn, schema)
    if profile is None:
        found = ", ".join(schema.tables.values()) or "no tables"
        raise SchemaNotRecognized(f"no knowledge-graph tables recognised (found: {found}); {LOOKS_FOR}")
    return profile


def profile_for(conn: sqlite3.Connection, profile: str | Profile | None) -> Profile:
    """Resolve what a caller asked for: ``None`` detects, a name forces that profile, a ``Profile``
    is checked against the file as given."""
    if profile is None:
        return detect_profile(conn)
    schema = Schema(conn)
    if isinstance(profile, Profile):
        missing = missing_columns(profile, schema)
        if missing:
            raise SchemaNotRecognized(
                f"profile '{profile.name}' does not fit this file: missing {', '.join(missing)}")
        return profile
    if profile == "heuristic":
        found = heuristic_profile(conn, schema)
        if found is None:
            raise SchemaNotRecognized(f"the heuristic found no KG tables; {LOOKS_FOR}")
        return found
    if profile not in NAMED:
        raise SchemaNotRecognized(
            f"unknown profile '{profile}'; use one of {', '.join(DETECTION_ORDER)}, heuristic")
    return _require_named(NAMED[profile], schema)


def _require_named(template: Profile, schema: Schema) -> Profile:
    resolved = resolve(template, schema)
    if resolved is None:
        raise SchemaNotRecognized(
            f"profile '{template.name}' needs "
            f"{template.node_table}({template.node_id}, {template.node_name}) and "
            f"{template.edge_table}({template.edge_source}, {template.edge_target}, {template.edge_type}); "
            f"found tables: {', '.join(schema.tables.values()) or 'none'}")
    return resolved


__all__ = [
    "DETECTION_ORDER",
    "NAMED",
    "Profile",
    "Schema",
    "VectorTable",
    "detect_profile",
    "explain",
    "heuristic_profile",
    "profile_for",
    "quote_ident",
    "vector_tables",
]
