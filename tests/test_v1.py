"""/v1 (OpenAI-compatible experts) through the official ``openai`` client on a real loopback server:
model listing, answers with citations in the text and the ``kgos`` extra field, streaming, history
as the conversation, and bad requests answered in OpenAI's error format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from expert_helpers import ScriptedProvider
from live_server import free_port, live_server

import kgos
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
from kgos.data import load_demo
from kgos.errors import ProviderError
from kgos.llm import get_provider

QUESTION = "How do I reduce my API costs?"


class Slot:
    """The provider the server answers with (None: the offline provider)."""

    provider: Any = None


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("v1-home")
    ws = kgos.Workspace(home)
    load_demo(ws, embedder=None)
    port = free_port()
    app = create_app(ws, ServerSettings(port=port),
                     provider_factory=lambda p, m: Slot.provider or get_provider("offline"))
    with live_server(app, port) as url:
        yield url
    ws.close()


@pytest.fixture
def client(base: str) -> Iterator[openai.OpenAI]:
    Slot.provider = None
    yield openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
    Slot.provider = None


def test_models_are_the_experts(client: openai.OpenAI) -> None:
    models = {m.id: m for m in client.models.list()}
    assert {"demo", "finance"} <= set(models)
    assert models["demo"].owned_by == "kgos" and models["demo"].created > 0


def test_answer_cites_nodes_and_reports_the_citation_check(client: openai.OpenAI) -> None:
    done = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": QUESTION}])
    text = done.choices[0].message.content
    assert done.object == "chat.completion" and done.choices[0].finish_reason == "stop"
    assert "[Source: demo:goal:cost_reduction]" in text
    extra = done.model_extra["kgos"]
    assert extra["citations"]["ok"] and "demo:goal:cost_reduction" in extra["citations"]["valid"]
    assert extra["sources"][0]["id"] and extra["conversation_id"].startswith("conv_")


def test_stream_sends_chunks_then_the_extra_field(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="demo", stream=True,
                                                 messages=[{"role": "user", "content": "Can I cache prompts?"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert len(chunks) > 5 and chunks[0].choices[0].delta.role == "assistant"
    assert "[Source: demo:feature:prompt_caching]" in text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["kgos"]["citations"]["ok"]


def test_history_is_the_conversation_and_invented_citations_are_flagged(client: openai.OpenAI) -> None:
    Slot.provider = scripted = ScriptedProvider(["Batching halves it [Source: demo:feature:batch_api]; ",
                                                 "warp drives too [Source: demo:warp_drive]."])
    done = client.chat.completions.create(model="demo", temperature=0.2, messages=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the Batch API?"},
        {"role": "assistant", "content": "An asynchronous bulk endpoint."},
        {"role": "user", "content": [{"type": "text", "text": "Does the Batch API cut costs?"}]}])
    sent = scripted.calls[0]["messages"]
    assert [(m.role, m.content) for m in sent] == [("user", "What is the Batch API?"),
                                                   ("assistant", "An asynchronous bulk endpoint."),
                                                   ("user", "Does the Batch API cut costs?")]
    citations = done.model_extra["kgos"]["citations"]
    assert citations["valid"] == ["demo:feature:batch_api"] and citations["unknown"] == ["demo:warp_drive"]
    assert citations["ok"] is False


@pytest.mark.parametrize("kwargs, status, param, code", [
    ({"model": "nobody"}, 404, "model", "model_not_found"),
    ({"messages": [{"role": "system", "content": "no question"}]}, 400, "messages", None),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}, 400, "tools",
     "unsupported_parameter"),
    ({"n": 2}, 400, "n", None),
    ({"logprobs": True}, 400, "logprobs", "unsupported_parameter"),
])
def test_bad_requests_get_openai_errors(client: openai.OpenAI, kwargs: dict[str, Any], status: int,
                                        param: str, code: str | None) -> None:
    args = {"model": "demo", "messages": [{"role": "user", "content": QUESTION}], **kwargs}
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(**args)
    assert err.value.status_code == status
    assert err.value.body["param"] == param and err.value.body["code"] == code and err.value.body["message"]


def test_malformed_json_and_provider_failures_stay_in_the_format(base: str, client: openai.OpenAI) -> None:
    bad = httpx.post(f"{base}/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    Slot.provider = ScriptedProvider(["never"], error=ProviderError("model server refused the connection"))
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model="demo", messages=[{"role": "user", "content": QUESTION}])
    assert err.value.status_code == 502 and "refused the connection" in err.value.body["message"]
    with pytest.raises(openai.APIError, match="refused the connection"):
        list(client.chat.completions.create(model="demo", stream=True,
                                            messages=[{"role": "user", "content": QUESTION}]))
    assert client.models.list().data  # the server still serves


def test_token_servers_need_it_on_v1_too(tmp_path: Path) -> None:
    port = free_port()
    with live_server(create_app(tmp_path, ServerSettings(port=port, token="t0ken")), port) as url:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0).models.list()
        assert openai.OpenAI(base_url=f"{url}/v1", api_key="t0ken", max_retries=0).models.list().data == []


def test_feedback_keyed_by_the_completion_id(client: openai.OpenAI, base: str) -> None:
    done = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": QUESTION}])
    assert done.id == f"chatcmpl-{done.model_extra['kgos']['turn_id']}"
    r = httpx.post(f"{base}/v1/feedback", json={"id": done.id, "rating": "up", "comment": "clear"})
    assert r.status_code == 200 and r.json()["rating"] == "up" and r.json()["expert_id"] == "demo"
    stored = httpx.get(f"{base}/api/feedback/{done.model_extra['kgos']['turn_id']}").json()
    assert stored["comment"] == "clear" and stored["query"] == QUESTION
    bad = httpx.post(f"{base}/v1/feedback", json={"id": done.id, "rating": "meh"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "rating"
    gone = httpx.post(f"{base}/v1/feedback", json={"id": "chatcmpl-turn_0123456789", "rating": "up"})
    assert gone.status_code == 404 and "no conversation holds" in gone.json()["error"]["message"]


# -- usage and finish_reason (issue 29) -----------------------------------------------------------------------
def test_offline_answers_carry_usage_counted_by_the_stated_tokenizer(client: openai.OpenAI) -> None:
    from kgos.llm.usage import TOKENIZER, count_tokens
    done = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": QUESTION}])
    u = done.usage
    assert u is not None and u.prompt_tokens > count_tokens(QUESTION) and u.completion_tokens > 10
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    assert u.completion_tokens == count_tokens(done.choices[0].message.content)  # the text it returned
    assert done.model_extra["kgos"]["usage_counted_by"] == TOKENIZER
    assert done.choices[0].finish_reason == "stop"


def test_an_answer_cut_at_max_tokens_finishes_with_length(client: openai.OpenAI) -> None:
    done = client.chat.completions.create(model="demo", max_tokens=12, messages=[{"role": "user", "content": QUESTION}])
    assert done.choices[0].finish_reason == "length" and 0 < done.usage.completion_tokens <= 20
    chunks = list(client.chat.completions.create(model="demo", stream=True, max_tokens=12,
                                                 stream_options={"include_usage": True},
                                                 messages=[{"role": "user", "content": QUESTION}]))
    assert chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == done.usage.completion_tokens


def test_a_model_s_own_counts_are_passed_on(client: openai.OpenAI) -> None:
    from kgos.llm.usage import Usage
    Slot.provider = ScriptedProvider(["Batching halves it [Source: demo:feature:batch_api].", Usage(812, 9, "stop")])
    done = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": QUESTION}])
    assert (done.usage.prompt_tokens, done.usage.completion_tokens, done.usage.total_tokens) == (812, 9, 821)
    assert done.model_extra["kgos"]["usage_counted_by"] == "provider"
    assert "Usage" not in done.choices[0].message.content
