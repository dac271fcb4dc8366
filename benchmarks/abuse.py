"""Replay issue 33's abuse table against a real ``kgos serve`` on loopback, one fresh server per row.

    python benchmarks/abuse.py [--scale 1.0] [--rows 1a,1b,...] [--src PATH] [--cap-mb 4000]

Each row starts a server (its data segment capped at ``--cap-mb`` with RLIMIT_DATA, so an old
build that balloons dies instead of taking the machine), probes ``GET /api/health`` every 0.1 s
while the abuse runs, and prints: the server's peak RSS (VmHWM), the slowest health answer (and how
many took over 0.5 s or failed), and the result. ``--src`` serves another source tree (e.g.
a checkout of the commit before a change) with this interpreter, for the before/after note.
``--scale`` shrinks the inputs (1.0: the issue's sizes). Loopback only; every row has a deadline.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROW_DEADLINE = 300.0  # seconds any one row may take
HEADERS = {"X-KGOS-Client": "abuse-bench"}


@dataclass
class Probe:
    """Health probes every 0.1 s in a thread, until stopped."""

    base: str
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Probe:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=10) as c:
            while not self._stop.is_set():
                t0 = time.monotonic()
                try:
                    ok = c.get("/api/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.latencies.append(time.monotonic() - t0)
                self.failures += not ok
                self._stop.wait(0.1)

    def stop(self) -> str:
        self._stop.set()
        worst = max(self.latencies, default=0.0)
        slow = sum(t > 0.5 for t in self.latencies)
        ranked = sorted(self.latencies)
        p99 = ranked[int(0.99 * (len(ranked) - 1))] if ranked else 0.0
        return (f"health max {worst:6.2f} s, p99 {p99:4.2f} s ({slow}/{len(self.latencies)} > 0.5 s, "
                f"{self.failures} failed)")


class Server:
    """``kgos serve`` in a process of its own on a free loopback port."""

    def __init__(self, home: Path, src: str | None, cap_mb: int, env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        environ = {**os.environ, "KGOS_HOME": str(home), **(env or {})}
        if src:
            environ["PYTHONPATH"] = src
        cap = cap_mb * 1024 * 1024
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kgos", "--home", str(home), "serve", "--port", str(self.port)],
            env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (cap, cap)))
        deadline = time.monotonic() + 180  # a loaded shared machine can take a minute to import everything
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/api/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("the server did not start")

    def peak_mb(self) -> float:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _said(r: httpx.Response) -> str:
    try:
        body = r.json()
        detail = body.get("detail") or body.get("error") or body.get("status") or body
    except ValueError:
        detail = r.text
    return f"{r.status_code} {str(detail)[:110]}"


def _upload(name: str, data: Callable[[Path], Path]) -> Callable[[httpx.Client, Path], str]:
    def run(c: httpx.Client, tmp: Path) -> str:
        path = data(tmp / name)
        with open(path, "rb") as f:
            # embed=none: the row measures the import, not a background embedding of a million nodes
            return _said(c.post("/api/kg/up/import", files={"file": (name, f)}, params={"embed": "none"},
                                headers=HEADERS))
    return run


def _write(path: Path, *parts: tuple[str, int]) -> Path:
    with open(path, "w") as f:
        for text, times in parts:
            for _ in range(times // 1_000_000):
                f.write(text * 1_000_000)
            f.write(text * (times % 1_000_000))
    return path


def _tiny_records(path: Path, n: int) -> Path:
    with open(path, "w") as f:
        f.write('{"nodes":[')
        f.write(",".join(f'{{"id":"n{i}","name":"n{i}"}}' for i in range(n)))
        f.write('],"edges":[]}')
    return path


def _wait_job(c: httpx.Client, job_id: str) -> dict:
    deadline = time.monotonic() + ROW_DEADLINE
    while time.monotonic() < deadline:
        job = c.get(f"/api/jobs/{job_id}", timeout=30).json()
        if job.get("status") in ("complete", "failed", "cancelled"):
            return job
        time.sleep(0.5)
    return {"status": "still running at the deadline"}


def _ingest(size: int, max_bytes: int) -> Callable[[httpx.Client, Path], str]:
    def run(c: httpx.Client, tmp: Path) -> str:
        folder = tmp / "roots" / "src"
        folder.mkdir(parents=True, exist_ok=True)
        unit = 'def f{}(x):\n    """Doc."""\n    return x + 1\n\n'
        with open(folder / "big.py", "w") as f:
            i = 0
            while f.tell() < size:
                f.write("".join(unit.format(i + k) for k in range(1000)))
                i += 1000
        r = c.post("/api/kg/code/ingest", json={"paths": [str(folder)], "max_bytes": max_bytes, "embed": False,
                                                "dimensions": False}, timeout=60)
        if r.status_code != 202:
            return _said(r)
        job = _wait_job(c, r.json()["job_id"])
        result = job.get("result") or {}
        return f"job {job['status']}: {job.get('error') or ''}{result.get('skipped') or result.get('files') or ''}"[:140]
    return run


def _names_during_build(c: httpx.Client, tmp: Path) -> str:
    """A fresh home: an embedding request starts the fast tier's build; delete names while it builds,
    then keep probing health until the build ends."""
    model = tmp / "home" / "models" / "minilm-int8-static-256" / "model.safetensors"
    c.post("/api/kg/t/embedding", json={}, headers=HEADERS)
    time.sleep(3)
    building = not model.exists()
    t0 = time.monotonic()
    r = c.delete("/api/kg/t/names", headers=HEADERS, timeout=ROW_DEADLINE)
    took = time.monotonic() - t0
    deadline = time.monotonic() + ROW_DEADLINE
    while not model.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    return (f"DELETE names {_said(r)[:40]} after {took:.1f} s, the build "
            f"{'running' if building else 'already done'} then; built: {model.exists()}")


def _budget(c: httpx.Client, tmp: Path) -> str:
    return _said(c.post("/api/research/runs", json={"question": "what is x?", "budget_tokens": 10**30},
                        headers=HEADERS))


def _idle_connections(count: int) -> Callable[[httpx.Client, Path], str]:
    def run(c: httpx.Client, tmp: Path) -> str:
        socks = []
        port = int(str(c.base_url).rsplit(":", 1)[1].strip("/"))
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished: a slow client
            socks.append(s)
        time.sleep(3)
        answered = c.get("/api/health", timeout=10).status_code
        for s in socks:
            s.close()
        return f"{count} idle connections open; health {answered}"
    return run


SRC: list[str] = []  # the --src tree, for the processes a row starts itself


def _busy_port(c: httpx.Client, tmp: Path) -> str:
    port = str(c.base_url).rsplit(":", 1)[1].strip("/")
    env = {**os.environ, **({"PYTHONPATH": SRC[0]} if SRC else {})}
    done = subprocess.run([sys.executable, "-m", "kgos", "--home", str(tmp / "h2"), "serve", "--port", port],
                          capture_output=True, text=True, timeout=60, env=env)
    return f"second serve on the port: exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:100]}"


def _described(path: Path, n: int, text_bytes: int = 400) -> Path:
    """``n`` nodes with ``text_bytes`` of description each, chained by edges: 7 MB at 14,000."""
    pad = "lorem ipsum " * (text_bytes // 12)
    nodes = [{"id": f"n{i}", "name": f"Node {i}", "description": f"{i} {pad}"} for i in range(n)]
    edges = [{"source": f"n{i}", "target": f"n{i + 1}", "type": "next"} for i in range(n - 1)]
    path.write_text(json.dumps({"nodes": nodes, "edges": edges}))
    return path


def _predictions(n: int) -> Callable[[httpx.Client, Path], str]:
    """Import a random KG of ``n`` nodes and 4n edges of 3 types, then train and stage link predictions."""
    def run(c: httpx.Client, tmp: Path) -> str:
        rnd = random.Random(0)
        edges = {(f"n{rnd.randrange(n)}", f"n{rnd.randrange(n)}", f"r{rnd.randrange(3)}") for _ in range(4 * n)}
        doc = {"nodes": [{"id": f"n{i}", "name": f"Node {i}"} for i in range(n)],
               "edges": [{"source": s, "target": t, "type": r} for s, t, r in edges if s != t]}
        imported = c.post("/api/kg/lp/import", files={"file": ("lp.json", json.dumps(doc))},
                          params={"embed": "none"}, headers=HEADERS)
        if imported.status_code != 200:
            return "import: " + _said(imported)
        t0 = time.monotonic()
        r = c.post("/api/kg/lp/predictions/run", json={"k": 20}, headers=HEADERS)
        took = time.monotonic() - t0
        staged = len(r.json().get("queued", {}).get("added", [])) if r.status_code == 200 else 0
        return f"{_said(r)[:60]} | {staged} staged in {took:.1f} s"
    return run


BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"  # overridden by --bench


def _go(c: httpx.Client, embed: str = "none") -> str | None:
    """Upload the bench's go KG (43k nodes); None when it imported, else what went wrong."""
    path = Path(os.environ.get("KGOS_BENCH", BENCH)) / "go" / "kg.json.gz"
    if not path.exists():
        return f"no bench data at {path} (--bench)"
    with open(path, "rb") as f:
        r = c.post("/api/kg/go/import", files={"file": ("kg.json.gz", f)}, params={"embed": embed}, headers=HEADERS)
    return None if r.status_code == 200 else "import: " + _said(r)


def _upload_go(c: httpx.Client, tmp: Path) -> str:
    """The go upload alone (2.2 MB of gzip, ~20 MB of JSON): the first step of rows 10c-10e."""
    t0 = time.monotonic()
    failed = _go(c)
    return failed or f"200 imported in {time.monotonic() - t0:.1f} s"


def _discover_go(c: httpx.Client, tmp: Path) -> str:
    """The first discovery of a node trains in a worker; the next ones answer in the request."""
    failed = _go(c)
    if failed:
        return failed
    body = {"node": "GO:0006915", "k": 10}
    t0 = time.monotonic()
    first = c.post("/api/kg/go/predictions/discover", json=body, headers=HEADERS)
    took = time.monotonic() - t0
    again = []
    for _ in range(11):
        t1 = time.monotonic()
        ok = c.post("/api/kg/go/predictions/discover", json=body, headers=HEADERS).status_code == 200
        again.append(time.monotonic() - t1 if ok else float("inf"))
    return (f"{_said(first)[:4]} first (trains in a worker) {took:.1f} s; then p50 "
            f"{sorted(again)[5] * 1000:.0f} ms, max {max(again) * 1000:.0f} ms in the request (11 calls)")


def _eval_go(c: httpx.Client, tmp: Path) -> str:
    failed = _go(c)
    if failed:
        return failed
    t0 = time.monotonic()
    r = c.post("/api/kg/go/predictions/eval", json={"holdout": 0.02, "max_test": 500}, headers=HEADERS)
    took = time.monotonic() - t0
    m = r.json() if r.status_code == 200 else {}
    return f"{_said(r)[:4] if not m else 200} MRR {m.get('mrr', float('nan')):.3f} on {m.get('n')} edges in {took:.1f} s"


def _embed_go(c: httpx.Client, tmp: Path) -> str:
    """Upload go with embedding on: the fast tier, then the default model's fill-in, as a background
    job of the server; watched for up to 240 s."""
    failed = _go(c, embed="fast")
    if failed:
        return failed
    deadline, job = time.monotonic() + 240, {}
    while time.monotonic() < deadline:
        job = (c.get("/api/kg/go/embedding").json().get("job") or {})
        if job.get("status") in ("complete", "failed", "cancelled"):
            break
        time.sleep(2)
    p = job.get("progress") or {}
    return f"embedding job {job.get('status')}: {job.get('phase') or p.get('phase')} {p.get('done')}/{p.get('total')}"[:140]


def _research_corpus(c: httpx.Client, tmp: Path) -> str:
    """A research run over a corpus at its bound (64 MB of prose in 32 files), embedded with hash."""
    from kgos.research.corpus import MAX_CORPUS_BYTES
    folder = tmp / "roots" / "corpus"
    folder.mkdir(parents=True)
    rnd = random.Random(0)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(3, 9))) for _ in range(20000)]
    per = MAX_CORPUS_BYTES // 32 - 10_000
    for i in range(32):
        with open(folder / f"doc{i}.txt", "w") as f:
            while f.tell() < per:
                f.write(" ".join(" ".join(rnd.choice(words) for _ in range(14)).capitalize() + "." for _ in range(4)) + "\n\n")
    r = c.post("/api/research/runs", json={"question": "what is x?", "corpus": str(folder), "max_iterations": 1,
                                           "embedder": "hash"}, headers=HEADERS)
    if r.status_code != 202:
        return _said(r)
    run_id, t0 = r.json()["run_id"], time.monotonic()
    while time.monotonic() - t0 < 280:
        status = c.get(f"/api/research/runs/{run_id}").json().get("status")
        if status != "running":
            break
        time.sleep(1)
    (folder / "one-more.txt").write_text("x" * 1_500_000)
    over = c.post("/api/research/runs", json={"question": "what is x?", "corpus": str(folder)}, headers=HEADERS)
    return f"run {status} in {time.monotonic() - t0:.0f} s; the corpus + 1.5 MB: {_said(over)[:60]}"


TESTS = Path(__file__).resolve().parents[1] / "tests"  # rows 5-7 reuse the regression tests' inputs


def _tests() -> None:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


def _mcp(home: Path, calls: list[tuple[str, dict]], *flags: str) -> list[dict]:
    """JSON-RPC over a ``kgos mcp`` process's stdio: initialize, then one tools/call per item; stdin stays
    open until every answer came (at EOF the server stops), killed after 240 s."""
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "abuse", "version": "1"}}
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": n, "arguments": a}}
              for i, (n, a) in enumerate(calls)]
    env = {**os.environ, **({"PYTHONPATH": SRC[0]} if SRC else {})}
    proc = subprocess.Popen([sys.executable, "-m", "kgos", "--home", str(home), "mcp", *flags], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    watchdog = threading.Timer(240, proc.kill)
    watchdog.start()
    said: list[dict] = []
    try:
        proc.stdin.write("".join(json.dumps(x) + "\n" for x in lines))
        proc.stdin.flush()
        while len([m for m in said if m.get("id")]) < len(calls) and (line := proc.stdout.readline()):
            said.append(json.loads(line))
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
    return sorted((m for m in said if m.get("id")), key=lambda m: m["id"])


def _found(home: Path, needles: list[str]) -> tuple[list[str], int]:
    """Which needles occur in any file of the home (every SQLite file, its WAL, the KG files), and how
    many files were read; the shared models are not read."""
    blobs = [p.read_bytes() for p in home.rglob("*") if p.is_file() and "models" not in p.relative_to(home).parts]
    return [n for n in needles if any(n.encode() in b for b in blobs)], len(blobs)


def _secrets_stored(c: httpx.Client, tmp: Path) -> str:
    """20 secret shapes (one of each family of tests/test_secret_corpus.py) through MCP memory_add,
    and 4 of them in expert chats over HTTP; then every file of the home is searched for them."""
    _tests()
    from test_secret_corpus import TEMPLATES, _secrets
    rng = random.Random(33)
    pairs = [(v, rng.choice(TEMPLATES).format(p) + f" (note {i} on Falcon)") for i, (v, p) in enumerate(_secrets(rng)[:20])]
    said = _mcp(tmp / "home", [("memory_add", {"content": text}) for _, text in pairs], "--allow-writes")
    added = sum(not m.get("result", {}).get("isError", True) for m in said)
    chats = [c.post("/api/experts/demo/chat", json={"query": f"How do I cut API costs? {text}", "stream": False},
                    headers=HEADERS).status_code for _, text in pairs[:4]]
    leaked, files = _found(tmp / "home", [v for v, _ in pairs])
    kept = bool(_found(tmp / "home", ["Falcon"])[0])
    return (f"{len(leaked)} of {len(pairs)} secrets in {files} files of the home ({added} memory_add ok, chats "
            f"{chats}, text kept: {kept}){': ' + ', '.join(x[:12] for x in leaked) if leaked else ''}")[:160]


def _injected_corpus(c: httpx.Client, tmp: Path) -> str:
    """tests/test_abuse.py's injected document beside the research tests' corpus; a research run
    ``--into notes`` over HTTP (default store mode); then the notes KG and the answer are read."""
    _tests()
    from research_helpers import DOCS
    from test_abuse import INJECTED
    folder = tmp / "roots" / "corpus"
    folder.mkdir(parents=True)
    for name, text in {**DOCS, "zip-notes.txt": INJECTED}.items():
        (folder / name).write_text(text, encoding="utf-8")
    r = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(folder), "into": "notes",
                                           "max_iterations": 1, "embedder": "hash", "wait": True}, headers=HEADERS)
    if r.status_code not in (200, 202):
        return _said(r)
    answer = c.get(f"/api/research/runs/{r.json()['run_id']}").json().get("answer") or ""
    answer = str(answer.get("answer", answer) if isinstance(answer, dict) else answer)
    marks = ["IMPORTANT SYSTEM", "Ignore all previous", "sk-AbC123", "attacker@", "<script"]
    import kgos
    with kgos.Workspace(tmp / "home") as ws:
        claims = [n for n in ws.kg("notes").store.iter_nodes() if n.type == "claim"] if ws.exists("notes") else []
    bad = [n for n in claims if any(m in n.description for m in marks)]
    unflagged = [n for n in bad if not n.properties.get("flags")]
    lead = answer.strip().split(". ")[0]
    return (f"{len(claims)} claims in notes, {len(bad)} with injected text ({len(unflagged)} unflagged); secret "
            f"stored: {any('sk-AbC123' in n.description for n in claims)}; injected in answer: "
            f"{sum(m in answer for m in marks)}; leads: {lead[:50]!r}")[:170]


def _killed_ingest(c: httpx.Client, tmp: Path) -> str:
    """tests/test_abuse.py's KILL_AT: ``ingest`` dies (as kill -9) at the dimension pass, after its main
    commit; then the same ingest over HTTP must redo the pass."""
    _tests()
    from test_abuse import KILL_AT, _big_python
    src = _big_python(tmp / "roots" / "src" / "mod.py", 200).parent
    env = {**os.environ, **({"PYTHONPATH": SRC[0]} if SRC else {})}
    died = subprocess.run([sys.executable, "-c", KILL_AT, str(tmp / "home"), str(src), "dimensions"], timeout=240,
                          env=env, capture_output=True, check=False)
    r = c.post("/api/kg/code/ingest", json={"paths": [str(src)], "embed": False}, headers=HEADERS, timeout=60)
    if r.status_code != 202:
        return f"killed (exit {died.returncode}); re-ingest: {_said(r)}"
    job = _wait_job(c, r.json()["job_id"])
    res = job.get("result") or {}
    written = (res.get("dimensions") or {}).get("nodes_written")
    return (f"killed at the dimension pass (exit {died.returncode}); the re-run: job {job['status']}, "
            f"{res.get('changed')} files changed, dimensions written to {written} nodes")[:160]


def _mcp_writes(c: httpx.Client, tmp: Path) -> str:
    """``tools/call memory_add`` on a default ``kgos mcp`` (no --allow-writes, no KGOS_MCP_WRITES)."""
    said = _mcp(tmp / "home", [("memory_add", {"content": "I use tea; zebra-quartz-77."})])
    got = said[0].get("result") or said[0].get("error") if said else {}
    refused = bool(got.get("isError")) or "error" in (said[0] if said else {})
    stored = bool(_found(tmp / "home", ["zebra-quartz-77"])[0])
    text = str((got.get("content") or [{}])[0].get("text", got.get("message", "")))
    return f"memory_add refused: {refused} ({text[:60]!r}); stored in the home: {stored}"


def _idle(seconds: float) -> Callable[[httpx.Client, Path], str]:
    """No abuse: the same-run anchor of the health latency on this machine at this load."""
    def run(c: httpx.Client, tmp: Path) -> str:
        time.sleep(seconds)
        return f"idle {seconds:.0f} s"
    return run


def rows(scale: float) -> dict[str, tuple[str, Callable[[httpx.Client, Path], str], dict[str, str]]]:
    n = lambda x: max(int(x * scale), 1)  # noqa: E731
    return {
        "0": ("no abuse (anchor: health on an idle server)", _idle(30), {}),
        "1a": ('upload {"nodes": + 20 M "["', _upload("b.json", lambda p: _write(p, ('{"nodes":', 1), ("[", n(20e6)))), {}),
        "1b": ('upload 20 MB of "["', _upload("c.json", lambda p: _write(p, ("[", n(20e6)))), {}),
        "1c": ("upload one 100 MB string", _upload("s.json", lambda p: _write(
            p, ('{"nodes":[{"id":"a","name":"', 1), ("x", n(100e6)), ('"}],"edges":[]}', 1))), {}),
        "1d": ("upload 1 M tiny records", _upload("t.json", lambda p: _tiny_records(p, n(1e6))), {}),
        "1e": ('upload 20 MB of "[" as JSON Lines', _upload("d.jsonl", lambda p: _write(p, ("[", n(20e6)))), {}),
        "1f": ("upload GraphML nested 5 M deep", _upload("g.graphml", lambda p: _write(
            p, ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph>', 1), ("<a>", n(5e6)))), {}),
        "1g": ("upload a 10 MB string of escaped quotes", _upload("q.json", lambda p: _write(
            p, ('{"nodes":[{"id":"a","name":"', 1), ('\\"', n(5e6)), ('"}],"edges":[]}', 1))), {}),
        "2a": ("ingest a 200 MB .py, max_bytes 10^9", _ingest(n(200e6), 10**9), {}),
        "2b": ("ingest a 9.9 MB .py at the hard max", _ingest(min(n(9.9e6), 9_900_000), 10_000_000), {}),
        "3": ("names delete while the fast tier builds", _names_during_build, {"FRESH_MODELS": "1"}),
        "4": ("research budget_tokens=10**30", _budget, {}),
        "5": ("secrets in memory_add (MCP) and expert chat", _secrets_stored, {"DEMO": "1"}),
        "6": ("research --into notes over an injected doc", _injected_corpus, {}),
        "7": ("ingest killed at the dimension pass, re-run", _killed_ingest, {}),
        "9": ("MCP memory_add without --allow-writes", _mcp_writes, {}),
        "8a": ("1,000 idle connections", _idle_connections(n(1000)), {}),
        "8b": ("kgos serve on a busy port", _busy_port, {}),
        "10a": ("upload 7 MB (under the worker threshold)", _upload("m.json", lambda p: _described(p, n(14_000))), {}),
        "10b": ("predictions/run on 1,000 nodes", _predictions(n(1_000)), {}),
        "10g": ("upload go (2.2 MB gzip, 20 MB JSON)", _upload_go, {}),
        "10c": ("predictions/discover on go (43k nodes)", _discover_go, {}),
        "10d": ("predictions/eval on go, holdout 2%", _eval_go, {}),
        "10e": ("embedding job of go (upload, 240 s)", _embed_go, {}),
        "10f": ("research run over a 64 MB corpus", _research_corpus, {}),
    }


def run_row(key: str, what: str, fn: Callable[[httpx.Client, Path], str], extra: dict[str, str],
            src: str | None, cap_mb: int) -> str:
    with tempfile.TemporaryDirectory(prefix="kgos-abuse-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        env = {"KGOS_INGEST_ROOTS": str(tmp / "roots")}
        if extra.get("FRESH_MODELS"):
            _seed_fast_kg(home)
        else:
            if extra.get("DEMO"):
                _seed_demo(home)
            env["KGOS_FAST_EMBEDDER"] = "none"  # no fast-tier build at start: the row measures its abuse only
            _share_models(home)
        server = Server(home, src, cap_mb, env)
        probe = Probe(server.base).start()
        try:
            with httpx.Client(base_url=server.base, timeout=ROW_DEADLINE) as c:
                try:
                    result = fn(c, tmp)
                except (httpx.HTTPError, OSError) as exc:
                    result = f"request failed: {type(exc).__name__} {exc}"[:140]
            health = probe.stop()
            alive = server.proc.poll() is None
            peak = server.peak_mb()
        finally:
            probe.stop()
            server.stop()
    return f"{key:3} {what:42} | peak RSS {peak:7.0f} MB | {health} | {'alive' if alive else 'DEAD'} | {result}"


def _share_models(home: Path) -> None:
    """Link the built models of the default home, so a row does not pay for a fast-tier build."""
    models = Path(os.environ.get("KGOS_HOME", Path.home() / ".kgos")) / "models"
    if models.is_dir():
        home.mkdir(parents=True, exist_ok=True)
        os.symlink(models, home / "models")


def _seed_demo(home: Path) -> None:
    """The demo KG and expert (hash vectors: no model load), for the chat of row 5."""
    import kgos
    from kgos.data import load_demo
    with kgos.Workspace(home) as ws:
        load_demo(ws, embedder="hash")


def _seed_fast_kg(home: Path) -> None:
    import kgos
    with kgos.Workspace(home) as ws:
        kg = ws.create("t")
        kg.add_node("Alpha", id="a")
        kg.store.set_meta(embedder="fast")
    shutil.rmtree(home / "models", ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rows", default="")
    ap.add_argument("--src", default=None, help="serve this source tree (PYTHONPATH) instead of the installed one")
    ap.add_argument("--bench", default=None, help="the bench data folder (default: ../shared/bench)")
    ap.add_argument("--cap-mb", type=int, default=4000, help="RLIMIT_DATA of the server (MB)")
    args = ap.parse_args()
    table = rows(args.scale)
    if args.bench:
        os.environ["KGOS_BENCH"] = args.bench
    SRC[:] = [args.src] if args.src else []
    wanted = [k for k in args.rows.split(",") if k] or list(table)
    print(f"abuse table, scale {args.scale}, server {'from ' + args.src if args.src else 'installed'}, "
          f"cap {args.cap_mb} MB")
    for key in wanted:
        what, fn, extra = table[key]
        try:
            print(run_row(key, what, fn, extra, args.src, args.cap_mb), flush=True)
        except RuntimeError as exc:  # the server did not start: the row is reported, the others still run
            print(f"{key:3} {what:42} | {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
