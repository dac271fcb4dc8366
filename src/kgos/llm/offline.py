"""The offline default provider: a grounded, extractive answer composed from one turn's retrieved
nodes, edges, capability check and composition plan, with ``[Source: kg:node]`` citations. No model,
no network, deterministic: the same context always gives the same answer.

It answers only from the ``grounding`` an expert turn passes (``kgos.experts.context.TurnContext``);
without one it says what it needs instead of inventing anything.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from .base import ChatProvider, Message, StreamItem, ToolSpec
from .usage import TOKENIZER, Usage, count_tokens

RELATION_VERBS = {
    "requires": "requires", "depends_on": "depends on", "has_limitation": "is limited by",
    "has_workaround": "can be worked around with", "fixes": "fixes", "enables": "enables",
    "alternative_to": "is an alternative to", "conflicts_with": "conflicts with", "feeds_into": "feeds into",
    "reduces": "reduces", "contributes_to": "contributes to", "optimizes": "optimizes", "implements": "implements",
    "prerequisite_of": "is a prerequisite of", "causes": "causes", "solves": "solves",
}
MAX_NODES = 5
MAX_RELATIONS = 5
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)")


class OfflineProvider(ChatProvider):
    name = "offline"
    supports_tools = False

    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0, tools: Sequence[ToolSpec] | None = None,
               cancel: threading.Event | None = None, grounding: Any = None) -> Iterator[StreamItem]:
        text = compose(grounding) if grounding is not None else NO_GROUNDING
        said = _limit_words(text, max_tokens)
        for piece in _pieces(said):
            if cancel is not None and cancel.is_set():
                return
            yield piece
        # no service counts for us: the prompt it was given and the answer, by the stated tokenizer
        prompt = sum(count_tokens(m.content) for m in messages) + count_tokens(system or "")
        yield Usage(prompt, count_tokens(said), "length" if said != text else "stop", TOKENIZER)


NO_GROUNDING = ("The offline provider answers only from a knowledge-graph context, and none was given. "
                "Ask through an expert (kgos expert chat, POST /api/experts/{id}/chat), or configure a model "
                "provider (KGOS_LLM_PROVIDER).")


def compose(ctx: Any) -> str:
    """The answer for a ``TurnContext``: verdict or plan first, then the top nodes, their relations,
    memory and playbook tips — every claim about a node followed by its citation."""
    if not ctx.nodes and not ctx.plan and not ctx.capability:
        return (f"I found nothing in the knowledge graph ({', '.join(ctx.kgs)}) about \u201c{ctx.query}\u201d. "
                "Try naming the feature, tool or goal you have in mind.")
    cites = _cite_map(ctx)
    blocks = [_lead(ctx, cites)]
    shown = {s.node.id for s in ctx.plan} | ({ctx.capability["node"]["id"]} if ctx.capability else set())
    rest = [n for n in ctx.nodes if n.id not in shown][:MAX_NODES]
    if rest:
        blocks.append("\n".join(f"- **{n.name}** ({n.type.replace('_', ' ')}): {_first_sentence(n.description)} "
                                f"[Source: {n.cite}]".replace(":  [", ": [") for n in rest))
    blocks += [b for b in (_relations(ctx, cites), _memory(ctx), _skills(ctx)) if b]
    return "\n\n".join(b for b in blocks if b)


def _cite_map(ctx: Any) -> dict[str, str]:
    return {n.id: n.cite for n in reversed(ctx.citable())}


def _lead(ctx: Any, cites: dict[str, str]) -> str:
    if ctx.capability:
        return _verdict(ctx.capability, cites)
    if ctx.plan:
        steps = [f"{s.order}. {s.action}: **{s.node.name}** [Source: {s.node.cite}]" for s in ctx.plan]
        warn = [f"Note: {w}" for w in ctx.plan_warnings]
        return "\n".join([f"A plan in {len(ctx.plan)} steps:", *steps, *warn])
    return f"From the knowledge graph, for \u201c{ctx.query}\u201d:"


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


def _relations(ctx: Any, cites: dict[str, str]) -> str:
    lines = []
    for e in ctx.edges:
        verb = RELATION_VERBS.get(e.type)
        if verb is None or e.source not in cites or e.target not in cites:
            continue
        lines.append(f"- {e.source_name} {verb} {e.target_name} [Source: {cites[e.source]}; {cites[e.target]}]")
        if len(lines) == MAX_RELATIONS:
            break
    return "How they connect:\n" + "\n".join(lines) if lines else ""


def _memory(ctx: Any) -> str:
    said = [_first_sentence(m).rstrip(".") for m in ctx.recalled[:2]]
    return "You mentioned before: " + "; ".join(f"\u201c{s}\u201d" for s in said) + "." if said else ""


def _skills(ctx: Any) -> str:
    if not ctx.skills:
        return ""
    s = ctx.skills[0]
    return f"Playbook tip ({s.playbook} \u203a {s.heading}): {_first_sentence(s.text)}"


def _first_sentence(text: str) -> str:
    text = " ".join((text or "").split())
    m = _FIRST_SENTENCE.match(text)
    return m.group(1) if m else text


def _limit_words(text: str, max_tokens: int) -> str:
    """Roughly ``max_tokens`` (a word is ~1.3 tokens); cut at a line end where possible."""
    words = text.split(" ")
    budget = max(int(max_tokens / 1.3), 1)
    if len(words) <= budget:
        return text
    cut = " ".join(words[:budget])
    return cut[: cut.rfind("\n")] if "\n" in cut else cut


def _pieces(text: str, words: int = 3) -> Iterator[str]:
    """Stream a few words at a time, keeping the whitespace (the pieces join to ``text``)."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    for i in range(0, len(tokens), words):
        yield "".join(tokens[i:i + words])
