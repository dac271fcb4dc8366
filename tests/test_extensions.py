"""``kg.predict`` and ``ws.ingest`` live in layers above the KG facade; they load on first use through
the ``kgos.extensions`` entry points, so a user never has to import those layers first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgos.errors import KGOSError
from kgos.kg.facade import load_extension


def test_predict_and_ingest_load_without_importing_their_layers(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mod.py").write_text("def helper():\n    return 1\n\ndef main():\n    return helper()\n")
    script = textwrap.dedent(f"""
        import sys, kgos
        ws = kgos.Workspace({str(tmp_path / 'home')!r})
        assert "kgos.linkpred" not in sys.modules and "kgos.ingest" not in sys.modules
        report = ws.ingest("code", [{str(tmp_path / 'src')!r}], embed=False)
        kg = ws.kg("code")
        print(kg.get_node("py:mod.main").name, type(kg.predict).__name__)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["main", "Predict"]


def test_an_extension_nobody_provides_is_a_clear_error(tmp_path: Path):
    import kgos
    kg = kgos.Workspace(tmp_path).create("x")
    assert load_extension("no-such-extension") is False
    with pytest.raises(KGOSError, match="no installed package provides it"):
        kg.extension("no-such-extension")
