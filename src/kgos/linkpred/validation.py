"""LLM validation of proposals (spec/003 part 2.3, the "R1 validates via reasoning" step).

A provider judges one proposed edge from the two nodes' text and neighbourhoods and answers under a
strict JSON schema ``{"valid": bool, "confidence": 0..1, "reasoning": str}``. The verdict and the
combined confidence are stored on the proposal; nothing is accepted unless the caller's policy says
so (``auto_accept``: a minimum combined confidence). A provider that fails or answers outside the
schema leaves a verdict of None with the error as its reasoning, and never blocks the queue.

Combined confidence: ``(prior + p_llm) / 2`` with ``prior`` the proposal's own confidence (the
calibrated probability of a run's predictions) and ``p_llm = c`` for a "valid" answer of confidence c, ``1 - c`` for "invalid".
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from ..errors import InvalidArgument, KGOSError
from ..llm.base import ChatProvider, Message
from ..store.proposals import Proposal
from .results import Verdict

if TYPE_CHECKING:
    from ..kg import KG

SYSTEM = ("You check proposed edges of a knowledge graph. Judge only from the facts given. Answer with one "
          'JSON object and nothing else: {"valid": true or false, "confidence": a number from 0 to 1, '
          '"reasoning": "one or two sentences"}.')
NEIGHBOURS = 8
DEFAULT_LLM_CONFIDENCE = 0.8
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _describe(kg: KG, node_id: str) -> str:
    node = kg.node(node_id)
    lines = [f"{node.name} (id {node.id}, type {node.type})"]
    if node.description:
        lines.append(f"  description: {node.description[:500]}")
    for nb in kg.neighbors(node_id, limit=NEIGHBOURS):
        arrow = f"-[{nb.edge.type}]-> {nb.node.name}" if nb.direction == "outgoing" else f"<-[{nb.edge.type}]- {nb.node.name}"
        lines.append(f"  {arrow}")
    return "\n".join(lines)


def prompt(kg: KG, p: Proposal) -> str:
    """The question put to the model: both nodes with their neighbourhoods, the relation, and existing
    edges of the same relation (from the prediction's evidence)."""
    examples = p.evidence.get("similar_edges") or []
    shown = "\n".join(f"  {e['source']} -[{p.type}]-> {e['target']}" for e in examples[:3]) or "  (none given)"
    return (f"Proposed edge: {p.source} -[{p.type}]-> {p.target}\n\nSource node:\n{_describe(kg, p.source)}\n\n"
            f"Target node:\n{_describe(kg, p.target)}\n\nExisting edges of the relation '{p.type}':\n{shown}\n\n"
            "Is the proposed edge true?")


def parse(answer: str) -> tuple[bool, float, str]:
    """(valid, confidence, reasoning) from the model's answer; InvalidArgument when it breaks the schema."""
    m = _OBJECT.search(answer or "")
    if m is None:
        raise InvalidArgument("the answer holds no JSON object")
    try:
        data = json.loads(m.group(0))
    except ValueError as exc:
        raise InvalidArgument(f"the answer is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("valid"), bool):
        raise InvalidArgument('the answer has no boolean "valid"')
    reasoning = data.get("reasoning", "")
    if not isinstance(reasoning, str):
        raise InvalidArgument('"reasoning" must be a string')
    conf = data.get("confidence", DEFAULT_LLM_CONFIDENCE)
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
        raise InvalidArgument('"confidence" must be a number from 0 to 1')
    return data["valid"], float(conf), reasoning.strip()


def combined(prior: float, valid: bool, llm_confidence: float) -> float:
    p_llm = llm_confidence if valid else 1.0 - llm_confidence
    return round((min(max(prior, 0.0), 1.0) + p_llm) / 2.0, 6)


def validate(kg: KG, proposal_id: int, provider: ChatProvider, auto_accept: float | None = None,
             timeout: float = 60.0, reviewer: str | None = None) -> Verdict:
    """Ask ``provider`` about one edge proposal and store its verdict on the proposal."""
    if auto_accept is not None and (isinstance(auto_accept, bool) or not 0 <= auto_accept <= 1):
        raise InvalidArgument(f"auto_accept must be a confidence from 0 to 1, not {auto_accept!r}")
    p = kg.proposals.get(proposal_id)
    if p.kind != "edge":
        raise InvalidArgument(f"proposal {p.id} is a node proposal: only edges are validated")
    model = getattr(provider, "name", "provider")
    try:
        answer = provider.complete([Message("user", prompt(kg, p))], system=SYSTEM, max_tokens=400, timeout=timeout)
        valid, conf, reasoning = parse(answer)
    except KGOSError as exc:  # a provider error or an answer outside the schema: recorded, never blocking
        kg.proposals.set_verdict(p.id, None, f"validation failed: {exc}", model, None)
        return Verdict(p.id, None, "", model, None, False, str(exc))
    confidence = combined(p.score, valid, conf)
    kg.proposals.set_verdict(p.id, valid, reasoning, model, confidence)
    accept = valid and auto_accept is not None and confidence >= auto_accept and p.status == "pending"
    if accept:
        kg.proposals.accept(p.id, reviewer=reviewer or f"llm:{model}", note="auto-accepted by policy")
    return Verdict(p.id, valid, reasoning, model, confidence, accept)
