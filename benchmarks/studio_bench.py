"""KG-OS Studio in headless Chromium: time to the first rendered graph and the neighbourhood API.

    python benchmarks/studio_bench.py                 # go KG from ../shared/bench (skipped if absent) + synthetic 20,000 elements
    python benchmarks/studio_bench.py --runs 5 --json-out studio.json

Rows (medians):
- API ``GET /api/kg/go/neighborhood`` of a 2,000-node neighbourhood (depth 3 around the best-connected
  node), over HTTP on loopback; anchor: a bare JSON fetch (``GET /api/health``) by the same client.
- Time to the first rendered graph in the explorer for that neighbourhood and for 20,000 elements
  (8,000 nodes + 12,000 edges of a synthetic KG): from navigation start to two animation frames after
  Cytoscape drew it (page, modules, API call, layout, paint); split into fetch and draw (create,
  labels, paint). A big rings view paints what its default view shows first and adds the rest
  in chunks that yield to the event loop: ``complete_ms`` is when every element was in,
  ``max_block_ms`` the longest chunk (the worst wait for a mouse event in between).
  Anchor: a bare JSON fetch from the same page (``fetch('api/health')``).
- Interaction on the 20,000 elements: the median frame interval while the mouse drags the graph.
- The explorer's default force layout (fCoSE) against rings by depth (no layout work) on the same
  2,000 nodes, and its share of the draw (``layout_ms``).
- Pan and zoom of 5,000 drawn nodes (synthetic KG, force layout): frames per second from
  ``requestAnimationFrame`` intervals while the mouse drags and then wheels (median and p10).

Chromium runs software rendering (``--disable-gpu``, as in CI): a desktop GPU is faster.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from studio_browser import chromium, missing, open_view, serving

import kgos

GO = HERE.parent.parent / "shared" / "bench" / "go" / "kg.json.gz"


def synthetic(folder: Path, n: int = 8_000, m: int = 12_000, seed: int = 7) -> Path:
    """A connected random KG: a random tree (n - 1 edges) plus m - n + 1 random edges, 7 node types."""
    import random
    rng = random.Random(seed)
    nodes = [{"id": f"n{i}", "name": f"Node {i}", "type": f"type{i % 7}"} for i in range(n)]
    pairs = {(rng.randrange(i), i) for i in range(1, n)}
    while len(pairs) < m:
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b:
            pairs.add((a, b))
    edges = [{"source": f"n{a}", "target": f"n{b}", "type": f"rel{(a + b) % 5}"} for a, b in pairs]
    path = folder / "synthetic.json"
    path.write_text(json.dumps({"nodes": nodes, "edges": edges}))
    return path


def http_ms(url: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        json.loads(urllib.request.urlopen(url, timeout=60).read())
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def render(page, base: str, hash_: str, runs: int) -> dict[str, float]:
    rows = []
    for _ in range(runs):
        open_view(page, base, hash_, timeout=300_000)
        info = page.evaluate("window.kgosExplorer")
        anchor = page.evaluate("async () => { const t = performance.now(); await (await fetch('api/health')).json(); return performance.now() - t; }")
        rows.append({**info["timing"], "anchor_ms": anchor, "nodes": info["nodes"], "edges": info["edges"]})
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def drag_frames(page) -> float:
    """Median frame interval (ms) while the mouse drags the graph (the last view opened)."""
    box = page.locator("#graph").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.evaluate("() => { window.kgosFrames = []; let last = performance.now(); const tick = () => { const now = performance.now(); "
                  "window.kgosFrames.push(now - last); last = now; if (!window.kgosStop) requestAnimationFrame(tick); }; "
                  "window.kgosStop = false; requestAnimationFrame(tick); }")
    page.mouse.move(x, y)
    page.mouse.down()
    for i in range(40):
        page.mouse.move(x + i * 6, y + i * 3)
    page.mouse.up()
    page.wait_for_timeout(300)
    frames = page.evaluate("() => { window.kgosStop = true; return window.kgosFrames; }")
    return statistics.median(frames[1:])


def pan_zoom_fps(page) -> dict[str, float]:
    """Frames per second while the mouse drags the graph and then zooms with the wheel."""
    box = page.locator("#graph").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.evaluate("() => { window.kgosFrames = []; let last = performance.now(); const tick = () => { const now = performance.now(); "
                  "window.kgosFrames.push(now - last); last = now; if (!window.kgosStop) requestAnimationFrame(tick); }; "
                  "window.kgosStop = false; requestAnimationFrame(tick); }")
    page.mouse.move(x, y)
    page.mouse.down()
    for i in range(40):
        page.mouse.move(x + i * 5, y + i * 2)
    page.mouse.up()
    for _ in range(10):
        page.mouse.wheel(0, -120)
        page.wait_for_timeout(16)
    page.wait_for_timeout(200)
    frames = sorted(page.evaluate("() => { window.kgosStop = true; return window.kgosFrames; }")[1:])
    median, p90 = statistics.median(frames), frames[int(0.9 * (len(frames) - 1))]
    return {"fps_median": 1000 / median, "fps_p10": 1000 / p90, "frames": len(frames)}


def run(runs: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="kgos-studio-bench-"))
    ws = kgos.Workspace(folder / "ws")
    ws.import_file("synthetic", synthetic(folder))
    ws.import_file("synthetic5k", synthetic(folder, 5_000, 7_500, seed=11))
    has_go = GO.exists()
    if has_go:
        ws.import_file("go", GO)
    ws.close()
    out: dict = {"runs": runs}
    with serving(folder / "ws") as server, chromium() as context:
        page = context.new_page()
        if has_go:
            api = f"{server.url}/api/kg/go/neighborhood?depth=3&max_nodes=2000"
            http_ms(api, 3)  # the view is built once per KG version
            out["api_go_2000_ms"] = http_ms(api, max(30, runs * 10))
            out["api_anchor_ms"] = http_ms(f"{server.url}/api/health", max(30, runs * 10))
            out["go_2000"] = render(page, server.url, "/explore/go?depth=3&max_nodes=2000", runs)
            out["go_2000_rings"] = render(page, server.url, "/explore/go?depth=3&max_nodes=2000&layout=rings", runs)
        out["synthetic_20000"] = render(page, server.url, "/explore/synthetic?node=n0&depth=10&max_nodes=8000", runs)
        out["drag_frame_ms_20000"] = drag_frames(page)
        out["synthetic_5000"] = render(page, server.url, "/explore/synthetic5k?node=n0&depth=10&max_nodes=5000", runs)
        out["pan_zoom_5000"] = pan_zoom_fps(page)
    return out


def rest(t: dict) -> str:
    """The draw's parts, and when a big view's off-screen elements (drawn after the first paint) were in."""
    parts = "".join(f", {k[:-3]} {t[k]:.0f}" for k in ("create_ms", "label_ms", "paint_ms") if k in t)
    if "complete_ms" in t and t["complete_ms"] - t["since_navigation_ms"] > 1:
        parts += f"; all {t['nodes']:,.0f} nodes drawn at {t['complete_ms']:.0f} ms, first paint had {t['first_elements']:,.0f} elements"
        if "max_block_ms" in t:
            parts += f", the rest added in chunks, longest {t['max_block_ms']:.0f} ms (the page answers input in between)"
    return parts


def print_table(r: dict) -> None:
    print("| what | figure | anchor (bare JSON fetch) | ratio |\n|---|---:|---:|---:|")
    if "api_go_2000_ms" in r:
        print(f"| API neighbourhood, go, 2,000 nodes (p50) | {r['api_go_2000_ms']:.1f} ms | {r['api_anchor_ms']:.1f} ms | {r['api_go_2000_ms'] / r['api_anchor_ms']:.1f}x |")
    for key, label in (("go_2000", "go, 2,000-node neighbourhood, default (rings past 1,500 nodes)"), ("go_2000_rings", "go, 2,000-node neighbourhood, rings (no layout)"),
                       ("synthetic_5000", "synthetic, 5,000 nodes"), ("synthetic_20000", "synthetic, 20,000 elements")):
        if key in r:
            t = r[key]
            print(f"| first rendered graph, {label} ({t['nodes']:,.0f} nodes + {t['edges']:,.0f} edges): since navigation | "
                  f"{t['since_navigation_ms']:.0f} ms (fetch {t['fetch_ms']:.0f}, draw {t['draw_ms']:.0f}{rest(t)}) | {t['anchor_ms']:.1f} ms | "
                  f"{t['since_navigation_ms'] / t['anchor_ms']:.0f}x |")
        if key in r and r[key].get("layout_ms") is not None:
            print(f"| of which force layout ({label}) | {r[key]['layout_ms']:.0f} ms | | |")
    print(f"| drag on 20,000 elements: median frame interval | {r['drag_frame_ms_20000']:.0f} ms | | |")
    pz = r["pan_zoom_5000"]
    print(f"| pan + zoom of 5,000 drawn nodes: frames per second (median / p10 of {pz['frames']} frames) | {pz['fps_median']:.0f} / {pz['fps_p10']:.0f} fps | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="page loads per graph (medians)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    why = missing()
    if why:
        raise SystemExit(f"studio_bench: {why}")
    result = run(args.runs)
    print_table(result)
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
