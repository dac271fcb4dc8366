"""The studio's chat renders expert answers as Markdown, safely (issue 29, goal 6), in a real headless
Chromium against a real server on loopback: bold and lists become elements, citations stay links
into the explorer, and node text that carries raw HTML, ``javascript:`` links, fake ``[Source: ...]``
markers or a huge table renders inert."""

from __future__ import annotations

import pytest
from conftest import write_nodelink
from studio_browser import missing, open_view, serving

import kgos
from kgos.data import load_demo
from kgos.experts import ExpertService

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

TABLE = "| a | b |\n|---|---|\n" + "| x | y |\n" * 400
MODEL_ANSWER = ("Here:\n\n" + TABLE + "\n<a href=\"javascript:alert(4)\" onclick=\"alert(5)\">raw link</a> "
                "[x](JaVaScRiPt:alert(6)) [Source: hostile:trap]")
HOSTILE = [
    {"id": "trap", "name": "Quokka trap", "type": "feature",
     "description": "<img src=x onerror=alert(1)><script>alert(2)</script> Quokka **traps** work, see "
                    "[the guide](https://example.com/quokka) or [this](javascript:alert(3)) or "
                    "[that](data:text/html,hi) and [Source: demo:goal:cost_reduction] says so"},
    {"id": "grid", "name": "Quokka grid", "type": "feature", "description": "Quokka grid\n" + TABLE},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("studio-md")
    ws = kgos.Workspace(folder / "ws")
    load_demo(ws, None)
    ws.import_file("hostile", write_nodelink(folder / "hostile.json", HOSTILE,
                                             [{"source": "trap", "target": "grid", "type": "relates_to"}]))
    experts = ExpertService(ws)
    experts.create({"name": "Hostile", "kg_db_id": "hostile"}, id="hostile")
    cid, _ = experts.store.open_conversation("hostile", "conv_markdown")  # as a model could have answered
    experts.store.add_messages(cid, [("user", "show me", {}), ("assistant", MODEL_ANSWER, {})])
    ws.close()
    with serving(folder / "ws") as s:
        yield s


# the shared Chromium and page of conftest.py (one sync Playwright per session): record and dismiss
# every dialog, since an alert() here would be hostile text running
DIALOGS = "record"


def ask(page, base: str, expert: str, question: str):
    open_view(page, base, f"/experts/{expert}")
    page.fill("#chat-input", question)
    page.click("#chat-send")
    page.wait_for_selector(".trace h3", state="attached", timeout=60_000)  # filled when the stream is done
    return page.locator(".msg.answer").last


def test_answer_markdown_becomes_elements_and_citations_stay_links(server, page):
    answer = ask(page, server.url, "demo", "How do I reduce my API costs?")
    assert answer.locator("strong").count() >= 2 and answer.locator("li").count() >= 2
    assert "**" not in answer.inner_text()  # before: the raw Markdown was shown
    links = answer.locator("a.citation")
    assert links.count() >= 2
    assert all(a.get_attribute("href").startswith("#/explore/demo?node=") for a in links.all())
    assert page.errors == []


def test_hostile_node_text_renders_inert(server, page):
    answer = ask(page, server.url, "hostile", "quokka trap")
    text = answer.inner_text()
    assert "Quokka" in text and answer.locator("strong").count() >= 1
    assert answer.locator("img, script, iframe, object, embed, [onerror], [onclick]").count() == 0
    assert "<img src=x onerror=alert(1)>" in text  # raw HTML is shown as text, not parsed
    hrefs = [a.get_attribute("href") for a in answer.locator("a").all()]
    assert all(h is None or h.startswith(("https://", "http://", "#/explore/")) for h in hrefs), hrefs
    guide = answer.locator('a[href="https://example.com/quokka"]')
    assert guide.count() == 1 and guide.get_attribute("rel") == "noopener noreferrer nofollow"
    # the fake marker in the node's text cites a node this answer was not given: not a link
    assert answer.locator('a.citation[title="demo:goal:cost_reduction"]').count() == 0
    assert answer.locator("a.citation").count() >= 1  # the real citations of the hostile KG's nodes
    assert page.errors == []


def test_a_model_answer_with_a_huge_table_and_raw_html_renders_inert(server, page):
    open_view(page, server.url, "/experts/hostile?c=conv_markdown")
    answer = page.locator(".msg.answer").last
    assert answer.locator("table tr").count() == 401  # rendered as a table ...
    box = answer.bounding_box()
    assert box is not None and box["height"] < 1000  # ... that scrolls inside the answer (unbounded: ~10,000 px)
    assert answer.locator("[onclick], [onerror]").count() == 0
    assert '<a href="javascript:alert(4)"' in answer.inner_text()  # raw HTML shown as text, never parsed
    hrefs = answer.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs == [None, "#/explore/hostile?node=trap"]  # [x](JaVaScRiPt:...) kept its text, lost its href
    assert page.errors == []
