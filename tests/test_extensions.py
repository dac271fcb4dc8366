"""Link prediction and ingest live in layers above the KG facade, and the facade does not reach up to
them: no entry points, no registration hooks. Callers use ``kgos.linkpred.link_predictor(kg)`` and
``kgos.ingest.ingest_into(ws, ...)`` directly (the server layer does)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import kgos
from kgos.ingest import ingest_into
from kgos.linkpred import Predict, link_predictor

ROOT = Path(__file__).resolve().parents[1]


def test_the_facade_has_no_extension_hooks_and_the_package_no_extension_entry_points() -> None:
    assert not hasattr(kgos.KG, "predict") and not hasattr(kgos.KG, "register_extension")
    assert not hasattr(kgos.Workspace, "ingest") and not hasattr(kgos.Workspace, "register_extension")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "kgos.extensions" not in project.get("entry-points", {})


def test_link_predictor_is_one_per_kg(tmp_path: Path) -> None:
    """One per KG object: what it trained is reused by the next call on the same KG."""
    ws = kgos.Workspace(tmp_path / "home")
    a, b = ws.create("a"), ws.create("b")
    assert isinstance(link_predictor(a), Predict) and link_predictor(a) is link_predictor(ws.kg("a"))
    assert link_predictor(a) is not link_predictor(b)


def test_ingest_into_builds_a_kg(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mod.py").write_text("def helper():\n    return 1\n\ndef main():\n    return helper()\n")
    ws = kgos.Workspace(tmp_path / "home")
    ingest_into(ws, "code", [tmp_path / "src"], embed=False)
    assert ws.kg("code").get_node("py:mod.main").name == "main"
