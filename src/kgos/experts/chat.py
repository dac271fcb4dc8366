"""``ExpertChat``: one chat turn through the 8 stages of spec/000 sections 3 and 9, as a stream of
the SSE events spec/000 section 10 lists (conversation_start, injection_meta, sources, token,
error, done).

``start`` runs the stages that can fail on bad input — 1 INTAKE (expert, query, conversation,
history), 2 MEMORY recall filtered by the expert, 3 SKILL injection from the expert's playbooks,
4 CONTEXT assembly — so a caller can answer 4xx before any event is sent. ``events`` then runs
5 INFERENCE, 6 TOOL EXEC (when the provider and the expert allow it), 7 STREAM and 8 PERSIST.
Persisting always happens, also after a provider error or a cancelled stream (the partial answer
is kept with ``interrupted: true``).

Workspace access happens under ``lock`` (the HTTP server shares one workspace between threads);
the model is streamed outside it.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, KGNotFound, KGOSError
from ..llm.base import ChatProvider, Message, ProviderError, ToolCall
from ..llm.usage import Usage
from ..llm.usage import complete as complete_usage
from ..memory.pii import redact_secrets
from .ab import ABService
from .citations import check_citations
from .config import Expert
from .context import TurnContext, assemble_prompt, retrieve
from .federation import FederationConfig, ask_peer, delegates_due, remote_sources
from .learning import learn
from .playbooks import PlaybookLibrary, with_fit
from .service import ExpertService
from .store import check_id
from .tools import ToolOutcome, run_tool, tool_specs

if TYPE_CHECKING:
    from ..kg import Workspace
    from ..memory import MemoryService

log = logging.getLogger(__name__)
MAX_QUERY_CHARS = 8_000
MAX_HISTORY_MESSAGES = 20
ROLE_ALIASES = {"user": "user", "assistant": "assistant", "model": "assistant"}


@dataclass(frozen=True)
class Turn:
    """A prepared turn: who answers, in which conversation, grounded on what."""

    expert: Expert
    conversation_id: str
    query: str
    history: tuple[Message, ...]
    context: TurnContext
    provider: ChatProvider
    #: the public name of this question and its answer (feedback is keyed by it; /v1 ids carry it)
    turn_id: str = field(default_factory=lambda: new_turn_id())
    variant: dict[str, str] | None = None  # {test, variant} when an A/B test chose the config
    federation: tuple[dict[str, Any], ...] = ()  # provenance of each remote expert asked
    started: float = field(default_factory=time.monotonic)


def new_turn_id() -> str:
    return f"turn_{uuid.uuid4().hex[:20]}"


def new_conversation_id() -> str:
    return f"conv_{uuid.uuid4().hex[:16]}"


@dataclass
class _Answer:
    text: list[str] = field(default_factory=list)
    tools: list[ToolOutcome] = field(default_factory=list)
    error: str | None = None
    error_status: int = 502
    interrupted: bool = False
    usage: Usage | None = None  # what the provider reported (summed over tool rounds)


def check_history(history: Sequence[Any] | None) -> tuple[Message, ...]:
    """Request history ({role: user|assistant|model, content}) as Messages, newest last, capped."""
    out = []
    for i, item in enumerate(history or ()):
        role = item.get("role") if isinstance(item, dict) else getattr(item, "role", None)
        content = item.get("content") if isinstance(item, dict) else getattr(item, "content", None)
        if role not in ROLE_ALIASES or not isinstance(content, str):
            raise InvalidArgument(f"history[{i}] must be {{role: user|assistant|model, content: text}}")
        out.append(Message(ROLE_ALIASES[role], content[:MAX_QUERY_CHARS]))
    return tuple(out[-MAX_HISTORY_MESSAGES:])


class ExpertChat:
    def __init__(self, workspace: Workspace, provider: ChatProvider, *, lock: Any = None,
                 memory: MemoryService | None = None, use_memory: bool = True, max_tokens: int = 1024,
                 timeout: float = 60.0, max_tool_rounds: int = 3, federation: FederationConfig | None = None,
                 delegate: bool = True) -> None:
        self.ws = workspace
        self.provider = provider
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.experts = ExpertService(workspace)
        self.playbooks = PlaybookLibrary(workspace.home)
        self._memory, self.use_memory = memory, use_memory
        self.max_tokens, self.timeout, self.max_tool_rounds = max_tokens, timeout, max_tool_rounds
        self.federation, self.delegate = federation, delegate

    @property
    def memory(self) -> MemoryService:
        if self._memory is None:
            from ..memory import MemoryService
            self._memory = MemoryService(self.ws)
        return self._memory

    # -- stages 1-4 ------------------------------------------------------------------------------------
    def start(self, expert_id: str, query: str, *, conversation_id: str | None = None,
              history: Sequence[Any] | None = None, provider: ChatProvider | None = None) -> Turn:
        """Intake, memory, skills and context; raises a KGOSError (a 4xx) on bad input."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgument("query must be a non-empty question")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidArgument(f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
        given = check_history(history) if history is not None else None
        started = time.monotonic()
        with self.lock:
            expert = self.experts.get(expert_id)
            self._check_kgs(expert)
            # the id is chosen before retrieval: an A/B test picks the conversation's variant by it
            cid = check_id(conversation_id, "conversation_id") if conversation_id else new_conversation_id()
            expert, variant = self._variant(expert, cid)
            ctx = self._recall(retrieve(self.ws, expert.config, query.strip()), expert)
            cid, _ = self.experts.store.open_conversation(expert.id, cid)  # after what can fail
            past = given if given is not None else self._stored_history(expert.id, cid)
        ctx, remote = self._delegate(expert, query.strip(), ctx)  # network: outside the workspace lock
        skills = self.playbooks.relevant(query, expert.config.playbook_skills)
        with self.lock:  # the KG's engine embeds the tips (as retrieval, under the workspace lock)
            ctx = replace(ctx, skills=with_fit(self.ws, ctx.kgs, ctx.embedder, query, skills))
        ctx = replace(ctx, system_prompt=assemble_prompt(expert.config, ctx))
        return Turn(expert, cid, query.strip(), past, ctx, provider or self.provider, variant=variant,
                    started=started, federation=remote)

    def _delegate(self, expert: Expert, query: str, ctx: TurnContext) -> tuple[TurnContext, tuple[dict[str, Any], ...]]:
        """Ask the remote experts the config names (docs/learning.md); their sources join the context."""
        due = delegates_due(expert.config.delegate, len(ctx.nodes)) if self.delegate else []
        if not due:
            return ctx, ()
        cfg = self.federation or FederationConfig.from_env()
        answers = [ask_peer(cfg, d.peer, d.expert, query) for d in due]
        nodes = [n for a in answers if not a.error for n in remote_sources(a)]
        notes = [f"peer {a.peer}/{a.expert}: {a.error} (answered locally)" for a in answers if a.error]
        merged = tuple(sorted((*ctx.nodes, *nodes), key=lambda n: -n.score))
        return replace(ctx, nodes=merged, notes=(*ctx.notes, *notes)), tuple(a.provenance() for a in answers)

    def _variant(self, expert: Expert, cid: str) -> tuple[Expert, dict[str, str] | None]:
        """The expert as the conversation's A/B variant configures it (itself when no test runs)."""
        ab = ABService(self.ws)
        test = ab.active(expert.id)
        if test is None:
            return expert, None
        chosen = ab.assign(test, cid)
        return ab.apply(expert, chosen), {"test": test.id, "variant": chosen.name}

    def _check_kgs(self, expert: Expert) -> None:
        missing = [d for d in expert.config.kgs if not self.ws.exists(d)]
        if missing:
            raise KGNotFound(f"expert '{expert.id}' answers from KG(s) {', '.join(missing)}, which no longer "
                             f"exist; import them again or update the expert's kg_db_id")

    def _stored_history(self, expert_id: str, cid: str) -> tuple[Message, ...]:
        conv = self.experts.store.conversation(expert_id, cid)
        msgs = [Message(m.role, m.content) for m in conv.messages if m.role in ("user", "assistant") and m.content]
        return tuple(msgs[-MAX_HISTORY_MESSAGES:])

    def _recall(self, ctx: TurnContext, expert: Expert) -> TurnContext:
        """Stage 2: this expert's memories only (spec/000 section 9); memory failures never fail a turn."""
        if not self.use_memory:
            return ctx
        try:
            hits = self.memory.recall(ctx.query, limit=3, expert_id=expert.id)
            block = self.memory.context(ctx.query, expert_id=expert.id)
        except (KGOSError, sqlite3.Error) as exc:
            log.warning("memory recall skipped: %s", exc)
            return replace(ctx, notes=(*ctx.notes, f"memory unavailable: {exc}"))
        return replace(ctx, recalled=tuple(h.memory.content for h in hits), memory=block.text)

    # -- stages 5-8 ------------------------------------------------------------------------------------
    def events(self, turn: Turn, cancel: threading.Event | None = None) -> Iterator[dict[str, Any]]:
        """The SSE events of the turn. Persists in ``finally``, so a closed generator still saves."""
        cancel = cancel or threading.Event()
        ctx, answer = turn.context, _Answer()
        yield {"type": "conversation_start", "conversation_id": turn.conversation_id, "turn_id": turn.turn_id}
        yield {"type": "injection_meta", "memories": bool(ctx.recalled or ctx.memory), "skills": bool(ctx.skills),
               "kg_nodes": len(ctx.nodes)}
        # edges, plan and workarounds are additions to spec/000's sources event: the trace's "edges
        # followed", "composition plan", and the workarounds the KG gives for the top hits that
        # retrieval did not rank (citable; clients that read only ``nodes`` are unaffected)
        yield {"type": "sources", "nodes": [n.to_dict() for n in ctx.nodes], "edges": [e.to_dict() for e in ctx.edges],
               "plan": [s.to_dict() for s in ctx.plan], "plan_warnings": list(ctx.plan_warnings),
               "workarounds": [n.to_dict() for n in ctx.remedies]}
        done: dict[str, Any] = {"type": "done", "conversation_id": turn.conversation_id, "turn_id": turn.turn_id}
        try:
            yield from self._infer(turn, answer, cancel)
        except GeneratorExit:
            answer.interrupted = True
            raise
        finally:
            answer.interrupted = answer.interrupted or cancel.is_set()
            done.update(self._persist(turn, answer))
        if answer.error:
            yield {"type": "error", "content": answer.error, "status": answer.error_status}
        done.update(_usage(turn, answer))
        yield done

    def _infer(self, turn: Turn, answer: _Answer, cancel: threading.Event) -> Iterator[dict[str, Any]]:
        messages = [*turn.history, Message("user", turn.query)]
        tools = tool_specs() if turn.expert.config.tools and turn.provider.supports_tools else None
        for _ in range(self.max_tool_rounds + 1):  # at most max_tool_rounds rounds of calls, then an answer
            calls: list[ToolCall] = []
            try:
                for item in turn.provider.stream(messages, system=turn.context.system_prompt, max_tokens=self.max_tokens,
                                                 timeout=self.timeout, tools=tools, cancel=cancel,
                                                 grounding=turn.context):
                    if cancel.is_set():
                        return
                    if isinstance(item, ToolCall):
                        calls.append(item)
                    elif isinstance(item, Usage):
                        answer.usage = item if answer.usage is None else answer.usage.plus(item)
                    elif item:
                        answer.text.append(item)
                        yield {"type": "token", "content": item}
            except ProviderError as exc:
                answer.error, answer.error_status = f"the model provider failed: {exc}", exc.status
                return
            except Exception as exc:
                log.exception("provider %s crashed", turn.provider.name)
                answer.error = f"the model provider failed unexpectedly ({type(exc).__name__}); see the server log"
                return
            if not calls:
                return
            messages += self._run_tools(turn, calls, answer)

    def _run_tools(self, turn: Turn, calls: list[ToolCall], answer: _Answer) -> list[Message]:
        with self.lock:
            outcomes = [run_tool(self.ws, turn.expert.config.kgs, c) for c in calls]
        answer.tools += outcomes
        said = "".join(answer.text)
        return [Message("assistant", said, tool_calls=tuple(calls)),
                *(Message("tool", o.content, tool_call_id=o.call.id, name=o.call.name) for o in outcomes)]

    def _persist(self, turn: Turn, answer: _Answer) -> dict[str, Any]:
        """Stage 8: both messages in one transaction, the user's turn into memory."""
        text = "".join(answer.text)
        ctx = turn.context
        shown = [*ctx.citable(), *(n for o in answer.tools for n in o.nodes)]
        report = check_citations(text, shown)
        meta = _metadata(turn, answer, report.to_dict())
        try:
            with self.lock:
                # API keys pasted into a chat are not kept in the transcript (nor, via memory, anywhere).
                ids = self.experts.store.add_messages(turn.conversation_id, [
                    ("user", redact_secrets(turn.query), {}), ("assistant", redact_secrets(text), meta)],
                    turn_id=turn.turn_id)
                self._remember(turn)
                learned = self._learn(turn)
        except (KGOSError, sqlite3.Error) as exc:
            log.error("could not save conversation %s: %s", turn.conversation_id, exc)
            return {"citations": report.to_dict(), "saved": False}
        return {"message_id": ids[-1], "citations": report.to_dict(), "unknown_citations": list(report.unknown),
                "interrupted": answer.interrupted, "learned": learned}

    def _learn(self, turn: Turn) -> list[dict[str, Any]]:
        """What the user stated that the expert's KGs lack, proposed for review; never fails a turn."""
        if not turn.expert.config.learn_from_conversations:
            return []
        evidence = {"turn_id": turn.turn_id, "conversation_id": turn.conversation_id, "expert_id": turn.expert.id}
        out: list[dict[str, Any]] = []
        for db_id in turn.expert.config.kgs:
            try:
                report = learn(self.ws.kg(db_id), turn.query, evidence)
            except Exception as exc:  # noqa: BLE001 - learning is a side effect: it never fails a saved turn
                log.warning("turn saved, but nothing learned from it in %s: %s: %s", db_id, type(exc).__name__, exc)
                continue
            out += [{"kg": db_id, **x.to_dict()} for x in report.learned]
        return out

    def _remember(self, turn: Turn) -> None:
        if not self.use_memory:
            return
        try:
            self.memory.remember_turn(turn.conversation_id, "user", turn.query, expert_id=turn.expert.id,
                                      metadata={"kg_db_id": turn.expert.config.primary_kg})
        except (KGOSError, sqlite3.Error) as exc:
            log.warning("turn saved, but not remembered: %s", exc)


def _usage(turn: Turn, answer: _Answer) -> dict[str, Any]:
    """The done event's ``usage`` and ``finish_reason`` (OpenAI's words): counts the provider did not
    report are counted with ``llm.usage.TOKENIZER`` over the system prompt, history, question and answer."""
    prompt = [turn.context.system_prompt or "", *(m.content for m in turn.history), turn.query]
    usage = complete_usage(answer.usage, prompt, "".join(answer.text))
    return {"usage": usage.to_dict(), "finish_reason": usage.finish_reason}


def _metadata(turn: Turn, answer: _Answer, citations: dict[str, Any]) -> dict[str, Any]:
    """spec/000 section 9 stage 8: kg_nodes_used, intent, retrieval_scores, plus what happened."""
    ctx, cfg = turn.context, turn.expert.config
    meta: dict[str, Any] = {
        "expert_id": turn.expert.id, "kg_db_id": cfg.primary_kg, "kg_db_ids": list(cfg.kgs),
        "intent": ctx.intent, "goal_mapping": ctx.goal,
        "kg_nodes_used": [n.id for n in ctx.nodes],
        "retrieval_scores": {n.id: round(n.score, 4) for n in ctx.nodes},
        "retrieval_components": {n.id: {k: round(v, 4) for k, v in n.components.items()} for n in ctx.nodes},
        "edges_followed": [e.to_dict() for e in ctx.edges], "composition_plan": [s.to_dict() for s in ctx.plan],
        "sources": [n.cite for n in ctx.nodes], "workarounds": [n.cite for n in ctx.remedies], "skills": [f"{s.playbook}#{s.heading}" for s in ctx.skills],
        "memories": len(ctx.recalled), "provider": turn.provider.name, "citations": citations,
        "interrupted": answer.interrupted, "latency_ms": round((time.monotonic() - turn.started) * 1000, 1),
    }
    if turn.variant:
        meta["ab"] = dict(turn.variant)
    if turn.federation:
        meta["federation"] = list(turn.federation)
    if answer.tools:
        meta["tool_calls"] = [o.to_dict() for o in answer.tools]
    if answer.error:
        meta["error"] = answer.error
    return meta

