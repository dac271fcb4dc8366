"""KG-OS Studio in a real headless Chromium (Debian's package, driven by Playwright) against a real
server on loopback over a temporary workspace with the demo KGs: every view loads without console
errors, the explorer draws the nodes the API returned, search shows signal bars, chat streams and
its citations open their node, upload import works, hostile and very long names render as text,
and bad input (unknown KG or node, a refused token, a server gone, a failed import, a 50,000-node
request) gives a clear message in the page."""

from __future__ import annotations

import json
import sqlite3
import urllib.request

import pytest
from api_helpers import MEMORY_DDL
from conftest import write_nodelink
from studio_browser import Server, missing, open_view, serving

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

EVIL = "<img src=x onerror=alert(1)>"
LONG = "A very long node name " + "that goes on and on " * 40
VIEWPORT = {"width": 1400, "height": 1000}
DIALOGS = "record"  # every dialog is an error here, confirm() included


def populate(ws, folder):
    nodes = [{"id": "evil", "name": EVIL, "type": "<b>type</b>", "description": "<script>alert(2)</script>"},
             {"id": "long", "name": LONG, "type": "thing"}, {"id": "plain", "name": "Plain node", "type": "thing"}]
    edges = [{"source": "evil", "target": "plain", "type": "relates_to"}, {"source": "long", "target": "plain", "type": "relates_to"}]
    ws.import_file("hostile", write_nodelink(folder / "hostile.json", nodes, edges, name="Hostile"))


def api(server, path):
    return json.loads(urllib.request.urlopen(f"{server.url}/api/{path}", timeout=30).read())


VIEWS = ["/workspace", "/workspace/demo", "/explore/demo", "/search?q=reduce%20costs&kgs=demo,finance", "/methods/demo",
         "/methods/demo?m=dimension-filter", "/experts", "/experts/demo", "/experts/demo/edit", "/experts/new", "/memory",
         "/eval/demo", "/review", "/review/demo?status=all", "/research", "/learning",
         "/learning/demo/ab", "/learning/demo/links", "/learning/hostile/ab", "/learning/hostile/drift"]


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_loads_without_console_errors(server, page, view):
    open_view(page, server.url, view)
    assert page.locator("#view h1").count() == 1
    assert page.errors == [] and page.locator("#view [data-error]").count() == 0


def test_explorer_draws_the_nodes_the_api_returned(server, page):
    expected = api(server, "kg/demo/neighborhood?node=feature:prompt_caching&depth=2&max_nodes=300")
    open_view(page, server.url, "/explore/demo?node=feature:prompt_caching&depth=2&max_nodes=300")
    drawn = page.evaluate("window.kgosExplorer")
    assert sorted(drawn["ids"]) == sorted(n["id"] for n in expected["nodes"])
    assert drawn["edges"] == len(expected["edges"]) > 0
    assert page.locator("#panel-name").inner_text() == "Prompt caching"  # the centre's panel opens
    assert page.locator("#node-panel .bar").count() == 56
    assert page.errors == []


def test_search_draws_a_bar_for_every_signal_and_bonus_adding_up_to_the_score(server, page):
    expected = json.loads(urllib.request.urlopen(urllib.request.Request(
        f"{server.url}/api/search", json.dumps({"query": "reduce my API costs", "db_ids": ["demo", "finance"], "k": 5,
                                                "explain": True}).encode(),
        {"Content-Type": "application/json"}), timeout=30).read())["results"]
    open_view(page, server.url, "/search?q=reduce%20my%20API%20costs&kgs=demo,finance&k=5")
    hits = page.locator(".hit")
    assert hits.count() == 5
    for i, hit in enumerate(expected):
        bars = hits.nth(i).locator(".signals .bar")
        assert [b.get_attribute("class") for b in bars.all()] == [
            "bar embedding", "bar text", "bar graph", "bar intent", "bar name", "bar solution", "bar propagation",
            "bar bonus"]
        shown = [float(b.locator("span").last.inner_text()) for b in bars.all()]  # what each one added
        assert abs(sum(shown) - hit["score"]) < 0.01  # 3-decimal labels of 8 terms
    assert "Intent:" in page.locator("#intent").inner_text()
    assert page.locator(".hit .tag.method").count() >= 5


def test_thumbs_down_under_an_answer_records_the_vote_with_its_comment(server, page):
    open_view(page, server.url, "/experts/demo")
    page.fill("#chat-input", "How do I stream tokens to the user?")
    page.click("#chat-send")
    page.wait_for_selector(".feedback .vote.down", timeout=60_000)  # shown once the answer is done
    bar = page.locator(".feedback").last
    turn_id = bar.get_attribute("data-turn")
    bar.locator("input").fill("it should start with streaming responses")
    bar.locator(".vote.down").click()
    page.wait_for_function("() => document.querySelector('.feedback:last-of-type [role=status]')"
                           "?.textContent.includes('not helpful')", timeout=10_000)
    with urllib.request.urlopen(f"{server.url}/api/feedback/{turn_id}") as r:
        vote = json.loads(r.read())
    assert vote["rating"] == "down" and vote["comment"] == "it should start with streaming responses"
    bar.locator(".vote.up").click()  # a second vote replaces the first
    page.wait_for_function("() => [...document.querySelectorAll('.feedback [role=status]')]"
                           ".some((e) => e.textContent === 'Recorded: helpful')", timeout=10_000)


def test_chat_streams_tokens_and_a_citation_opens_its_node(server, page):
    open_view(page, server.url, "/experts/demo")
    page.evaluate("""() => { window.kgosUpdates = 0; new MutationObserver(() => { window.kgosUpdates++; })
        .observe(document.getElementById('chat-log'), { childList: true, subtree: true, characterData: true }); }""")
    page.fill("#chat-input", "How do I reduce my API costs?")
    page.click("#chat-send")
    page.wait_for_selector(".trace h3", state="attached", timeout=60_000)  # filled when the stream is done
    page.wait_for_selector("a.citation")
    assert int(page.locator(".msg.answer").last.get_attribute("data-tokens")) > 10  # shown token by token
    assert page.evaluate("window.kgosUpdates") >= 3  # question, streamed text, final answer with links
    trace = page.locator(".trace")
    assert "Citation check" in trace.text_content() and "Retrieved nodes" in trace.text_content()
    assert "Intent: cost_optimization" in trace.text_content()  # from the metadata stored with the answer
    trace.locator("summary").click()  # collapsible: opens on click
    assert "valid" in trace.inner_text()
    rows = trace.locator("tbody tr")  # one row per retrieved node, with a bar per signal it carries
    assert rows.count() >= 3 and trace.locator(".signals .bar").count() == 7 * rows.count()
    assert rows.first.locator(".bar.text .fill").evaluate("e => parseFloat(e.style.width)") > 0
    assert "Edges followed" in trace.inner_text() and trace.locator(".trace-edges a").count() >= 2
    assert "Composition plan" in trace.inner_text()
    citation = page.locator("a.citation").first
    node_id = citation.get_attribute("title").split(":", 1)[1]
    citation.click()
    page.wait_for_selector("#panel-name", timeout=30_000)
    assert page.evaluate("location.hash").startswith("#/explore/demo?node=")
    assert node_id in page.evaluate("window.kgosExplorer.ids")
    assert page.errors == []


def test_import_by_upload_and_a_failed_import(server, page, tmp_path):
    good = write_nodelink(tmp_path / "up.json", [{"id": "a", "name": "Alpha"}, {"id": "b", "name": "Beta"}],
                          [{"source": "a", "target": "b", "type": "relates_to"}])
    open_view(page, server.url, "/workspace")
    page.fill("#import-db", "uploaded")
    page.set_input_files("#import-file", str(good))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#import-result .ok", timeout=60_000)
    assert "Imported 2 nodes and 1 edges" in page.locator("#import-result").inner_text()
    assert {k["db_id"] for k in api(server, "kg")} >= {"uploaded"}
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": [{"name": "no id"}], "edges": [')
    page.fill("#import-db", "broken")
    page.set_input_files("#import-file", str(bad))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#import-result [data-error]")
    assert page.locator("#import-result [data-error]").inner_text().strip() != ""
    assert "broken" not in {k["db_id"] for k in api(server, "kg")}


def test_hostile_and_very_long_names_render_as_text(server, page):
    open_view(page, server.url, "/explore/hostile?node=evil&depth=1")
    assert page.locator("#panel-name").inner_text() == EVIL
    assert page.locator("#view img").count() == 0 and page.locator("#view script").count() == 0
    assert "<script>alert(2)</script>" in page.locator("#node-panel").inner_text()
    open_view(page, server.url, "/search?q=node&kgs=hostile")
    assert EVIL in page.locator("#results").inner_text() and page.locator("#view img").count() == 0
    open_view(page, server.url, "/explore/hostile?node=long&depth=1")
    assert page.locator("#panel-name").inner_text() == LONG.strip()
    box = page.locator("#panel-name").bounding_box()
    assert box["width"] <= page.locator("#node-panel").bounding_box()["width"]  # wraps inside its panel
    assert not any("alert" in e for e in page.errors)


def test_bad_urls_and_oversized_requests_say_what_is_wrong(server, page):
    open_view(page, server.url, "/explore/nope")
    assert "No KG 'nope'" in page.locator("#view [role=alert]").inner_text()
    open_view(page, server.url, "/explore/demo?node=feature:prompt_cachin")
    assert "no node 'feature:prompt_cachin'" in page.locator("#graph-info").inner_text()
    assert page.locator("#graph-info a", has_text="feature:prompt_caching").count() == 1
    open_view(page, server.url, "/explore/demo?depth=10&max_nodes=50000")
    assert "above the server's cap" in page.locator("#graph-message").inner_text()
    open_view(page, server.url, "/nowhere")
    assert "No view 'nowhere'" in page.locator("#view").inner_text()


def test_evaluation_job_shows_progress_charts_and_failing_probes(server, page):
    open_view(page, server.url, "/eval/demo")
    assert page.locator("#kg-charts canvas").count() == 3
    page.fill("#probe-limit", "40")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector("#eval-result canvas", timeout=120_000)
    assert page.locator("#eval-progress").get_attribute("value") in ("1", "1.0")
    assert "complete (default), 40 of 40 probe rankings" in page.locator("#eval-status").inner_text()
    if page.locator("a.failing-probe").count():
        page.locator("a.failing-probe").first.click()
        page.wait_for_selector(".hit, #results p")
        assert page.evaluate("location.hash").startswith("#/search?")
    assert page.errors == []


def test_a_token_server_asks_once_and_says_when_the_token_is_refused(workspace, context):
    page = context.new_page()
    with serving(workspace, token="s3cret") as server:
        page.goto(f"{server.url}/#/workspace")
        page.wait_for_selector("#token-dialog")
        page.fill("#token-input", "expired")
        page.get_by_role("button", name="Use token").click()
        page.wait_for_selector("#token-dialog .bad")
        assert "refused" in page.locator("#token-dialog").inner_text()
        page.fill("#token-input", "s3cret")
        page.get_by_role("button", name="Use token").click()
        page.wait_for_selector("#view[data-ready]")
        assert "demo" in page.locator("#view table").inner_text()
        open_view(page, server.url, "/search?q=costs&kgs=demo")  # asked once: the tab keeps it
        assert page.locator("#token-dialog").count() == 0 and page.locator(".hit").count() > 0
    page.close()


def test_a_server_restart_gives_a_message_then_the_page_works_again(workspace, context):
    page = context.new_page()
    server = Server(workspace).start()
    try:
        open_view(page, server.url, "/experts/demo")
        server.stop()
        page.fill("#chat-input", "How do I reduce my API costs?")
        page.click("#chat-send")
        page.wait_for_selector("#chat-log .bad")
        assert "is 'kgos serve' still running?" in page.locator("#chat-log .bad").inner_text()
        server.start()
        page.fill("#chat-input", "How do I reduce my API costs?")
        page.click("#chat-send")
        page.wait_for_selector("a.citation", timeout=60_000)
    finally:
        server.stop()
        page.close()


def neighbours(server, node):
    return {(n["edge"]["type"], n["node"]["id"]) for n in api(server, f"kg/demo/nodes/{node}/neighbors?direction=outgoing")["neighbors"]}


def test_review_queue_accept_creates_the_edge_undo_removes_it_keys_reject(server, page):
    open_view(page, server.url, "/review/demo")
    page.get_by_role("button", name="Predict").click()
    page.wait_for_selector("#review-status .ok", timeout=120_000)
    page.wait_for_selector(".proposal", timeout=30_000)
    first = page.locator(".proposal").first
    pid = first.get_attribute("data-id")
    proposal = api(server, f"kg/demo/predictions/{pid}")
    assert (proposal["type"], proposal["target"]) not in neighbours(server, proposal["source"])
    first.get_by_role("button", name="Accept").click()
    page.wait_for_selector("#review-status .ok")
    assert "accepted" in page.locator("#review-status").inner_text()
    assert (proposal["type"], proposal["target"]) in neighbours(server, proposal["source"])  # the edge exists
    first.get_by_role("button", name="Undo").click()
    page.wait_for_selector("#review-status >> text=pending again")
    assert (proposal["type"], proposal["target"]) not in neighbours(server, proposal["source"])
    second = page.locator(".proposal").nth(1).get_attribute("data-id")
    page.keyboard.press("j")
    page.keyboard.press("r")
    page.wait_for_selector("#review-status >> text=rejected")
    assert api(server, f"kg/demo/predictions/{second}")["status"] == "rejected"
    assert page.errors == []


def test_research_run_started_from_the_page_shows_its_stages(server, page):
    open_view(page, server.url, "/research")
    page.fill("#research-question", "How do I reduce API costs?")
    page.locator("#view form label", has_text="demo").first.locator("input").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector("#view h2.long", timeout=30_000)
    assert page.evaluate("location.hash").startswith("#/research/r_")
    for _ in range(60):  # the run is in the background: reload until it has finished
        open_view(page, server.url, page.evaluate("location.hash")[1:])
        if "live" not in page.locator("#view .card p").first.inner_text():
            break
        page.wait_for_timeout(1000)
    text = page.locator("#view").inner_text()
    assert "Iteration timeline" in text and "query.intent" in text and "Decision log" in text
    assert page.errors == []


def test_export_downloads_the_kg_and_the_expert(server, page, tmp_path):
    open_view(page, server.url, "/workspace")
    row = page.locator("#view tr", has_text="finance").first
    with page.expect_download() as download:
        row.get_by_role("button", name="Export").click()
    path = tmp_path / "finance.json"
    download.value.save_as(path)
    assert len(json.loads(path.read_text())["nodes"]) == api(server, "kg/finance")["stats"]["nodes"]
    open_view(page, server.url, "/experts")
    with page.expect_download() as download:
        page.locator("#view tr", has_text="Financial Advisor").get_by_role("button", name="Export").click()
    download.value.save_as(tmp_path / "expert.json")
    assert json.loads((tmp_path / "expert.json").read_text())["expert"]["name"] == "Financial Advisor"
    assert page.errors == []


def explorer_nodes(page):
    return page.evaluate("window.kgosExplorer.nodes")


def test_expand_adds_neighbours_and_search_focuses_a_drawn_node(server, page):
    open_view(page, server.url, "/explore/demo?node=goal:cost_reduction&depth=1")
    before = explorer_nodes(page)
    assert before == len(api(server, "kg/demo/neighborhood?node=goal:cost_reduction&depth=1")["nodes"])
    page.locator("#node-panel table a").first.click()  # a neighbour, from the edge list
    page.wait_for_selector("#panel-name:not(:text-is('Reduce API costs'))")
    page.get_by_role("button", name="Expand").click()
    for _ in range(100):
        if explorer_nodes(page) > before:
            break
        page.wait_for_timeout(100)
    assert explorer_nodes(page) > before
    page.fill("#focus", "goal:cost_reduction")
    page.locator("#focus").dispatch_event("change")
    page.wait_for_selector("#panel-name:text-is('Reduce API costs')")
    assert page.errors == []


def test_a_server_crash_mid_stream_keeps_the_partial_answer_and_says_so(workspace, context):
    """A model streaming slowly (a fake OpenAI-compatible server), the KG-OS server killed while the
    answer streams: the tokens so far stay, and the page says the connection broke."""
    from llm_fake_servers import FakeServer, stream_script
    from test_llm_providers import openai_text
    fake = FakeServer().start()
    fake.script = stream_script(openai_text([f"piece {i} " for i in range(400)]), delay=0.05)
    server = Server(workspace, env={"KGOS_LLM_PROVIDER": "openai", "KGOS_OPENAI_BASE_URL": f"{fake.url}/v1",
                                    "KGOS_LLM_MODEL": "fake"}).start()
    page = context.new_page()
    try:
        open_view(page, server.url, "/experts/demo")
        page.fill("#chat-input", "How do I reduce my API costs?")
        page.click("#chat-send")
        page.wait_for_selector(".msg.answer[data-tokens]", timeout=60_000)
        server.kill()
        page.wait_for_selector("#chat-log .bad", timeout=30_000)
        assert "broke mid-answer" in page.locator("#chat-log .bad").inner_text()
        assert "piece 0" in page.locator(".msg.answer").last.inner_text()  # the partial answer stays
    finally:
        server.kill()
        fake.stop()
        page.close()


def test_attach_form_shows_only_when_allowed_and_attaches_a_file(server, page, tmp_path):
    open_view(page, server.url, "/workspace")  # the module's server: no KGOS_INGEST_ROOTS
    assert page.locator("#attach-form").count() == 0 and "KGOS_INGEST_ROOTS" in page.locator("#attach-off").inner_text()
    roots = tmp_path / "roots"
    roots.mkdir()
    with sqlite3.connect(roots / "mem.sqlite") as conn:
        conn.executescript(MEMORY_DDL)
    conn.close()
    allowed = Server(tmp_path / "ws", env={"KGOS_INGEST_ROOTS": str(roots)}).start()
    try:
        open_view(page, allowed.url, "/workspace")
        page.fill("#attach-db", "mem")
        page.fill("#attach-path", str(tmp_path / "elsewhere.sqlite"))
        page.click("#attach-form button")
        page.wait_for_selector("#attach-result .bad, #attach-result [role=alert]")
        assert "outside the folders" in page.locator("#attach-result").inner_text()
        page.fill("#attach-path", str(roots / "mem.sqlite"))
        page.click("#attach-form button")
        page.wait_for_function("() => location.hash === '#/workspace/mem'")
        page.wait_for_selector("#kg-detail table")
        assert "(read-only)" in page.locator("#view table").first.inner_text()
    finally:
        allowed.stop()
    assert [e for e in page.errors if "403 (Forbidden)" not in e] == []  # the browser logs the refused request
