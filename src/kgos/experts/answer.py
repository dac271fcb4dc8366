"""The offline expert answer (issue 29, goal 1): a colleague's note written from one turn's grounding
(``TurnContext``), with no model. The answer comes first — the verdict, the plan, or the node the
question is about (the anchor: the top hit) in a sentence, with at most two nodes that lead a
retrieval signal on their own — then only nodes the graph ties to the anchor, labelled by the edge
(way to do it, needs, limitation with its workaround, alternative, ...), each cited
``[Source: kg:node]``. Nothing else: no relation list, no playbook tip that does not fit the
question (measured by meaning: ``tip_fits``).

Why a star around the anchor and not a score threshold: on the demo dev probes (benchmarks/
answers.py, MiniLM) a retrieved node linked by a KG edge to the top hit is relevant or one hop from
a relevant node 85% of the time, one that is not linked 16%, while the score ratio to the top hit
hardly separates them (0.39 of the nodes under 0.5 of the top score are good, 0.64 above 0.8).
"""

from __future__ import annotations

import re
from typing import Any

RELATION_VERBS = {
    "requires": "requires", "depends_on": "depends on", "has_limitation": "is limited by",
    "has_workaround": "can be worked around with", "fixes": "fixes", "enables": "enables",
    "alternative_to": "is an alternative to", "conflicts_with": "conflicts with", "feeds_into": "feeds into",
    "reduces": "reduces", "contributes_to": "contributes to", "optimizes": "optimizes", "implements": "implements",
    "prerequisite_of": "is a prerequisite of", "causes": "causes", "solves": "solves",
}
# Measured on the dev probe sets only (benchmarks/answers.py, MiniLM; held-out sets untouched).
MAX_BULLETS = 6
MAX_NEEDS = 4  # a plan's prerequisites named in its answer (the rest counted)
# a node "leads" a retrieval signal when its text or embedding component is at least LEAD_MIN
# (1.0 = the best of the query's hits); it is shown right after the lead when it also scores
# LEADER_RATIO of the top: leaders at 0.999 instead of 0.9 cost 3 hits of the 94 goal/benefit dev
# probes (demo dev probes' filler 0.092 -> 0.083)
LEAD_MIN, LEADER_RATIO, MAX_LEADERS = 0.9, 0.6, 2
# a linked node needs lexical evidence (a text score), or an embedding score of EMB_MIN when the
# anchor is sure (it leads a signal, or the next hit scores under SURE_GAP of it): on the demo dev
# probes precision 0.892 -> 0.910 and filler 0.089 -> 0.062 (leaders then folded into the lead)
EMB_MIN, SURE_GAP = 0.4, 0.8
# Several KGs: each KG's signals are normalised on its own, so every KG has nodes that "lead" and
# its top hit is not comparable with another KG's. Leaders come from the anchor's KG only, and the
# anchor is the top-3 node the question names when there is one. A demo+finance expert on the demo
# dev probes: hit 0.895 -> 0.884, precision 0.645 -> 0.840 (score-cut composer 871b65a: 0.907 /
# 0.472, filler 0.552 against 0.161 now); on one KG naming the anchor cost 1 hit of 94 and was not kept.
# When every KG was ranked by one embedder, the anchor comes from the KG nearest the question in
# meaning (``_closest_kg``; then the named node, else the single-KG rule on that KG's nodes): demo +
# finance expert, MiniLM, demo dev probes hit 0.872 -> 0.930, filler 0.096 -> 0.054; goal/benefit dev
# 0.745 -> 0.798, precision 0.741 -> 0.774, filler 0.275 -> 0.212 (the single-KG rule alone, without
# the named node: 0.809 / 0.796 / 0.182, but with the hash embedder 1 demo dev hit fewer).
LEAD_SIGNALS = ("text", "embedding")
# A leader's text + embedding: one leading (>= 0.9) and the other under 0.5 is a node that matches a
# word or the gist, not the question (leaders were 13 of the 37 filler items of the demo dev probes).
# 1.4 on the dev sets: demo probes precision 0.909 -> 0.914, filler 0.090 -> 0.084, goal/benefit
# 0.714 -> 0.746 and 0.257 -> 0.229, no hit lost (1.6: one hit lost on each; LEADER_RATIO 0.7
# instead: a goal/benefit hit lost). With a graph signal required too (``_leads``): demo probes
# precision 0.925, filler 0.075, goal/benefit 0.768 and 0.210, one more goal/benefit hit lost (its
# relevant node ranked 7th, reached by words only).
LEAD_BACKED = 1.4
# A leader with no edge to the anchor is shown only when the anchor is unsure: the question reaches it
# by one signal, the other under UNSURE_BELOW. On the two dev sets (MiniLM) a leader linked to the
# anchor was relevant or near 32 times of 36, an unlinked one 10 of 29; the unlinked good ones carry a
# hit where the anchor is weak ("see which prompt produced a bad answer": Request logging beside
# Prompt versioning, text 0.56). Demo dev probes: precision 0.921 -> 0.938, filler 0.073 -> 0.057, no
# hit lost; goal/benefit dev: 0.757 -> 0.773, 0.210 -> 0.190, 3 hits of 94 lost (their relevant node
# was an unlinked leader beside a sure anchor). Requiring the link always: 2 demo hits lost.
UNSURE_BELOW = 0.6
# The anchor: of the top ANCHOR_POOL hits scoring ANCHOR_RATIO of the top or more, the one the question
# itself reaches most (``_direct``). The top hit is often there on graph and intent signals carried
# from its neighbours ("embeddings endpoint" -> the messages API, ahead of the Embeddings API that
# leads both text and embedding). Dev sets: goal/benefit precision 0.653 -> 0.714, filler 0.321 ->
# 0.257, one hit of 94 lost; demo probes unchanged (0.953 / 0.907 -> 0.909 / 0.089 -> 0.090). The
# solution signal at 0.5: 0 -> 0.5 took goal/benefit filler 0.263 -> 0.257 at no cost; at 1.0 a demo
# probe hit was lost. The routed methods (want_to, can_it, ...) tell nothing here: preferring a hit a
# routed method returned changed no answer (the top hit always had one when any did).
ANCHOR_POOL, ANCHOR_RATIO, SOLUTION_WEIGHT = 3, 0.6, 0.5
# A leader further down joins the pool (and is the anchor when the question reaches it more directly)
# unless it is a goal or benefit (OUTCOMES: what the question wants, not a way to it). "spend fewer
# tokens on tool definitions": Tool definition token overhead (4th, text 0.77, embedding 1.0) instead
# of Token savings and four generic ways to save tokens. Demo dev probes (after the leader rule above):
# filler 0.057 -> 0.045, precision 0.938 -> 0.950, no hit lost (goal/benefit leaders too: 1 lost); goal/
# benefit dev unchanged. A plain pool of 4: 1 demo hit lost, filler 0.051.
OUTCOMES = ("goal", "benefit")
# The KG covers the question when the query's best cosine with a ranked node (TurnContext.closest)
# reaches this, per embedder: MiniLM, the 180 dev probes' lowest is 0.273, the 20 off-topic
# questions' highest 0.249 (benchmarks/answers.py), so the cut is between them (0 of 20 cited, no
# probe lost; held-out probes, not used to choose it, start at 0.419). The hash embedder's
# ranges overlap (dev probes from 0.157, off-topic up to 0.334): it has no cut, words decide alone.
MIN_COSINE = {"minilm-l6-int8": 0.26}
# A playbook tip is shown when the question's cosine with its heading + first sentence reaches this
# (per embedder; the tip is the playbooks' BM25 top section). Calibrated on the dev probes' tip labels
# (src/kgos/data/demo/probes-tips.json, labelled before any rule was tuned; held-out sets never used):
# MiniLM, 180 dev questions, 34 with a fitting candidate: the keyword rule (the tip shares a stemmed
# word with the anchor's name) showed 59 tips, 23 fitting (precision 0.39, recall 0.68); at 0.40, 30
# tips, 21 fitting (0.70 / 0.62; 0.41: 0.71 / 0.59; the best-cosine candidate instead of the BM25
# top: 0.64 / 0.68). Hash: keyword 0.36 / 0.62, 0.27 here 0.64 / 0.41 (its cosines barely separate
# fitting tips: none above 0.55 precision at the keyword's recall). Heading + whole section text
# measured no better (MiniLM 0.65 / 0.65 at best). Another model: no cut measured, no tip shown.
TIP_MIN_COSINE = {"minilm-l6-int8": 0.40, "hash-512": 0.27}

# how a linked node bears on the anchor: (edge type, the anchor's side) -> (group, label); groups
# give the note's order: what to do first, then what it needs, its limits, alternatives, effects
ROLES = {
    ("implements", "target"): ("How", "Way to do it"), ("optimizes", "target"): ("How", "Way to get there"),
    ("contributes_to", "target"): ("How", "Way to get there"), ("reduces", "target"): ("How", "Reduces it"),
    ("enables", "target"): ("How", "Enabled by"), ("solves", "target"): ("How", "Fix"),
    ("fixes", "target"): ("How", "Fix"), ("has_workaround", "source"): ("How", "Workaround"),
    ("requires", "source"): ("Prerequisite", "Needs"), ("depends_on", "source"): ("Prerequisite", "Needs"),
    ("prerequisite_of", "target"): ("Prerequisite", "Needs"),
    ("has_limitation", "source"): ("Limitation", "Limitation"), ("conflicts_with", "source"): ("Limitation", "Conflicts with"),
    ("conflicts_with", "target"): ("Limitation", "Conflicts with"),
    ("alternative_to", "source"): ("Alternative", "Alternative"), ("alternative_to", "target"): ("Alternative", "Alternative"),
    ("similar_to", "source"): ("Alternative", "Similar"), ("similar_to", "target"): ("Alternative", "Similar"),
    ("enables", "source"): ("Gives", "Enables"), ("contributes_to", "source"): ("Gives", "Contributes to"),
    ("optimizes", "source"): ("Gives", "Improves"), ("reduces", "source"): ("Gives", "Reduces"),
    ("fixes", "source"): ("Gives", "Fixes"), ("solves", "source"): ("Gives", "Solves"),
    ("causes", "source"): ("Gives", "Can cause"), ("causes", "target"): ("Limitation", "Caused by"),
    ("has_limitation", "target"): ("Related", "A limitation of"), ("has_workaround", "target"): ("Related", "Works around a limit of"),
    ("requires", "target"): ("Related", "Needed by"), ("depends_on", "target"): ("Related", "Needed by"),
}
# labels whose node's workarounds are shown with it: the anchor is a limitation of that node, so a
# workaround of the node that the question reaches too (ranked) is the way around the anchor. Dev sets
# (MiniLM): demo probes hit 0.953 -> 0.965, precision 0.925 -> 0.925; goal/benefit hit 0.830 -> 0.840,
# precision 0.768 -> 0.757 (any workaround of the node, also unranked ones: 0.851 and 0.749). The
# workaround must be reached at WORKED_RATIO of the anchor's direct evidence (``_direct``): the 2 that
# were relevant had 0.79 and 0.64, the 5 that were not (a workaround of another limitation of the same
# feature: "Download generated files right after the run" for "the sandbox can't pip install") 0.37-0.55;
# goal/benefit precision 0.783 -> 0.796 with it, no hit lost.
WORKED_AROUND, WORKED_RATIO = ("A limitation of",), 0.6
ORDER = ("How", "Prerequisite", "Limitation", "Alternative", "Gives", "Related", "Also")
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)")
_MARKER = re.compile(r"\[\s*source\s*:", re.IGNORECASE)


def compose(ctx: Any) -> str:
    """The answer for a ``TurnContext``: the answer first, then cited bullets of what bears on it."""
    if not ctx.nodes and not ctx.plan and not ctx.capability:
        return (f"I found nothing in the knowledge graph ({', '.join(ctx.kgs)}) about \u201c{ctx.query}\u201d. "
                "Try naming the feature, tool or goal you have in mind.")
    if off_topic(ctx):
        return _not_covered(ctx)
    cites = {n.id: n.cite for n in reversed(ctx.citable())}
    anchor = _anchor(ctx)
    chosen = _chosen(ctx, anchor)
    restated = anchor is not None and not ctx.capability and _echo(ctx.query, anchor)
    lead = _lead(ctx, cites, anchor, chosen, restated)
    said = _mentioned(ctx, anchor, chosen if restated else [])
    bullets = _bullets(ctx, anchor, [n for n in chosen if n.id not in said], cites)
    tip = skill_tip(ctx, anchor)
    return "\n\n".join(b for b in (lead, "\n".join(bullets), tip, _memory(ctx)) if b)


# -- what the answer is about ------------------------------------------------------------------------
def _anchor(ctx: Any) -> Any:
    """The capability check's node, else the hit near the top (or a leader) that the question reaches most."""
    if not ctx.nodes:
        return None
    if ctx.capability:
        node_id = ctx.capability["node"]["id"]
        return next((n for n in ctx.nodes if n.id == node_id), ctx.nodes[0])
    if len({n.db_id for n in ctx.nodes}) > 1:  # several KGs, or a peer's nodes (federation) beside ours
        kg = _closest_kg(ctx)
        nodes = [n for n in ctx.nodes if n.db_id == kg] if kg else list(ctx.nodes)
        named = next((n for n in nodes[:3] if _restates(ctx.query, n) and not _echo(ctx.query, n)), None)
        return named or (_reached(nodes) if kg else nodes[0])
    return _reached(list(ctx.nodes))


def _reached(nodes: list[Any]) -> Any:
    """Of one KG's ranked nodes, the near-top one (or a leader) that the question reaches most."""
    top = nodes[0]
    pool = [n for i, n in enumerate(nodes) if n.components and n.score >= ANCHOR_RATIO * top.score
            and (i < ANCHOR_POOL or _leads(n, top.score) and n.type not in OUTCOMES)]
    return max(pool, key=_direct) if top.components and pool else top


def _closest_kg(ctx: Any) -> str | None:
    """Several KGs ranked by one embedder: the KG holding the node nearest the question in meaning (the
    signal comparable across KGs; a demo + finance expert answered "embeddings endpoint" from the finance
    KG's Asset location, that KG's own top hit). None when a node's KG has no such figure (a peer's)."""
    by_kg = getattr(ctx, "closest_by_kg", None) or {}
    if not by_kg or any(n.db_id not in by_kg for n in ctx.nodes):
        return None
    return max(by_kg, key=lambda kg: by_kg[kg])


def _direct(node: Any) -> float:
    """How much of a node's score the question itself gives: its words and meaning, and the solution
    hop (a fix of what the question describes), not what the graph carried to it from other hits."""
    c = node.components
    return c.get("text", 0.0) + c.get("embedding", 0.0) + SOLUTION_WEIGHT * c.get("solution", 0.0)


def _leaders(ctx: Any, anchor: Any) -> list[Any]:
    """Up to MAX_LEADERS other nodes that lead a retrieval signal on their own."""
    top, linked, unsure = max(n.score for n in ctx.nodes) or 1.0, _linked(ctx, anchor.id), _unsure(anchor)
    return [n for n in ctx.nodes if n.id != anchor.id and _leads(n, top) and not _echo(ctx.query, n)
            and n.db_id == anchor.db_id and (unsure or n.id in linked)][:MAX_LEADERS]


def _unsure(anchor: Any) -> bool:
    """The question reaches the anchor by one signal only (words or meaning): then a node that leads
    the other may be what was asked, even with no edge to the anchor."""
    c = anchor.components
    return bool(c) and min(c.get(s, 0.0) for s in LEAD_SIGNALS) < UNSURE_BELOW


def _chosen(ctx: Any, anchor: Any) -> list[Any]:
    """The leaders, and the nodes (ranked, or a workaround of a top one) linked to the anchor."""
    if anchor is None:
        return []
    leaders, linked, sure = _leaders(ctx, anchor), _linked(ctx, anchor.id), _sure(ctx, anchor)
    return [n for n in (*ctx.nodes, *ctx.remedies) if n.id != anchor.id and not _echo(ctx.query, n)
            and (n in leaders or n.id in linked and _evidence(n, sure))]


def _echo(query: str, node: Any) -> bool:
    """A goal or benefit whose name the question says ("Reduce taxes" for "How can I reduce my
    taxes?") tells the reader nothing new unless it is what the answer is about."""
    return node.type in OUTCOMES and _restates(query, node)


def _sure(ctx: Any, anchor: Any) -> bool:
    """The anchor leads a retrieval signal, or the next hit scores well below it."""
    second = next((n.score for n in ctx.nodes if n.id != anchor.id), 0.0)
    return (any(anchor.components.get(s, 0.0) >= LEAD_MIN for s in LEAD_SIGNALS)
            or second < SURE_GAP * (anchor.score or 1.0))


def _evidence(node: Any, sure: bool) -> bool:
    """A linked node is shown when the question's words or meaning reach it too (a workaround the
    graph attaches, with no retrieval signals, always is)."""
    if not node.components:
        return True
    text, emb = node.components.get("text", 0.0), node.components.get("embedding", 0.0)
    return text > 0 or (sure and emb >= EMB_MIN)


def _leads(node: Any, top: float) -> bool:
    """It scores near the top, leads the text or the embedding signal, the other one backs it, and the
    graph reaches it from the question's hits (a graph signal of 0: a match of words or gist that
    nothing in the KG ties to the rest of the answer; 13 of 15 such leaders were filler on the dev sets)."""
    c = node.components
    return (node.score >= LEADER_RATIO * top and any(c.get(s, 0.0) >= LEAD_MIN for s in LEAD_SIGNALS)
            and sum(c.get(s, 0.0) for s in LEAD_SIGNALS) >= LEAD_BACKED and c.get("graph", 0.0) > 0)


def _edges(ctx: Any) -> list[Any]:
    """Every edge the turn knows among its nodes (retrieval's and the links between retrieved nodes)."""
    seen, out = set(), []
    for e in (*ctx.edges, *getattr(ctx, "links", ())):
        key = (e.db_id, e.source, e.target, e.type)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def _linked(ctx: Any, node_id: str) -> dict[str, Any]:
    """Node id -> the edge joining it to ``node_id``."""
    out: dict[str, Any] = {}
    for e in _edges(ctx):
        if e.source == node_id:
            out.setdefault(e.target, e)
        elif e.target == node_id:
            out.setdefault(e.source, e)
    return out


def _restates(query: str, node: Any) -> bool:
    """The question says every content word of the node's name ("How do I reduce API costs?")."""
    name = _words(node.name)
    return bool(name) and name <= _words(query)


def _not_covered(ctx: Any) -> str:
    """A plain "the KG does not say", citing nothing. (Naming the nearest node read as nonsense on the
    off-topic set: "How many moons does Jupiter have?" -> "Diversification".)"""
    return (f"The knowledge graph ({', '.join(ctx.kgs)}) has nothing on \u201c{ctx.query}\u201d, so I will not "
            "guess. Try naming the feature, tool or goal you have in mind.")


def off_topic(ctx: Any) -> bool:
    """Only embedding neighbours came back: no retrieved node matches a word or a name of the
    question by the text index, or (a question of two content words or more) none of its words is
    in a retrieved node's name or text. A one-word question ("Langfuse") is left to the embedding,
    which may know the name. Fires on none of the 252 demo and finance probes; on the 20 off-topic
    questions of benchmarks/answers.py (MiniLM) it says so for 12 with the first rule alone, 14
    with both (a text-index match on a word such as "year" or "capital" is not an answer). Before
    both: the query's meaning is far from every ranked node (``MIN_COSINE``, for a calibrated
    embedder), which catches those 6 as well. Nodes without components (a query method's) never count."""
    if ctx.capability or ctx.plan or not ctx.nodes or not all(n.components for n in ctx.nodes):
        return False
    if ctx.closest is not None and ctx.closest < MIN_COSINE.get(ctx.embedder, -1.0):
        return True
    if all(not n.components.get("text") and not n.components.get("name") for n in ctx.nodes):
        return True
    asked = _words(ctx.query)
    return len(asked) >= 2 and not any(asked & _words(f"{n.name} {n.description}") for n in ctx.nodes)


# -- writing it ------------------------------------------------------------------------------------------
def _lead(ctx: Any, cites: dict[str, str], anchor: Any, chosen: list[Any], restated: bool) -> str:
    if ctx.capability:
        return _verdict(ctx.capability, cites)
    if ctx.plan:
        steps = [f"{s.order}. {s.action}: **{inert(s.node.name)}** [Source: {s.node.cite}]" for s in ctx.plan]
        needs = ", ".join(f"**{inert(n.name)}** [Source: {n.cite}]" for n in ctx.plan_needs[:MAX_NEEDS])
        more = len(ctx.plan_needs) - MAX_NEEDS
        needs = f"Needed first (the steps require them): {needs}" + (f" and {more} more." if more > 0 else ".") if needs else ""
        warn = [f"Note: {w}" for w in ctx.plan_warnings]
        return "\n".join([f"A plan in {len(ctx.plan)} steps:", *steps, *([needs] if needs else []), *warn])
    head = f"**{inert(anchor.name)}** [Source: {anchor.cite}]"
    via = _reaching(ctx, anchor, chosen) if restated else []
    fixes = _lead_fixes(ctx, anchor)
    also = [_sentence(n) + (f" Workaround: {_sentence(fixes[n.id])}" if n.id in fixes else "")
            for n in _leaders(ctx, anchor)]
    # each on a line of its own: a reader (and benchmarks/answers.py's filler count) weighs them
    # one by one; folded into the lead's paragraph, the demo dev probes' filler read 0.058, not 0.092
    also = [f"\n- Also matching the question: {a}" for a in also]
    if not via:
        return "".join([_sentence(anchor), *also])
    parts = [f"**{inert(n.name)}** [Source: {n.cite}] ({verb} it)" for n, verb in via]
    return "".join([f"{head}: the graph's answer is " + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "")
                     + parts[-1] + ".", *also])


def _lead_fixes(ctx: Any, anchor: Any) -> dict[str, Any]:
    """Leader id -> the first node the graph gives as its workaround or fix, when the lead does not
    show that node already. (Only for limitations and risks: precision 0.653 -> 0.668 on the goal/
    benefit dev probes but 2 hits of 94 lost, the workaround of a feature being the answer.)"""
    nodes = {n.id: n for n in ctx.citable()}
    leaders = _leaders(ctx, anchor)
    said = {anchor.id, *(n.id for n in leaders)}
    out: dict[str, Any] = {}
    for e in _edges(ctx):
        problem, fix = (e.source, e.target) if e.type == "has_workaround" else (e.target, e.source)
        if (e.type in ("has_workaround", "fixes", "solves") and fix in nodes and fix not in said
                and problem in said and problem != anchor.id and problem not in out):
            out[problem] = nodes[fix]
            said.add(fix)
    return out


def _sentence(node: Any) -> str:
    said = first_sentence(node.description)
    return f"**{inert(node.name)}** [Source: {node.cite}]: {said}" if said else f"**{inert(node.name)}** [Source: {node.cite}]."


def _reaching(ctx: Any, goal: Any, chosen: list[Any]) -> list[tuple[Any, str]]:
    """Up to 3 shown nodes with an edge into the restated goal, and the edge's verb."""
    by_id = {n.id: n for n in chosen}
    out = []
    for e in _edges(ctx):
        if e.target == goal.id and e.source in by_id and all(n.id != e.source for n, _ in out):
            out.append((by_id[e.source], RELATION_VERBS.get(e.type, e.type.replace("_", " "))))
    return out[:3]


def _mentioned(ctx: Any, anchor: Any, chosen: list[Any]) -> set[str]:
    """Nodes the lead already names (the plan's, the verdict's, what reaches a restated goal)."""
    ids = {s.node.id for s in ctx.plan} | {n.id for n in ctx.plan_needs[:MAX_NEEDS]} | {n.id for n in capability_nodes(ctx.capability)}
    if anchor is not None and chosen:  # what reaches a restated goal
        ids |= {n.id for n, _ in _reaching(ctx, anchor, chosen)}
    if anchor is not None:
        ids |= {anchor.id} | {n.id for n in _leaders(ctx, anchor)} | {n.id for n in _lead_fixes(ctx, anchor).values()}
    return ids


def _bullets(ctx: Any, anchor: Any, nodes: list[Any], cites: dict[str, str]) -> list[str]:
    """One cited bullet per node, labelled by how it bears on the anchor; a problem carries another
    fix the graph gives for it."""
    if anchor is None:
        return []
    links, fixes, works = _linked(ctx, anchor.id), _fixes(ctx, cites), _workarounds(ctx, anchor)
    groups: dict[str, list[str]] = {}
    used = {anchor.id, *(n.id for n in _leaders(ctx, anchor)), *(n.id for n in nodes),  # said once
            *(n.id for n in _lead_fixes(ctx, anchor).values())}
    for n in nodes:
        role, label = _role(links[n.id], anchor.id) if n.id in links else ("Also", "Also matching the question")
        text = f"**{inert(n.name)}** [Source: {n.cite}]: {first_sentence(n.description)}".rstrip(": ")
        fix = next((f for f in (*fixes.get(n.id, ()), *(works.get(n.id, ()) if label in WORKED_AROUND else ()))
                    if f[0] not in used), None)
        if fix is not None:
            used.add(fix[0])
            text += f" {'Workaround' if role == 'Limitation' or label in WORKED_AROUND else 'Also fixed by'}: **{inert(fix[1])}** [Source: {cites[fix[0]]}]."
        groups.setdefault(role, []).append(f"- {label}: {text}")
    return [b for role in ORDER for b in groups.get(role, [])][:MAX_BULLETS]


def _role(edge: Any, anchor_id: str) -> tuple[str, str]:
    side = "source" if edge.source == anchor_id else "target"
    return ROLES.get((edge.type, side), ("Related", "Related"))


def _fixes(ctx: Any, cites: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    """Problem id -> (id, name) of the citable nodes that fix, solve or reduce it."""
    out: dict[str, list[tuple[str, str]]] = {}
    for e in _edges(ctx):
        if e.type in ("fixes", "solves", "reduces") and e.source in cites:
            out.setdefault(e.target, []).append((e.source, e.source_name))
    return out


def _workarounds(ctx: Any, anchor: Any) -> dict[str, list[tuple[str, str]]]:
    """Node id -> (id, name) of its workarounds (``has_workaround``) that the question reached too (ranked,
    the most direct first): a feature's workaround answers the anchor when the anchor is one of the
    feature's limitations. ("switch embedding models with no search downtime": the anchor is the
    limitation "re-embedding", the dual-index workaround hangs off the Embeddings API it limits.)"""
    floor = WORKED_RATIO * _direct(anchor) if anchor.components else 0.0
    ranked = {n.id: n for n in ctx.nodes if n.components and _direct(n) >= floor}
    out: dict[str, list[tuple[str, str]]] = {}
    for e in sorted(_edges(ctx), key=lambda e: -_direct(ranked[e.target]) if e.target in ranked else 0.0):
        if e.type == "has_workaround" and e.target in ranked:
            out.setdefault(e.source, []).append((e.target, e.target_name))
    return out


def _verdict(cap: dict[str, Any], cites: dict[str, str]) -> str:
    node = cap["node"]
    head = {"yes": "Yes", "yes_with_limitations": "Yes, with limitations", "no": "No",
            "unknown": "The graph does not say for sure"}.get(cap["status"], cap["status"])
    lines = [f"{head}: **{inert(node['name'])}** [Source: {cites[node['id']]}]."]
    for lim in cap.get("limitations", []):
        fix = "; ".join(f"{inert(w['name'])} [Source: {cites[w['id']]}]" for w in lim.get("workarounds", []))
        lines.append(f"- Limitation: {inert(lim['node']['name'])} [Source: {cites[lim['node']['id']]}]"
                     + (f" — workaround: {fix}" if fix else " — no known workaround"))
    return "\n".join(lines)


def capability_nodes(cap: Any) -> list[Any]:
    from .context import capability_refs
    return capability_refs(cap)


def skill_tip(ctx: Any, anchor: Any) -> str:
    """The best playbook section (the playbooks' BM25 ranks it first) when it fits the question by
    meaning (``tip_fits``), cited with the anchor: the tip is advice on what the answer is about, and
    a line that cites nothing is not something a reader can check."""
    if not ctx.skills or anchor is None or not tip_fits(ctx.skills[0]):
        return ""
    s = ctx.skills[0]
    return (f"Playbook tip on **{inert(anchor.name)}** [Source: {anchor.cite}] ({inert(s.playbook)} \u203a {inert(s.heading)}): "
            f"{first_sentence(s.text)}")


def tip_fits(skill: Any) -> bool:
    """The question's cosine with the section's heading and first sentence reaches the cut calibrated
    for the model that measured it (``TIP_MIN_COSINE``); an unmeasured tip, or one measured by a
    model with no cut, is not shown."""
    fit = getattr(skill, "fit", None)
    return fit is not None and fit >= TIP_MIN_COSINE.get(getattr(skill, "embedder", ""), float("inf"))


def _memory(ctx: Any) -> str:
    asked = " ".join(ctx.query.lower().split())
    said = [first_sentence(m).rstrip(".") for m in ctx.recalled[:2] if " ".join(m.lower().split()) != asked]
    return "You mentioned before: " + "; ".join(f"\u201c{s}\u201d" for s in said) + "." if said else ""


def inert(text: str) -> str:
    """Node text is data: a "[Source: ...]" written in a name or a description is quoted, never a
    citation of the answer (an instruction in it is just more text: nothing here follows text)."""
    return _MARKER.sub("(quoted source:", " ".join((text or "").split()))


def first_sentence(text: str) -> str:
    text = inert(text)
    m = _FIRST_SENTENCE.match(text)
    return m.group(1) if m else text


def _words(text: str) -> set[str]:
    from ..index.text import STOPWORDS, make_stemmer, tokenize
    if _STEM[0] is None:
        _STEM[0] = make_stemmer("porter")
    stem = _STEM[0]
    return {stem(t) for t in tokenize(text) if t not in STOPWORDS}


_STEM: list[Any] = [None]
