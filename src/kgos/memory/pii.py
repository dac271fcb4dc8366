"""The PII filter of spec/002 ("Privacy & Security"): no email addresses, phone numbers or postal
addresses ever become entities.

spec/002 rejects LLM entities containing ``@``, ``.com``, ``phone``, ``email`` or ``address``. KG-OS
applies that list to every entity (deterministic ones too) and adds real patterns: e-mail addresses,
phone-like digit runs, URLs, street addresses and UK/Canadian postcodes. ``mask`` blanks the same
things out of a memory's text before extraction, so no pattern can capture a fragment of them.

Secrets (API keys, access tokens, JWTs, private keys, ``password = ...`` assignments) are stricter:
``redact_secrets`` replaces them in the memory text itself before it is stored, so a key pasted into
a memory or a chat turn is neither kept nor made an entity. The shapes are the credential formats
providers publish (OpenAI/Anthropic ``sk-``, AWS ``AKIA``/``ASIA``, GitHub ``ghp_``/``github_pat_``,
Slack ``xox?-``, Google ``AIza``, Stripe ``sk_live_``, JWTs, PEM blocks) plus a generic rule for long
random-looking tokens that mix upper case, lower case and digits (an ordinary word, a slug, a hex
hash or a UUID does not).
"""

from __future__ import annotations

import math
import re
from itertools import pairwise
from typing import Any

# spec/002's list, verbatim.
SPEC_MARKERS: tuple[str, ...] = ("@", ".com", "phone", "email", "address")

# Anchored at a token start and bounded, so a long run of word characters is scanned once.
EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}")
URL_RE = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)
# 7+ digits, optionally with + ( ) - . and spaces between them: phone numbers, card and account numbers.
PHONE_RE = re.compile(r"(?<![\w.])\+?\(?\d(?:[\s().-]{0,3}\d){6,}(?![\w])")
STREET_RE = re.compile(
    r"\b\d{1,6}[A-Za-z]?\s+(?:[A-Z][\w'-]*\.?\s+){1,4}"
    r"(?i:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
    r"Crescent|Close|Square|Sq|Highway|Hwy|Parkway|Pkwy|Strasse|Straße|Rue|Calle)\b\.?")
POSTCODE_RE = re.compile(r"\b(?:[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}|[A-Z]\d[A-Z]\s?\d[A-Z]\d)\b")
MASK = "\x1f"  # control characters are stripped from memories, so this one never occurs naturally

# -- secrets: (label, pattern); the label names the kind in the placeholder that replaces it ----------
_KEY_NAMES = (r"(?:aws_?secret_?access_?key|secret_?access_?key|client_?secret|secret_?key|api_?key|apikey|"
              r"access_?token|auth_?token|refresh_?token|bearer|password|passwd|pwd|secret|token)")
# "the password is hunter2", "password hunter2": in prose the value must hold a digit or a symbol
# ("password file.", "password authentication" and "password -channel" are man-page prose)
_PROSE_PASSWORD = re.compile(r"(?i)\b(?:password|passwd|passphrase|passcode|pwd)\b(?:\s+(?:is|was|=|of)\b)?"
                             r"(?:\s*[:=]\s*|\s+)[\"'“‘]?(?!\[redacted)(?P<value>[^\s\"',;:“”‘’()]{4,})")
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                               r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*)", re.DOTALL)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    # (a key holds capitals or digits: "sk-learn-pipelines-and-models" is prose)
    # short keys too (a 15-character sk- key of an OpenAI-compatible proxy was kept)
    ("api-key", re.compile(r"(?<![\w-])sk-(?:ant-|proj-|svcacct-|admin-)?(?=[\w-]*[A-Z0-9])[A-Za-z0-9_-]{12,}")),
    # AWS key ids of any length AWS issues (16 after the prefix today; 18 was kept)
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{12,40}\b")),
    # the password of a connection string or URL: postgresql://admin:S3cret@db:5432/prod
    ("password", re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s:/@]{1,200}:(?P<value>[^\s@/]{1,200})@")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack-token", re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    # "password = hunter2!", "api_key: abc..." and the like: the value goes, the key name stays.
    ("secret", re.compile(rf"(?i)\b{_KEY_NAMES}\b[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"',;]{{6,}})")),
    # in prose: "the password is hunter22", "password hunter2", "secret is 9f86d0...", "my key: ..."
    ("password", _PROSE_PASSWORD),
    ("secret", re.compile(rf"(?i)\b(?:{_KEY_NAMES}|(?:api|access|secret|private)?\s?key)\b(?:\s+(?:is|was)\b)?"
                          r"(?:\s*[:=]\s*|\s+)[\"']?(?P<near>[A-Za-z0-9+/_-]{20,}={0,2})")),
    ("secret", re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")),  # Authorization header
)
# A long run of token characters; the generic rule then checks it looks random (see _random_token).
_TOKEN_RE = re.compile(r"(?<![\w+/=-])[A-Za-z0-9][A-Za-z0-9_+/=-]{23,}")
# words that follow "password"/"secret" in prose, never a value ("the password is required")
_PROSE_VALUES = frozenset({"required", "optional", "incorrect", "invalid", "expired", "correct", "missing",
                           "changed", "protected", "encrypted", "hashed", "stored", "reset", "manager", "managers",
                           "policy", "policies", "strength", "length", "field", "fields", "prompt", "hashing",
                           "rotation", "resets", "sharing", "storage", "handling", "forgotten", "wrong"})
REDACTED = "[redacted {}]"
_REDACTED_RE = re.compile(r"\[redacted [a-z-]+\]")
_MASKS = (_REDACTED_RE, EMAIL_RE, URL_RE, STREET_RE, PHONE_RE, POSTCODE_RE)


def pii_reason(name: str) -> str | None:
    """Why ``name`` must not be an entity, or None if it may be one."""
    kind = secret_kind(name)
    if kind is not None:
        return f"looks like a secret ({kind})"
    lowered = name.lower()
    for marker in SPEC_MARKERS:
        if marker in lowered:
            return f"contains {marker!r}"
    for label, pattern in (("an e-mail address", EMAIL_RE), ("a URL", URL_RE), ("a street address", STREET_RE),
                           ("a phone-like number", PHONE_RE), ("a postcode", POSTCODE_RE)):
        if pattern.search(name):
            return f"looks like {label}"
    if sum(c.isdigit() for c in name) >= 7:
        return "holds a long run of digits"
    return None


def secret_kind(text: str) -> str | None:
    """The kind of the first secret in ``text`` (e.g. ``api-key``), or None if it holds none."""
    if _REDACTED_RE.search(text):
        return "redacted"
    for label, pattern in SECRET_PATTERNS:
        if any(_is_secret(m) for m in pattern.finditer(text)):
            return label
    return "token" if any(_random_token(m.group()) for m in _TOKEN_RE.finditer(text)) else None


def redact_secrets(text: str) -> str:
    """``text`` with every secret replaced by ``[redacted <kind>]`` (the text a memory stores)."""
    for label, pattern in SECRET_PATTERNS:
        text = pattern.sub(lambda m, label=label: _redacted(m, label), text)
    return _TOKEN_RE.sub(lambda m: REDACTED.format("token") if _random_token(m.group()) else m.group(), text)


def _is_secret(m: re.Match[str]) -> bool:
    """Every match of a credential shape is one; an assigned value (``password: ...``) only if it
    is not a plain short word ("token: pending" is prose, "password: hunter22" is not); a value
    next to a word like key or token only if it is hex or looks random (not an identifier)."""
    if "near" in m.groupdict():
        return _keyish(m.group("near"))
    if "value" not in m.groupdict():
        return True
    value = m.group("value")
    if m.re is _PROSE_PASSWORD:
        core = value.rstrip(".!?")
        placeholder = core.lower().startswith(("your", "<", "$", "{", "%", "*", "-"))
        return not placeholder and len(core) >= 4 and any(not c.isalpha() for c in core)
    if m.re.pattern.startswith("(?i)\\b[a-z]"):  # a URL's password: any value but a placeholder
        return not value.lower().startswith(("<", "$", "{", "%", "*", "your", "password"))
    if ":" in value or value.lower().startswith(("your", "<", "$", "{", "%", "*")):
        return False  # a format ("passwd:uid:gid"), a placeholder or a variable, not a value
    if value.isalpha() and value.lower() in _PROSE_VALUES:
        return False
    return len(value) >= 12 or not value.isalpha()


def _redacted(m: re.Match[str], label: str) -> str:
    if not _is_secret(m):
        return m.group()
    group = "near" if "near" in m.groupdict() else "value"
    if group not in m.groupdict():
        return REDACTED.format(label)
    start, end = m.span(group)
    return m.string[m.start():start] + REDACTED.format(label) + m.string[end:m.end()]


def _random_token(token: str) -> bool:
    """A key is a long run of characters that mixes upper case, lower case and digits with few
    repeats and frequent case changes. Judged on the longest part between separators, so an
    identifier (snake_case, kebab-case, CamelCase words, a chemical name), a hex hash or a UUID is not."""
    core = max(re.split(r"[_.+/=-]", token), key=len)
    if len(core) < 16 or not (any(c.isupper() for c in core) and any(c.islower() for c in core)
                              and sum(c.isdigit() for c in core) >= 2):
        return False
    return _entropy(core) >= min(4.0, math.log2(len(core)) - 0.5) and _case_flips(core) >= len(core) / 3


def _keyish(value: str) -> bool:
    """A value after "key"/"token"/"secret": hex of 24+ digits, or a random-looking run (mixed case
    with a digit, high entropy, frequent case changes), not a CamelCase identifier or a word."""
    core = value.rstrip("=")
    if len(core) >= 24 and all(c in "0123456789abcdefABCDEF" for c in core):
        return any(c.isdigit() for c in core) and any(c.isalpha() for c in core)
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)):
        return False
    return _entropy(core) >= min(4.0, math.log2(len(core)) - 0.5) and _case_flips(core) >= len(core) / 3


def _entropy(text: str) -> float:
    counts = [text.count(c) for c in set(text)]
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts)


def _case_flips(text: str) -> int:
    """How often the character class changes (upper/lower/digit): high in random text, low in words."""
    kinds = ["u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "o" for c in text]
    return sum(a != b for a, b in pairwise(kinds))


def redact_value(value: Any, depth: int = 0) -> Any:
    """``value`` (a JSON-shaped metadata object) with ``redact_secrets`` applied to every string in it,
    keys included; nesting past 64 levels is cut (metadata is bounded far below that anyway)."""
    if isinstance(value, str):
        return redact_secrets(value)
    if depth > 64:
        return None
    if isinstance(value, dict):
        return {redact_secrets(str(k)): redact_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, depth + 1) for v in value]
    return value


def is_pii(name: str) -> bool:
    return pii_reason(name) is not None


def mask(text: str) -> str:
    """``text`` with e-mails, URLs, phone numbers and addresses replaced by a separator that ends any
    phrase (so "with bob@example.com" captures nothing, not "bob")."""
    for pattern in _MASKS:
        text = pattern.sub(MASK, text)
    return text
