"""Small source trees with known answers for the ingest tests, written into a temporary folder."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import kgos
from kgos.ingest import IngestOptions, IngestReport, ingest
from kgos.llm.base import ChatProvider, Message

PKG = {
    "shop/__init__.py": '''
        """The shop package."""
        from .orders import Order, make_order
        ''',
    "shop/base.py": '''
        class Model:
            """Base of every model."""

            def save(self):
                return self.validate()

            def validate(self):
                return True
        ''',
    "shop/orders.py": '''
        """Orders. An Order requires a Customer."""
        import json
        from .base import Model
        from . import util


        class Order(Model):
            """One order."""

            def __init__(self, items):
                self.items = items

            def total(self) -> float:
                """Sum of the items."""
                return util.add_all(self.items)

            def store(self):
                self.save()
                return json.dumps(self.items)

            @util.logged
            def ship(self):
                return super().save()


        def make_order(items):
            return Order(items)
        ''',
    "shop/util.py": '''
        import functools


        def add_all(values):
            return sum(values)


        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args):
                return fn(*args)
            return wrapper


        def refresh(thing):
            return thing.reload()
        ''',
    "shop/cache.py": '''
        class Store:
            def reload(self):
                return 1
        ''',
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def run(ws: kgos.Workspace, paths: list[Path | str], db_id: str = "code", **options: object) -> IngestReport:
    """Ingest with the cheap defaults of the fast suite: no embedding, no dimension inference."""
    opts = {"embed": False, "dimensions": False, **options}
    return ingest(ws, db_id, [str(p) for p in paths], IngestOptions(**opts))  # type: ignore[arg-type]


def edges_of(kg: kgos.KG, type: str) -> dict[tuple[str, str], float]:
    return {(e.source, e.target): e.weight for e in kg.edges() if e.type == type}


class FakeLLM(ChatProvider):
    name = "fake"

    def __init__(self, answer: dict | str | None = None, error: Exception | None = None) -> None:
        self.answer = json.dumps(answer) if isinstance(answer, dict) else answer
        self.error = error
        self.calls = 0

    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0, **kw: object) -> Iterator[str]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        yield self.answer or ""


DOC = ("# Caching\n\nPrompt caching reduces cost for repeated prefixes. It requires a stable prefix of at least "
       "1024 tokens. Caching cannot help with one-off prompts, and it enables cheaper agent loops when the same "
       "system prompt is sent many times over a long session of work.\n")
ANSWER = {
    "concepts": [
        {"name": "Prompt caching", "type": "capability", "evidence": "Prompt caching reduces cost"},
        {"name": "Stable prefix", "type": "concept", "evidence": "requires a stable prefix"},
        {"name": "Cheaper agent loops", "type": "goal", "evidence": "enables cheaper agent loops"},
        {"name": "bob@example.com", "type": "concept", "evidence": "Prompt caching"},
        {"name": "Invented thing", "type": "concept", "evidence": "this sentence is not in the text"},
    ],
    "edges": [
        {"subject": "Prompt caching", "predicate": "requires", "object": "Stable prefix", "weight": 0.9,
         "evidence": "It requires a stable prefix"},
        {"subject": "Prompt caching", "predicate": "enables", "object": "Cheaper agent loops", "weight": 0.8,
         "evidence": "it enables cheaper agent loops"},
        {"subject": "Stable prefix", "predicate": "enables", "object": "Cheaper agent loops", "weight": 0.3,
         "evidence": "enables cheaper agent loops"},
    ],
}
