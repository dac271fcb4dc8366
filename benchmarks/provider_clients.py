"""The chat providers' clients against a fake streaming server on loopback (issue 32 goal 5).

    python benchmarks/provider_clients.py                # a table
    python benchmarks/provider_clients.py --json --runs 20

For each provider: the import of its client (a fresh process, min of --imports), then --runs streamed
answers of --pieces pieces from tests/llm_fake_servers.py: first piece and whole stream, medians.
The anchor is the Gemini provider, which speaks HTTP itself (httpx + httpx-sse), measured in the same
run: OpenAI-compatible and Anthropic go through their official SDKs (openai, anthropic).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from llm_fake_servers import FakeServer, sse, stream_script  # noqa: E402

from kgos.llm import AnthropicProvider, GeminiProvider, Message, OpenAICompatProvider  # noqa: E402

KEY = "bench-key"


def openai_events(pieces: list[str]) -> list[bytes]:
    evs = [sse({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}) for p in pieces]
    return [*evs, sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), sse("[DONE]")]


def anthropic_events(pieces: list[str]) -> list[bytes]:
    evs = [sse({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
               "message_start"),
           sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
               "content_block_start")]
    evs += [sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
                "content_block_delta") for p in pieces]
    return [*evs, sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, "message_delta"),
            sse({"type": "message_stop"}, "message_stop")]


def gemini_events(pieces: list[str]) -> list[bytes]:
    def chunk(text: str, finish: str | None = None) -> bytes:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return sse({"candidates": [cand]})
    return [*(chunk(p) for p in pieces), chunk("", "STOP")]


CASES: dict[str, tuple[str, Callable[[str], Any], Callable[[list[str]], list[bytes]]]] = {
    "gemini (httpx + httpx-sse, anchor)": ("kgos.llm.gemini",
                                           lambda url: GeminiProvider("g", api_key=KEY, base_url=f"{url}/v1beta"),
                                           gemini_events),
    "openai (SDK)": ("kgos.llm.openai_compat, openai",
                     lambda url: OpenAICompatProvider("m", base_url=f"{url}/v1", api_key=KEY), openai_events),
    "anthropic (SDK)": ("kgos.llm.anthropic, anthropic",
                        lambda url: AnthropicProvider("c", api_key=KEY, base_url=url), anthropic_events),
}


def import_ms(modules: str, tries: int) -> float:
    code = ("import time, kgos, httpx; t = time.perf_counter(); import " + modules +
            "; print((time.perf_counter() - t) * 1000)")
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    env={"PYTHONPATH": str(ROOT / "src")}).stdout) for _ in range(tries))


def stream_ms(make: Callable[[str], Any], events: list[bytes], runs: int) -> tuple[float, float]:
    server = FakeServer().start()
    try:
        server.script = stream_script(events)
        provider = make(server.url)
        list(provider.stream([Message("user", "warm up")]))  # the SDK import and the client, once
        first, whole = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            stream = provider.stream([Message("user", "hi")])
            next(stream)
            first.append(time.perf_counter() - t0)
            list(stream)
            whole.append(time.perf_counter() - t0)
        return statistics.median(first) * 1000, statistics.median(whole) * 1000
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pieces", type=int, default=300)
    ap.add_argument("--imports", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    pieces = [f"piece {i} " for i in range(args.pieces)]
    rows = []
    for name, (modules, make, events) in CASES.items():
        first, whole = stream_ms(make, events(pieces), args.runs)
        rows.append({"client": name, "import_ms": round(import_ms(modules, args.imports), 1),
                     "first_piece_ms": round(first, 2), "stream_ms": round(whole, 2)})
    anchor = rows[0]["stream_ms"]
    for row in rows:
        row["stream_vs_anchor"] = round(row["stream_ms"] / anchor, 2)
    if args.json:
        print(json.dumps({"runs": args.runs, "pieces": args.pieces, "rows": rows}, indent=2))
        return
    print(f"{args.runs} streams of {args.pieces} pieces each, medians; import: min of {args.imports} fresh processes")
    print(f"{'client':38} {'import ms':>10} {'first piece ms':>15} {'stream ms':>10} {'vs anchor':>10}")
    for r in rows:
        print(f"{r['client']:38} {r['import_ms']:>10} {r['first_piece_ms']:>15} {r['stream_ms']:>10} "
              f"{r['stream_vs_anchor']:>10}")


if __name__ == "__main__":
    main()
