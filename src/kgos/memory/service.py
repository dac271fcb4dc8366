"""``MemoryService``: agent memory that grows a knowledge graph from text (spec/002), as the expert
chat loop uses it (spec/000 section 9: stage 2 MEMORY RECALL, stage 8 PERSIST).

>>> import tempfile, kgos
>>> from kgos.memory import MemoryService
>>> mem = MemoryService(kgos.Workspace(tempfile.mkdtemp()))
>>> mem.add("I'm working on meshalyzer using Python.").memory.kg_status
'ok'
>>> print(mem.context("meshalyzer").text.splitlines()[3])
  [project] Meshalyzer (Score: 1.0)

Writing a memory never fails because enrichment failed (spec/002 "Never blocks"): the memory is
stored first, then extraction (and optional LLM enrichment) writes to the memory KG; an error there is
logged, counted (``memory_counters.kg_failures``) and kept on the memory (``kg_status = 'failed'``),
and ``rebuild`` re-derives the KG from all memories at any time.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument, KGOSError
from ..kg import KG, Workspace, check_db_id
from ..llm.base import ChatProvider
from ..model import Neighbor, normalize_name
from ..store.base import GraphStore
from ..store.native import create_native
from . import aliases as alias_mod
from . import pii
from .config import MemoryConfig
from .context import ContextEdge, MemoryContext, ScoredEntity, count_edges, expand, render, search_entities
from .enrich import LLMEnricher
from .extract import USER_ID, USER_NAME, EntityRef, Extraction, Relation, extract
from .graph import GraphWriter, as_list
from .snapshot import SnapshotReport, merge_snapshot, read_snapshot, write_snapshot
from .store import Memory, MemoryFilter, MemoryHit, MemoryStore, clean_content, clean_metadata, clean_tags
from .temporal import (
    TimeRange,
    decayed_weight,
    iso,
    last_evidence,
    parse_iso,
    parse_question,
    parse_time_range,
)

log = logging.getLogger("kgos.memory")
DESCRIPTION = "Agent memory: entities and relationships extracted from memories (spec/002)."


@dataclass(frozen=True)
class AddResult:
    memory: Memory
    entities: tuple[EntityRef, ...] = ()
    relations: tuple[Relation, ...] = ()
    llm: str = "off"  # off | ok | no provider | failed: <reason>

    @property
    def id(self) -> str:
        return self.memory.id

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory.to_dict(), "entities": [e.to_dict() for e in self.entities],
                "relations": [r.to_dict() for r in self.relations], "llm": self.llm}


@dataclass(frozen=True)
class MemoryStats:
    db_id: str
    memories: int
    kg_status: dict[str, int]
    counters: dict[str, int]
    entities: int
    edges: int
    entity_types: dict[str, int]
    top_predicates: dict[str, int]
    aliases: dict[str, int]
    oldest: str | None
    newest: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RebuildReport:
    db_id: str
    dry_run: bool
    memories: int
    entities: int
    edges: int
    entities_before: int
    edges_before: int
    llm_edges_dropped: int  # rebuild is deterministic only (spec/002)
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TimelineItem:
    predicate: str
    type: str
    name: str
    mentions: int
    first_seen: str
    last_seen: str
    memory_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "memory_ids": list(self.memory_ids)}


@dataclass(frozen=True)
class Timeline:
    range: TimeRange
    predicate: str | None
    memories: int
    items: tuple[TimelineItem, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"range": self.range.to_dict(), "predicate": self.predicate, "memories": self.memories,
                "items": [i.to_dict() for i in self.items]}


@dataclass(frozen=True)
class DecayReport:
    half_life_days: float
    edges: int
    changed: int
    written: bool
    most_decayed: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "most_decayed": list(self.most_decayed)}


class MemoryService:
    """The memory of one workspace; its KG is the native KG ``db_id`` (default ``memory``)."""

    def __init__(self, workspace: Workspace, db_id: str | None = None, config: MemoryConfig | None = None,
                 provider: ChatProvider | None = None) -> None:
        self.config = (config or MemoryConfig.from_env()).with_(db_id=db_id)
        check_db_id(self.config.db_id)
        self.workspace = workspace
        self.provider = provider
        self.items = MemoryStore(workspace.shared)
        self.alias_table = alias_mod.AliasTable(workspace.shared, self.config.db_id)

    @property
    def db_id(self) -> str:
        return self.config.db_id

    # -- the memory KG --------------------------------------------------------------------------------
    def kg(self) -> KG:
        """The memory KG, created (with the user entity) on first use."""
        if not self.workspace.exists(self.db_id):
            # in the workspace's PostgreSQL database if it has one: every server shares the memory
            self.workspace.create(self.db_id, name="Agent memory", description=DESCRIPTION)
        kg = self.workspace.kg(self.db_id)
        if not kg.store.writable:
            raise InvalidArgument(f"the memory KG '{self.db_id}' must be a writable KG, not a read-only attached file")
        GraphWriter(kg.store).ensure_user()
        return kg

    def _store(self) -> GraphStore:
        return self.kg().store

    def _writer(self, store: GraphStore | None = None) -> GraphWriter:
        return GraphWriter(store or self._store(), self.config.evidence_cap, self.alias_table.accepted_map())

    def _enrichment_provider(self) -> tuple[ChatProvider | None, str]:
        """The provider given, else the one ``llm_provider`` (or the chat default) names. The offline
        composer cannot extract, so it counts as none; a provider that is not configured is reported."""
        if self.provider is not None:
            return self.provider, ""
        from ..llm.registry import default_spec, get_provider, parse_spec
        spec = self.config.llm_provider or default_spec()
        if parse_spec(spec)[0] == "offline":
            return None, "no chat provider is configured (set KGOS_MEMORY_LLM_PROVIDER or KGOS_LLM_PROVIDER)"
        try:
            self.provider = get_provider(spec, timeout=self.config.llm_timeout)
        except KGOSError as exc:
            return None, f"the provider {spec!r} cannot be used: {exc}"
        return self.provider, ""

    # -- writing (stage 8) ------------------------------------------------------------------------------
    def add(self, content: Any, tags: Iterable[str] | str | None = (), *, expert_id: str | None = None,
            conversation_id: str | None = None, metadata: Mapping[str, Any] | None = None,
            created_at: str | datetime | None = None, enrich: bool | None = None) -> AddResult:
        """Store a memory, then enrich the memory KG from it (spec/002 ``add_memory``).

        ``enrich``: use LLM enrichment for this memory (default: ``KGOS_MEMORY_LLM_ENRICH``). A memory
        whose ``metadata["role"]`` is not "user" (e.g. an assistant turn) adds no ``user`` edges.
        Raises InvalidArgument for empty, oversized or binary content; never for enrichment failures.
        """
        text = pii.redact_secrets(clean_content(content, self.config.max_chars))  # keys are never stored
        meta = pii.redact_value(clean_metadata(metadata))  # nor in the metadata beside the text
        stamp = None if created_at is None else iso(created_at if isinstance(created_at, datetime)
                                                    else parse_iso(created_at))
        memory = self.items.insert(text, clean_tags(tags), meta, expert_id, conversation_id, stamp)
        use_llm = self.config.llm_enrich if enrich is None else enrich
        return self._enrich(memory, meta.get("role", "user") == "user", use_llm)

    def remember_turn(self, conversation_id: str, role: str, text: str, *, expert_id: str | None = None,
                      metadata: Mapping[str, Any] | None = None, tags: Iterable[str] = ()) -> AddResult:
        """Stage 8 (PERSIST): keep one chat turn as a memory, with the expert's metadata (kg_db_id,
        intent, kg_nodes_used, retrieval_scores...). Only the user's turns add ``user`` edges."""
        if role not in ("user", "assistant", "system", "tool"):
            raise InvalidArgument(f"role must be user, assistant, system or tool, not {role!r}")
        meta = {**(metadata or {}), "role": role}
        return self.add(text, ["chat", role, *tags], expert_id=expert_id, conversation_id=conversation_id,
                        metadata=meta)

    def _enrich(self, memory: Memory, about_user: bool, use_llm: bool) -> AddResult:
        try:
            extraction = extract(memory.content, about_user=about_user, max_entities=self.config.max_entities,
                                 max_relations=self.config.max_relations)
            extraction, llm = self._llm(memory, extraction, about_user) if use_llm else (extraction, "off")
            writer = self._writer()
            writer.write([(extraction, memory.id, memory.created_at)])
            self.items.finish(memory.id, memory.created_at, extraction.relations, writer.aliases)
        except Exception as exc:  # noqa: BLE001 - spec/002: enrichment never fails a memory write
            log.warning("memory %s stored, but KG enrichment failed: %s: %s", memory.id, type(exc).__name__, exc)
            self.items.fail(memory.id, f"{type(exc).__name__}: {exc}")
            return AddResult(self.items.get(memory.id), llm="failed")
        return AddResult(self.items.get(memory.id), extraction.entities, extraction.relations, llm)

    def _llm(self, memory: Memory, extraction: Extraction, about_user: bool) -> tuple[Extraction, str]:
        provider, why = self._enrichment_provider()
        if provider is None:
            log.info("LLM enrichment is on but %s; deterministic extraction only", why)
            return extraction, "no provider"
        enricher = LLMEnricher(provider, self.config.llm_max_edges, self.config.llm_min_weight,
                               self.config.llm_timeout)
        result = enricher.enrich(memory.content, extraction)
        self.items.bump("llm_calls")
        for reason, n in result.rejected.items():
            self.items.bump(f"llm_rejected_{reason}", n)
        if not result.ok:
            self.items.bump("llm_fallbacks")
            return extraction, f"failed: {result.error}"
        extra = result.extraction
        if not about_user:
            extra = Extraction(extra.entities, tuple(r for r in extra.relations if r.subject.type != "user"))
        return extraction.plus(extra), "ok"

    # -- reading (stage 2) ------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        return self.items.get(memory_id)

    def delete(self, memory_id: str) -> bool:
        """Delete a memory. Its evidence stays on KG edges until ``rebuild`` re-derives the KG."""
        return self.items.delete(memory_id)

    def recall(self, query: str, limit: int = 5, *, tags: Iterable[str] = (), expert_id: str | None = None,
               conversation_id: str | None = None, filter_metadata: Mapping[str, Any] | None = None,
               since: str | None = None, until: str | None = None) -> list[MemoryHit]:
        """Memories matching ``query`` (FTS5, bm25), filtered; spec/000 stage 2's
        ``recall(user_text, limit=5, filter_metadata={"expert_id": expert.id})``."""
        where = MemoryFilter(tuple(tags), expert_id, conversation_id, dict(filter_metadata or {}), since, until)
        return self.items.search(query, limit, where)

    def recent(self, when: str | TimeRange | None = None, limit: int = 50, *, expert_id: str | None = None,
               tags: Iterable[str] = (), now: datetime | None = None) -> list[Memory]:
        """Memories of a time range ("today", "last week", "since 2026-01-01"...), newest first."""
        span = when if isinstance(when, TimeRange) or when is None else parse_time_range(when, now)
        where = MemoryFilter(tuple(tags), expert_id, None, {}, span.since if span else None,
                             span.until if span else None)
        return self.items.list(where, limit)

    # -- the KG side --------------------------------------------------------------------------------
    def search(self, query: str, type: str | None = None, limit: int = 10) -> tuple[list[ScoredEntity], int]:
        """Entities by spec/002's scoring (1.0 exact / 0.7 partial / 0.5 word) and how many matched."""
        if not self.workspace.exists(self.db_id):
            return [], 0
        return search_entities(self._store(), query, limit, type, self._alias_names())

    def neighbors(self, ref: str, direction: str = "both", limit: int | None = None) -> list[Neighbor]:
        """1-hop relationships of an entity given by id or name ("user" is the user)."""
        kg = self.kg()
        node = kg.get_node(USER_ID) if ref.strip().lower() in ("user", "me", "i") else None
        return kg.neighbors((node or kg.resolve(ref)).id, direction, limit=limit)

    def context(self, query: str, expert_id: str | None = None, *, max_edges: int | None = None,
                max_chars: int | None = None, half_life_days: float | None = None,
                now: datetime | None = None) -> MemoryContext:
        """The knowledge-graph context block for a prompt (spec/002 format), for stage 2/4.

        ``expert_id`` restricts it to what that expert's memories evidence. Never raises for a missing
        or broken KG: the answer is then empty (spec/002 "KG unavailable -> no context injection")."""
        cfg = self.config.with_(context_max_edges=max_edges, context_max_chars=max_chars,
                                decay_half_life_days=half_life_days)
        if not cfg.context_enabled or not isinstance(query, str) or not query.strip():
            return MemoryContext(str(query or ""), "")
        try:
            return self._context(query, expert_id, cfg, now)
        except (KGOSError, sqlite3.Error) as exc:
            log.warning("memory context unavailable (%s); continuing without it", exc)
            return MemoryContext(query, "", extras={"error": str(exc)})

    def _context(self, query: str, expert_id: str | None, cfg: MemoryConfig, now: datetime | None) -> MemoryContext:
        if not self.workspace.exists(self.db_id):
            return MemoryContext(query, "")
        store = self._store()
        seeds, total = search_entities(store, query, cfg.context_max_entities, None, self._alias_names())
        keep = self._expert_filter(expert_id) if expert_id else None
        if keep is None and cfg.decay_half_life_days is None:  # stored order is final: read only the top
            edges = expand(store, seeds, need=cfg.context_max_edges)
            return render(query, seeds, total, edges, cfg.context_max_edges, cfg.context_max_chars,
                          count_edges(store, seeds))
        edges = expand(store, seeds, cfg.decay_half_life_days, now, keep)
        if keep is not None:  # show only entities that this expert's memories touch
            touched = {e.source_id for e in edges} | {e.target_id for e in edges}
            seeds = [s for s in seeds if s.id in touched]
            total = len(seeds)
        return render(query, seeds, total, edges, cfg.context_max_edges, cfg.context_max_chars)

    def _expert_filter(self, expert_id: str) -> Any:
        sql = ("SELECT 1 FROM memory_relations r JOIN memories m ON m.id = r.memory_id WHERE r.object_type = ? "
               "AND r.object_norm = ? AND r.predicate = ? AND r.subject_type = ? AND r.subject_norm = ? "
               "AND m.expert_id = ? LIMIT 1")

        def norm(name: str, type: str) -> str:  # the user may carry another name after an import
            return normalize_name(USER_NAME if type == "user" else name)

        def keep(e: ContextEdge) -> bool:
            args = (e.target_type, norm(e.target_name, e.target_type), e.type, e.source_type,
                    norm(e.source_name, e.source_type), expert_id)
            return self.workspace.shared.execute(sql, args).fetchone() is not None
        return keep

    def _alias_names(self) -> dict[str, list[str]]:
        """Entity id -> accepted alias names (the KG also keeps them in ``properties.aliases``)."""
        out: dict[str, list[str]] = {}
        accepted = self.alias_table.list("accepted")
        if accepted:
            store = self._store()
            for row in accepted:
                for node in store.find_nodes(row.canonical_norm, row.type, limit=1):
                    out.setdefault(node.id, []).append(row.alias_name)
        return out

    # -- stats, export, import, rebuild -----------------------------------------------------------
    def stats(self) -> MemoryStats:
        store = self._store()
        conn = self.workspace.shared
        oldest, newest = conn.execute("SELECT min(created_at), max(created_at) FROM memories").fetchone()
        aliases = dict(conn.execute("SELECT status, count(*) FROM memory_aliases WHERE db_id = ? GROUP BY status",
                                    (self.db_id,)))
        return MemoryStats(self.db_id, self.items.count(), self.items.status_counts(), self.items.counters(),
                           store.node_count(), store.edge_count(), store.node_types(),
                           dict(list(store.edge_types().items())[:10]), aliases, oldest, newest)

    def export(self, path: str | Path) -> SnapshotReport:
        """Write the memory KG as a spec/002 snapshot (``.json`` or ``.json.gz``)."""
        return write_snapshot(self._store(), path)

    def import_snapshot(self, path: str | Path, merge: bool = False) -> SnapshotReport:
        """Load a spec/002 snapshot: replace the memory KG, or ``merge`` into it. All or nothing."""
        data = read_snapshot(path)
        if merge:
            report = merge_snapshot(self._store(), data, self.config.evidence_cap)
        else:
            mode = "replace" if self.workspace.exists(self.db_id) else "create"
            self.workspace.import_file(self.db_id, path, format="nodelink", mode=mode, dimensions=False)
            report = SnapshotReport("", len(data["entities"]), len(data["edges"]), "replace")
        self.kg()  # the user entity exists whatever the file held
        return SnapshotReport(str(path), report.entities, report.edges, report.mode)

    def rebuild(self, dry_run: bool = False, batch: int = 500) -> RebuildReport:
        """Re-derive the memory KG from every stored memory (deterministic only, spec/002), built in a
        separate file and swapped in: interrupted at any point, the current KG stays as it was."""
        t0 = time.perf_counter()
        current = self._store()
        before = (current.node_count(), current.edge_count(), _llm_only_edges(current))
        folder = self.workspace.cache_dir / f".memory-rebuild-{os.getpid()}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            temp = create_native(folder / "kg.db", self.db_id, name="Agent memory", description=DESCRIPTION)
            try:
                derived, n = self._derive(temp, batch)
                after = (temp.node_count(), temp.edge_count())
                if not dry_run:
                    write_snapshot(temp, folder / "kg.json")
            finally:
                temp.close()
            if not dry_run:
                self.workspace.import_file(self.db_id, folder / "kg.json", format="nodelink", mode="replace",
                                           dimensions=False)
                self.items.replace_relations(derived, self.alias_table.accepted_map())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return RebuildReport(self.db_id, dry_run, n, *after, before[0], before[1], before[2],
                             round(time.perf_counter() - t0, 3))

    def _derive(self, temp: GraphStore, batch: int) -> tuple[list[tuple[str, str, tuple[Relation, ...]]], int]:
        writer = GraphWriter(temp, self.config.evidence_cap, self.alias_table.accepted_map())
        writer.ensure_user()
        derived, pending = [], []
        for memory in self.items.iter_all():
            about_user = memory.metadata.get("role", "user") == "user"
            extraction = extract(memory.content, about_user=about_user, max_entities=self.config.max_entities,
                                 max_relations=self.config.max_relations)
            pending.append((extraction, memory.id, memory.created_at))
            derived.append((memory.id, memory.created_at, extraction.relations))
            if len(pending) >= batch:
                writer.write(pending)
                pending = []
        writer.write(pending)
        return derived, len(derived)

    # -- aliases ------------------------------------------------------------------------------------
    def propose_aliases(self, min_ratio: float = 0.9) -> list[alias_mod.AliasProposal]:
        """Scan the memory KG for likely duplicates and store them as proposals; returns the open ones."""
        pairs = alias_mod.candidates(self._store(), min_ratio)
        self.alias_table.add((EntityRef(a.name, a.type), EntityRef(c.name, c.type), reason, score)
                             for a, c, reason, score in pairs)
        return self.alias_table.list("proposed")

    def add_alias(self, alias: str, canonical: str, type: str) -> alias_mod.AliasProposal:
        """Propose by hand that ``alias`` names the same ``type`` entity as ``canonical``."""
        a, c = EntityRef(alias.strip(), type), EntityRef(canonical.strip(), type)
        if not a.name or not c.name or a.key == c.key:
            raise InvalidArgument("give two different non-empty names")
        self.alias_table.add([(a, c, "manual", 1.0)])
        return next(p for p in self.alias_table.list() if (p.alias_norm, p.canonical_norm, p.type) ==
                    (a.key[0], c.key[0], type))

    def aliases(self, status: str | None = None) -> list[alias_mod.AliasProposal]:
        return self.alias_table.list(status)

    def accept_alias(self, proposal_id: int) -> alias_mod.AliasProposal:
        """Merge the alias entity into the canonical one (edges move, evidence kept) and remember it."""
        p = self.alias_table.get(proposal_id)
        store = self._store()
        alias = store.find_nodes(p.alias_norm, p.type, limit=1)
        canonical = store.find_nodes(p.canonical_norm, p.type, limit=1)
        if alias and canonical and alias[0].id != canonical[0].id:
            alias_mod.merge(store, alias[0], canonical[0], self.config.evidence_cap)
        elif alias and not canonical:  # nothing to merge into: the alias entity takes the canonical name
            store.update_node(alias[0].id, name=p.canonical_name,
                              properties={"aliases": [*as_list(alias[0].properties.get("aliases")), alias[0].name]})
        self._rename_relations(p)
        return self.alias_table.decide(proposal_id, "accepted")

    def _rename_relations(self, p: alias_mod.AliasProposal) -> None:
        with self.items.transaction() as conn:
            for side in ("subject", "object"):
                conn.execute(f"UPDATE memory_relations SET {side}_norm = ?, {side}_name = ? "
                             f"WHERE {side}_type = ? AND {side}_norm = ?",
                             (p.canonical_norm, p.canonical_name, p.type, p.alias_norm))

    def reject_alias(self, proposal_id: int) -> alias_mod.AliasProposal:
        self.alias_table.get(proposal_id)
        return self.alias_table.decide(proposal_id, "rejected")

    # -- time ---------------------------------------------------------------------------------------
    def timeline(self, when: str | TimeRange, predicate: str | None = None, *, expert_id: str | None = None,
                 limit: int = 20, now: datetime | None = None) -> Timeline:
        """What the user's memories of a time range were about: ``timeline("last week", "works_on")``
        answers "what was I working on last week?" (spec/002 future extension 1)."""
        span = when if isinstance(when, TimeRange) else parse_time_range(when, now)
        where = MemoryFilter(expert_id=expert_id, since=span.since, until=span.until)
        clause, args = self.items.where(where)
        n = self.workspace.shared.execute(f"SELECT count(*) FROM memories m WHERE {clause}", args).fetchone()[0]
        sql = ("SELECT r.predicate, r.object_type, max(r.object_name), count(DISTINCT r.memory_id), "
               "min(r.created_at), max(r.created_at), group_concat(r.memory_id, ' ') FROM memory_relations r "
               f"JOIN memories m ON m.id = r.memory_id WHERE r.subject_type = 'user' AND {clause}"
               + (" AND r.predicate = ?" if predicate else "") +
               " GROUP BY r.predicate, r.object_type, r.object_norm ORDER BY 4 DESC, 6 DESC LIMIT ?")
        rows = self.workspace.shared.execute(sql, (*args, *([predicate] if predicate else []), limit))
        items = tuple(TimelineItem(r[0], r[1], r[2], r[3], r[4], r[5],
                                   tuple(dict.fromkeys(reversed(r[6].split())))[:10]) for r in rows)
        return Timeline(span, predicate, n, items)

    def ask(self, question: str, *, expert_id: str | None = None, now: datetime | None = None) -> Timeline:
        """A temporal question in words: "what was I working on last week?"."""
        span, predicate = parse_question(question, now)
        return self.timeline(span, predicate, expert_id=expert_id, now=now)

    def decay(self, half_life_days: float, write: bool = False, now: datetime | None = None) -> DecayReport:
        """Confidence decay of stale edges from their newest evidence (spec/002 future extension 4).
        Reports by default; ``write=True`` stores the decayed weights (the undecayed one is kept in
        ``properties.base_weight``, so decaying again does not compound)."""
        store = self._store()
        changes = []
        for edge in store.iter_edges():
            base = max(float(edge.properties.get("base_weight", edge.weight)), edge.weight)
            new = round(decayed_weight(base, last_evidence(edge.properties), half_life_days, now), 6)
            if abs(new - edge.weight) > 1e-6:
                changes.append((edge, base, new))
        if write and changes:
            _write_weights(store, changes)
        worst = sorted(changes, key=lambda c: c[2] - c[1])[:10]
        sample = tuple({"source": e.source, "type": e.type, "target": e.target, "weight": e.weight, "base": b,
                        "decayed": w, "last_seen": last_evidence(e.properties)} for e, b, w in worst)
        return DecayReport(half_life_days, store.edge_count(), len(changes), write and bool(changes), sample)


def _write_weights(store: GraphStore, changes: list[tuple[Any, float, float]]) -> None:
    with store.writing() as w:  # decay lowers weights: set, not the upsert's max
        for edge, base, new in changes:
            w.set_edge(edge.source, edge.target, edge.type, new, {**edge.properties, "base_weight": base})


def _llm_only_edges(store: GraphStore) -> int:
    count = 0
    for edge in store.iter_edges():
        evidence = [e for e in as_list(edge.properties.get("evidence")) if isinstance(e, dict)]
        count += bool(evidence) and all(e.get("src") == "llm" for e in evidence)
    return count
