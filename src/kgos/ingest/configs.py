"""Tier 1 for config and data files: JSON, YAML, TOML.

A config node per file and a ``config_key`` node per key that names something (mapping keys down to
``MAX_DEPTH`` levels, at most ``MAX_KEYS`` per file: a data file of a million records is not a million
nodes). Values are kept only as short descriptions, never for keys that hold credentials, and always
through the secret filter. String values that look like a path become references to other ingested
files, and ``module:attr`` values (entry points) references to code symbols; the linker resolves both.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from ..errors import MissingDependency
from .facts import Facts
from .files import SourceFile

MAX_DEPTH = 3
MAX_KEYS = 500
SECRET_KEY_RE = re.compile(r"pass(word|wd)?|secret|token|api[_-]?key|credential|private[_-]?key|auth", re.IGNORECASE)
PATH_RE = re.compile(r"^(?:\.{0,2}/)?(?:[\w.-]+/)*[\w.-]+\.(?:py|js|ts|go|rs|json|ya?ml|toml|md|html?|txt|pdf|cfg|ini)$")
ENTRY_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def yaml_module() -> Any:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise MissingDependency("PyYAML (YAML files, Markdown front matter)", "ingest-docs") from None
    return yaml


def parse(source: SourceFile) -> list[Any]:
    """The file's documents (YAML may hold several); raises ValueError with a readable message."""
    text = source.text or ""
    if source.kind == "json":
        try:
            return [json.loads(text)]
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"invalid JSON ({exc})") from None
    if source.kind == "toml":
        try:
            return [tomllib.loads(text)]
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"invalid TOML ({exc})") from None
    yaml = yaml_module()
    try:
        return list(yaml.safe_load_all(text))
    except (yaml.YAMLError, RecursionError) as exc:
        raise ValueError(f"invalid YAML ({str(exc).splitlines()[0]})") from None


def extract_config(source: SourceFile) -> Facts:
    facts = Facts(source.rel)
    try:
        docs = parse(source)
    except ValueError as exc:
        facts.error = str(exc)
        return facts
    cid = f"cfg:{source.rel}"
    facts.node(f"file:{source.rel}", source.rel.rsplit("/", 1)[-1], "file", kind=source.kind, lines=source.lines,
               sha256=source.sha256)
    facts.node(cid, source.rel.rsplit("/", 1)[-1], "config", format=source.kind, line_start=1, line_end=source.lines)
    facts.edge(f"file:{source.rel}", cid, "contains")
    budget = [MAX_KEYS]
    for doc in docs:
        _walk(facts, cid, source.rel, doc, "", 0, budget)
    if budget[0] <= 0:
        facts.nodes[1]["properties"]["truncated_keys"] = True
    return facts


def _walk(facts: Facts, parent: str, rel: str, value: Any, path: str, depth: int, budget: list[int]) -> None:
    if isinstance(value, dict):
        for key, sub in value.items():
            if budget[0] <= 0 or depth >= MAX_DEPTH:
                return
            budget[0] -= 1
            key = str(key)
            kid = f"cfg:{rel}:{path}{key}"
            facts.node(kid, key, "config_key", _describe(key, sub), key_path=f"{path}{key}")
            facts.edge(parent, kid, "contains")
            _references(facts, kid, key, sub)
            _walk(facts, kid, rel, sub, f"{path}{key}.", depth + 1, budget)
    elif isinstance(value, list):
        for item in value[:MAX_KEYS]:
            if isinstance(item, str):
                _references(facts, parent, "", item)


def _describe(key: str, value: Any) -> str:
    if SECRET_KEY_RE.search(key) or isinstance(value, (dict, list)):
        return ""
    return f"{key} = {value}"[:200] if value is not None else key


def _references(facts: Facts, source: str, key: str, value: Any) -> None:
    if not isinstance(value, str) or SECRET_KEY_RE.search(key) or len(value) > 300:
        return
    if PATH_RE.match(value):
        facts.ref(source, "path", value)
    elif ENTRY_RE.match(value):
        facts.ref(source, "symbol", value.replace(":", "."))
