"""Layer order of DESIGN.md section 3: a lower layer never imports a higher one.

Every module under ``src/kgos`` is parsed with ``ast``; every import counts, also the lazy ones inside
functions and those under ``TYPE_CHECKING`` (a type-only import of a higher layer is still a cycle in
the design, and the next refactor turns it into a real one).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kgos"

# Rank of each top-level part of the package; equal ranks may import each other.
LAYERS: dict[str, int] = {
    "errors": 0, "model": 0,  # shared vocabulary of every layer
    "store": 1, "index": 2, "embed": 3, "retrieval": 4, "methods": 5, "kg": 6,
    "linkpred": 7, "memory": 7, "llm": 7,
    "experts": 8,
    "pipeline": 9, "ingest": 9, "research": 9,
    "data": 9,  # the demo loader: imports KGs and creates experts
    "eval": 10,
    "api": 11, "cli": 11, "__main__": 11,
    "": 6,  # ``kgos/__init__``: the public API re-exports the kg layer and what it composes
}

# (importing module, imported module) pairs allowed against the order, each with its reason.
ALLOWED: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Absolute names of every ``kgos`` module ``path`` imports, anywhere in the file."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "kgos")
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base.split(".")[0] != "kgos":
                continue
            # ``from . import hybrid`` imports a submodule: use it when it is one
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _is_module(sub) else base)
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")
    base = parts[:len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _is_module(name: str) -> bool:
    path = SRC.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def violations() -> list[str]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        here = module_name(path)
        for target in sorted(imports_of(path)):
            lo, hi = layer(here), layer(target)
            if lo not in LAYERS or hi not in LAYERS:
                out.append(f"{here} -> {target}: layer not in the table of tests/test_layers.py")
            elif LAYERS[hi] > LAYERS[lo] and (here, target) not in ALLOWED:
                out.append(f"{here} ({lo or 'kgos'}) imports {target} ({hi or 'kgos'}), a higher layer")
    return out


def test_no_module_imports_a_higher_layer() -> None:
    found = violations()
    assert not found, "imports against the layer order of DESIGN.md section 3:\n" + "\n".join(found)


def test_every_top_level_part_has_a_layer() -> None:
    parts = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert parts <= set(LAYERS), f"give these a layer in tests/test_layers.py: {sorted(parts - set(LAYERS))}"


@pytest.mark.parametrize(("source", "target", "bad"), [
    ("from ..kg import KG", "kgos.kg", True),  # methods -> kg
    ("def f():\n    from ..eval.tuning import tune", "kgos.eval.tuning", True),  # lazy import counts
    ("from ..store.base import GraphStore", "kgos.store.base", False),
])
def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     source: str, target: str, bad: bool) -> None:
    fake = SRC / "methods" / "_layer_probe.py"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert target in imports_of(fake)
    assert (LAYERS[layer(target)] > LAYERS["methods"]) is bad
