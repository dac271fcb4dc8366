"""docs/api.md lists every route the app serves (and no route it does not)."""

from __future__ import annotations

import re
from pathlib import Path

from kgos.api.app import create_app

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_every_route_is_documented(tmp_path):
    spec = create_app(tmp_path).openapi()
    served = {(m.upper(), path) for path, ops in spec["paths"].items() for m in ops}
    documented = set(re.findall(r"^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|", DOC.read_text(), re.MULTILINE))
    assert served - documented == set(), "routes missing from docs/api.md"
    assert documented - served == set(), "docs/api.md lists routes the app does not serve"
