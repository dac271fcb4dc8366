"""Accessibility of KG-OS Studio: axe-core (vendored in tests/vendor, never fetched) run in the system's
headless Chromium on every view of a real server over the demo KGs; a critical violation fails the
test and names the rule and the elements."""

from __future__ import annotations

from pathlib import Path

import pytest
from studio_browser import missing, open_view

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

AXE = (Path(__file__).parent / "vendor" / "axe-core-4.14.1.min.js").read_text(encoding="utf-8")
VIEWS = ["/workspace", "/workspace/demo", "/explore/demo", "/search?q=reduce%20costs&kgs=demo", "/methods/demo",
         "/experts", "/experts/demo", "/experts/demo/edit", "/review/demo?status=all", "/learning/demo", "/learning/demo/drift",
         "/learning/demo/ab?expert=demo", "/learning/demo/links", "/memory", "/eval/demo", "/research", "/embeddings/demo"]


def critical(page) -> list[str]:
    page.evaluate(AXE)  # over the DevTools protocol: the page's CSP (script-src 'self') is not loosened
    result = page.evaluate("() => axe.run(document, { resultTypes: ['violations'] })")
    return [f"{v['id']}: {v['help']} ({', '.join(n['target'][0] for n in v['nodes'][:3])})"
            for v in result["violations"] if v["impact"] == "critical"]


@pytest.mark.parametrize("view", VIEWS)
def test_no_critical_accessibility_violation(server, context, view):
    page = context.new_page()
    try:
        open_view(page, server.url, view)
        assert critical(page) == []
    finally:
        page.close()


def test_explorer_editor_form_has_no_critical_violation(server, context):
    page = context.new_page()
    try:
        open_view(page, server.url, "/explore/demo?node=feature:prompt_caching&depth=1")
        page.wait_for_selector("#edit-node")
        page.click("#edit-node")
        page.wait_for_selector("#node-editor")
        assert critical(page) == []
    finally:
        page.close()
