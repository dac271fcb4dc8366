from __future__ import annotations

import json
from pathlib import Path

import pytest

import kgos

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


@pytest.fixture(autouse=True)
def _hash_is_the_default_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """``default`` is the hashing embedder in tests: `kgos kg import` embeds by default, and MiniLM (or
    building the fast tier) would cost seconds per test. Tests of the real default unset it."""
    monkeypatch.setenv("KGOS_EMBEDDER", "hash")
    monkeypatch.delenv("KGOS_FAST_EMBEDDER", raising=False)


@pytest.fixture
def ws(tmp_path: Path) -> kgos.Workspace:
    w = kgos.Workspace(tmp_path / "home")
    yield w
    w.close()


def write_nodelink(path: Path, nodes: list[dict], edges: list[dict], **meta: str) -> Path:
    path.write_text(json.dumps({"format": "kgos-node-link/1", **meta, "nodes": nodes, "edges": edges}),
                    encoding="utf-8")
    return path


GREEK = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
         "nu", "xi", "omicron", "pi", "rho", "sigma"]


def word_chain_kg(ws: kgos.Workspace, words: list[str], db_id: str = "t") -> kgos.KG:
    """An embedded (hash) KG of one node per word, named '<word> <next word> widget' so names share
    words, chained by relates_to edges."""
    g = ws.create(db_id)
    for i, w in enumerate(words):
        g.add_node(f"{w} {words[(i + 1) % len(words)]} widget", "thing", f"The {w} widget for quokka keepers.",
                   id=f"n{i}")
    for i in range(len(words) - 1):
        g.add_edge(f"n{i}", f"n{i + 1}", "relates_to")
    g.embed("hash")
    return g


@pytest.fixture
def tiny_graph() -> tuple[list[dict], list[dict]]:
    nodes = [
        {"id": "feature:prompt_caching", "name": "Prompt caching", "type": "feature",
         "description": "Reuse a cached prompt prefix.", "properties": {"aliases": ["context caching"],
                                                                          "pricing_tier": 0.2}},
        {"id": "benefit:token_savings", "name": "Token savings", "type": "benefit"},
        {"id": "goal:cost_reduction", "name": "Cost reduction", "type": "goal",
         "description": "Spend less on API calls."},
    ]
    edges = [
        {"source": "feature:prompt_caching", "target": "benefit:token_savings", "type": "enables"},
        {"source": "benefit:token_savings", "target": "goal:cost_reduction", "type": "contributes_to",
         "weight": 0.8, "properties": {"note": "main lever"}},
    ]
    return nodes, edges


def demo_home(path: Path, embedder: str | None) -> Path:
    """A workspace folder holding the demo KGs and experts (for a module fixture to load once)."""
    from kgos.data import load_demo
    w = kgos.Workspace(path)
    load_demo(w, embedder=embedder)
    w.close()
    return path


def workspace_copy(home: Path, folder: Path) -> kgos.Workspace:
    """A private copy of ``home`` opened as a workspace, so one test's writes do not reach another.
    The derived caches are left out: a background thread may still be saving a snapshot there, and
    they are rebuilt on use."""
    import shutil
    shutil.copytree(home, folder, ignore=shutil.ignore_patterns("cache"))
    return kgos.Workspace(folder)


# The studio's browser tests (tests/test_studio_*_browser.py) share one Chromium per session and one
# demo workspace built once; each module serves its own copy of it, plus what the module's
# ``populate(ws, folder)`` adds. A module may set VIEWPORT, DIALOGS and CONSOLE_IGNORED (see
# ``studio_browser.new_page``).

@pytest.fixture(scope="session")
def studio_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_home(tmp_path_factory.mktemp("studio-demo") / "ws", None)


@pytest.fixture(scope="module")
def workspace(request: pytest.FixtureRequest, studio_demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    ws = workspace_copy(studio_demo, folder / "ws")
    try:
        populate = getattr(request.module, "populate", None)
        if populate is not None:
            populate(ws, folder)
    finally:
        ws.close()
    return folder / "ws"


@pytest.fixture(scope="module")
def server(workspace: Path):
    from studio_browser import serving
    with serving(workspace) as s:
        yield s


@pytest.fixture(scope="session")
def context():
    from studio_browser import chromium
    with chromium(1400, 900) as ctx:
        yield ctx


@pytest.fixture
def page(request: pytest.FixtureRequest, context):
    from studio_browser import new_page
    module = request.module
    p = new_page(context, getattr(module, "VIEWPORT", None), getattr(module, "DIALOGS", "confirm"), getattr(module, "CONSOLE_IGNORED", ()))
    yield p
    p.close()
