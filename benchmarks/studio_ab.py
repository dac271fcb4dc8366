"""Before/after of the studio's first render: the same server code serving the studio files of a base
commit and of the work tree, interleaved page loads in one headless Chromium, same load.

    python benchmarks/studio_ab.py WORKSPACE '/explore/demo' ['/explore/KG?node=...&max_nodes=2000' ...] [--base bdb6ef1] [--runs 3]

Prints per view and side the median time since navigation and the draw, and the names drawn.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from studio_browser import chromium, free_port, missing, open_view

SERVER = """
import sys, uvicorn
from pathlib import Path
import kgos.api.studio as studio
if sys.argv[3]:
    studio.STUDIO = Path(sys.argv[3])  # the base commit's files, same server code
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
uvicorn.run(create_app(sys.argv[1], ServerSettings()), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def base_files(commit: str, into: Path) -> Path:
    """The studio files of ``commit`` (git archive), unpacked under ``into``."""
    data = subprocess.run(["git", "-C", str(HERE.parent), "archive", commit, "src/kgos/api/studio_static"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src" / "kgos" / "api" / "studio_static"


def serve(workspace: str, static: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "KGOS_LLM_PROVIDER": "offline", "KGOS_EMBEDDER": "hash"}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, workspace, str(port), static], env=env)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workspace")
    ap.add_argument("views", nargs="+")
    ap.add_argument("--base", default="bdb6ef1", help="commit whose studio files are 'before'")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if missing():
        raise SystemExit(f"studio_ab: {missing()}")
    with tempfile.TemporaryDirectory(prefix="kgos-studio-ab-") as tmp:
        sides = {"before": serve(args.workspace, str(base_files(args.base, Path(tmp)))), "after": serve(args.workspace, "")}
        rows: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
        try:
            with chromium(1400, 1000) as context:
                page = context.new_page()
                for _ in range(args.runs):
                    for side, (_, url) in sides.items():
                        for view in args.views:
                            open_view(page, url, view, timeout=300_000)
                            t = page.evaluate("window.kgosExplorer.timing")
                            names = page.evaluate("(window.kgosExplorer.labels || []).length")
                            rows.setdefault((view, side), []).append((t["since_navigation_ms"], t["draw_ms"], names))
        finally:
            for proc, _ in sides.values():
                proc.terminate()
    print("| view | side | since navigation (median) | draw (median) | names drawn | runs |\n|---|---|---:|---:|---:|---|")
    for (view, side), r in rows.items():
        print(f"| `{view}` | {side} | {statistics.median(x[0] for x in r):.0f} ms | {statistics.median(x[1] for x in r):.0f} ms | "
              f"{r[-1][2]} | {', '.join(f'{x[0]:.0f}' for x in r)} |")


if __name__ == "__main__":
    main()
