"""The offline expert answer (issue 29, goal 1): a colleague's note written from one turn's grounding
(``TurnContext``), with no model. The answer comes first (the verdict, the plan, or the node the
question is about with what the graph says of it), then only nodes the graph ties to that answer —
what to do, prerequisites, limitations with their workarounds, alternatives — each bullet cited
``[Source: kg:node]``.

What is shown is decided by the graph, not by the score alone. On the demo dev probes (benchmarks/
answers.py) a retrieved node linked by an edge to the top hit is relevant or one hop from a relevant
node 85% of the time; one that is not linked, 16%, while the score ratio to the top hit separates
them hardly at all (0.39 below 0.5 of the top score, 0.64 above 0.8). So the answer is a star
around its anchor (the top hit, or the goal the question restates), plus any node that leads a
retrieval signal on its own (the best text or embedding match), which the top hit may have been
outranked by through the graph alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

RELATION_VERBS = {
    "requires": "requires", "depends_on": "depends on", "has_limitation": "is limited by",
    "has_workaround": "can be worked around with", "fixes": "fixes", "enables": "enables",
    "alternative_to": "is an alternative to", "conflicts_with": "conflicts with", "feeds_into": "feeds into",
    "reduces": "reduces", "contributes_to": "contributes to", "optimizes": "optimizes", "implements": "implements",
    "prerequisite_of": "is a prerequisite of", "causes": "causes", "solves": "solves",
}
MAX_BULLETS = 6
# a node leads a signal when its text or embedding component is the best of the query's hits (1.0
# after normalisation); it is shown next to the anchor when it also scores LEADER_RATIO of the top
LEADER_RATIO = float(__import__("os").environ.get("LR", 0.6))
LEAD_MIN = float(__import__("os").environ.get("LM", 0.999))
SURE_GAP = float(__import__("os").environ.get("SG", 0.8))
EMB_MIN = float(__import__("os").environ.get("EM", 0.0))
TIP_ANCHOR = int(__import__("os").environ.get("TA", 0))
HUBS = int(__import__("os").environ.get("HUBS", 3))
MAX_LEADERS = int(__import__("os").environ.get("ML", 2))
LEAD_SIGNALS = ("text", "embedding")

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
ORDER = ("How", "Prerequisite", "Limitation", "Alternative", "Gives", "Related", "Also")
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)")
_MARKER = re.compile(r"\[\s*source\s*:", re.IGNORECASE)


def compose(ctx: Any) -> str:
    """The answer for a ``TurnContext``: the answer first, then cited bullets of what bears on it."""
    if not ctx.nodes and not ctx.plan and not ctx.capability:
        return (f"I found nothing in the knowledge graph ({', '.join(ctx.kgs)}) about \u201c{ctx.query}\u201d. "
                "Try naming the feature, tool or goal you have in mind.")
    if off_topic(ctx):
        return (f"The knowledge graph ({', '.join(ctx.kgs)}) has nothing on \u201c{ctx.query}\u201d: none of the "
                f"{len(ctx.nodes)} nodes closest to it shares a word with the question, so I will not guess. "
                "Try naming the feature, tool or goal you have in mind.")
    cites = {n.id: n.cite for n in reversed(ctx.citable())}
    anchor = _anchor(ctx)
    chosen = _chosen(ctx, anchor)
    restated = anchor is not None and not ctx.capability and _restates(ctx.query, anchor)
    lead = _lead(ctx, cites, anchor, chosen, restated)
    said = _mentioned(ctx, anchor, chosen if restated else [])
    bullets = _bullets(ctx, anchor, [n for n in chosen if n.id not in said], cites)
    tip = skill_tip(ctx, [n for n in [anchor, *chosen] if n is not None])
    return "\n\n".join(b for b in (lead, "\n".join(bullets), tip, _memory(ctx)) if b)


# -- what the answer is about ------------------------------------------------------------------------
def _anchor(ctx: Any) -> Any:
    """The capability check's node, else the top hit."""
    if not ctx.nodes:
        return None
    if ctx.capability:
        node_id = ctx.capability["node"]["id"]
        return next((n for n in ctx.nodes if n.id == node_id), ctx.nodes[0])
    return ctx.nodes[0]


def _leaders(ctx: Any, anchor: Any) -> list[Any]:
    """Up to MAX_LEADERS other nodes that lead a retrieval signal on their own."""
    top = max(n.score for n in ctx.nodes) or 1.0
    return [n for n in ctx.nodes if n.id != anchor.id and _leads(n, top)][:MAX_LEADERS]


def _chosen(ctx: Any, anchor: Any) -> list[Any]:
    """The leaders, and retrieved nodes linked to the anchor or to a leader, in rank order."""
    if anchor is None:
        return []
    hubs = [anchor, *_leaders(ctx, anchor)]
    linked = {x for h in hubs[:HUBS] for x in _linked(ctx, h.id)}
    sure = _sure(ctx, anchor)
    return [n for n in (*ctx.nodes, *ctx.remedies) if n.id != anchor.id
            and (n in hubs or n.id in linked and _evidence(n, sure))]


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
    return node.score >= LEADER_RATIO * top and any(node.components.get(s, 0.0) >= LEAD_MIN for s in LEAD_SIGNALS)


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


def off_topic(ctx: Any) -> bool:
    """No retrieved node matches a word or a name of the question (only embedding neighbours): true
    of 0 of the 180 demo probes and of off-topic questions ("What is the capital of Mongolia?",
    measured with MiniLM and hash vectors). Nodes without components (a query method's) never count."""
    if ctx.capability or ctx.plan or not ctx.nodes or not all(n.components for n in ctx.nodes):
        return False
    return all(not n.components.get("text") and not n.components.get("name") for n in ctx.nodes)


# -- writing it ------------------------------------------------------------------------------------------
def _lead(ctx: Any, cites: dict[str, str], anchor: Any, chosen: list[Any], restated: bool) -> str:
    if ctx.capability:
        return _verdict(ctx.capability, cites)
    if ctx.plan:
        steps = [f"{s.order}. {s.action}: **{s.node.name}** [Source: {s.node.cite}]" for s in ctx.plan]
        warn = [f"   Note: {w}" for w in ctx.plan_warnings]
        return "\n".join([f"A plan in {len(ctx.plan)} steps:", *steps, *warn])
    head = f"**{anchor.name}** [Source: {anchor.cite}]"
    via = _reaching(ctx, anchor, chosen) if restated else []
    fixes = _remedy_of(ctx)
    also = [_sentence(n) + (f" {fixes[n.id]}" if n.id in fixes else "") for n in _leaders(ctx, anchor)]
    if not via:
        return " ".join([_sentence(anchor), *also])
    parts = [f"**{n.name}** [Source: {n.cite}] ({verb} it)" for n, verb in via]
    return " ".join([f"{head}: the graph's answer is " + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "")
                     + parts[-1] + ".", *also])


def _remedy_of(ctx: Any) -> dict[str, str]:
    """Node id -> "Workaround: **W** [Source]: what W does." for the first workaround the graph gives."""
    nodes = {n.id: n for n in ctx.citable()}
    out: dict[str, str] = {}
    for e in _edges(ctx):
        problem, fix = (e.source, e.target) if e.type == "has_workaround" else (e.target, e.source)
        if e.type in ("has_workaround", "fixes", "solves") and fix in nodes and problem not in out:
            out[problem] = "Workaround: " + _sentence(nodes[fix])
    return out


def _sentence(node: Any) -> str:
    said = first_sentence(node.description)
    return f"**{node.name}** [Source: {node.cite}]: {said}" if said else f"**{node.name}** [Source: {node.cite}]."


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
    ids = {s.node.id for s in ctx.plan} | {n.id for n in capability_nodes(ctx.capability)}
    if anchor is not None and chosen:  # what reaches a restated goal
        ids |= {n.id for n, _ in _reaching(ctx, anchor, chosen)}
    if anchor is not None:
        ids |= {anchor.id} | {n.id for n in _leaders(ctx, anchor)}
    return ids


def _bullets(ctx: Any, anchor: Any, nodes: list[Any], cites: dict[str, str]) -> list[str]:
    """One cited bullet per node, labelled by how it bears on the anchor (or on the leader it is
    linked to), a limitation carrying the workaround that fixes it."""
    if anchor is None:
        return []
    hubs = [anchor, *_leaders(ctx, anchor)]
    links = {h.id: _linked(ctx, h.id) for h in hubs}
    fixes = _fixes(ctx, cites)
    groups: dict[str, list[str]] = {}
    used: set[str] = {n.id for n in [*hubs, *nodes]}  # a fix shown on its own is not repeated
    for n in nodes:
        hub = next((h for h in hubs if n.id in links[h.id] and h.id != n.id), None)
        role, label = _role(links[hub.id][n.id], hub.id) if hub else ("Also", "Also matching the question")
        label += f" ({hub.name})" if hub is not None and hub is not anchor else ""
        text = f"**{n.name}** [Source: {n.cite}]: {first_sentence(n.description)}".rstrip(": ")
        fix = next((f for f in fixes.get(n.id, ()) if f[0] not in used), None)
        if fix is not None:  # a problem the anchor bears on, with another fix the graph gives for it
            used.add(fix[0])
            text += f" {'Workaround' if role == 'Limitation' else 'Also fixed by'}: **{fix[1]}** [Source: {cites[fix[0]]}]."
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


def _verdict(cap: dict[str, Any], cites: dict[str, str]) -> str:
    node = cap["node"]
    head = {"yes": "Yes", "yes_with_limitations": "Yes, with limitations", "no": "No",
            "unknown": "The graph does not say for sure"}.get(cap["status"], cap["status"])
    lines = [f"{head}: **{node['name']}** [Source: {cites[node['id']]}]."]
    for lim in cap.get("limitations", []):
        fix = "; ".join(f"{w['name']} [Source: {cites[w['id']]}]" for w in lim.get("workarounds", []))
        lines.append(f"- Limitation: {lim['node']['name']} [Source: {cites[lim['node']['id']]}]"
                     + (f" — workaround: {fix}" if fix else " — no known workaround"))
    return "\n".join(lines)


def capability_nodes(cap: Any) -> list[Any]:
    from .context import capability_refs
    return capability_refs(cap)


def skill_tip(ctx: Any, shown: Iterable[Any]) -> str:
    """The best playbook section, only when its heading names a content word of a shown node's name
    (a tip on batching fits an answer showing the Batch API), cited with that node: the tip is
    advice about it, and an answer line that cites nothing is not something a reader can check."""
    if not ctx.skills:
        return ""
    s = ctx.skills[0]
    said = _words(f"{s.heading} {first_sentence(s.text)}")
    shown = list(shown)[:1] if TIP_ANCHOR else shown
    about = next((n for n in shown if _words(n.name) & said), None)
    if about is None:
        return ""
    return (f"Playbook tip on **{about.name}** [Source: {about.cite}] ({s.playbook} \u203a {s.heading}): "
            f"{first_sentence(s.text)}")


def _memory(ctx: Any) -> str:
    asked = " ".join(ctx.query.lower().split())
    said = [first_sentence(m).rstrip(".") for m in ctx.recalled[:2] if " ".join(m.lower().split()) != asked]
    return "You mentioned before: " + "; ".join(f"\u201c{s}\u201d" for s in said) + "." if said else ""


def first_sentence(text: str) -> str:
    # node text is data: a "[Source: ...]" written in it is quoted, never a citation of the answer
    text = _MARKER.sub("(quoted source:", " ".join((text or "").split()))
    m = _FIRST_SENTENCE.match(text)
    return m.group(1) if m else text


def _words(text: str) -> set[str]:
    from ..index.text import STOPWORDS, make_stemmer, tokenize
    if _STEM[0] is None:
        _STEM[0] = make_stemmer("porter")
    stem = _STEM[0]
    return {stem(t) for t in tokenize(text) if t not in STOPWORDS}


_STEM: list[Any] = [None]
