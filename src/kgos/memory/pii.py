"""The PII filter of spec/002 ("Privacy & Security"): no email addresses, phone numbers or postal
addresses ever become entities.

spec/002 rejects LLM entities containing ``@``, ``.com``, ``phone``, ``email`` or ``address``. KG-OS
applies that list to every entity (deterministic ones too) and adds real patterns: e-mail addresses,
phone-like digit runs, URLs, street addresses and UK/Canadian postcodes. ``mask`` blanks the same
things out of a memory's text before extraction, so no pattern can capture a fragment of them.
"""

from __future__ import annotations

import re

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
_MASKS = (EMAIL_RE, URL_RE, STREET_RE, PHONE_RE, POSTCODE_RE)
MASK = "\x1f"  # control characters are stripped from memories, so this one never occurs naturally


def pii_reason(name: str) -> str | None:
    """Why ``name`` must not be an entity, or None if it may be one."""
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


def is_pii(name: str) -> bool:
    return pii_reason(name) is not None


def mask(text: str) -> str:
    """``text`` with e-mails, URLs, phone numbers and addresses replaced by a separator that ends any
    phrase (so "with bob@example.com" captures nothing, not "bob")."""
    for pattern in _MASKS:
        text = pattern.sub(MASK, text)
    return text
