"""Screenshots of every KG-OS Studio view, from a fresh workspace with the demo KGs, into docs/studio/.

    python scripts/studio_screenshots.py            # needs playwright (dev extra) and Debian's chromium
    python scripts/studio_screenshots.py --only answers   # search, chat and research views only
    python scripts/studio_screenshots.py --workbench  # only explorer-default/-edit/-discover, research-breakpoint
    python scripts/studio_screenshots.py --only learning  # the Learning view's four tabs, over seeded turns

Each view is opened (and, where it has a form, used) in headless Chromium against a real server on
loopback, exactly as a user would; the PNGs are what README.md and docs/studio.md show.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from studio_browser import chromium, missing, open_view, serving

import kgos
from kgos.data import load_demo

OUT = ROOT / "docs" / "studio"


def shoot(page, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(400)  # charts and graph settle
    page.screenshot(path=str(OUT / f"{name}.png"))
    print(f"docs/studio/{name}.png")


def run_all(page, url: str) -> None:
    open_view(page, url, "/workspace/demo")
    shoot(page, "workspace")
    open_view(page, url, "/search?q=I%20want%20to%20reduce%20my%20API%20costs&kgs=demo,finance&k=5")
    shoot(page, "search")
    open_view(page, url, "/methods/demo?m=can-it")
    page.fill("#method-input", "stream responses")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector("#verdict")
    shoot(page, "methods-can-it")
    open_view(page, url, "/methods/demo?m=compose")
    page.fill("#method-input", "build a chatbot that answers from my documents")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector("#plan")
    shoot(page, "methods-compose")
    open_view(page, url, "/experts/demo")
    page.fill("#chat-input", "How do I reduce my API costs?")
    page.click("#chat-send")
    page.wait_for_selector(".trace h3", state="attached", timeout=60_000)
    page.locator(".trace summary").click()
    shoot(page, "experts-chat")
    open_view(page, url, "/experts/demo/edit")
    shoot(page, "experts-edit")
    open_view(page, url, "/review/demo")
    page.get_by_role("button", name="Predict").click()
    page.wait_for_selector(".proposal", timeout=120_000)
    shoot(page, "review")
    open_view(page, url, "/memory")
    page.fill("#memory-query", "API costs")
    page.get_by_role("button", name="Look up").click()
    page.wait_for_timeout(800)
    shoot(page, "memory")
    open_view(page, url, "/eval/demo")
    page.locator("#ablation").check()
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector("#eval-result canvas", timeout=300_000)
    shoot(page, "evaluation")
    run_workbench(page, url)


def run_workbench(page, url: str) -> None:
    """The explorer (README example, default view, path and impact, editor, predicted edges) and the
    research debugger (a finished run's inspector, a run paused at a breakpoint)."""
    open_view(page, url, "/explore/demo?node=feature:prompt_caching&depth=2&max_nodes=300")
    shoot(page, "explorer")
    page.fill("#path-a", "feature:batch_api")
    page.fill("#path-b", "goal:cost_reduction")
    page.get_by_role("button", name="Highlight").click()
    page.wait_for_selector("#path-result p")
    page.get_by_role("button", name="Impact").click()
    page.wait_for_selector("#impact-result details")
    shoot(page, "explorer-path-impact")
    open_view(page, url, "/research")
    page.fill("#research-question", "How do I reduce API costs?")
    page.locator("#view form label", has_text="demo").first.locator("input").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector("#view h2.long", timeout=30_000)
    for _ in range(60):
        open_view(page, url, page.evaluate("location.hash")[1:])
        if "live" not in page.locator("#view .card p").first.inner_text():
            break
        page.wait_for_timeout(1000)
    page.click("#stage-search .stage-name")
    page.wait_for_selector("#inspector-tree details")
    shoot(page, "research")
    open_view(page, url, "/explore/demo")
    shoot(page, "explorer-default")
    open_view(page, url, "/explore/demo?node=feature:prompt_caching&depth=1")
    page.click("#edit-node")
    page.wait_for_selector("#node-editor")
    shoot(page, "explorer-edit")
    open_view(page, url, "/explore/demo?node=feature:batch_api&depth=1")
    page.click("#discover-node")
    page.wait_for_function("() => window.kgosExplorer.predicted.length > 0", timeout=120_000)
    page.get_by_role("button", name="Fit all").click()
    page.wait_for_timeout(300)
    p = page.evaluate("window.kgosExplorer.predicted[0]")
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + p["x"], box["y"] + p["y"])
    page.wait_for_selector("#prediction-title")
    shoot(page, "explorer-discover")
    open_view(page, url, "/research")
    page.fill("#research-question", "How do I reduce API costs?")
    page.locator("#view form label", has_text="demo").first.locator("input").check()
    page.locator("#view form input[aria-label='breakpoint before extract']").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector("#run-status:has-text('paused')", timeout=60_000)
    page.click("#stage-query .stage-name")
    page.wait_for_selector("#inspector-tree details")
    shoot(page, "research-breakpoint")
    open_view(page, url, "/embeddings/demo?q=reduce%20my%20API%20costs")
    page.click("#embed-run")
    page.wait_for_selector("#embed-compare .col li")
    shoot(page, "embeddings")


def run_answers(page, url: str) -> None:
    """The views of what a person reads (issue 29): search bars, the rendered chat, a research answer."""
    open_view(page, url, "/search?q=I%20want%20to%20reduce%20my%20API%20costs&kgs=demo,finance&k=5")
    shoot(page, "search")
    open_view(page, url, "/experts/demo")
    page.fill("#chat-input", "How do I reduce my API costs?")
    page.click("#chat-send")
    page.wait_for_selector(".trace h3", state="attached", timeout=60_000)
    shoot(page, "experts-chat")
    open_view(page, url, "/research")
    page.fill("#research-question", "How do I reduce API costs?")
    page.locator("#view form label", has_text="demo").first.locator("input").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector("#view h2.long", timeout=30_000)
    for _ in range(60):
        open_view(page, url, page.evaluate("location.hash")[1:])
        if "live" not in page.locator("#view .card p").first.inner_text():
            break
        page.wait_for_timeout(1000)
    shoot(page, "research")


def seed_learning(ws: kgos.Workspace) -> None:
    """Turns for the Learning view, made by the offline provider: an off-KG question rated down, a
    statement against a dimension value, and an A/B test whose ``text`` variant people prefer (85% vs
    35% thumbs up, seeded) so its report reaches a decision."""
    import json
    import random

    from kgos.api.turns import ask
    from kgos.experts.ab import ABService
    from kgos.experts.feedback import FeedbackService
    from kgos.kg.links import CrossLinks
    from kgos.llm import get_provider
    provider, votes = get_provider("offline"), FeedbackService(ws)
    votes.give(ask(ws, provider, "demo", "How do I bake sourdough bread?").turn_id, "down", "nothing about bread")
    ask(ws, provider, "demo", "What flour is best for sourdough bread?")
    ask(ws, provider, "demo", "The Batch API is real-time now.")
    CrossLinks(ws).add("demo:goal:cost_reduction", "finance:goal:reduce_taxes", "relates_to")
    ABService(ws).create("demo", [{"name": "control"}, {"name": "text", "overrides": {"retrieval": {
        "alpha": 0.1, "beta": 0.8, "gamma": 0.05, "delta": 0.05}}}], test_id="text-weights", min_votes=20)
    rng = random.Random(7)
    for _ in range(70):
        turn = ask(ws, provider, "demo", "How do I reduce my API costs?")
        meta = ws.db.execute("SELECT metadata FROM messages WHERE turn_id = ? AND role = 'assistant'",
                             (turn.turn_id,)).fetchone()
        better = json.loads(meta[0])["ab"]["variant"] == "text"
        votes.give(turn.turn_id, "up" if rng.random() < (0.85 if better else 0.35) else "down")


def run_learning(page, url: str) -> None:
    open_view(page, url, "/learning/demo/gaps")
    shoot(page, "learning-gaps")
    open_view(page, url, "/learning/demo/drift")
    shoot(page, "learning-drift")
    open_view(page, url, "/learning/demo/ab?expert=demo")
    shoot(page, "learning-ab")
    open_view(page, url, "/learning/demo/links")
    page.fill("#trace-source", "demo:feature:batch_api")
    page.fill("#trace-target", "finance:goal:reduce_taxes")
    page.get_by_role("button", name="Trace").click()
    page.wait_for_selector("#trace-result .flow")
    page.wait_for_timeout(300)  # the links' names
    shoot(page, "learning-links")


def main() -> None:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    why = missing()
    if why:
        raise SystemExit(f"studio_screenshots: {why}")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kgos-studio-shots-") as folder:
        ws = kgos.Workspace(Path(folder) / "ws")
        load_demo(ws)  # as `kgos demo` does: with the default embedder, so screenshots show all four signals
        ws.kg("demo").embed_side("hash:256")  # a second model, for the embeddings page's side by side
        if only == "learning":
            seed_learning(ws)
        ws.close()
        with serving(Path(folder) / "ws") as server, chromium(width=1400, height=950) as context:
            runner = {"answers": run_answers, "learning": run_learning}.get(only or "", run_all)
            if "--workbench" in sys.argv:  # only the explorer-as-workbench and debugger shots (minutes fewer)
                runner = run_workbench
            runner(context.new_page(), server.url)


if __name__ == "__main__":
    main()
