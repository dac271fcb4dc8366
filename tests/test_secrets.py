"""Secrets never become memory entities nor stay in stored memory text (issue 12 point 4).

One test per credential shape, and negative tests: ordinary prose, identifiers, hashes and UUIDs
are left alone. The key strings are fakes built here in the shape each provider documents.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgos.cli import cli
from kgos.memory import MemoryService
from kgos.memory.pii import pii_reason, redact_secrets, secret_kind

ALNUM = "Zx9Qm2Lp8Rt4Vb6Nc1Kd3Wf7Hs5Jg0TyAeUo4Ii8"  # 40 random-looking characters
SHAPES = {  # kind -> a fake credential in that shape
    "openai": ("api-key", "sk-AbCdEfGhIjKlMnOpQrStUvWxYzAbCd"),
    "openai-project": ("api-key", "sk-proj-" + ALNUM + "_-" + ALNUM),
    "anthropic": ("api-key", "sk-ant-api03-" + ALNUM + ALNUM + "-AA"),
    "aws-access-key": ("aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
    "aws-session-key": ("aws-access-key", "ASIAY34FZKBOKMUTVV7A"),
    "github-classic": ("github-token", "ghp_" + ALNUM[:36]),
    "github-oauth": ("github-token", "gho_" + ALNUM[:36]),
    "github-app": ("github-token", "ghs_" + ALNUM[:36]),
    "github-fine-grained": ("github-token", "github_pat_11ABCDEFG0_" + ALNUM + ALNUM),
    "slack-bot": ("slack-token", "xoxb-123456789012-1234567890123-" + ALNUM[:24]),
    "slack-user": ("slack-token", "xoxp-123456789012-1234567890123-" + ALNUM[:24]),
    "google": ("google-api-key", "AIza" + ALNUM[:35]),
    "stripe": ("stripe-key", "sk_live_" + ALNUM[:24]),
    "jwt": ("jwt", ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")),
    "generic-random": ("token", ALNUM[:32]),
}
PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2p\nQyuvBjM2pAMfQyuv==\n"
       "-----END RSA PRIVATE KEY-----")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_credential_shape_is_found_and_redacted(shape):
    kind, key = SHAPES[shape]
    text = f"I use {key} for the chatbot."
    assert secret_kind(text) == kind
    assert redact_secrets(text) == f"I use [redacted {kind}] for the chatbot."
    assert pii_reason(key) == f"looks like a secret ({kind})"


def test_pem_private_key_block_is_redacted_whole():
    text = f"my deploy key:\n{PEM}\nkeep it safe"
    assert redact_secrets(text) == "my deploy key:\n[redacted private-key]\nkeep it safe"
    assert secret_kind("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA (cut)") == "private-key"


@pytest.mark.parametrize("text, expected", [
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key = [redacted secret]"),
    ("export API_KEY='d41d8cd98f00b204e9800998ecf8427e'", "export API_KEY='[redacted secret]'"),
    ("the db password: hunter22 (rotate it)", "the db password: [redacted secret] (rotate it)"),
    ('{"client_secret": "qRt7-uvWx-9yZa"}', '{"client_secret": "[redacted secret]"}'),
    ("curl -H 'Authorization: Bearer abc123def456ghi789jkl'",
     "curl -H 'Authorization: Bearer [redacted secret]'"),
])
def test_secret_assignments_lose_their_value_but_keep_the_name(text, expected):
    assert redact_secrets(text) == expected


@pytest.mark.parametrize("text", [
    "I prefer PostgreSQL over MySQL for the billing-service project.",
    "Our token budget is pending; the password policy changes next week.",
    "token: pending, password: required, secret: unknown",  # labels followed by plain words
    "password=your_password and passwd:uid:gid:gecos:dir:shell",  # placeholders and format specs
    "node feature:prompt_caching, memory mem_0123456789abcdef0123456789abcdef",
    "uuid 550e8400-e29b-41d4-a716-446655440000, commit 4f2a9c8e1b7d6a5f3e2c1b0a9f8e7d6c5b4a3f2e",
    "ThisIsAVeryLongIdentifierName, Python3DevelopmentKit2024Edition, HTTPServer2RequestHandlerFactory",
    "O-1-alkyl-2-acyl-sn-glycero-3-phosphoethanolamine and RPAP3/R2TP/prefoldin-like complex",
    "see src/kgos/memory/pii.py and GO:0008150; skip the sk-learn docs; AKIA is a prefix",
    "I read sk-learn-pipelines-and-models-explained and the bearer of bad news",
])
def test_ordinary_text_and_ids_are_not_redacted(text):
    assert secret_kind(text) is None
    assert redact_secrets(text) == text


@pytest.mark.parametrize("shape", ["openai", "aws-access-key", "slack-bot", "jwt"])
def test_memory_add_stores_no_secret_and_makes_no_secret_entity(ws, shape):
    kind, key = SHAPES[shape]
    memory = MemoryService(ws)
    added = memory.add(f"I use {key} for the chatbot.")
    stored = memory.get(added.id).content
    assert key not in stored and f"[redacted {kind}]" in stored and "chatbot" in stored
    names = [e.name for e in added.entities]
    assert not any(key in n or "redacted" in n for n in names), names
    assert all(key not in json.dumps(e.to_dict()) for e in memory.search("chatbot", limit=50)[0])
    assert memory.recall(key[:12]) == [] or all(key not in h.memory.content for h in memory.recall(key[:12]))


def test_cli_memory_add_of_the_issue_example(tmp_path):
    key = "sk-AbCdEfGhIjKlMnOpQrStUvWxYzAbCd"
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "memory", "add", "--json",
                                      f"I use {key} for the chatbot."])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert key not in result.stdout
    assert body["memory"]["content"] == "I use [redacted api-key] for the chatbot."
    assert all("sk-" not in e["name"] for e in body["entities"])


def test_entity_filter_refuses_secret_names_from_any_source():
    assert pii_reason("ghp_" + ALNUM[:36]) is not None
    assert pii_reason("[redacted token]") is not None
    assert pii_reason("PostgreSQL") is None and pii_reason("billing-service") is None


def test_chat_turns_keep_no_secret_in_the_conversation_nor_in_memory(ws):
    from kgos.data import load_demo
    from kgos.experts import ExpertService
    from kgos.experts.chat import ExpertChat
    from kgos.llm.offline import OfflineProvider
    load_demo(ws, embedder="hash")
    key = SHAPES["github-classic"][1]
    chat = ExpertChat(ws, OfflineProvider())
    turn = chat.start("demo", f"How do I reduce API costs? My token is {key}")
    list(chat.events(turn))
    user, _ = ExpertService(ws).conversation("demo", turn.conversation_id).messages
    assert key not in user.content and "[redacted github-token]" in user.content
    remembered = MemoryService(ws).recall("reduce API costs", limit=5)
    assert remembered and all(key not in h.memory.content for h in remembered)
