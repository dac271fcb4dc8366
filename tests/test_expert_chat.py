"""The expert chat loop: stages, events, persistence, memory, skills, tools, citations, failures and
cancellation — with the offline provider and a scripted one, on real SQLite."""

from __future__ import annotations

import re
import threading

import pytest
from expert_helpers import ScriptedProvider

import kgos
from kgos.data import load_demo
from kgos.errors import ConversationNotFound, ExpertNotFound, InvalidArgument, KGNotFound
from kgos.experts import ExpertService
from kgos.experts.chat import ExpertChat
from kgos.llm.base import ProviderError, ProviderTimeout, ToolCall
from kgos.llm.offline import OfflineProvider

SPEC_EVENTS = {"conversation_start", "injection_meta", "sources", "token", "error", "done"}


@pytest.fixture
def demo_ws(ws: kgos.Workspace) -> kgos.Workspace:
    load_demo(ws, embedder="hash")
    return ws


def run(chat: ExpertChat, expert: str, query: str, **kw):
    turn = chat.start(expert, query, **kw)
    return turn, list(chat.events(turn))


def text_of(events) -> str:
    return "".join(e["content"] for e in events if e["type"] == "token")


def stored(ws, expert, cid):
    return ExpertService(ws).conversation(expert, cid).messages


def test_offline_answer_streams_cited_and_persisted(demo_ws):
    chat = ExpertChat(demo_ws, OfflineProvider())
    turn, events = run(chat, "demo", "How do I reduce my API costs?")
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["conversation_start", "injection_meta", "sources"] and kinds[-1] == "done"
    assert set(kinds) <= SPEC_EVENTS and kinds.count("token") > 5 and "error" not in kinds
    sources = events[2]["nodes"]
    assert {"id", "name", "type", "score"} <= set(sources[0]) and "feature:batch_api" in [n["id"] for n in sources[:3]]
    answer = text_of(events)
    assert "[Source: demo:feature:batch_api]" in answer
    listed = {n["id"] for n in sources} | {n["id"] for n in events[2]["workarounds"]}
    cited = {ref.strip().split(":", 1)[1] for m in re.finditer(r"\[Source: ([^\]]+)\]", answer) for ref in m.group(1).split(";")}
    assert cited <= listed  # every node the answer cites is in the sources event
    done = events[-1]
    assert done["citations"]["ok"] and done["citations"]["count"] >= 3 and done["unknown_citations"] == []
    user, assistant = stored(demo_ws, "demo", turn.conversation_id)
    assert (user.role, user.content) == ("user", "How do I reduce my API costs?") and assistant.content == answer
    meta = assistant.metadata
    assert meta["kg_nodes_used"] == [n["id"] for n in sources] and meta["intent"] == "cost_optimization"
    assert set(meta["retrieval_scores"]) == set(meta["kg_nodes_used"]) and meta["provider"] == "offline"
    assert done["message_id"] == assistant.id


def test_offline_answer_is_deterministic_and_uses_capability_and_plan(demo_ws):
    chat = ExpertChat(demo_ws, OfflineProvider(), use_memory=False)
    a = text_of(run(chat, "demo", "Can it stream responses?")[1])
    b = text_of(run(chat, "demo", "Can it stream responses?")[1])
    assert a == b and a.startswith("Yes, with limitations: **Streaming responses** [Source: demo:feature:streaming]")
    assert "workaround" in a
    plan = text_of(run(chat, "demo", "read CSV data, analyze trends, and generate a report")[1])
    assert plan.startswith("A plan in 3 steps:") and "[Source: demo:tool:csv_reader]" in plan


def test_nothing_found_gives_no_citation(ws, tmp_path):
    from conftest import write_nodelink
    ws.import_file("tiny", write_nodelink(tmp_path / "t.json", [{"id": "a", "name": "Alpha", "type": "thing"}], []))
    ExpertService(ws).create({"name": "T", "kg_db_id": "tiny"}, id="t")
    _, events = run(ExpertChat(ws, OfflineProvider(), use_memory=False), "t", "zebra quantum xylophone")
    assert "found nothing" in text_of(events) and events[-1]["citations"]["count"] == 0


def test_prompt_has_persona_kg_context_skills_and_history(demo_ws):
    p = ScriptedProvider(["Batching helps [Source: demo:feature:batch_api]."])
    chat = ExpertChat(demo_ws, p)
    turn, _ = run(chat, "demo", "How do I batch work that can wait to cut costs?")
    system = p.calls[0]["system"]
    assert system.startswith("You are Cookbook") and "[Knowledge Graph Context]" in system
    assert "[Playbook Context]" in system and "(cost-optimization > Batch work that can wait)" in system
    assert "tax-planning" not in system  # only the expert's playbooks
    assert p.calls[0]["grounding"] is turn.context
    run(chat, "demo", "And for streaming?", conversation_id=turn.conversation_id)
    second = p.calls[1]["messages"]
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[0].content == "How do I batch work that can wait to cut costs?"
    assert second[1].content == "Batching helps [Source: demo:feature:batch_api]."
    given = run(chat, "demo", "x", conversation_id=turn.conversation_id,
                history=[{"role": "user", "content": "earlier"}, {"role": "model", "content": "reply"}])
    assert [(m.role, m.content) for m in p.calls[2]["messages"]] == [("user", "earlier"), ("assistant", "reply"), ("user", "x")]
    assert ExpertService(demo_ws).conversation("demo", turn.conversation_id).message_count == 6
    assert given[1][-1]["type"] == "done"


def test_memory_is_recalled_only_for_the_same_expert(demo_ws):
    p = ScriptedProvider(["ok"])
    chat = ExpertChat(demo_ws, p)
    run(chat, "demo", "I prefer the batch API for nightly reports about invoices")
    _, events = run(chat, "demo", "what about invoices reports?")
    assert events[1]["memories"] is True
    assert "nightly reports about invoices" in p.calls[1]["system"] and "[Memory]" in p.calls[1]["system"]
    _, other = run(chat, "finance", "what about invoices reports?")
    assert other[1]["memories"] is False and "nightly reports" not in p.calls[2]["system"]
    off = ExpertChat(demo_ws, p, use_memory=False)
    assert run(off, "demo", "invoices reports")[1][1]["memories"] is False


def test_unknown_citations_are_reported(demo_ws):
    p = ScriptedProvider(["Use batching [Source: demo:feature:batch_api] ", "and a warp drive [Source: demo:warp_drive]."])
    turn, events = run(ExpertChat(demo_ws, p, use_memory=False), "demo", "reduce costs")
    done = events[-1]
    assert done["unknown_citations"] == ["demo:warp_drive"] and done["citations"]["valid"] == ["demo:feature:batch_api"]
    meta = stored(demo_ws, "demo", turn.conversation_id)[1].metadata
    assert meta["citations"]["unknown"] == ["demo:warp_drive"] and not meta["citations"]["ok"]


@pytest.mark.parametrize("error", [ProviderError("HTTP 500 from the model"), ProviderTimeout("no answer in 1 s"),
                                   RuntimeError("bug in a provider")])
def test_provider_failure_is_an_error_event_and_partial_answer_is_kept(demo_ws, error):
    p = ScriptedProvider(["First part. ", "Second part."], error=error, error_after=1)
    turn, events = run(ExpertChat(demo_ws, p, use_memory=False), "demo", "reduce costs")
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["error", "done"] and kinds.count("token") == 1
    assert "the model provider failed" in events[-2]["content"]
    assistant = stored(demo_ws, "demo", turn.conversation_id)[1]
    assert assistant.content == "First part. " and "failed" in assistant.metadata["error"]


def test_cancel_stops_generation_and_still_saves(demo_ws):
    cancel = threading.Event()
    p = ScriptedProvider([f"piece{i} " for i in range(50)], delay=0.01)
    chat = ExpertChat(demo_ws, p, use_memory=False)
    turn = chat.start("demo", "reduce costs")
    seen = []
    for e in chat.events(turn, cancel):
        seen.append(e)
        if sum(x["type"] == "token" for x in seen) == 3:
            cancel.set()
    assert sum(x["type"] == "token" for x in seen) == 3 and seen[-1]["type"] == "done" and seen[-1]["interrupted"]
    assert p.stopped.is_set()
    assistant = stored(demo_ws, "demo", turn.conversation_id)[1]
    assert assistant.content == "piece0 piece1 piece2 " and assistant.metadata["interrupted"] is True


def test_closing_the_stream_early_still_saves(demo_ws):
    chat = ExpertChat(demo_ws, ScriptedProvider(["a ", "b ", "c "]), use_memory=False)
    turn = chat.start("demo", "reduce costs")
    gen = chat.events(turn)
    for e in gen:
        if e["type"] == "token":
            break
    gen.close()
    assistant = stored(demo_ws, "demo", turn.conversation_id)[1]
    assert assistant.content == "a " and assistant.metadata["interrupted"] is True


def test_tools_run_kg_methods_and_their_nodes_become_citable(demo_ws):
    p = ScriptedProvider(
        [ToolCall("c1", "can_it", {"capability": "stream responses"}), ToolCall("c2", "trace_path", {"source": "nope", "target": "x"})],
        [("Streaming works [Source: demo:feature:streaming] but JSON arrives incomplete "
          "[Source: demo:limitation:partial_json_while_streaming].")], tools=True)
    turn, events = run(ExpertChat(demo_ws, p, use_memory=False), "demo", "tell me about pricing")
    assert len(p.calls) == 2 and p.calls[0]["tools"] and {t.name for t in p.calls[0]["tools"]} >= {"search_kg", "can_it"}
    msgs = p.calls[1]["messages"]
    assert msgs[-3].role == "assistant" and [c.name for c in msgs[-3].tool_calls] == ["can_it", "trace_path"]
    assert msgs[-2].role == "tool" and msgs[-2].tool_call_id == "c1" and "yes_with_limitations" in msgs[-2].content
    assert msgs[-1].role == "tool" and '"error"' in msgs[-1].content and "nope" in msgs[-1].content
    assert events[-1]["citations"]["ok"] and events[-1]["citations"]["count"] == 2
    meta = stored(demo_ws, "demo", turn.conversation_id)[1].metadata
    assert [c["name"] for c in meta["tool_calls"]] == ["can_it", "trace_path"] and meta["tool_calls"][1]["error"]


def test_tools_are_not_offered_when_the_expert_disables_them(demo_ws):
    ExpertService(demo_ws).update("demo", {"tools": False})
    p = ScriptedProvider(["fine"], tools=True)
    run(ExpertChat(demo_ws, p, use_memory=False), "demo", "reduce costs")
    assert p.calls[0]["tools"] is None


def test_tool_loop_is_bounded(demo_ws):
    p = ScriptedProvider([ToolCall("c", "search_kg", {"query": "batch"})], tools=True)  # calls tools forever
    _, events = run(ExpertChat(demo_ws, p, use_memory=False, max_tool_rounds=2), "demo", "reduce costs")
    assert len(p.calls) == 3 and events[-1]["type"] == "done"


def test_bad_input_is_refused_before_any_event(demo_ws):
    chat = ExpertChat(demo_ws, OfflineProvider())
    with pytest.raises(InvalidArgument):
        chat.start("demo", "   ")
    with pytest.raises(InvalidArgument):
        chat.start("demo", "x" * 8001)
    with pytest.raises(InvalidArgument):
        chat.start("demo", "ok", history=[{"role": "wizard", "content": "x"}])
    with pytest.raises(ExpertNotFound):
        chat.start("nope", "ok")
    cid = chat.start("demo", "ok").conversation_id
    with pytest.raises(ConversationNotFound):
        chat.start("finance", "ok", conversation_id=cid)
    demo_ws.delete("finance")
    with pytest.raises(KGNotFound):
        chat.start("finance", "ok")
