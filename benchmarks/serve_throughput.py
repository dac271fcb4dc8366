"""Search throughput of one ``kgos serve`` with 1, 4 and 16 concurrent clients (issue 31, goal 1).

    python benchmarks/serve_throughput.py                  # go, the server as `kgos serve` starts it
    python benchmarks/serve_throughput.py --workers 2      # the same with 2 worker processes
    python benchmarks/serve_throughput.py --quick          # a 5,000-node synthetic KG (seconds)

Imports go (../shared/bench/go beside the checkout, else ``--quick``'s synthetic KG) into a temporary
home, starts the
server on loopback, warms it (the snapshot is loaded), then for each client count runs that many
client threads, each sending ``POST /api/kg/go/search`` back to back with the go probe queries, until
``--seconds`` have passed or ``--max-requests`` were sent. Every level uses its own ``k`` so no answer
comes from the query cache of an earlier level. Prints req/s, p50 and p99 latency, failed requests
(any status but 200, or a transport error) and each level's throughput as a ratio of the 1-client
anchor of the same run. Budget: 16 clients >= 1.6x the 1-client throughput, 0 failed. Exit code 1
when the budget is missed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
GO = HERE.parent.parent / "shared" / "bench" / "go"
BUDGET_RATIO = 1.6
SLOW_NODE = "GO:0008150"  # biological_process, the root of most of go


@dataclass
class Level:
    clients: int
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    median_rps: float | None = None
    slow: bool = False  # one more client ran a slow read (explore) meanwhile

    @property
    def label(self) -> str:
        return f"{self.clients}+slow" if self.slow else str(self.clients)

    @property
    def rps(self) -> float:
        if self.median_rps is not None:
            return self.median_rps
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")


def dataset(quick: bool, folder: Path) -> tuple[Path, list[str]]:
    if not quick and (GO / "kg.json.gz").exists():
        return GO / "kg.json.gz", [json.loads(line)["query"] for line in (GO / "probes-dev.jsonl").open()]
    rng = random.Random(7)
    words = [f"w{i}" for i in range(800)]
    nodes = [{"id": f"n{i}", "name": " ".join(rng.sample(words, 3)), "type": f"t{i % 7}",
              "description": " ".join(rng.sample(words, 8))} for i in range(5000)]
    edges = [{"source": f"n{rng.randrange(5000)}", "target": f"n{rng.randrange(5000)}", "type": "rel"}
             for _ in range(10000)]
    path = folder / "synthetic.json"
    path.write_text(json.dumps({"format": "kgos-node-link/1", "nodes": nodes, "edges": edges}))
    return path, [" ".join(rng.sample(words, 3)) for _ in range(3000)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(home: Path, workers: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "kgos", "--home", str(home), "serve", "--port", str(port), "--no-fill-in",
           "--log-level", "warning"] + (["--workers", str(workers)] if workers > 1 else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    base = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"the server did not start: {log.read_text()[-2000:]}")


def warm(base: str, queries: list[str], workers: int) -> None:
    """Every worker loads its snapshot before the clock starts: 2 clients per worker, 10 queries each."""
    def client_loop(offset: int) -> None:
        with httpx.Client(timeout=300) as client:
            for q in queries[offset:offset + 10]:
                client.post(f"{base}/kg/go/search", json={"query": q, "k": 5}).raise_for_status()
    threads = [threading.Thread(target=client_loop, args=(10 * i,)) for i in range(2 * workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)


def post(conn: http.client.HTTPConnection, path: str, body: dict) -> int:
    """One request on a kept-alive connection (http.client: the lightest client, so the load generator
    leaves the cores to the server)."""
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    return response.status


def slow_reader(port: int, stop: float) -> None:
    """A client sending a slow read back to back (explore 4 levels down from GO's root: ~0.15 s)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        while time.monotonic() < stop:
            post(conn, "/api/kg/go/explore", {"node": SLOW_NODE, "depth": 4})
    finally:
        conn.close()


def run_level(port: int, queries: list[str], clients: int, k: int, seconds: float, max_requests: int,
              slow: bool = False) -> Level:
    """``clients`` searching; ``slow``: and one more client running a slow read meanwhile."""
    level, lock = Level(clients, slow=slow), threading.Lock()
    counter = iter(range(max_requests))
    stop = time.monotonic() + seconds

    def client_loop() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            while time.monotonic() < stop:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                t0 = time.perf_counter()
                try:
                    status = post(conn, "/api/kg/go/search", {"query": queries[i % len(queries)], "k": k})
                    ok, why = status == 200, f"HTTP {status}"
                except (OSError, http.client.HTTPException) as exc:
                    ok, why = False, type(exc).__name__
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                elapsed = time.perf_counter() - t0
                with lock:
                    if ok:
                        level.latencies.append(elapsed)
                    else:
                        level.failed += 1
                        level.errors[why] = level.errors.get(why, 0) + 1
        finally:
            conn.close()

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    if slow:
        threads.append(threading.Thread(target=slow_reader, args=(port, stop)))
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    level.seconds = time.perf_counter() - t0
    return level


def merged(runs: list[Level]) -> Level:
    """One level over its rounds: every latency, the failures, and req/s as the median of the rounds'."""
    out = Level(runs[0].clients, failed=sum(r.failed for r in runs), slow=runs[0].slow)
    for r in runs:
        out.latencies += r.latencies
        for why, n in r.errors.items():
            out.errors[why] = out.errors.get(why, 0) + n
    out.median_rps = statistics.median(r.rps for r in runs)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="1,4,16", help="client counts, comma-separated; the first is the anchor")
    ap.add_argument("--seconds", type=float, default=5.0, help="per level and round")
    ap.add_argument("--rounds", type=int, default=3, help="each round runs every level once, so a level and "
                    "its anchor see the same load of the machine; req/s is the median over the rounds")
    ap.add_argument("--max-requests", type=int, default=600, help="per level and round")
    ap.add_argument("--workers", type=int, default=1, help="`kgos serve --workers N`")
    ap.add_argument("--quick", action="store_true", help="a synthetic 5,000-node KG instead of go")
    ap.add_argument("--home", type=Path, help="a home that already holds the KG 'go' (skips the import)")
    args = ap.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        path, queries = dataset(args.quick, Path(tmp))
        home = args.home or Path(tmp) / "home"
        if args.home is None:
            import kgos
            with kgos.Workspace(home) as ws:
                ws.import_file("go", path)
        random.Random(31).shuffle(queries)
        proc, base = start_server(home, args.workers, Path(tmp) / "server.log")
        try:
            warm(base, queries, args.workers)
            port = int(base.rsplit(":", 1)[1].split("/")[0])
            plan = [(c, False) for c in levels] + ([(1, True)] if not args.quick else [])
            runs: list[list[Level]] = [[] for _ in plan]
            for r in range(args.rounds):  # a distinct k per level and round: no answer from the query cache
                for i, (c, slow) in enumerate(plan):
                    runs[i].append(run_level(port, queries, c, 10 + r * len(plan) + i, args.seconds,
                                             args.max_requests, slow))
            results = [merged(x) for x in runs]
        finally:
            proc.terminate()
            proc.wait(30)
    kg = "go" if path.name == "kg.json.gz" else "a synthetic 5,000-node KG"
    return report(results, args.workers, os.cpu_count() or 0, kg)


def report(results: list[Level], workers: int, cores: int, kg: str) -> int:
    anchor = results[0].rps
    print(f"search on {kg} (as KG 'go'), one server ({workers} worker process{'es' if workers > 1 else ''}), {cores} cores")
    print(f"{'clients':>8} {'requests':>9} {'req/s':>8} {'x 1-client':>11} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}")
    for lv in results:
        print(f"{lv.label:>8} {len(lv.latencies):>9} {lv.rps:>8.1f} {lv.rps / anchor if anchor else 0:>11.2f} "
              f"{lv.pct(0.5):>8.1f} {lv.pct(0.99):>8.1f} {lv.failed:>7}")
        for why, n in lv.errors.items():
            print(f"{'':>10}{n} x {why}")
    top = [lv for lv in results if not lv.slow][-1]
    ratio = top.rps / anchor if anchor else 0.0
    failed = sum(lv.failed for lv in results)
    slow = [lv for lv in results if lv.slow]
    if slow:
        print(f"search p50 with a slow read (explore, depth 4) alongside: {slow[0].pct(0.5):.1f} ms against "
              f"{results[0].pct(0.5):.1f} ms alone (x{slow[0].pct(0.5) / results[0].pct(0.5):.2f})")
    ok = ratio >= BUDGET_RATIO and failed == 0
    print(f"budget: {top.clients} clients >= {BUDGET_RATIO}x the 1-client throughput, 0 failed: "
          f"{ratio:.2f}x, {failed} failed -> {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
