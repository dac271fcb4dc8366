"""The inner loop's stages (spec/004 "Inner Loop"), each a registered pipeline module.

| id | stage | input -> output |
|---|---|---|
| ``query.intent`` | Query | question + refinement -> intent, entities, relations, subtopics, queries |
| ``search.multi`` | Search | plan -> fused hits of the workspace's KGs, the corpus (BM25, vectors) and an optional HTTP backend |
| ``ingest.documents`` | Ingest | hits -> documents of chunks with spans, authority, aliases |
| ``extract.claims`` | Extract | documents -> claims (with source spans), entities, relations |
| ``merge.graph`` | Merge | extracted + known knowledge -> knowledge (dedup, corroboration, conflicts) + stats |
| ``store.kg`` | Store | new knowledge -> KG delta, applied to a target KG or staged as proposals |

What to search is in the Search input (``sources``: KG db_ids with their versions, the corpus
fingerprint) and where to write in the Store input (``target``); the live objects come from
``context.services`` (``workspace``, ``corpus``). Every search backend's answer goes through
``context.external``, so a replay serves the recorded results (the corpus and the KGs may have changed
since, and the Store may have written into a KG that was searched) and re-executes everything downstream.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..embed.registry import get_embedder
from ..errors import InvalidArgument, PipelineError
from ..index.text import fold
from ..model import slugify
from ..pipeline import BaseModule, ProcessContext, StageInput, StageOutput, content_hash, register
from .contracts import (
    ExtractIn,
    ExtractOut,
    IngestIn,
    IngestOut,
    MergeIn,
    MergeOut,
    QueryIn,
    QueryOut,
    SearchIn,
    SearchOut,
    StoreIn,
    StoreOut,
)
from .extract import extract_document
from .fusion import fuse, routed_backends, strategies
from .merge import AUTHORITY, empty_knowledge, integrate
from .plan import plan_query
from .untrusted import flags

if TYPE_CHECKING:  # types only: a research run is handed these, it never builds them
    from ..kg import Workspace
    from .corpus import Corpus

__all__ = [
    "STAGES",
    "ExtractModule",
    "IngestModule",
    "MergeModule",
    "QueryModule",
    "SearchModule",
    "StoreModule",
]

STAGES = ("query", "search", "ingest", "extract", "merge", "store")


@register()
class QueryModule(BaseModule):
    """Parse the question: intent (``kgos.classify_intent`` plus the question's form), expected
    entities and relations, the subtopics a good answer covers, and the queries to search."""

    id = "query.intent"
    name = "Query understanding"
    category = "query"
    input_type, output_type = QueryIn, QueryOut
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        question = str(input.data.get("question") or "").strip()
        if not question:
            raise InvalidArgument("the research question is empty")
        return StageOutput(plan_query(question, input.data.get("refinement")))


_SEARCH_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": {
    # the strategies known when the module loads: built-ins and those of installed plugins
    "strategy": {"enum": list(strategies()), "default": "reciprocal_rank_fusion"},
    "k": {"type": "integer", "minimum": 1, "maximum": 200, "default": 12, "description": "fused hits kept"},
    "per_backend_k": {"type": "integer", "minimum": 1, "maximum": 500, "default": 20},
    "rrf_k": {"type": "integer", "minimum": 1, "default": 60},
    "weights": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}, "default": {},
                "description": "per backend (kg, bm25, vector, http) for the weighted strategy"},
    "backends": {"type": "array", "items": {"enum": ["kg", "bm25", "vector", "http"]},
                 "default": ["kg", "bm25", "vector"]},
    "source_routing": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}},
                       "default": {"*": ["bm25", "vector"]},
                       "description": "file glob ('*.py|*.rs') -> corpus backends that search it"},
    "authority": {"type": "object", "additionalProperties": {"enum": list(AUTHORITY)},
                  "default": {"kg:*": "official", "http:*": "blog", "*": "official"},
                  "description": "source glob -> authority (official > documentation > blog > forum)"},
    "http_url": {"type": "string", "default": "",
                 "description": "an HTTP search backend: GET <url>?q=..&k=.. answering [{id, text, title, score}]"},
    "http_timeout": {"type": "number", "minimum": 0.1, "default": 10.0},
    "api_key": {"type": "string", "secret": True, "default": "", "description": "bearer token for http_url"},
}}


@register()
class SearchModule(BaseModule):
    """Several backends over local sources, merged algorithmically (no LLM): the workspace's KGs
    (``kg.search``), the corpus by BM25 and by embeddings, and an HTTP backend (off by default)."""

    id = "search.multi"
    name = "Multi-backend search"
    category = "search"
    input_type, output_type = SearchIn, SearchOut
    config_schema: ClassVar[dict[str, Any]] = _SEARCH_SCHEMA

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        plan = input.data
        sources = plan.get("sources") or {}
        named: dict[str, list[dict[str, Any]]] = {}
        candidates = 0
        for q in plan.get("queries", []):
            for name, key, call in self._backends(sources, q, context, config):
                hits, total = self._recorded(context, key, call)
                named[f"{name}|{q}"] = hits
                candidates += total
        weights = {key: config["weights"].get(key.split("|")[0].split(":")[0], 1.0) for key in named}
        fused = fuse(config["strategy"], named, k=config["rrf_k"], weights=weights)
        fused = _required(fused, plan.get("refinement", {}).get("require_terms", []))
        if plan.get("refinement", {}).get("authority_first"):
            fused.sort(key=lambda h: -AUTHORITY.get(h.get("authority", "unknown"), 0.5))  # stable: fused order kept
        hits = [{**h, "rank": i} for i, h in enumerate(fused[:config["k"]])]
        return StageOutput({"queries": list(plan.get("queries", [])), "strategy": config["strategy"],
                            "hits": hits, "total_candidates": candidates,
                            "per_backend": {k: [h["id"] for h in v] for k, v in named.items()}},
                           metrics={"backends": len(named)})

    @staticmethod
    def _backends(sources: Mapping[str, Any], q: str, context: ProcessContext,
                  config: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
        """(backend name, response key, live call) of every backend the input's sources enable. The
        key names the source's content (KG version, corpus fingerprint) so a replay is served the
        response of that content; the live call is made only on a live run."""
        ws, corpus = context.services.get("workspace"), context.services.get("corpus")
        out: list[tuple[str, str, Any]] = []
        for backend in config["backends"]:
            if backend == "kg":
                out += [(f"kg:{db}", f"search|kg:{db}@{ver}|{q}", lambda db=db: _kg_hits(ws, db, q, config))
                        for db, ver in sorted((sources.get("kgs") or {}).items())]
            elif backend in ("bm25", "vector") and sources.get("corpus"):
                out.append((backend, f"search|{backend}:{sources['corpus']}|{q}",
                            lambda backend=backend: _corpus_hits(corpus, backend, q, config)))
            elif backend == "http" and config["http_url"]:
                out.append(("http", f"search|http:{config['http_url']}|{q}", lambda: _http_hits(q, config)))
        return out

    @staticmethod
    def _recorded(context: ProcessContext, key: str, call: Callable[[], Any]) -> tuple[list[dict[str, Any]], int]:
        got = context.external.fetch(key, lambda: list(call()))
        return got[0], got[1]


def _authority(source: str, config: Mapping[str, Any]) -> str:
    for pattern, level in config["authority"].items():
        if routed_backends(source, {pattern: ["x"]}):
            return level
    return "unknown"


def _kg_hits(ws: Workspace, db: str, q: str, config: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
    res = ws.kg(db).search(q, k=config["per_backend_k"])
    hits = []
    for h in res.results:
        n = h.node
        aliases = n.properties.get("aliases") if isinstance(n.properties.get("aliases"), list) else []
        src = f"kg:{db}/{n.id}"
        hits.append({"id": src, "backend": f"kg:{db}", "kind": "kg", "source": src, "title": n.name,
                     "text": f"{n.name}: {n.description}".strip(": "), "score": round(float(h.score), 6),
                     "node": {"db": db, "id": n.id, "name": n.name, "type": n.type},
                     "aliases": [str(a) for a in aliases][:10], "authority": _authority(f"kg:{db}", config)})
    return hits, len(hits)


def _corpus_hits(corpus: Corpus, backend: str, q: str, config: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
    allowed = corpus.routed(backend, config["source_routing"])
    scored = corpus.search_scored(q, config["per_backend_k"], backend, allowed)
    total = corpus.count_matches(q, backend, allowed)
    return [{"id": f"corpus:{c.id}", "backend": backend, "kind": "corpus", "source": c.path, "title": c.title,
             "text": c.text, "score": s, "span": [c.start, c.end],
             "authority": _authority(c.path, config)} for c, s in scored], total


def _http_hits(q: str, config: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
    import httpx
    headers = {"Authorization": f"Bearer {config['api_key']}"} if config["api_key"] else {}
    try:
        r = httpx.get(config["http_url"], params={"q": q, "k": config["per_backend_k"]}, headers=headers,
                      timeout=config["http_timeout"])
        r.raise_for_status()
        body = r.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise PipelineError(f"HTTP search backend {config['http_url']} failed: {exc}") from None
    rows = body.get("results", []) if isinstance(body, dict) else body
    if not isinstance(rows, list):
        raise PipelineError(f"HTTP search backend {config['http_url']} answered no result list")
    hits = [{"id": f"http:{r.get('id') or content_hash(r)}", "backend": "http", "kind": "http",
             "source": str(r.get("url") or r.get("id") or ""), "title": str(r.get("title") or ""),
             "text": str(r.get("text") or ""), "score": float(r.get("score") or 0.0),
             "authority": _authority(f"http:{r.get('url') or ''}", config)}
            for r in rows[:config["per_backend_k"]] if isinstance(r, dict)]
    return hits, len(hits)


def _required(hits: list[dict[str, Any]], terms: Sequence[str]) -> list[dict[str, Any]]:
    """Hits whose text or title has every required term (a too-broad search narrowed); all if none does."""
    if not terms:
        return hits
    keep = [h for h in hits if all(fold(t) in fold(f"{h.get('title', '')} {h.get('text', '')}") for t in terms)]
    return keep or hits


@register()
class IngestModule(BaseModule):
    """Hits -> documents: chunks with their character spans, grouped per source, with authority and
    the aliases a KG node carries; identical texts from two places are ingested once."""

    id = "ingest.documents"
    name = "Document ingestion"
    category = "ingest"
    input_type, output_type = IngestIn, IngestOut
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {
        "max_documents": {"type": "integer", "minimum": 1, "default": 40}}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        docs: dict[str, dict[str, Any]] = {}
        seen_text: set[str] = set()
        for h in input.data.get("hits", []):
            key = content_hash(" ".join(fold(h.get("text", "")).split()))
            if key in seen_text or not h.get("text"):
                continue
            seen_text.add(key)
            doc = docs.setdefault(h["source"], {
                "id": h["source"], "title": h.get("title", ""), "source": h["source"], "kind": h.get("kind"),
                "authority": h.get("authority", "unknown"), "aliases": h.get("aliases", []),
                "node": h.get("node"), "chunks": []})
            start = h.get("span", [0, 0])[0]
            doc["chunks"].append({"start": start, "text": h["text"], "hit": h["id"]})
            if len(docs) >= config["max_documents"]:
                break
        for d in docs.values():
            d["chunks"].sort(key=lambda c: c["start"])
        return StageOutput({"documents": list(docs.values())}, metrics={"documents": len(docs)})


@register()
class ExtractModule(BaseModule):
    """Documents -> claims with source spans, entities and relations (``kgos.research.extract``)."""

    id = "extract.claims"
    name = "Claim extraction"
    category = "extract"
    input_type, output_type = ExtractIn, ExtractOut
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {
        "max_claims_per_document": {"type": "integer", "minimum": 1, "default": 40}}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        docs = input.data.get("documents", [])
        known = [*input.data.get("entities", []), *(d["title"] for d in docs if d.get("title")),
                 *(a for d in docs for a in d.get("aliases", []))]
        out: dict[str, list[Any]] = {"claims": [], "entities": [], "relations": []}
        seen: set[str] = set()
        for rank, d in enumerate(docs):  # documents come in search-rank order
            got = extract_document(d, known, config["max_claims_per_document"])
            out["claims"] += [{**c, "rank": rank} for c in got["claims"]]
            out["relations"] += got["relations"]
            for e in got["entities"]:
                if e["key"] not in seen:
                    seen.add(e["key"])
                    if d.get("title") and fold(d["title"]) == e["key"]:
                        e = {**e, "aliases": list(d.get("aliases", []))}
                    out["entities"].append(e)
        return StageOutput(out, metrics={"claims": len(out["claims"]), "entities": len(out["entities"])})


@register()
class MergeModule(BaseModule):
    """Entity deduplication (normalised name, aliases, embedding similarity), claim corroboration,
    conflict detection (numbers, negation) and integration with provenance (``kgos.research.merge``)."""

    id = "merge.graph"
    name = "Knowledge merge"
    category = "merge"
    input_type, output_type = MergeIn, MergeOut
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {
        "entity_similarity": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.92},
        "embedder": {"type": "string", "default": "none",
                     "description": "embedder spec for entity-name similarity ('none': names and aliases only)"}}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        embed = None
        if config["embedder"] != "none":
            embedder = get_embedder(config["embedder"])
            embed = embedder.embed
        kn, stats = integrate(input.data.get("known") or empty_knowledge(), input.data.get("extracted", {}),
                              int(input.data.get("iteration", 0)), config["entity_similarity"], embed)
        return StageOutput({"knowledge": kn, "stats": stats}, metrics=stats)


@register()
class StoreModule(BaseModule):
    """The iteration's new knowledge as a KG delta (claims, entities, sources and their edges, with
    provenance), written into the target KG in one unit of work, staged as proposals in the target's
    review queue, or only returned (``mode``: apply | propose | none). ``auto`` (the default) writes into
    a KG this run created and proposes into any other: a run never changes a KG it did not make without
    a reviewer. A replay never writes."""

    id = "store.kg"
    name = "KG store"
    category = "store"
    input_type, output_type = StoreIn, StoreOut
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {
        "mode": {"enum": ["auto", "apply", "propose", "none"], "default": "auto"}}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        delta = kg_delta(input.data.get("knowledge", {}), int(input.data.get("iteration", 0)),
                         str(input.data.get("run_id", "")))
        target = input.data.get("target")
        mode = config["mode"] if target else "none"
        report: dict[str, Any] = {}
        if mode != "none" and not context.replaying and (delta["nodes"] or delta["edges"]):
            ws = context.services["workspace"]
            run_id = str(input.data.get("run_id", ""))
            # the output keeps the configured mode (a replay, which never writes, reproduces it); the
            # report says what was done
            chosen = store_mode(ws, target, run_id) if mode == "auto" else mode
            write = apply_delta if chosen == "apply" else propose_delta
            report = await asyncio.to_thread(write, ws, target, delta, run_id)
        return StageOutput({"delta": delta, "mode": mode, "target": target}, metrics=report)


def kg_delta(knowledge: Mapping[str, Any], iteration: int, run_id: str) -> dict[str, Any]:
    """The node-link delta of what ``iteration`` added: claim, entity and source nodes; ``mentions``,
    ``cited_from`` and ``is_a`` edges. Provenance (run, iteration, spans) rides in properties."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    ents = knowledge.get("entities", {})
    for cid, c in sorted(knowledge.get("claims", {}).items()):
        new_sources = [s for s in c["sources"] if s["iteration"] == iteration]
        if not new_sources:
            continue
        claim_id = f"research:claim:{cid[2:]}"
        nodes[claim_id] = {"id": claim_id, "name": c["text"][:80], "type": "claim", "description": c["text"],
                           "properties": {"run_id": run_id, "iteration": c["first_iteration"],
                                          "sources": len(c["sources"]), "authority": c["authority"],
                                          **({"flags": list(marks)} if (marks := flags(c["text"])) else {})}}
        for e in c["entities"]:
            eid = _entity_node(nodes, ents.get(e, {"key": e, "name": e, "type": "term", "aliases": []}))
            edges.append({"source": claim_id, "target": eid, "type": "mentions"})
        for s in new_sources:
            sid = f"research:source:{slugify(s['source'])[:80]}"
            nodes.setdefault(sid, {"id": sid, "name": s["source"], "type": "source", "description": "",
                                   "properties": {"run_id": run_id}})
            edges.append({"source": claim_id, "target": sid, "type": "cited_from",
                          "properties": {"span": s["span"], "iteration": s["iteration"]}})
    for r in knowledge.get("relations", []):
        if r["type"] == "is_a" and r["source"] in ents and r["target"] in ents and \
                f"research:entity:{slugify(r['source'])}" in nodes:
            edges.append({"source": _entity_node(nodes, ents[r["source"]]),
                          "target": _entity_node(nodes, ents[r["target"]]), "type": "is_a"})
    unique = {(e["source"], e["target"], e["type"]): e for e in edges}
    return {"format": "kgos-node-link/1", "nodes": list(nodes.values()), "edges": list(unique.values())}


def _entity_node(nodes: dict[str, dict[str, Any]], e: Mapping[str, Any]) -> str:
    eid = f"research:entity:{slugify(e['key'])}"
    nodes.setdefault(eid, {"id": eid, "name": e["name"], "type": e.get("type", "term"), "description": "",
                           "properties": {"aliases": list(e.get("aliases", []))}})
    return eid


RUN_META = "research_run"  # kg_meta key: the run that created the KG (its delta goes in directly)


def store_mode(ws: Workspace, target: str, run_id: str) -> str:
    """``auto``'s choice: apply into a KG that does not exist yet or that this run created, else propose."""
    if not ws.exists(target):
        return "apply"
    return "apply" if run_id and ws.kg(target).meta().get(RUN_META) == run_id else "propose"


def apply_delta(ws: Workspace, target: str, delta: Mapping[str, Any], run_id: str = "") -> dict[str, Any]:
    """Write the delta into ``target`` (created if missing, and marked as this run's) in one unit of
    work: all of it or, on a failure, none (a KG this call created is removed again). Nodes are
    upserted by id and edges by key with spec/002's rules; the written nodes are embedded when it returns."""
    created = not ws.exists(target)
    kg = ws.create(target) if created else ws.kg(target)
    try:
        with kg.store.writing() as w:
            if created and run_id:
                kg.store.set_meta(**{RUN_META: run_id})  # nested in the unit: lands with the delta
            for n in delta["nodes"]:
                w.upsert_node(n["id"], n["name"], n.get("type", "entity"), n.get("description", ""),
                              n.get("properties") or {})
            for e in delta["edges"]:
                w.add_edge(e["source"], e["target"], e["type"], e.get("weight", 1.0), e.get("properties") or {})
    except BaseException:
        if created:
            ws.delete(target)
        raise
    return {"applied": True, "mode": "apply", "nodes": len(delta["nodes"]), "edges": len(delta["edges"]),
            "created": created}


def propose_delta(ws: Workspace, target: str, delta: Mapping[str, Any], run_id: str = "") -> dict[str, Any]:
    """Stage the delta in ``target``'s review queue: nodes as node proposals, edges whose two ends exist
    now as edge proposals (an edge to a proposed node waits for that node's acceptance: it is
    counted in ``deferred_edges`` and proposed by the next run once the node exists)."""
    from ..store.proposals import ProposalDraft
    kg = ws.kg(target) if ws.exists(target) else ws.create(target)
    drafts, deferred = [], 0
    for n in delta["nodes"]:
        if kg.get_node(n["id"]) is None:
            drafts.append(ProposalDraft(n["id"], "", n["type"], "research", 0.5, {},
                                        {"run": n["properties"], "run_id": run_id},
                                        {"name": n["name"], "description": n["description"],
                                         "properties": copy.deepcopy(n["properties"])}, kind="node"))
    for e in delta["edges"]:
        if kg.get_node(e["source"]) is not None and kg.get_node(e["target"]) is not None:
            drafts.append(ProposalDraft(e["source"], e["target"], e["type"], "research", 0.5, {},
                                        {**e.get("properties", {}), "run_id": run_id}, {"weight": 1.0}))
        else:
            deferred += 1
    rep = kg.proposals.propose(drafts) if drafts else None
    return {"mode": "propose", "proposed": len(rep.added) if rep else 0, "merged": len(rep.merged) if rep else 0,
            "deferred_edges": deferred}
