"""The HTTP chat providers (OpenAI-compatible and Anthropic through their official SDKs, Gemini over
httpx + httpx-sse) against fake servers on loopback, and the provider registry."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from llm_fake_servers import FakeServer, Recorded, Reply, closed_port, sse, stream_script

from kgos.errors import InvalidArgument
from kgos.llm import (
    AnthropicProvider,
    GeminiProvider,
    Message,
    OpenAICompatProvider,
    ProviderError,
    ProviderNotConfigured,
    ProviderTimeout,
    ToolCall,
    ToolSpec,
    available_providers,
    get_provider,
)
from kgos.llm._http import HTTPChatProvider
from kgos.llm.gemini import LOCAL_ID_PREFIX, SKIP_SIGNATURE, to_gemini_contents
from kgos.llm.usage import Usage

KEY = "sk-test-SECRET-1234567890"
ENV_VARS = ["KGOS_LLM_PROVIDER", "KGOS_LLM_MODEL", "KGOS_OPENAI_BASE_URL", "OPENAI_BASE_URL",
            "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY",
            "KGOS_GEMINI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
            "all_proxy"]
SEARCH = ToolSpec("search", "Search the knowledge graph.",
                  {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"],
                   "additionalProperties": False})
HELLO = [Message("user", "Hello?")]


def texts_of(stream) -> list:
    """A stream's text pieces and tool calls, without its closing Usage (tested on its own below)."""
    return [item for item in stream if not isinstance(item, Usage)]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(HTTPChatProvider, "retry_backoff", 0.01)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer().start()
    yield srv
    srv.stop()


# -- the three wire protocols, as fake-server event streams -------------------------------------


def openai_text(pieces: list[str], done: bool = True) -> list[bytes]:
    evs = [sse({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                                      "content": ""}}]})]
    evs += [sse({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}) for p in pieces]
    if done:
        evs += [sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), sse("[DONE]")]
    return evs


def anthropic_text(pieces: list[str], done: bool = True) -> list[bytes]:
    evs = [sse({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}},
               "message_start"),
           sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
               "content_block_start"),
           sse({"type": "ping"}, "ping")]
    evs += [sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
                "content_block_delta") for p in pieces]
    if done:
        evs += [sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, "message_delta"),
                sse({"type": "message_stop"}, "message_stop")]
    return evs


def gemini_chunk(parts: list[dict], finish: str | None = None) -> bytes:
    cand: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return sse({"candidates": [cand], "modelVersion": "gemini-2.5-flash"})


def gemini_text(pieces: list[str], done: bool = True) -> list[bytes]:
    evs = [gemini_chunk([{"text": p}]) for p in pieces]
    if done:
        evs.append(gemini_chunk([{"text": ""}], "STOP"))
    return evs


@dataclass
class Kind:
    name: str
    make: Callable[..., HTTPChatProvider]
    text: Callable[..., list[bytes]]
    error_event: bytes
    error_body: object
    terminator: str


KINDS = [
    Kind("openai", lambda url, **kw: OpenAICompatProvider("gpt-test", base_url=f"{url}/v1", api_key=KEY, **kw),
         openai_text, sse({"error": {"message": "model crashed mid-way", "type": "server_error"}}),
         {"error": {"message": "boom: upstream failure", "type": "server_error"}}, "[DONE]"),
    Kind("anthropic", lambda url, **kw: AnthropicProvider("claude-test", api_key=KEY, base_url=url, **kw),
         anthropic_text,
         sse({"type": "error", "error": {"type": "overloaded_error", "message": "model crashed mid-way"}},
             "error"),
         {"type": "error", "error": {"type": "api_error", "message": "boom: upstream failure"}}, "message_stop"),
    Kind("gemini", lambda url, **kw: GeminiProvider("gemini-test", api_key=KEY, base_url=f"{url}/v1beta", **kw),
         gemini_text, sse({"error": {"code": 500, "message": "model crashed mid-way", "status": "INTERNAL"}}),
         [{"error": {"code": 500, "message": "boom: upstream failure", "status": "INTERNAL"}}], "finishReason"),
]
each_kind = pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])


# -- behaviour every provider shares ----------------------------------------------------------


@each_kind
def test_text_streams_in_order_piece_by_piece(kind: Kind, server: FakeServer,
                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    first_seen = threading.Event()
    released: list[bool] = []
    events = kind.text(["The ", "answer ", "is ", "42."])

    def script(reply: Reply, req: Recorded) -> None:  # holds back the rest until the client saw piece one
        reply.start()
        cut = next(i for i, e in enumerate(events) if b"The " in e) + 1
        for e in events[:cut]:
            reply.send(e)
        released.append(first_seen.wait(30))  # a hang guard, not a speed limit
        for e in events[cut:]:
            reply.send(e)
        reply.end()

    server.script = script
    pieces = []
    for piece in kind.make(server.url).stream(HELLO, system="Be brief."):
        pieces.append(piece)
        first_seen.set()
    assert pieces[:-1] == ["The ", "answer ", "is ", "42."] and isinstance(pieces[-1], Usage)
    assert "".join(pieces[:-1]) == "The answer is 42."
    assert released == [True], "the first piece should reach the caller before the rest is sent"
    assert len(server.requests) == 1
    assert KEY not in caplog.text


@each_kind
def test_http_500_reports_status_and_service_message(kind: Kind, server: FakeServer) -> None:
    server.script = lambda reply, req: reply.json(500, kind.error_body)
    with pytest.raises(ProviderError) as err:
        texts_of(kind.make(server.url).stream(HELLO))
    assert "HTTP 500" in str(err.value) and "boom: upstream failure" in str(err.value)
    assert err.value.http_status == 500
    assert len(server.requests) == 1  # a 500 is not retried


@each_kind
def test_http_401_message_never_contains_the_key(kind: Kind, server: FakeServer) -> None:
    server.script = lambda reply, req: reply.json(401, {"error": {
        "message": f"Incorrect API key provided: {KEY}", "type": "authentication_error"}})
    with pytest.raises(ProviderError) as err:
        texts_of(kind.make(server.url).stream(HELLO))
    msg = str(err.value)
    assert "HTTP 401" in msg and "Incorrect API key provided" in msg and KEY not in msg


@each_kind
def test_connection_refused_names_the_url(kind: Kind) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(ProviderError) as err:
        texts_of(kind.make(url, timeout=3).stream(HELLO))
    assert not isinstance(err.value, ProviderTimeout) and err.value.http_status is None
    assert f"cannot reach {kind.make(url).service} at {url}" in str(err.value)
    assert "check" in str(err.value)


@each_kind
def test_stalled_stream_times_out(kind: Kind, server: FakeServer) -> None:
    def script(reply: Reply, req: Recorded) -> None:
        reply.start()
        for e in kind.text(["partial"], done=False):
            reply.send(e)
        reply.wait(10)  # then ends without "done": only the client's own timeout raises ProviderTimeout

    server.script = script
    got: list = []
    with pytest.raises(ProviderTimeout) as err:
        got.extend(kind.make(server.url, timeout=0.4).stream(HELLO))  # keeps pieces before the error
    assert got == ["partial"]
    assert "stopped sending for more than 0.4 s" in str(err.value)
    assert err.value.status == 504


@each_kind
def test_server_that_never_answers_times_out(kind: Kind, server: FakeServer) -> None:
    server.script = lambda reply, req: reply.wait(10)
    with pytest.raises(ProviderTimeout, match="did not start answering within 0.3 s"):
        texts_of(kind.make(server.url).stream(HELLO, timeout=0.3))  # the per-call timeout wins


@each_kind
def test_garbage_body_is_an_error(kind: Kind, server: FakeServer) -> None:
    server.script = stream_script([b"this is not\n", b"an event stream at all\n"], content_type="text/plain")
    with pytest.raises(ProviderError, match="not a server-sent event stream: this is not an event stream"):
        texts_of(kind.make(server.url).stream(HELLO))


@each_kind
def test_html_and_json_bodies_are_errors(kind: Kind, server: FakeServer) -> None:
    server.script = stream_script([b"<html><body><h1>502 Bad Gateway</h1></body></html>"],
                                  content_type="text/html")
    with pytest.raises(ProviderError, match="HTML page instead of an event stream.*502 Bad Gateway"):
        texts_of(kind.make(server.url).stream(HELLO))
    server.script = lambda reply, req: reply.json(200, {"error": {"message": "streaming unsupported"}})
    with pytest.raises(ProviderError, match="JSON instead of an event stream: streaming unsupported"):
        texts_of(kind.make(server.url).stream(HELLO))


@each_kind
def test_malformed_json_chunk_is_an_error(kind: Kind, server: FakeServer) -> None:
    bad = b'data: {"choices": [tru\n\n'
    if kind.name == "anthropic":  # Anthropic names every event (its SDK skips unnamed ones)
        bad = b"event: content_block_delta\n" + bad
    server.script = stream_script([*kind.text(["ok"], done=False)[:2], bad])
    with pytest.raises(ProviderError, match=r"data is not JSON: \{\"choices\": \[tru"):
        texts_of(kind.make(server.url).stream(HELLO))


@each_kind
@pytest.mark.parametrize("chunked", [False, True], ids=["close-delimited", "chunked"])
def test_truncated_stream_is_an_error(kind: Kind, chunked: bool, server: FakeServer) -> None:
    # close-delimited: the body ends cleanly but before the terminator; chunked: the connection drops
    server.script = stream_script(kind.text(["half an ", "answer"], done=False), chunked=chunked,
                                  end=not chunked)
    got: list = []
    with pytest.raises(ProviderError) as err:
        got.extend(kind.make(server.url).stream(HELLO))  # keeps pieces before the error
    assert got == ["half an ", "answer"]
    if chunked:
        assert "broke mid-answer" in str(err.value)
    else:
        assert "ended without" in str(err.value) and kind.terminator in str(err.value)


@each_kind
def test_error_event_inside_the_stream(kind: Kind, server: FakeServer) -> None:
    server.script = stream_script([*kind.text(["Hel"], done=False), kind.error_event])
    got: list = []
    with pytest.raises(ProviderError, match="reported an error mid-stream: model crashed mid-way"):
        got.extend(kind.make(server.url).stream(HELLO))  # keeps pieces before the error
    assert got == ["Hel"]


@each_kind
def test_cancel_stops_the_stream_and_closes_the_connection(kind: Kind, server: FakeServer) -> None:
    server.script = stream_script(kind.text([f"piece {i} " for i in range(300)]), delay=0.01)
    cancel = threading.Event()
    stream = kind.make(server.url).stream(HELLO, cancel=cancel)
    assert next(stream) == "piece 0 "
    cancel.set()
    assert list(stream) == []
    # 30 s: a guard against hanging, not a speed limit (the wait ends as soon as the close is seen)
    assert server.client_closed.wait(30), "the server should see the connection closed"


@each_kind
def test_cancel_set_before_the_call_sends_nothing(kind: Kind, server: FakeServer) -> None:
    cancel = threading.Event()
    cancel.set()
    assert texts_of(kind.make(server.url).stream(HELLO, cancel=cancel)) == []
    assert server.requests == []


@each_kind
def test_429_then_success_is_retried_once(kind: Kind, server: FakeServer) -> None:
    def script(reply: Reply, req: Recorded) -> None:
        if len(server.requests) == 1:
            reply.json(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0.05"})
        else:
            stream_script(kind.text(["fine"]))(reply, req)

    server.script = script
    assert texts_of(kind.make(server.url).stream(HELLO)) == ["fine"]
    assert len(server.requests) == 2


@each_kind
def test_503_twice_gives_up_after_one_retry(kind: Kind, server: FakeServer) -> None:
    server.script = lambda reply, req: reply.json(503, {"error": {"message": "overloaded, try later"}})
    with pytest.raises(ProviderError, match="HTTP 503 Service Unavailable.*overloaded, try later"):
        texts_of(kind.make(server.url).stream(HELLO))
    assert len(server.requests) == 2


@each_kind
def test_complete_joins_the_text(kind: Kind, server: FakeServer) -> None:
    server.script = stream_script(kind.text(["a", "b", "c"]))
    assert kind.make(server.url).complete(HELLO) == "abc"


@each_kind
def test_bad_arguments(kind: Kind, server: FakeServer) -> None:
    p = kind.make(server.url)
    with pytest.raises(InvalidArgument, match="timeout"):
        texts_of(p.stream(HELLO, timeout=0))
    with pytest.raises(InvalidArgument, match="max_tokens"):
        texts_of(p.stream(HELLO, max_tokens=0))
    with pytest.raises(InvalidArgument, match="unknown role 'robot'"):
        texts_of(p.stream([Message("robot", "beep")]))
    with pytest.raises(InvalidArgument, match="http"):
        kind.make("ftp://example.org")
    assert server.requests == []


# -- OpenAI-compatible ---------------------------------------------------------------------------


def test_openai_request_format(server: FakeServer) -> None:
    server.script = stream_script(openai_text(["ok"]))
    p = OpenAICompatProvider("llama3.2", base_url=f"{server.url}/v1", api_key=KEY,
                             extra_headers={"X-Trace": "t1"})
    assert p.name == "openai:llama3.2" and p.supports_tools
    assert texts_of(p.stream(HELLO, system="Be brief.", max_tokens=77)) == ["ok"]
    req = server.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["x-trace"] == "t1"
    assert req.body == {"model": "llama3.2", "stream": True, "max_tokens": 77,
                        "messages": [{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "Hello?"}]}


def test_openai_local_server_needs_no_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGOS_OPENAI_BASE_URL", f"{server.url}/v1")
    server.script = stream_script(openai_text(["hi"]))
    assert texts_of(OpenAICompatProvider("m").stream(HELLO)) == ["hi"]
    assert "authorization" not in server.requests[0].headers
    with pytest.raises(ProviderNotConfigured, match="OPENAI_API_KEY is not set") as err:
        OpenAICompatProvider("m", base_url="https://api.openai.com/v1")
    assert err.value.status == 503


def _openai_call_chunks() -> list[bytes]:
    def chunk(tool_calls: list[dict], content: str | None = None) -> bytes:
        delta: dict = {"tool_calls": tool_calls}
        if content is not None:
            delta["content"] = content
        return sse({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})

    return [
        sse({"choices": [{"index": 0, "delta": {"content": "Let me look."}}]}),
        chunk([{"index": 0, "id": "call_a", "type": "function", "function": {"name": "search", "arguments": ""}}]),
        chunk([{"index": 0, "function": {"arguments": '{"que'}}]),
        chunk([{"index": 1, "id": "call_b", "type": "function",
                "function": {"name": "search", "arguments": '{"query": '}}]),
        chunk([{"index": 0, "function": {"arguments": 'ry": "prompt caching"}'}}]),
        chunk([{"index": 1, "function": {"arguments": '"token savings"}'}}]),
        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        sse({"choices": [], "usage": {"total_tokens": 12}}),
        sse("[DONE]"),
    ]


def test_openai_tool_calls_assemble_and_round_trip(server: FakeServer) -> None:
    server.script = stream_script(_openai_call_chunks())
    p = OpenAICompatProvider("gpt-test", base_url=f"{server.url}/v1", api_key=KEY)
    items = texts_of(p.stream(HELLO, tools=[SEARCH]))
    calls = [ToolCall("call_a", "search", {"query": "prompt caching"}),
             ToolCall("call_b", "search", {"query": "token savings"})]
    assert items == ["Let me look.", *calls]
    assert server.requests[0].body["tools"] == [{"type": "function", "function": {
        "name": "search", "description": SEARCH.description, "parameters": dict(SEARCH.parameters)}}]

    server.script = stream_script(openai_text(["Done."]))
    history = [*HELLO, Message("assistant", "Let me look.", tool_calls=tuple(calls)),
               Message("tool", '{"hits": 2}', tool_call_id="call_a", name="search"),
               Message("tool", '{"hits": 0}', tool_call_id="call_b", name="search")]
    assert texts_of(p.stream(history, tools=[SEARCH])) == ["Done."]
    sent = server.requests[1].body["messages"]
    assert sent[1] == {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "search", "arguments": '{"query": "prompt caching"}'}},
        {"id": "call_b", "type": "function",
         "function": {"name": "search", "arguments": '{"query": "token savings"}'}}]}
    assert sent[2:] == [{"role": "tool", "tool_call_id": "call_a", "content": '{"hits": 2}'},
                        {"role": "tool", "tool_call_id": "call_b", "content": '{"hits": 0}'}]


def test_openai_tool_call_with_broken_arguments(server: FakeServer) -> None:
    server.script = stream_script([
        sse({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "search", "arguments": '{"query": '}}]}}]}),
        sse("[DONE]")])
    p = OpenAICompatProvider("gpt-test", base_url=f"{server.url}/v1")
    with pytest.raises(ProviderError, match="called tool 'search' with arguments that are not valid JSON"):
        texts_of(p.stream(HELLO, tools=[SEARCH]))


def test_openai_tool_message_needs_its_call_id(server: FakeServer) -> None:
    p = OpenAICompatProvider("gpt-test", base_url=f"{server.url}/v1")
    with pytest.raises(InvalidArgument, match="tool_call_id"):
        texts_of(p.stream([*HELLO, Message("tool", "{}")]))


def test_openai_cloud_uses_max_completion_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    p = OpenAICompatProvider("gpt-test", base_url="https://api.openai.com/v1", api_key=KEY)
    url, _, payload = p._request(HELLO, None, 10, [])
    assert url == "https://api.openai.com/v1/chat/completions"
    assert payload["max_completion_tokens"] == 10 and "max_tokens" not in payload


# -- Anthropic -----------------------------------------------------------------------------------


def _anthropic_tool_stream() -> list[bytes]:
    def ev(name: str, **data: object) -> bytes:
        return sse({"type": name, **data}, name)

    return [
        ev("message_start", message={"id": "msg_1", "role": "assistant", "content": []}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Checking."}),
        ev("content_block_stop", index=0),
        ev("content_block_start", index=1,
           content_block={"type": "tool_use", "id": "toolu_01", "name": "search", "input": {}}),
        ev("ping"),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": ""}),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": '{"query": "pro'}),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": 'mpt caching"}'}),
        ev("content_block_stop", index=1),
        ev("content_block_start", index=2,
           content_block={"type": "tool_use", "id": "toolu_02", "name": "list_tools", "input": {}}),
        ev("content_block_stop", index=2),
        ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 20}),
        ev("message_stop"),
    ]


def test_anthropic_request_format_and_tool_round_trip(server: FakeServer) -> None:
    server.script = stream_script(_anthropic_tool_stream())
    p = AnthropicProvider("claude-test", api_key=KEY, base_url=server.url)
    assert p.name == "anthropic:claude-test"
    items = texts_of(p.stream([Message("system", "Cite sources."), *HELLO], system="Be brief.",
                          tools=[SEARCH], max_tokens=300))
    calls = [ToolCall("toolu_01", "search", {"query": "prompt caching"}), ToolCall("toolu_02", "list_tools", {})]
    assert items == ["Checking.", *calls]
    req = server.requests[0]
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == KEY and req.headers["anthropic-version"] == "2023-06-01"
    assert req.body == {"model": "claude-test", "max_tokens": 300, "stream": True,
                        "system": "Be brief.\n\nCite sources.",
                        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello?"}]}],
                        "tools": [{"name": "search", "description": SEARCH.description,
                                   "input_schema": dict(SEARCH.parameters)}]}

    server.script = stream_script(anthropic_text(["Found it."]))
    history = [*HELLO, Message("assistant", "Checking.", tool_calls=tuple(calls)),
               Message("tool", "2 hits", tool_call_id="toolu_01"),
               Message("tool", '["search"]', tool_call_id="toolu_02"),
               Message("user", "Thanks, go on.")]
    assert texts_of(p.stream(history, tools=[SEARCH])) == ["Found it."]
    sent = server.requests[1].body["messages"]
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_01", "name": "search", "input": {"query": "prompt caching"}},
        {"type": "tool_use", "id": "toolu_02", "name": "list_tools", "input": {}}]}
    assert sent[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "2 hits"},
        {"type": "tool_result", "tool_use_id": "toolu_02", "content": '["search"]'},
        {"type": "text", "text": "Thanks, go on."}]}
    assert len(sent) == 3


def test_anthropic_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ProviderNotConfigured, match="ANTHROPIC_API_KEY is not set"):
        AnthropicProvider()
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert AnthropicProvider()._headers["x-api-key"] == KEY


# -- Gemini --------------------------------------------------------------------------------------


def test_gemini_request_format_and_tool_round_trip(server: FakeServer) -> None:
    server.script = stream_script([
        gemini_chunk([{"text": "Looking "}]),
        gemini_chunk([{"text": "thinking...", "thought": True}, {"text": "it up."}]),
        gemini_chunk([{"functionCall": {"name": "search", "args": {"query": "prompt caching"}},
                       "thoughtSignature": "sig-abc"},
                      {"functionCall": {"name": "search", "args": {"query": "token savings"}}}], "STOP"),
    ])
    p = GeminiProvider("gemini-test", api_key=KEY, base_url=f"{server.url}/v1beta")
    assert p.name == "gemini:gemini-test"
    items = texts_of(p.stream(HELLO, system="Be brief.", tools=[SEARCH], max_tokens=200))
    assert items[:2] == ["Looking ", "it up."]
    calls = items[2:]
    assert [(c.name, dict(c.arguments)) for c in calls] == [("search", {"query": "prompt caching"}),
                                                           ("search", {"query": "token savings"})]
    assert all(c.id.startswith(LOCAL_ID_PREFIX) for c in calls) and calls[0].id != calls[1].id
    req = server.requests[0]
    assert req.path == "/v1beta/models/gemini-test:streamGenerateContent"
    assert req.query == {"alt": ["sse"]}
    assert req.headers["x-goog-api-key"] == KEY
    assert req.body == {"contents": [{"role": "user", "parts": [{"text": "Hello?"}]}],
                        "generationConfig": {"maxOutputTokens": 200},
                        "systemInstruction": {"parts": [{"text": "Be brief."}]},
                        "tools": [{"functionDeclarations": [{
                            "name": "search", "description": SEARCH.description,
                            "parametersJsonSchema": dict(SEARCH.parameters)}]}]}

    server.script = stream_script(gemini_text(["Two hits."]))
    history = [*HELLO, Message("assistant", "Looking it up.", tool_calls=tuple(calls)),
               Message("tool", '{"hits": 2}', tool_call_id=calls[0].id),
               Message("tool", "nothing found", tool_call_id=calls[1].id, name="search")]
    assert texts_of(p.stream(history)) == ["Two hits."]
    contents = server.requests[1].body["contents"]
    assert contents[1] == {"role": "model", "parts": [
        {"text": "Looking it up."},
        {"functionCall": {"name": "search", "args": {"query": "prompt caching"}}, "thoughtSignature": "sig-abc"},
        {"functionCall": {"name": "search", "args": {"query": "token savings"}}}]}
    assert contents[2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "search", "response": {"hits": 2}}},
        {"functionResponse": {"name": "search", "response": {"output": "nothing found"}}}]}


def test_gemini_native_call_ids_and_signature_placeholder() -> None:
    calls = (ToolCall("fc-1", "search", {"query": "x"}), ToolCall("fc-2", "search", {"query": "y"}))
    msgs = [*HELLO, Message("assistant", "", tool_calls=calls), Message("tool", "ok", tool_call_id="fc-1")]
    contents = to_gemini_contents(msgs, "gemini-3-pro-preview")
    assert contents[1]["parts"] == [
        {"functionCall": {"name": "search", "args": {"query": "x"}, "id": "fc-1"},
         "thoughtSignature": SKIP_SIGNATURE},
        {"functionCall": {"name": "search", "args": {"query": "y"}, "id": "fc-2"}}]
    assert contents[2]["parts"] == [{"functionResponse": {"name": "search", "response": {"output": "ok"},
                                                          "id": "fc-1"}}]
    assert "thoughtSignature" not in to_gemini_contents(msgs, "gemini-2.5-flash")[1]["parts"][0]
    with pytest.raises(InvalidArgument, match="tool's name"):
        to_gemini_contents([Message("tool", "ok", tool_call_id="unknown")], "gemini-2.5-flash")


def test_gemini_blocked_answer_is_an_error(server: FakeServer) -> None:
    server.script = stream_script([gemini_chunk([{"text": "Sure, "}]), gemini_chunk([], "SAFETY")])
    p = GeminiProvider("gemini-test", api_key=KEY, base_url=f"{server.url}/v1beta")
    with pytest.raises(ProviderError, match="finishReason SAFETY"):
        texts_of(p.stream(HELLO))
    server.script = stream_script([sse({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})])
    with pytest.raises(ProviderError, match="refused the prompt: blockReason PROHIBITED_CONTENT"):
        texts_of(p.stream(HELLO))


def test_gemini_keys_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ProviderNotConfigured, match="GEMINI_API_KEY is not set"):
        GeminiProvider()
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    assert GeminiProvider()._headers["x-goog-api-key"] == "g-key"
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key")
    assert GeminiProvider("models/gemini-2.5-pro")._headers["x-goog-api-key"] == "gem-key"
    assert GeminiProvider("models/gemini-2.5-pro").model == "gemini-2.5-pro"


# -- registry ------------------------------------------------------------------------------------


def test_get_provider_specs_and_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    p = get_provider("openai:gpt-4o-mini")
    assert isinstance(p, OpenAICompatProvider) and p.model == "gpt-4o-mini"
    assert p.base_url == "https://api.openai.com/v1"
    assert get_provider("openai").model == "gpt-4o-mini"
    assert get_provider("OpenAI-Compatible:x", model="y").model == "y"  # model= wins over the spec
    ollama = get_provider("ollama:llama3.2:1b", timeout=5)
    assert (ollama.model, ollama.base_url, ollama.timeout) == ("llama3.2:1b", "http://127.0.0.1:11434/v1", 5)
    assert get_provider("ollama").model == "llama3.2"
    assert get_provider("lmstudio:qwen").base_url == "http://127.0.0.1:1234/v1"
    assert get_provider("llamacpp").base_url == "http://127.0.0.1:8080/v1"
    assert get_provider("vllm:m", base_url="http://gpu:9000/v1/").base_url == "http://gpu:9000/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.5:8000/v1")
    assert get_provider("vllm:m").base_url == "http://10.0.0.5:8000/v1"  # the env URL beats the default port
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    assert isinstance(get_provider("anthropic"), AnthropicProvider)
    assert get_provider("anthropic").model == "claude-sonnet-4-5"
    assert get_provider("gemini:gemini-2.5-pro").name == "gemini:gemini-2.5-pro"
    assert get_provider("gemini").model == "gemini-2.5-flash"


def test_get_provider_default_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGOS_OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("KGOS_LLM_MODEL", "qwen2.5")
    p = get_provider()
    assert isinstance(p, OpenAICompatProvider) and p.model == "qwen2.5"
    assert p.base_url == "http://127.0.0.1:11434/v1"
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert get_provider("anthropic").model == "claude-sonnet-4-5"  # KGOS_LLM_MODEL is for the default one
    monkeypatch.setenv("KGOS_LLM_PROVIDER", "anthropic")
    assert get_provider().model == "qwen2.5"
    monkeypatch.setenv("KGOS_LLM_PROVIDER", "anthropic:claude-opus-4-1")
    assert get_provider().model == "claude-opus-4-1"
    assert get_provider(None, model="claude-haiku-4-5").model == "claude-haiku-4-5"
    monkeypatch.setenv("KGOS_LLM_PROVIDER", "nonsense")
    with pytest.raises(InvalidArgument, match="unknown LLM provider 'nonsense'"):
        get_provider()


def test_get_provider_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidArgument) as err:
        get_provider("mistral:large")
    assert "unknown LLM provider 'mistral'" in str(err.value)
    for choice in ("offline", "openai", "anthropic", "gemini", "ollama", "vllm", "llamacpp", "lmstudio"):
        assert choice in str(err.value)
    with pytest.raises(ProviderNotConfigured, match="OPENAI_API_KEY"):
        get_provider("openai")
    with pytest.raises(ProviderNotConfigured, match="ANTHROPIC_API_KEY"):
        get_provider("anthropic:claude-sonnet-4-5")
    with pytest.raises(ProviderNotConfigured, match="GEMINI_API_KEY"):
        get_provider("gemini")
    with pytest.raises(ProviderNotConfigured, match="vllm needs a model name"):
        get_provider("vllm")
    with pytest.raises(InvalidArgument, match="takes no option temperature"):
        get_provider("ollama", temperature=0.2)
    with pytest.raises(InvalidArgument, match="timeout"):
        get_provider("ollama", timeout=-1)


def test_get_provider_offline_by_default() -> None:
    pytest.importorskip("kgos.llm.offline")
    from kgos.llm.offline import OfflineProvider

    assert isinstance(get_provider(), OfflineProvider)
    assert isinstance(get_provider("offline"), OfflineProvider)


def test_available_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("KGOS_LLM_PROVIDER", "anthropic")
    rows = {r["name"]: r for r in available_providers()}
    assert list(rows) == ["offline", "openai", "anthropic", "gemini", "ollama", "vllm", "llamacpp", "lmstudio", "local"]
    assert rows["anthropic"]["configured"] and rows["anthropic"]["default"]
    assert not rows["openai"]["configured"] and not rows["gemini"]["configured"]
    assert rows["ollama"]["configured"] and not rows["vllm"]["configured"]
    assert rows["gemini"]["default_model"] == "gemini-2.5-flash"
    assert "GEMINI_API_KEY" in rows["gemini"]["env"]
    assert sum(r["default"] for r in rows.values()) == 1
    assert KEY not in json.dumps(list(rows.values()))


# -- usage and finish_reason (issue 29) ---------------------------------------------------------


def _usage_of(provider: HTTPChatProvider) -> Usage:
    items = list(provider.stream(HELLO, max_tokens=5))
    assert isinstance(items[-1], Usage) and not any(isinstance(i, Usage) for i in items[:-1])
    return items[-1]


def test_openai_usage_and_length_finish_come_from_the_service(server: FakeServer) -> None:
    server.script = stream_script([
        sse({"choices": [{"index": 0, "delta": {"content": "Cut"}, "finish_reason": None}]}),
        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
        sse({"choices": [], "usage": {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}}),
        sse("[DONE]")])
    assert _usage_of(KINDS[0].make(server.url)) == Usage(17, 5, "length", "provider")


def test_openai_cloud_asks_for_usage_in_the_stream(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import kgos.llm.openai_compat as oc
    monkeypatch.setattr(oc, "is_openai_cloud", lambda url: True)
    server.script = stream_script(openai_text(["ok"]))
    texts_of(OpenAICompatProvider("gpt-test", base_url=f"{server.url}/v1", api_key=KEY).stream(HELLO))
    assert server.requests[0].body["stream_options"] == {"include_usage": True}


def test_anthropic_usage_and_max_tokens_stop(server: FakeServer) -> None:
    events = anthropic_text(["Cut"], done=False) + [
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 5}},
            "message_delta"),
        sse({"type": "message_stop"}, "message_stop")]
    start = json.loads(events[0].decode().split("data: ", 1)[1])
    start["message"]["usage"] = {"input_tokens": 23, "output_tokens": 1}
    events[0] = sse(start, "message_start")
    server.script = stream_script(events)
    assert _usage_of(KINDS[1].make(server.url)) == Usage(23, 5, "length", "provider")


def test_gemini_usage_metadata_and_max_tokens(server: FakeServer) -> None:
    last = {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "MAX_TOKENS"}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 5, "totalTokenCount": 16}}
    server.script = stream_script([gemini_chunk([{"text": "Cut"}]), sse(last)])
    assert _usage_of(KINDS[2].make(server.url)) == Usage(11, 5, "length", "provider")


def test_a_service_that_counts_nothing_still_says_why_it_stopped(server: FakeServer) -> None:
    server.script = stream_script(openai_text(["ok"]))
    assert _usage_of(KINDS[0].make(server.url)) == Usage(None, None, "stop", "provider")


# -- the SDKs are extras ----------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "module", "extra"), [
    (lambda: OpenAICompatProvider("m", base_url="http://127.0.0.1:9/v1"), "openai", "openai"),
    (lambda: AnthropicProvider("m", api_key=KEY), "anthropic", "anthropic"),
    (lambda: GeminiProvider("m", api_key=KEY), "httpx_sse", "gemini"),
], ids=["openai", "anthropic", "gemini"])
def test_a_missing_sdk_names_its_extra(make: Callable[[], HTTPChatProvider], module: str, extra: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from kgos.errors import MissingDependency

    monkeypatch.setitem(sys.modules, module, None)  # what an uninstalled package looks like to import
    with pytest.raises(MissingDependency, match=rf"install the kgos\[{extra}\] extra"):
        make()
    row = {r["name"]: r for r in available_providers()}["ollama" if extra == "openai" else extra]
    assert (row["extra"], row["installed"]) == (extra, False)
