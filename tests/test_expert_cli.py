"""``kgos expert ...`` end to end through click, on a real workspace with the demo KGs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgos.cli import cli


@pytest.fixture
def home(tmp_path) -> str:
    h = str(tmp_path / "home")
    r = CliRunner().invoke(cli, ["--home", h, "demo", "--embedder", "hash", "--plain"])
    assert r.exit_code == 0, r.output
    return h


def kgos(home: str, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["--home", home, *args], input=input)


def as_json(home: str, *args: str):
    r = kgos(home, "--json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_create_show_update_duplicate_delete(home, tmp_path):
    e = as_json(home, "expert", "create", "Tax Helper", "--kg", "finance", "--weights", "0.3,0.4,0.2,0.1",
                "--skill", "tax-planning", "--filter", "implementation_complexity<0.9", "--boost", "requires")
    assert e["id"] == "expert_tax_helper" and e["retrieval"]["alpha"] == 0.3 and e["playbook_skills"] == ["tax-planning"]
    assert e["dimension_filters"] == {"implementation_complexity": {"lt": 0.9}} and e["retrieval"]["boost_types"] == ["requires"]
    shown = as_json(home, "expert", "show", "expert_tax_helper")
    assert shown["kg_db_id"] == "finance"
    up = as_json(home, "expert", "update", "expert_tax_helper", "--set", "retrieval.limit=5",
                 "--set", "persona.name=Taxie", "--set", "dimension_filters.implementation_complexity=null")
    assert up["retrieval"]["limit"] == 5 and up["persona"]["name"] == "Taxie" and up["dimension_filters"] == {}
    dup = as_json(home, "expert", "duplicate", "expert_tax_helper", "--name", "Tax 2", "--set", "retrieval.delta=0.5")
    assert dup["id"] == "expert_tax_helper_copy_1" and dup["retrieval"]["delta"] == 0.5
    ids = [x["id"] for x in as_json(home, "expert", "list")]
    assert ids == ["demo", "expert_tax_helper", "expert_tax_helper_copy_1", "finance"]
    assert as_json(home, "expert", "delete", "expert_tax_helper_copy_1") == {"deleted": True, "conversations_deleted": 0}


def test_export_import_roundtrip(home, tmp_path):
    path = tmp_path / "demo-expert.json"
    assert kgos(home, "expert", "export", "demo", str(path)).exit_code == 0
    doc = json.loads(path.read_text())
    assert doc["format"] == "kgos-expert/1"
    imported = as_json(home, "expert", "import", str(path), "--id", "demo2")
    assert imported["id"] == "demo2" and imported["name"] == doc["expert"]["name"]
    again = kgos(home, "expert", "import", str(path))
    assert again.exit_code == 1 and "already exists" in again.output
    assert kgos(home, "expert", "import", str(path), "--replace").exit_code == 0
    (tmp_path / "bad.json").write_text("{not json")
    bad = kgos(home, "expert", "import", str(tmp_path / "bad.json"))
    assert bad.exit_code == 1 and "is not JSON" in bad.output


def test_chat_one_shot_and_continue_the_conversation(home):
    first = as_json(home, "expert", "chat", "demo", "How do I reduce my API costs?")
    assert "[Source: demo:feature:batch_api]" in first["answer"] and first["citations"]["ok"]
    cid = first["conversation_id"]
    second = as_json(home, "expert", "chat", "demo", "Can it stream responses?", "--conversation", cid)
    assert second["conversation_id"] == cid
    conv = as_json(home, "expert", "conversations", "demo", cid)
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant", "user", "assistant"]
    listing = as_json(home, "expert", "conversations", "demo")
    assert listing["total"] == 1 and listing["conversations"][0]["message_count"] == 4
    human = kgos(home, "expert", "chat", "demo", "How do I reduce my API costs?")
    assert human.exit_code == 0 and "Batch API" in human.stdout and "--conversation conv_" in human.output


def test_interactive_chat_reads_lines_until_exit(home):
    r = kgos(home, "expert", "chat", "demo", "--no-sources", input="How do I reduce my API costs?\nexit\n")
    assert r.exit_code == 0 and "Hi, I am Cookbook" in r.output and "Batch API" in r.output
    assert as_json(home, "expert", "conversations", "demo")["conversations"][0]["message_count"] == 2


@pytest.mark.parametrize(("args", "message"), [
    (["expert", "show", "nope"], "no expert with id 'nope'"),
    (["expert", "chat", "nope", "hi"], "no expert with id 'nope'"),
    (["expert", "chat", "demo", "   "], "query must be a non-empty question"),
    (["expert", "create", "X", "--kg", "nope"], "no KG named 'nope'"),
    (["expert", "create", "X", "--kg", "demo", "--weights", "1,2"], "four numbers"),
    (["expert", "update", "demo", "--set", "retrieval.alpha=-1"], "retrieval.alpha"),
    (["expert", "update", "demo"], "nothing to change"),
    (["expert", "chat", "demo", "hi", "--provider", "no-such-llm"], "no-such-llm"),
])
def test_errors_are_one_clean_line(home, args, message):
    r = kgos(home, *args)
    assert r.exit_code != 0 and message in r.output and "Traceback" not in r.output


@pytest.fixture
def dead_provider(monkeypatch) -> None:
    """An OpenAI-compatible provider whose server is down: every turn fails at the provider."""
    from llm_fake_servers import closed_port
    monkeypatch.setenv("KGOS_OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.delenv("KGOS_LLM_PROVIDER", raising=False)


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_chat_exits_non_zero_when_the_provider_fails_and_keeps_the_question(home, dead_provider, mode):
    r = kgos(home, *mode, "expert", "chat", "demo", "How do I reduce my API costs?", "--provider", "openai:m")
    assert r.exit_code == 1, r.output
    assert "the model provider failed" in r.stderr and "Traceback" not in r.output
    assert "your question is saved in conversation conv_" in r.stderr
    conv = as_json(home, "expert", "conversations", "demo")["conversations"][0]
    msgs = as_json(home, "expert", "conversations", "demo", conv["id"])["messages"]
    assert msgs[0]["content"] == "How do I reduce my API costs?" and "error" in msgs[1]["metadata"]
    if mode:
        assert json.loads(r.stdout)["error"].startswith("the model provider failed")


def test_interactive_chat_exits_non_zero_after_a_failed_turn(home, dead_provider):
    r = kgos(home, "expert", "chat", "demo", "--provider", "openai:m", input="first\nsecond\nexit\n")
    assert r.exit_code == 1 and r.stderr.count("the model provider failed") == 2, r.output


def test_chat_json_carries_usage_and_finish_reason_like_v1(home):
    from kgos.llm.usage import TOKENIZER, count_tokens
    d = as_json(home, "expert", "chat", "demo", "How do I reduce my API costs?")
    assert d["finish_reason"] == "stop" and d["usage"]["counted_by"] == TOKENIZER
    assert d["usage"]["completion_tokens"] == count_tokens(d["answer"]) > 10
    assert d["usage"]["total_tokens"] == d["usage"]["prompt_tokens"] + d["usage"]["completion_tokens"]
