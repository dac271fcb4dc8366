"""Small source trees with known answers for the ingest tests, written into a temporary folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

import kgos
from kgos.ingest import IngestOptions, IngestReport, ingest

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
