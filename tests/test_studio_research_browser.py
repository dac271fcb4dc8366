"""The research debugger (spec/004) in the system's headless Chromium against a real server on
loopback: a breakpoint marker set before the run is shown and hit (the run pauses there), a marker
set from the page reaches the run, step and resume drive it, the inspector shows a stage's input and
output as a searchable JSON tree, the replay diff says every output was reproduced, gaps, timeline
and decisions are drawn, and "restart last iteration" on a finished run really runs it again."""

from __future__ import annotations

import json
import urllib.request

import pytest
from studio_browser import missing, open_view

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def call(server, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{server.url}/api/{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json", "X-KGOS-Client": "studio"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())


def start(server, **extra):
    body = {"question": "How do I reduce API costs?", "kgs": ["demo"], "max_iterations": 1, "store_mode": "propose", **extra}
    return call(server, "POST", "research/runs", body)["run_id"]


def test_breakpoint_marker_is_shown_and_hit_then_step_and_resume(server, page):
    run_id = start(server, breakpoints=["search"])
    open_view(page, server.url, f"/research/{run_id}")
    assert page.locator("#bp-search").get_attribute("aria-pressed") == "true"
    page.wait_for_selector("#run-status:has-text('paused')", timeout=30_000)  # hit: paused before search
    assert "complete" in page.locator("#stage-query").inner_text() and "idle" in page.locator("#stage-search").inner_text()
    page.click("#bp-extract")  # a second marker, set from the page
    page.wait_for_selector("#bp-extract[aria-pressed='true']")
    assert call(server, "GET", f"research/runs/{run_id}")["control"]["breakpoints"] == ["extract", "search"]
    page.click("#ctl-step")  # search runs, then the run stays paused
    page.wait_for_selector("#stage-search:has-text('complete')", timeout=30_000)
    call(server, "PUT", f"research/runs/{run_id}/breakpoints", {"stages": []})
    page.click("#ctl-resume")
    page.wait_for_selector("#run-status:has-text('completed')", timeout=60_000)
    assert page.errors == []


def test_inspector_timeline_gaps_decisions_and_replay_diff(server, page):
    run_id = start(server)
    for _ in range(120):
        if call(server, "GET", f"research/runs/{run_id}")["status"] == "completed":
            break
        page.wait_for_timeout(250)
    open_view(page, server.url, f"/research/{run_id}")
    page.click("#stage-search .stage-name")
    page.wait_for_selector("#inspector-tree details")
    assert "search.multi" in page.locator("#inspector").inner_text()
    page.select_option("#inspector-side", "input")
    page.wait_for_selector("#inspector p:has-text('· input sha256')")
    page.fill("#inspector-search", "entities")
    visible = page.locator("#inspector-tree .leaf:visible, #inspector-tree details:visible summary")
    assert visible.count() >= 1 and "entities" in page.locator("#inspector-tree").inner_text()
    assert page.locator("#timeline .tl-row").count() == 1
    assert page.locator("#gaps tbody tr").count() >= 1 and page.locator("#decisions tbody tr").count() >= 1
    assert page.locator("#module-config details.module").count() == 8
    page.click("#replay")
    page.wait_for_selector("#replay-verdict", timeout=60_000)
    assert "reproduced every stage" in page.locator("#replay-verdict").inner_text()
    assert page.errors == []


def test_restart_last_iteration_of_a_finished_run_runs_it_again(server, page):
    run_id = start(server)
    for _ in range(120):
        if call(server, "GET", f"research/runs/{run_id}")["status"] == "completed":
            break
        page.wait_for_timeout(250)
    before = len(call(server, "GET", f"research/runs/{run_id}")["decisions"])
    open_view(page, server.url, f"/research/{run_id}")
    page.click("#ctl-restart_iteration")
    page.wait_for_selector("#control-result:has-text('running')", timeout=30_000)
    for _ in range(120):
        m = call(server, "GET", f"research/runs/{run_id}")
        if m["status"] == "completed" and not m["live"]:
            break
        page.wait_for_timeout(250)
    assert [d["action"] for d in m["decisions"]].count("restart_iteration") == 1 and len(m["decisions"]) > before
    assert len(m["iterations"]) == 1
    assert page.errors == []
