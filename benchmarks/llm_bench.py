"""Offline answering and the MCP tool path, measured on the demo KGs (the ones `kgos demo` loads).

    python benchmarks/llm_bench.py                       # offline (86 probes) + local SmolLM2 (4), MCP search
    python benchmarks/llm_bench.py --models smollm2,gemma3-270m --local-probes 8 --max-tokens 96
    python benchmarks/llm_bench.py --models none         # offline provider and MCP only (no llama.cpp)

For each provider, the probes of src/kgos/data/demo/probes.jsonl (the first --probes / --local-probes) are asked of the
`demo` expert through the 8-stage loop (memory off, so turns do not feed each other):

- first token: seconds from the start of inference (retrieval and prompt already done) to the first
  streamed piece; whole turn: to the end;
- tokens/s: generated tokens (the local model's tokenizer, for the offline answer too) over the time
  after the first piece;
- cited & valid: the share of answers with at least one citation, all of them nodes that were in the
  context; relevant cited: the share of probes whose `relevant` node is among the valid citations.

MCP: the `search` tool through the SDK's in-memory client session and through a real `kgos mcp`
subprocess (stdio), against the anchor `kg.search` in-process, same queries, same run. Medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kgos
from kgos.data import load_demo
from kgos.experts.chat import ExpertChat
from kgos.llm import get_provider

PROBES = Path(kgos.__file__).parent / "data" / "demo" / "probes.jsonl"
WARM = ["warm up the engine", "first queries are slower", "streaming tokens", "rate limits", "embeddings"]


def probes(n: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in PROBES.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:n]


def answer(engine: ExpertChat, query: str) -> dict[str, Any]:
    turn = engine.start("demo", query)
    t0, first, pieces, done = time.perf_counter(), None, [], {}
    for event in engine.events(turn):
        if event["type"] == "token":
            first = first if first is not None else time.perf_counter() - t0
            pieces.append(event["content"])
        elif event["type"] == "done":
            done = event
    total = time.perf_counter() - t0
    return {"text": "".join(pieces), "first": first if first is not None else total, "total": total,
            "citations": done.get("citations") or {}}


def provider_rows(ws: kgos.Workspace, spec: str, items: list[dict[str, Any]], max_tokens: int,
                  count: Any) -> dict[str, Any]:
    provider = get_provider(spec)
    engine = ExpertChat(ws, provider, use_memory=False, max_tokens=max_tokens, timeout=600)
    answer(engine, "warm up")  # load and first-call costs are not the probes'
    runs = []
    for probe in items:
        run = answer(engine, probe["query"])
        run["tokens"] = count(run["text"])
        run["relevant"] = any(f"demo:{r}" in run["citations"].get("valid", []) for r in probe["relevant"])
        runs.append(run)
        print(f"  {spec} {probe['id']}: first {run['first']:.2f}s, {run['tokens']} tokens, "
              f"citations {run['citations'].get('count', 0)} ok={run['citations'].get('ok')}", file=sys.stderr)
    rates = [r["tokens"] / (r["total"] - r["first"]) for r in runs if r["total"] > r["first"] and r["tokens"] > 1]
    cited_ok = [r["citations"].get("count", 0) > 0 and r["citations"].get("ok", False) for r in runs]
    return {"provider": spec, "probes": len(runs), "first_token_s": statistics.median(r["first"] for r in runs),
            "turn_s": statistics.median(r["total"] for r in runs),
            "tokens_per_s": statistics.median(rates) if rates else float("nan"),
            "tokens": statistics.median(r["tokens"] for r in runs),
            "cited_valid": sum(cited_ok) / len(runs), "relevant_cited": sum(r["relevant"] for r in runs) / len(runs),
            "invented": sum(bool(r["citations"].get("unknown")) for r in runs) / len(runs)}


def token_counter(models: list[str]) -> Any:
    """Tokens by the first local model's tokenizer, else whitespace words x 1.3 (noted in the table)."""
    if not models:
        return lambda text: round(len(text.split()) * 1.3)
    from kgos.llm.local import load, model_path
    llm = load(model_path(models[0]), 512)
    return lambda text: len(llm.tokenize(text.encode("utf-8"), add_bos=False)) if text else 0


def mcp_rows(home: Path, queries: list[str]) -> list[dict[str, Any]]:
    import anyio
    from mcp import Client, StdioServerParameters

    from kgos.api.mcp import create_server
    ws = kgos.Workspace(home)
    kg = ws.kg("demo")
    for q in WARM:  # the snapshot is built once per process; the query encoder's first calls are slower
        kg.search(q)
    anchor = []
    for q in queries:
        t = time.perf_counter()
        kg.search(q, k=10)
        anchor.append(time.perf_counter() - t)

    async def timed(client: Client) -> list[float]:
        for q in WARM:
            await client.call_tool("search", {"kg": "demo", "query": q, "k": 10})
        out = []
        for q in queries:
            t = time.perf_counter()
            result = await client.call_tool("search", {"kg": "demo", "query": q, "k": 10})
            out.append(time.perf_counter() - t)
            assert not result.is_error, result.content
        return out

    async def in_memory() -> list[float]:
        kg.engine.cache.clear()  # uncached searches on every path: each query is new to its process
        kg.engine.vector_cache.clear()
        async with Client(create_server(ws)) as client:
            return await timed(client)

    async def stdio() -> list[float]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "kgos", "--home", str(home), "mcp"])
        async with Client(params) as client:
            return await timed(client)

    base = statistics.median(anchor) * 1000
    rows = [{"path": "kg.search in-process (anchor)", "p50_ms": base, "ratio": 1.0}]
    for name, run in (("MCP search, in-memory session", in_memory), ("MCP search, stdio subprocess", stdio)):
        ms = statistics.median(anyio.run(run)) * 1000
        rows.append({"path": name, "p50_ms": ms, "ratio": ms / base})
    ws.close()
    return rows


def markdown(answers: list[dict[str, Any]], mcp: list[dict[str, Any]], note: str) -> str:
    head = ("| provider | probes | first token (s) | whole turn (s) | tokens/s | tokens | cited & valid | "
            "relevant cited | invented citations |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in answers:
        lines.append(f"| {r['provider']} | {r['probes']} | {r['first_token_s']:.3f} | {r['turn_s']:.2f} | "
                     f"{r['tokens_per_s']:.1f} | {r['tokens']:.0f} | {r['cited_valid']:.0%} | "
                     f"{r['relevant_cited']:.0%} | {r['invented']:.0%} |")
    lines += ["", "| MCP path | search p50 (ms) | x anchor |", "|---|---|---|"]
    lines += [f"| {r['path']} | {r['p50_ms']:.2f} | {r['ratio']:.2f} |" for r in mcp]
    return "\n".join(lines) + f"\n\n{note}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2", help="local models, comma-separated ('none': skip)")
    ap.add_argument("--probes", type=int, default=86, help="probes for the offline provider (86: all)")
    ap.add_argument("--local-probes", type=int, default=4, help="probes for each local model (~30-60 s each)")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--embedder", default="default", help="the demo KGs' embedder, as `kgos demo` ('none': none)")
    ap.add_argument("--mcp-queries", type=int, default=40)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    models = [] if args.models == "none" else [m.strip() for m in args.models.split(",") if m.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        ws = kgos.Workspace(home)
        load_demo(ws, embedder=None if args.embedder == "none" else args.embedder)
        count = token_counter(models)
        answers = [provider_rows(ws, "offline", probes(args.probes), args.max_tokens, count)]
        answers += [provider_rows(ws, f"local:{m}", probes(args.local_probes), args.max_tokens, count) for m in models]
        ws.close()
        mcp = mcp_rows(home, [p["query"] for p in probes(args.mcp_queries)])
    counted = f"the {models[0]} tokenizer" if models else "words x 1.3"
    note = (f"{args.probes} / {args.local_probes} demo probes (offline / local), max_tokens {args.max_tokens}, "
            f"tokens counted with {counted}; MCP: {args.mcp_queries} queries, uncached.")
    print(markdown(answers, mcp, note))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"answers": answers, "mcp": mcp, "note": note}, indent=2))


if __name__ == "__main__":
    main()
