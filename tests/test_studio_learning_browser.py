"""The studio's Learning view (issue 35) in a real headless Chromium against a real server on
loopback: the demo workspace with turns made by the offline provider shows its gap failure and sends
the suggested node to the review queue, shows the drift alert a user's "The Batch API is real-time
now." raises, adds and removes a cross-KG link from the page, starts and stops an A/B test, and shows
a hostile node name as text."""

from __future__ import annotations

import json
import urllib.request

import pytest
from conftest import write_nodelink
from studio_browser import missing, open_view

from kgos.api.turns import ask
from kgos.experts.feedback import FeedbackService
from kgos.llm import get_provider

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

EVIL = "<img src=x onerror=alert(1)>"
BREAD = "How do I bake sourdough bread?"
VIEWPORT = {"width": 1400, "height": 1000}


def populate(ws, folder):
    nodes = [{"id": "evil", "name": EVIL, "type": "thing"}, {"id": "plain", "name": "Plain node", "type": "thing"}]
    ws.import_file("hostile", write_nodelink(folder / "hostile.json", nodes, [{"source": "evil", "target": "plain",
                                                                               "type": "relates_to"}], name="Hostile"))
    provider = get_provider("offline")
    bread = ask(ws, provider, "demo", BREAD)
    FeedbackService(ws).give(bread.turn_id, "down", f"nothing on bread {EVIL}")
    ask(ws, provider, "demo", "The Batch API is real-time now.")
    FeedbackService(ws).give(ask(ws, provider, "demo", "How do I reduce my API costs?").turn_id, "up")


def api(server, path):
    return json.loads(urllib.request.urlopen(f"{server.url}/api/{path}", timeout=30).read())


def test_gap_failure_shows_and_its_suggestion_goes_to_the_review_queue(server, page):
    open_view(page, server.url, "/learning/demo")
    row = page.locator("tr", has=page.locator(".gap-query", has_text=BREAD))
    assert row.locator(".tag.cause").inner_text() == "no matching node"
    assert "nothing on bread " + EVIL in row.inner_text()  # the comment, as text
    assert page.locator("#view img").count() == 0
    fb = page.locator('#feedback-summary .fb[data-expert="demo"]').inner_text()
    assert "▲ 1" in fb and "▼ 1" in fb and "50.0% positive" in fb
    assert api(server, "kg/demo/predictions?origin=gaps&status=all")["proposals"] == []  # reading wrote nothing
    page.click("#gaps-propose")
    page.wait_for_selector("#gap-status .ok")
    queued = api(server, "kg/demo/predictions?origin=gaps&status=all")["proposals"]
    assert len(queued) == 1 and f"#{queued[0]['id']}" in page.locator("#gap-status").inner_text()
    page.locator("#gap-status a", has_text="Review them").click()
    page.wait_for_selector("#view[data-ready=review]")
    card = page.locator(f'.proposal[data-id="{queued[0]["id"]}"]').inner_text()
    assert "new node" in card and queued[0]["payload"]["name"] in card and BREAD in card  # a node, not an edge
    assert page.errors == []


def test_drift_alert_of_a_contradicting_statement(server, page):
    open_view(page, server.url, "/learning/demo/drift")
    row = page.locator("#drift-alerts tr", has_text="real_time_requirement")
    cells = [c.inner_text() for c in row.locator("td").all()]
    assert cells[:5] == ["Batch API", "real_time_requirement", "0", "person", "contradicted"]
    assert "“The Batch API is real-time now.”" in cells[5] and "reads 0.85" in cells[5]
    assert row.locator("a").get_attribute("href") == "#/explore/demo?node=feature%3Abatch_api"
    assert page.errors == []


def test_add_and_remove_a_cross_kg_link_with_a_hostile_name_shown_as_text(server, page):
    open_view(page, server.url, "/learning/demo/links")
    page.fill("#link-source", "demo:feature:batch_api")
    page.fill("#link-target", "hostile:evil")
    page.fill("#link-type", "mentions")
    page.click("#link-form button.primary")
    page.wait_for_selector("#links tr >> text=mentions")
    assert [(x["source"], x["target"], x["type"]) for x in api(server, "links?kg=demo")["links"]] == [
        ("demo:feature:batch_api", "hostile:evil", "mentions")]
    page.wait_for_function("() => [...document.querySelectorAll('#links a')].some((a) => a.textContent.startsWith('<img'))")
    names = page.locator("#links a").all_inner_texts()
    assert EVIL in names and "Batch API" in names  # ids replaced by names, as text
    assert page.locator("#view img").count() == 0
    page.locator("#links tr", has_text="mentions").get_by_role("button", name="Remove").click()
    page.wait_for_selector("#links >> text=No cross-KG link touches demo yet.")
    assert api(server, "links?kg=demo")["links"] == []
    page.fill("#link-source", "demo:feature:batch_api")  # a bad end: the API's message in the page, nothing written
    page.fill("#link-target", "nosuch:thing")
    page.click("#link-form button.primary")
    page.wait_for_selector("#links-status [data-error]")
    assert "nosuch" in page.locator("#links-status").inner_text()
    assert api(server, "links")["links"] == []
    assert [e for e in page.errors if not e.startswith("Failed to load resource")] == []  # the refused request


def test_start_read_and_stop_an_ab_test(server, page):
    open_view(page, server.url, "/learning/demo/ab?expert=demo")
    page.fill("#ab-id", "weights")
    page.click("#ab-form button.primary")
    page.wait_for_selector("#ab-report >> text=Report: weights")
    assert "every variant needs 30 votes" in page.locator("#ab-decision").inner_text()
    rows = page.locator("#ab-report tbody tr")
    assert [r.locator("td").first.inner_text() for r in rows.all()] == ["control", "variant"]
    assert api(server, "ab?expert_id=demo")["tests"][0]["variants"][1]["overrides"] == {"retrieval": {"alpha": 0.1}}
    page.click("#ab-stop")
    page.wait_for_selector("#ab-report >> text=Report: weights")
    page.wait_for_function("() => !document.querySelector('#ab-stop')")
    assert api(server, "ab/weights")["test"]["status"] == "stopped"
    page.locator("#ab-form .v-over").nth(1).fill("{retrieval: alpha}")  # not JSON: said in the page, nothing sent
    page.click("#ab-form button.primary")
    page.wait_for_selector("#ab-status [data-error]")
    assert "overrides must be JSON" in page.locator("#ab-status").inner_text()
    page.locator("#ab-form .v-over").nth(1).fill('{"kg_db_id": "finance"}')  # the API refuses: its message
    page.click("#ab-form button.primary")
    page.wait_for_function("() => document.querySelector('#ab-status [data-error]')?.dataset.error === 'InvalidArgument'")
    assert "kg_db_id" in page.locator("#ab-status").inner_text()
    assert [t["id"] for t in api(server, "ab?expert_id=demo")["tests"]] == ["weights"]
    assert [e for e in page.errors if not e.startswith("Failed to load resource")] == []


def test_an_unknown_kg_lists_the_kgs_there_are(server, page):
    open_view(page, server.url, "/learning/nosuch/drift")
    alert = page.locator("#view [role=alert]")
    assert "No KG named 'nosuch'" in alert.inner_text()
    assert "#/learning/demo" in alert.locator("a").evaluate_all("(xs) => xs.map((a) => a.getAttribute('href'))")
    assert page.errors == []
