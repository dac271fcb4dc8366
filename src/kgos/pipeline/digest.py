"""Content hashes of JSON-shaped values: the identity of configs, stage inputs and stage outputs.

A value is serialised canonically (keys sorted, no whitespace, numpy arrays as lists) and hashed with
sha256; the digest is written ``sha256:<hex>`` as in the run manifest of spec/004. Two values with the
same JSON content have the same digest in every process, so a replay can be checked offline.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

__all__ = ["canonical_json", "content_hash"]

_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON bytes (sorted keys, compact); dataclasses and numpy arrays allowed."""
    return orjson.dumps(value, option=_OPTIONS)


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
