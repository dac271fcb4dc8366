"""One chat turn's grounding (spec/000 sections 8 and 9, stages 2-4): retrieval over the expert's
KGs, then the system prompt assembled from persona, KG context, dimension hints, composition plan,
playbook excerpts, memory and citation instructions, each part capped.

Retrieval per KG is ``intent_search`` with the expert's weights, methods and dimension filters.
Two expert settings then re-rank its candidates: ``boost_types`` (method 12's edge-type boost from
the top hits, or the matched goal mapping's types) adds ``BOOST_WEIGHT x boost``, and a goal
mapping's ``dimension_boosts`` add ``DIMENSION_WEIGHT x`` the mean of those dimensions (0..1) on
the node. Multi-KG experts merge the KGs' hits, keeping the best-scored node of each name and its
``source_kg``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import KGOSError
from ..index.text import fold, tokenize
from ..methods import RetrievalConfig
from ..methods.catalog import DIMENSIONS
from ..model import normalize_name, slugify
from .config import ExpertConfig, GoalMapping

if TYPE_CHECKING:
    from ..kg import Workspace
    from .playbooks import SkillExcerpt

BOOST_WEIGHT = 0.2
DIMENSION_WEIGHT = 0.2
MAX_DESCRIPTION = 320
MAX_EDGES = 15
CAPS = {"persona": 4_000, "kg": 8_000, "dimensions": 1_200, "plan": 1_500, "skills": 2_500, "memory": 1_500}


@dataclass(frozen=True)
class SourceNode:
    """A node in the expert's context; ``cite`` is how answers reference it."""

    db_id: str
    id: str
    name: str
    type: str
    description: str
    score: float
    method: str = ""
    dims: Mapping[str, float] = field(default_factory=dict)
    # the hybrid search's signals (0..1, before weighting and the expert's boosts) and the edges that
    # linked the node to the query's seeds: the reasoning trace's "score breakdown" and "edges followed"
    components: Mapping[str, float] = field(default_factory=dict)
    linked_by: tuple[tuple[str, str, str], ...] = ()

    @property
    def cite(self) -> str:
        return f"{self.db_id}:{self.id}"

    def to_dict(self) -> dict[str, Any]:
        """The ``sources`` SSE event's node shape (spec/000: id, name, type, score) plus source_kg,
        the signal components and the edges that linked it (``edge_annotations``)."""
        return {"id": self.id, "name": self.name, "type": self.type, "score": round(self.score, 4),
                "source_kg": self.db_id, "cite": f"[Source: {self.cite}]", "method": self.method,
                "components": {k: round(v, 4) for k, v in self.components.items()},
                "edge_annotations": [{"source": s, "target": t, "type": ty} for s, t, ty in self.linked_by]}


@dataclass(frozen=True)
class ContextEdge:
    db_id: str
    source: str
    target: str
    type: str
    source_name: str
    target_name: str

    def to_dict(self) -> dict[str, Any]:
        return {"source_kg": self.db_id, "source": self.source, "target": self.target, "type": self.type,
                "source_name": self.source_name, "target_name": self.target_name}


@dataclass(frozen=True)
class PlanStepView:
    order: int
    action: str
    node: SourceNode

    def to_dict(self) -> dict[str, Any]:
        return {"order": self.order, "action": self.action, "node": self.node.to_dict()}


@dataclass(frozen=True)
class TurnContext:
    """Everything one turn was grounded on; the offline provider writes its answer from it."""

    query: str
    kgs: tuple[str, ...]
    intent: str | None = None
    intent_score: float = 0.0
    nodes: tuple[SourceNode, ...] = ()
    edges: tuple[ContextEdge, ...] = ()
    # every KG edge between two ranked nodes (``edges`` holds only what retrieval followed): the
    # offline answer shows what is linked to its anchor (kgos.experts.answer)
    links: tuple[ContextEdge, ...] = ()
    # the workarounds and fixes the KG gives for the top ranked nodes, also when retrieval did not
    # rank them (a limitation's workaround is often the answer to a problem; their edges are in links)
    remedies: tuple[SourceNode, ...] = ()
    plan: tuple[PlanStepView, ...] = ()
    plan_warnings: tuple[str, ...] = ()  # as a person reads them: node names, never ids
    # the nodes the plan's steps require (one hop) that the plan does not contain: citable, so a reader
    # sees what to set up first and can check it, instead of a warning that lists node ids
    plan_needs: tuple[SourceNode, ...] = ()
    capability: Mapping[str, Any] | None = None
    goal: str | None = None
    memory: str = ""
    recalled: tuple[str, ...] = ()  # past messages of this expert's user that match the query
    skills: tuple[SkillExcerpt, ...] = ()
    notes: tuple[str, ...] = ()
    system_prompt: str = ""
    # the best cosine of the query with a ranked node, by the embedder that ranked it (its name):
    # the one absolute evidence a turn has (every signal above is normalised per query), so the
    # offline answer can say "the KG does not cover this" (experts.answer.off_topic); None without vectors
    closest: float | None = None
    embedder: str = ""
    # each KG's best cosine when all the expert's KGs were ranked by the same embedder: the one signal
    # comparable across KGs (each KG's scores are normalised on its own), so a several-KG answer can
    # tell which KG the question is about (experts.answer._anchor)
    closest_by_kg: Mapping[str, float] = field(default_factory=dict)

    def extractive_answer(self) -> str:
        """The answer written from this grounding with no model (``experts.answer``): what the offline
        provider streams. The grounding writes itself, so the provider (a lower layer) needs no import
        of the experts layer."""
        from .answer import compose
        return compose(self)

    def citable(self) -> list[SourceNode]:
        """Every node the prompt shows with a citation key: ranked nodes, plan steps, and the
        capability check's node, limitations and workarounds."""
        return [*self.nodes, *self.remedies, *(s.node for s in self.plan), *self.plan_needs,
                *capability_refs(self.capability)]


# -- goal mappings ---------------------------------------------------------------------------------------
def match_goal(mappings: Mapping[str, GoalMapping], query: str) -> tuple[str, GoalMapping] | None:
    """The first goal keyword the query uses (as a word or a word's start: "debugging" -> debug)."""
    words = tokenize(query)
    for keyword, mapping in mappings.items():
        key = fold(keyword).replace("_", " ")
        if " " in key and key in " ".join(words) or any(w.startswith(key) for w in words):
            return keyword, mapping
    return None


# -- retrieval -------------------------------------------------------------------------------------------
CROSS_SEEDS, CROSS_DECAY = 5, 0.5  # top hits whose cross-KG edges are followed; score carried over


def retrieve(ws: Workspace, cfg: ExpertConfig, query: str) -> TurnContext:
    """Stage 4's KG part: ranked nodes, their edges, plan and capability over every KG of the expert."""
    goal = match_goal(cfg.custom_goal_mappings, query)
    per_kg = [_weighted(_retrieve_one(ws, db_id, cfg, query, goal[1] if goal else None), cfg.kg_weights.get(db_id, 1.0))
              for db_id in cfg.kgs]
    found = [n for part in per_kg for n in part.nodes]
    linked, link_notes = _across(ws, cfg, found) if len(cfg.kgs) > 1 else ([], [])
    nodes = _merge(found + linked, cfg.retrieval.limit)
    keep = {(n.db_id, n.id) for n in nodes}
    first = per_kg[0]
    edges = tuple(e for part in per_kg for e in part.edges
                  if (e.db_id, e.source) in keep or (e.db_id, e.target) in keep)[:MAX_EDGES]
    plan = next((p.plan for p in per_kg if p.plan), ())
    remedies = tuple(r for part in per_kg for r in part.remedies if (r.db_id, r.id) not in keep)
    keep |= {(r.db_id, r.id) for r in remedies}
    links = tuple(e for part in per_kg for e in part.links if (e.db_id, e.source) in keep and (e.db_id, e.target) in keep)
    return replace(first, query=query, kgs=cfg.kgs, nodes=nodes, edges=edges, links=links, remedies=remedies, plan=plan,
                   plan_warnings=next((p.plan_warnings for p in per_kg if p.plan), ()),
                   plan_needs=next((p.plan_needs for p in per_kg if p.plan), ()),
                   capability=next((p.capability for p in per_kg if p.capability), None),
                   goal=goal[0] if goal else None, notes=tuple(n for p in per_kg for n in p.notes) + tuple(link_notes),
                   **_closest_of(per_kg))


def _closest_of(per_kg: list[TurnContext]) -> dict[str, Any]:
    """The best cosine over the KGs (each KG's by its own embedder: the first KG's model when they differ)."""
    known = [p for p in per_kg if p.closest is not None]
    if not known:
        return {"closest": None, "embedder": "", "closest_by_kg": {}}
    best = max(known, key=lambda p: p.closest or 0.0)
    same = len({p.embedder for p in known}) == 1 and len(known) == len(per_kg)
    return {"closest": best.closest, "embedder": best.embedder,
            "closest_by_kg": {p.kgs[0]: p.closest for p in known} if same else {}}


def _weighted(ctx: TurnContext, weight: float) -> TurnContext:
    if weight == 1.0:
        return ctx
    return replace(ctx, nodes=tuple(replace(n, score=n.score * weight) for n in ctx.nodes))


def _across(ws: Workspace, cfg: ExpertConfig, found: list[SourceNode]) -> tuple[list[SourceNode], list[str]]:
    """Nodes a cross-KG edge links to from the top hits, inside the expert's KGs: each scores
    ``CROSS_DECAY`` x the hit's score x min(1, the link's weight) (docs/learning.md)."""
    from ..kg.links import CrossLinks, Ref
    links, out, notes = CrossLinks(ws), [], []
    top = sorted(found, key=lambda n: -n.score)[:CROSS_SEEDS]
    for hit in top:
        for other, etype, _ in links.touching(Ref(hit.db_id, hit.id)):
            if other.kg not in cfg.kgs or not ws.exists(other.kg):
                continue
            node = ws.kg(other.kg).get_node(other.node)
            if node is None:
                continue
            score = CROSS_DECAY * hit.score
            out.append(SourceNode(other.kg, node.id, node.name, node.type, node.description or "", score,
                                  "cross-kg", linked_by=((hit.id, node.id, etype),)))
            notes.append(f"{hit.cite} -[{etype}]-> {other}: followed a cross-KG edge")
    return out, notes[:10]


def _retrieve_one(ws: Workspace, db_id: str, cfg: ExpertConfig, query: str, goal: GoalMapping | None) -> TurnContext:
    kg = ws.kg(db_id)
    r = cfg.retrieval
    rc = RetrievalConfig(k=min(50, r.limit * 2), weights=r.weights(),
                         methods=None if "intent" in r.methods else (),
                         dimension_filters=cfg.dimension_filters or None, expand_top=3 if r.expand_depth else 0)
    res = kg.intent_search(query, rc)
    props = kg.store.get_nodes([h.node.id for h in res.nodes])
    scores = {h.node.id: h.score for h in res.nodes}
    types = (goal.boost_types if goal and goal.boost_types else r.boost_types)
    notes = [*res.notes, *res.warnings]  # e.g. a KG without vectors: the expert's context is weaker
    if types and res.nodes:
        boost = kg.edge_type_boost([h.node.id for h in res.nodes[:10]], types, limit=200).as_dict()
        scores = {i: s + BOOST_WEIGHT * boost.get(i, 0.0) for i, s in scores.items()}
        notes.append(f"edge-type boost over {', '.join(types)}")
    if goal and goal.dimension_boosts:
        scores = {i: s + DIMENSION_WEIGHT * _dim_mean(props[i].properties, goal.dimension_boosts) if i in props else s
                  for i, s in scores.items()}
    nodes = tuple(_source(db_id, h, props.get(h.node.id), scores[h.node.id]) for h in res.nodes)
    remedies, fixes = _remedies(kg, db_id, nodes)
    links = _links(kg, db_id, nodes) + fixes
    edges = [ContextEdge(db_id, e.source, e.target, e.type, e.source_name, e.target_name) for e in res.edges]
    if r.expand_depth >= 2:
        edges += _second_hop(kg, db_id, edges, {n.id for n in nodes})
    return TurnContext(query=query, kgs=(db_id,), intent=res.intent.category if res.intent else None,
                       intent_score=res.intent.score if res.intent else 0.0, nodes=nodes, edges=tuple(edges),
                       links=links, remedies=remedies,
                       plan=_plan(db_id, res.composition, props), capability=_capability(db_id, res.capability),
                       plan_warnings=_plan_warnings(kg, res.composition), plan_needs=_plan_needs(db_id, res.composition),
                       notes=tuple(notes),
                       **_closest(kg, query, [n.id for n in nodes]))


def _closest(kg: Any, query: str, ids: list[str]) -> dict[str, Any]:
    """The query's best cosine with the ranked nodes' stored vectors (the embedding channel's own top
    hits are among them), and the embedder's name; nothing when the KG has no vectors or no model."""
    try:
        engine = kg.engine
        snap, vector = engine.snapshot(), engine.embed_query(query)
        rows = [snap.index[i] for i in ids if i in snap.index]
        if vector is None or snap.vectors is None or not rows:
            return {}
        return {"closest": float((snap.vectors[rows] @ vector).max()), "embedder": engine.query_embedder().name}
    except (KGOSError, OSError, ValueError):  # no usable model here: the answer relies on words alone
        return {}


def _links(kg: Any, db_id: str, nodes: tuple[SourceNode, ...]) -> tuple[ContextEdge, ...]:
    """The KG's edges between the ranked nodes (each once: from its source's outgoing side)."""
    names, out = {n.id: n.name for n in nodes}, []
    for node_id, name in names.items():
        for nb in kg.store.neighbors(node_id, "outgoing"):
            if nb.node.id in names and nb.node.id != node_id:
                out.append(ContextEdge(db_id, node_id, nb.node.id, nb.edge.type, name, nb.node.name))
    return tuple(out)


REMEDY_SEEDS, REMEDIES_EACH = 5, 2
REMEDY_EDGES = {("has_workaround", "outgoing"), ("fixes", "incoming"), ("solves", "incoming")}


def _remedies(kg: Any, db_id: str, nodes: tuple[SourceNode, ...]) -> tuple[tuple[SourceNode, ...], tuple[ContextEdge, ...]]:
    """Workarounds of the top REMEDY_SEEDS nodes, and the edges to them (``retrieve`` keeps the ones
    the merged ranking does not hold)."""
    found: dict[str, SourceNode] = {}
    edges = []
    for seed in sorted(nodes, key=lambda n: -n.score)[:REMEDY_SEEDS]:  # the expert's boosts re-ranked them
        hops = [nb for nb in kg.store.neighbors(seed.id, "both") if (nb.edge.type, nb.direction) in REMEDY_EDGES]
        for nb in hops[:REMEDIES_EACH]:
            found.setdefault(nb.node.id, SourceNode(db_id, nb.node.id, nb.node.name, nb.node.type,
                                                    nb.node.description or "", 0.0, "workaround"))
            src, dst = (seed, nb.node) if nb.direction == "outgoing" else (nb.node, seed)
            edges.append(ContextEdge(db_id, src.id, dst.id, nb.edge.type, src.name, dst.name))
    return tuple(found.values()), tuple(edges)


def _dim_mean(properties: Mapping[str, Any], dims: list[str]) -> float:
    values = [properties.get(d) for d in dims]
    return sum(float(v) for v in values if isinstance(v, (int, float)) and 0 <= v <= 1) / max(len(dims), 1)


def _source(db_id: str, hit: Any, node: Any, score: float) -> SourceNode:
    props = node.properties if node is not None else {}
    dims = {k: float(v) for k, v in props.items() if k in DIMENSIONS and isinstance(v, (int, float))
            and not isinstance(v, bool) and 0 <= v <= 1}
    return SourceNode(db_id, hit.node.id, hit.node.name, hit.node.type, node.description if node else "",
                      float(score), hit.method, dims, dict(hit.components),
                      tuple((e.source, e.target, e.type) for e in hit.edge_annotations))


def _second_hop(kg: Any, db_id: str, edges: list[ContextEdge], seen: set[str]) -> list[ContextEdge]:
    """expand_depth 2: the strongest edges of the nodes the first hop reached (3 each)."""
    names = {x: n for e in edges for x, n in ((e.source, e.source_name), (e.target, e.target_name))}
    reached = [x for x in names if x not in seen][:10]
    more = []
    for node_id in reached:
        for nb in kg.neighbors(node_id, "both", limit=3):
            src, dst = (node_id, nb.node.id) if nb.direction == "outgoing" else (nb.node.id, node_id)
            both = {node_id: names[node_id], nb.node.id: nb.node.name}
            more.append(ContextEdge(db_id, src, dst, nb.edge.type, both[src], both[dst]))
    return more


def _plan(db_id: str, plan: Any, props: Mapping[str, Any]) -> tuple[PlanStepView, ...]:
    if plan is None or not plan.steps:
        return ()
    return tuple(PlanStepView(s.index, s.sub_goal, SourceNode(db_id, s.node.id, s.node.name, s.node.type,
                                                             s.node.description, s.score)) for s in plan.steps)


_NODE_ID = re.compile(r"\b[a-z][a-z0-9_]*:[A-Za-z0-9_.-]*[A-Za-z0-9_]")
PREREQUISITES_WARNING = "prerequisite(s) not in the plan"  # kgos.methods.compose's wording


def _plan_warnings(kg: Any, plan: Any) -> tuple[str, ...]:
    """The plan's warnings with node names for node ids ("8 prerequisite(s) not in the plan:
    concept:api_key_authentication, ..." read as a list of ids on the demo's CSV plan); the missing
    prerequisites themselves become ``plan_needs`` (cited) and their warning is left out."""
    if plan is None:
        return ()
    said = [w for w in plan.warnings if PREREQUISITES_WARNING not in w]
    ids = {m.group(0) for w in said for m in _NODE_ID.finditer(w)}
    names = {i: n.name for i, n in kg.store.get_nodes(sorted(ids)).items()} if ids else {}
    return tuple(_NODE_ID.sub(lambda m: f"\u201c{names[m.group(0)]}\u201d" if m.group(0) in names else m.group(0), w)
                 for w in said)


def _plan_needs(db_id: str, plan: Any) -> tuple[SourceNode, ...]:
    """The plan's missing prerequisites one hop from a step (what the steps require themselves)."""
    if plan is None:
        return ()
    return tuple(SourceNode(db_id, p.node.id, p.node.name, p.node.type, p.node.description, 0.0, "prerequisite")
                 for p in plan.prerequisites if p.depth == 1)


def _capability(db_id: str, cap: Any) -> dict[str, Any] | None:
    if cap is None or cap.node is None:
        return None
    d = cap.to_dict()
    d["db_id"] = db_id
    return d


def _merge(nodes: list[SourceNode], limit: int) -> tuple[SourceNode, ...]:
    """Best score per normalised name across KGs (spec/000 multi-KG experts), top ``limit``."""
    best: dict[str, SourceNode] = {}
    for n in sorted(nodes, key=lambda n: (-n.score, n.db_id, n.id)):
        best.setdefault(normalize_name(n.name), n)
    return tuple(sorted(best.values(), key=lambda n: (-n.score, n.db_id, n.id))[:limit])


# -- prompt assembly (stage 4) -------------------------------------------------------------------------
def assemble_prompt(cfg: ExpertConfig, ctx: TurnContext) -> str:
    """The system prompt: persona, KG context, dimension hints, plan, playbooks, memory, citations."""
    parts = [_cap(_persona(cfg), CAPS["persona"]), _cap(_kg_section(ctx), CAPS["kg"]),
             _cap(_dimension_hints(cfg, ctx), CAPS["dimensions"]), _cap(_plan_section(ctx), CAPS["plan"]),
             _cap(_skills_section(ctx), CAPS["skills"]), _cap(_memory_section(ctx), CAPS["memory"]),
             CITATION_INSTRUCTIONS]
    return "\n\n".join(p for p in parts if p)


CITATION_INSTRUCTIONS = (
    "[Citation Instructions]\n"
    "Answer from the knowledge graph context above. When you use a node, cite it right after the claim "
    "with its citation key exactly as listed, e.g. [Source: kg:node_id]. Cite only nodes listed above; "
    "if the context does not answer the question, say so instead of guessing.")


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15].rstrip() + "\n[... trimmed]"


def _persona(cfg: ExpertConfig) -> str:
    p = cfg.persona
    lines = [p.instructions.strip() or f"You are {p.name}, an expert answering from a knowledge graph."]
    lines.append(f"Your name is {p.name}. Style: {p.style}.")
    if cfg.description:
        lines.append(f"Expertise: {cfg.description}")
    return "\n".join(lines)


def _kg_section(ctx: TurnContext) -> str:
    if not ctx.nodes:
        return "[Knowledge Graph Context]\nNo node of the knowledge graph matched this question."
    intent = f"{ctx.intent} ({ctx.intent_score:.1f})" if ctx.intent else "general"
    lines = ["[Knowledge Graph Context]", f"Source: {', '.join(ctx.kgs)}", f"Intent: {intent}", ""]
    for n in ctx.nodes:
        desc = _sentence_cap(n.description, MAX_DESCRIPTION)
        lines.append(f"- [{n.type}] {n.name} — cite as [Source: {n.cite}] (score {n.score:.2f})"
                     + (f"\n  {desc}" if desc else ""))
    if ctx.remedies:
        lines += ["", "Workarounds the graph gives for these:"]
        lines += [f"- [{n.type}] {n.name} — cite as [Source: {n.cite}]" for n in ctx.remedies]
    if ctx.edges:
        lines += ["", "Relationships:"]
        lines += [f"  {e.source_name or e.source} --[{e.type}]--> {e.target_name or e.target}" for e in ctx.edges]
    if ctx.capability:
        lines += ["", *_capability_lines(ctx.capability)]
    return "\n".join(lines)


def _capability_lines(cap: Mapping[str, Any]) -> list[str]:
    db = cap["db_id"]
    lines = [f"Capability check: {cap['status']} — {cap.get('explanation', '')}".rstrip(" —")]
    for lim in cap.get("limitations", []):
        lines.append(f"  limitation: {lim['node']['name']} [Source: {db}:{lim['node']['id']}]")
        lines += [f"    workaround: {w['name']} [Source: {db}:{w['id']}]" for w in lim.get("workarounds", [])]
    return lines


def capability_refs(cap: Mapping[str, Any] | None) -> list[SourceNode]:
    """The nodes a capability check put into the prompt (citable like the ranked nodes)."""
    if not cap:
        return []
    db = cap["db_id"]
    refs = [cap["node"], *(l["node"] for l in cap.get("limitations", [])),
            *(w for l in cap.get("limitations", []) for w in l.get("workarounds", [])), *cap.get("workarounds", [])]
    return [SourceNode(db, r["id"], r["name"], r["type"], r.get("description", ""), 0.0) for r in refs if r]


def _dimension_hints(cfg: ExpertConfig, ctx: TurnContext) -> str:
    wanted = list(cfg.dimension_filters)
    if ctx.goal:
        wanted += cfg.custom_goal_mappings[ctx.goal].dimension_boosts
    rows = []
    for n in ctx.nodes[:5]:
        shown = {d: n.dims[d] for d in (wanted or sorted(n.dims, key=lambda d: -n.dims[d])) if d in n.dims}
        if shown:
            rows.append(f"- {n.name}: " + ", ".join(f"{d}={v:.2f}" for d, v in list(shown.items())[:6]))
    if not rows:
        return ""
    head = "[Dimension Hints] (0 = low, 1 = high"
    head += f"; filters: {', '.join(cfg.dimension_filters)})" if cfg.dimension_filters else ")"
    return "\n".join([head, *rows])


def _plan_section(ctx: TurnContext) -> str:
    if not ctx.plan:
        return ""
    lines = ["[Composition Plan]"]
    lines += [f"  Step {s.order}: {s.node.name} -> {s.action} [Source: {s.node.cite}]" for s in ctx.plan]
    lines += [f"  Needed first: {n.name} [Source: {n.cite}]" for n in ctx.plan_needs]
    lines += [f"  Warning: {w}" for w in ctx.plan_warnings]
    return "\n".join(lines)


def _skills_section(ctx: TurnContext) -> str:
    if not ctx.skills:
        return ""
    return "[Playbook Context]\n" + "\n\n".join(f"({s.playbook} > {s.heading})\n{s.text}" for s in ctx.skills)


def _memory_section(ctx: TurnContext) -> str:
    parts = ["Earlier, the user said:\n" + "\n".join(f"- {_sentence_cap(m, 300)}" for m in ctx.recalled)
             if ctx.recalled else "", ctx.memory.strip()]
    text = "\n\n".join(p for p in parts if p)
    return f"[Memory]\n{text}" if text else ""


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sentence_cap(text: str, limit: int) -> str:
    """Whole sentences up to ``limit`` characters (at least the first, cut)."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    out = ""
    for sentence in _SENTENCE_END.split(text):
        if len(out) + len(sentence) + 1 > limit:
            break
        out = f"{out} {sentence}".strip()
    return out or text[: limit - 1] + "…"


def node_aliases(node: SourceNode) -> set[str]:
    """The spellings a citation of this node may use after ``db:``: id, name, slug of the name, and
    the id's part after its type prefix (``feature:prompt_caching`` -> ``prompt_caching``)."""
    tail = node.id.split(":", 1)[1] if ":" in node.id else node.id
    return {normalize_name(x) for x in (node.id, node.name, slugify(node.name), tail)}
