"""Layer order of DESIGN.md section 3, as the README's "Layer order" table states it: a lower layer
never imports a higher one. The table is read from the README, so the docs and this test cannot drift.

Every module under ``src/kgos`` is parsed with ``ast``; every import counts, also the lazy ones inside
functions and those under ``TYPE_CHECKING`` (a type-only import of a higher layer is still a cycle in
the design, and the next refactor turns it into a real one).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kgos"

README = SRC.parents[1] / "README.md"
ROW = re.compile(r"^\| (\d+) \| (.+) \|$")


def documented_layers(text: str) -> dict[str, int]:
    """Rank of each top-level part of the package from the README's "Layer order" table; equal ranks
    may import each other. ``kgos`` stands for the package's ``__init__`` (the part named "")."""
    section = text.split("**Layer order.**", 1)[1].split("\n\n## ", 1)[0]
    ranks: dict[str, int] = {}
    for line in section.splitlines():
        if m := ROW.match(line.strip()):
            for part in re.findall(r"`([\w]+)`", m.group(2)):
                ranks["" if part == "kgos" else part] = int(m.group(1))
    return ranks


LAYERS: dict[str, int] = documented_layers(README.read_text(encoding="utf-8"))

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
                out.append(f"{here} -> {target}: layer not in the README's layer order")
            elif LAYERS[hi] > LAYERS[lo] and (here, target) not in ALLOWED:
                out.append(f"{here} ({lo or 'kgos'}) imports {target} ({hi or 'kgos'}), a higher layer")
    return out


def test_the_readme_table_gives_every_layer_of_design_md_a_rank() -> None:
    design = ["store", "index", "embed", "retrieval", "methods", "kg", "linkpred", "memory", "llm", "experts",
              "pipeline", "ingest", "research", "eval"]  # DESIGN.md section 3, top to bottom
    assert set(design) <= set(LAYERS)
    assert all(LAYERS[a] <= LAYERS[b] for a, b in zip(design, design[1:], strict=False)), "same direction"
    assert documented_layers("**Layer order.**\n\n| 3 | `a`, `b` (why) |\n| 4 | `kgos` |\n") == {"a": 3, "b": 3, "": 4}


def test_no_module_imports_a_higher_layer() -> None:
    found = violations()
    assert not found, "imports against the README's layer order:\n" + "\n".join(found)


def test_every_top_level_part_has_a_layer() -> None:
    parts = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert parts <= set(LAYERS), f"give these a rank in the README's layer order: {sorted(parts - set(LAYERS))}"


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
