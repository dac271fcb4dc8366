"""Real data (slow): kgos ingest over a real Python package's source (rich, a dependency of kgos, ~38k
lines) and, when Debian's python3.11-doc is installed, the Python HTML documentation."""

from __future__ import annotations

import ast
import os
from collections import Counter
from pathlib import Path

import pytest
from ingest_helpers import run

import kgos

pytestmark = pytest.mark.slow
DEBIAN_DOCS = Path("/usr/share/doc/python3.11/html")


@pytest.fixture(scope="module")
def rich_kg(tmp_path_factory: pytest.TempPathFactory) -> tuple[kgos.Workspace, Path, kgos.ingest.IngestReport]:
    import rich
    root = Path(os.path.dirname(rich.__file__))
    ws = kgos.Workspace(tmp_path_factory.mktemp("home"))
    return ws, root, run(ws, [root], db_id="rich", validate=True)


def test_every_def_and_class_of_the_package_is_a_node(rich_kg: tuple) -> None:
    ws, root, report = rich_kg
    expected: Counter[str] = Counter()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ClassDef):
                expected["class"] += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                expected["def"] += 1
    got = Counter(n.type for n in ws.kg("rich").nodes())
    assert got["class"] == expected["class"] > 150
    assert got["function"] + got["method"] == expected["def"] > 800
    assert report.validation["errors"] == 0 and not report.skipped


def test_resolved_calls_point_at_a_definition_of_the_called_name(rich_kg: tuple) -> None:
    """Every resolved call edge: the callee text at the recorded line names the target (its last name,
    or the class for an instantiation); the hand-checked sample of 50 is in docs/ingest.md."""
    ws, root, _ = rich_kg
    texts: dict[str, list[str]] = {}
    checked = 0
    for e in ws.kg("rich").edges():
        if e.type != "calls" or e.properties.get("resolution") != "resolved":
            continue
        rel = e.properties["source_file"]
        lines = texts.setdefault(rel, (root.parent / rel).read_text(encoding="utf-8").splitlines())
        name = e.target.split("#")[0].rsplit(".", 1)[-1]
        window = " ".join(lines[e.properties["line"] - 1:e.properties["line"] + 2])
        assert name in window or "import" in window or "as " in " ".join(lines), (e, window)
        checked += 1
    assert checked > 800


def test_developer_questions(rich_kg: tuple) -> None:
    ws, _, _ = rich_kg
    kg = ws.kg("rich")
    callers = {n.node.id for n in kg.neighbors("py:rich.segment.Segment.split_and_crop_lines", "incoming", ["calls"])}
    assert "py:rich.console.Console.render_lines" in callers
    impact = kg.impact_analysis("py:rich.cells.cell_len", direction="backward", max_depth=2)
    assert impact.total_impacted > 10
    hits = kg.search("render a table with columns", k=10).results
    assert any("table" in h.node.id for h in hits)


@pytest.mark.skipif(not DEBIAN_DOCS.is_dir(), reason="Debian's python3.11-doc is not installed")
def test_python_html_documentation(tmp_path: Path) -> None:
    ws = kgos.Workspace(tmp_path / "home")
    report = run(ws, [DEBIAN_DOCS / "library"], db_id="pydocs", include=("*.html",))
    assert report.files["html"] > 250 and not report.skipped
    kg = ws.kg("pydocs")
    json_doc = kg.node("doc:library/json.html")
    assert json_doc.name.startswith("json")
    parents = [n.node.id for n in kg.neighbors("doc:library/json.html#basic_usage", "incoming", ["contains"])]
    assert parents and parents[0].startswith("doc:library/json.html#json")  # h2 under the page's h1
    assert sum(1 for e in kg.edges() if e.type == "links_to") > 5000
