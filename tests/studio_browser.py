"""A real ``kgos serve``-like server (uvicorn in a subprocess, loopback) and Debian's headless
Chromium driven by Playwright, for the studio's browser tests, screenshots and benchmark.

Chromium comes from the system (``apt-get install chromium``: ``.ci/run`` installs it), never
from ``playwright install``; it runs with a fresh profile and without background networking.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("KGOS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER = """
import sys, uvicorn
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
settings = ServerSettings(token=sys.argv[3] or None)
uvicorn.run(create_app(sys.argv[1], settings), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def missing() -> str | None:
    """Why the browser pieces are unavailable (None when they are there)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``kgos serve`` over ``workspace`` on a free loopback port, in a subprocess (so it can be stopped
    and started again mid-test); the offline LLM provider answers chats."""

    def __init__(self, workspace: str | Path, token: str | None = None, env: dict[str, str] | None = None) -> None:
        self.workspace, self.token, self.env = str(workspace), token, env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        env = {**os.environ, "KGOS_LLM_PROVIDER": "offline", "KGOS_EMBEDDER": "hash", **self.env}
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, self.workspace, str(self.port), self.token or ""], env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/", timeout=1).read()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.proc.returncode}") from None
                time.sleep(0.2)
        raise RuntimeError("the server did not start within 60 s")

    def kill(self) -> None:
        """Stop the server the hard way (a crash: open connections are cut, not drained)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None


@contextmanager
def serving(workspace: str | Path, token: str | None = None) -> Iterator[Server]:
    server = Server(workspace, token).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A Playwright browser context of the system Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright
    profile = tempfile.mkdtemp(prefix="kgos-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                           headless=True, viewport={"width": width, "height": height})
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def open_view(page: Any, base: str, hash_: str, timeout: float = 30_000) -> None:
    """Load ``base/#hash_`` and wait until the studio says the view rendered (``#view[data-ready]``;
    selectors, not script predicates: the page's CSP forbids evaluating strings)."""
    page.goto("about:blank")  # a full load: a hash-only change would keep the last view's marker
    page.goto(f"{base}/#{hash_}")
    page.wait_for_selector("#view[data-ready]", timeout=timeout)


def new_page(context: Any, viewport: dict[str, int] | None = None, dialogs: str = "confirm", ignored: tuple[str, ...] = ()) -> Any:
    """A page of ``context`` whose console errors, uncaught exceptions and unexpected dialogs land in
    ``page.errors`` (a test asserts it stays empty). ``dialogs``: ``"confirm"`` accepts confirm() and
    records any other dialog (an alert() a hostile name ran); ``"record"`` records and dismisses every
    one. Console errors containing one of ``ignored`` (a refusal the test provokes) are left out."""
    page = context.new_page()
    if viewport:
        page.set_viewport_size(viewport)
    page.errors = []

    def dialog(d: Any) -> None:
        if dialogs == "confirm" and d.type == "confirm":
            d.accept()
        else:
            page.errors.append(f"dialog: {d.message}")
            d.dismiss()
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" and not any(x in m.text for x in ignored) else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("dialog", dialog)
    return page
