"""Expert chat benchmark (issue 6): what one grounded turn costs, and what HTTP adds.

    python benchmarks/chat_bench.py              # demo KG (and go, if benchmarks/out/ws-quality has it)
    python benchmarks/chat_bench.py --json
    python benchmarks/chat_bench.py --json-out chat.json   # the table, and the figures as JSON (benchmarks/run.py)

Measured in one run, warm, with the offline provider (no model time, so this is KG-OS's own cost):

1. ``retrieve``: intent_search over the expert's KG plus boosts (stage 4's KG part);
2. ``turn``: a whole turn in-process — intake, memory recall, playbooks, prompt assembly, the offline
   answer streamed, citation check and persistence (one transaction + a memory write);
3. ``http first event`` / ``http turn``: the same turn through ``POST /api/experts/{id}/chat`` over a
   real uvicorn on loopback, time to the first SSE event and to the last;
4. the anchor: ``kg.search`` (the hybrid search alone, k=10) on the same queries in the same run.
Ratios to the anchor are what to compare across machines.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import kgos
from kgos.api.app import create_app
from kgos.data import load_demo
from kgos.experts import ExpertService
from kgos.experts.chat import ExpertChat
from kgos.experts.context import retrieve
from kgos.llm.offline import OfflineProvider

DEMO_QUERIES = ["How do I reduce my API costs?", "Can it stream responses?", "help me debug rate limit errors",
                "read CSV data, analyze trends, and generate a report", "what are alternatives to prompt caching",
                "I want faster responses", "How do tools work?", "what happens if I change my API key"]
GO_QUERIES = ["programmed cell death", "regulation of transcription by RNA polymerase II", "DNA repair",
              "mitochondrial membrane transport", "what is involved in immune response", "cell cycle checkpoint"]


CPU: dict[str, list[float]] = {}  # stage -> CPU ms of each timed call (this process: client and server threads)


def timed(fn, reps: int, stage: str) -> list[float]:
    out = []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
        CPU.setdefault(stage, []).append((time.process_time() - c0) * 1000)
    return out


def p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def bench_expert(ws: kgos.Workspace, expert_id: str, queries: list[str], reps: int, port: int) -> dict:
    cfg = ExpertService(ws).get(expert_id).config
    kg = ws.kg(cfg.primary_kg)
    chat = ExpertChat(ws, OfflineProvider())
    for q in queries:  # warm: indexes, snapshots, caches of every query
        list(chat.events(chat.start(expert_id, q)))
    rows: dict[str, list[float]] = {"anchor: kg.search": [], "retrieve": [], "turn": [], "http first event": [],
                                    "http turn": []}
    CPU.clear()
    cold = kg.engine.cache.clear  # every timing below misses the 300 s query cache, as a new question does
    for q in queries:
        rows["anchor: kg.search"] += timed(lambda q=q: (cold(), kg.search(q, k=10)), reps, "anchor: kg.search")
        rows["retrieve"] += timed(lambda q=q: (cold(), retrieve(ws, cfg, q)), reps, "retrieve")
        rows["turn"] += timed(lambda q=q: (cold(), list(chat.events(chat.start(expert_id, q)))), reps, "turn")
        for _ in range(reps):
            cold()
            c0 = time.process_time()
            first, total = _http_turn(port, expert_id, q)
            rows["http first event"].append(first)
            rows["http turn"].append(total)
            CPU.setdefault("http turn", []).append((time.process_time() - c0) * 1000)
    anchor = statistics.median(rows["anchor: kg.search"])
    return {name: {"p50_ms": round(statistics.median(v), 2), "p99_ms": round(p(v, 0.99), 2),
                   "x_anchor": round(statistics.median(v) / anchor, 2),
                   **({"cpu_p50_ms": round(statistics.median(CPU[name]), 2)} if name in CPU else {})}
            for name, v in rows.items()}


HTTP = httpx.Client(timeout=30)  # keep-alive, as a UI or an SDK client would hold it


def _http_turn(port: int, expert_id: str, query: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    first = None
    with HTTP.stream("POST", f"http://127.0.0.1:{port}/api/experts/{expert_id}/chat", json={"query": query}) as r:
        for line in r.iter_lines():
            if line.startswith("data:") and first is None:
                first = (time.perf_counter() - t0) * 1000
    return first or 0.0, (time.perf_counter() - t0) * 1000


def serve(ws: kgos.Workspace) -> tuple[uvicorn.Server, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(ws), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, port


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--json-out", type=Path, help="also write the figures as JSON to this file")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="kgos-chat-bench-"))
    ws = kgos.Workspace(home)
    load_demo(ws)  # the default embedder, as users run it
    results = {}
    quality = Path(__file__).parent / "out" / "ws-quality" / "kgs" / "go.db"
    if quality.exists():  # reuse the embedded go KG of benchmarks/quality.py
        shutil.copy(quality, home / "kgs" / "go.db")
        ExpertService(ws).create({"name": "GO", "kg_db_id": "go"}, id="go")
    server, port = serve(ws)
    try:
        results["demo (350 nodes)"] = bench_expert(ws, "demo", DEMO_QUERIES, args.reps, port)
        if quality.exists():
            results["go (43,558 nodes)"] = bench_expert(ws, "go", GO_QUERIES, args.reps, port)
    finally:
        server.should_exit = True
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, rows in results.items():
        print(f"\n{name}\n| stage | p50 ms | p99 ms | CPU p50 ms | x anchor |\n|---|---|---|---|---|")
        for stage, r in rows.items():
            print(f"| {stage} | {r['p50_ms']} | {r['p99_ms']} | {r.get('cpu_p50_ms', '-')} | {r['x_anchor']} |")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
