"""An HTTP upload with the embedding in the server's background worker, against the same work done
inside the request (how the import route worked before; issue 14 goal 1, serving side).

python benchmarks/upload_embedding.py [--dataset cli-man] [--models DIR] [--repeat 3] [--fill-seconds 30]

In fresh KGOS_HOMEs (temp folders), over the ASGI client with the app's lifespan (as ``kgos serve``):
1. ``POST /api/kg/{db}/import`` of the dataset, ``--repeat`` times into new KGs, each job cancelled
   before the next step; anchor, alternating with it in the same run: ``Workspace.import_file`` then
   ``embed_after_import`` in-process (the request's work before). Medians of wall seconds.
2. One more upload left to its job (a second one queued behind it): time from the request's start
   until the fast tier is in place (phase ``fill-in`` begins); search p50 while the default model
   fills in; the fill-in's nodes/s and the ETA the job shows after ``--fill-seconds``.
3. Shutdown with the fill-in running: how long the lifespan's stop takes, and that the committed
   default-model vectors are whole chunks.

``--models`` holds a built ``minilm-int8-static-256`` (copied into each home); without it each home's
first job distills the fast tier (about 33 CPU s) and the anchor is not run (it would distill again):
its figure is then this run's request plus the job's fast-tier phase (distill + embed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
QUERIES = ["list files in a directory", "compress an archive", "network connections", "disk usage",
           "change file permissions", "search text in files", "schedule a job", "kill a process"]


def _home(root: Path, name: str, models: Path | None) -> Path:
    home = root / name
    if models is not None:
        from kgos.embed.static import FAST_STATIC_NAME
        shutil.copytree(models / FAST_STATIC_NAME, home / "models" / FAST_STATIC_NAME)
    return home


def anchor_once(ws: Any, db_id: str, dataset: str) -> float:
    """The request's work before: import, then the fast tier, in the request (wall seconds)."""
    from kgos.kg.embedding import embed_after_import
    t = time.perf_counter()
    ws.import_file(db_id, BENCH / dataset / "kg.json.gz")
    embed_after_import(ws.kg(db_id))
    return time.perf_counter() - t


def _poll(client: Any, job_id: str, until: Any, timeout: float = 900.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        if until(job) or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def _upload(client: Any, db_id: str, data: bytes) -> tuple[float, str]:
    t = time.perf_counter()
    r = client.post(f"/api/kg/{db_id}/import", files={"file": ("kg.json.gz", data)})
    assert r.status_code == 200, r.text
    return time.perf_counter() - t, r.json()["embedding"]["job_id"]


def requests(root: Path, dataset: str, models: Path | None, repeat: int) -> dict[str, list[float]]:
    """The request with the worker, and the anchor, alternately (each job is cancelled before the next
    step, so no timed step shares the cores with a job)."""
    from fastapi.testclient import TestClient

    import kgos
    from kgos.api.app import create_app
    data = (BENCH / dataset / "kg.json.gz").read_bytes()
    home, other = _home(root, "requests", models), _home(root, "anchor", models)
    out: dict[str, list[float]] = {"served": [], "anchor": []}
    with TestClient(create_app(home), base_url="http://127.0.0.1:8765", headers={"X-KGOS-Client": "bench"}) as client, \
            kgos.Workspace(other) as ws:
        for i in range(repeat):
            os.environ["KGOS_HOME"] = str(home)
            wall, job_id = _upload(client, f"r{i}", data)
            out["served"].append(wall)
            client.post(f"/api/jobs/{job_id}/cancel")
            _poll(client, job_id, lambda j: j["finished"])
            if models is not None:
                os.environ["KGOS_HOME"] = str(other)
                out["anchor"].append(anchor_once(ws, f"a{i}", dataset))
    return out


def served(root: Path, dataset: str, models: Path | None, fill_seconds: float) -> dict[str, Any]:
    """One upload left to its job: searchable when, search meanwhile, fill-in rate, shutdown."""
    from fastapi.testclient import TestClient

    import kgos
    from kgos.api.app import create_app
    from kgos.api.runtime import ServerSettings
    from kgos.embed.nodes import FILL_CHUNK
    home = _home(root, "served", models)
    os.environ["KGOS_HOME"] = str(home)
    data = (BENCH / dataset / "kg.json.gz").read_bytes()
    client = TestClient(create_app(home, ServerSettings(fill_in=True)), base_url="http://127.0.0.1:8765",
                        headers={"X-KGOS-Client": "bench"}).__enter__()
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    out["request"], job_id = _upload(client, "s", data)
    _upload(client, "q", data)  # queued behind it: the shutdown cancels it too
    _poll(client, job_id, lambda j: j["progress"].get("phase") == "fill-in" or j["finished"])
    out["searchable"] = time.perf_counter() - t0
    assert client.get("/api/kg/s/embedding").json()["search_model"]
    lat = _search_times(client, "s")
    out["search_p50_ms"] = 1000 * statistics.median(lat[len(QUERIES):])  # the first round warms the caches
    time.sleep(max(0.0, fill_seconds - (time.perf_counter() - t0 - out["searchable"])))
    job = client.get(f"/api/jobs/{job_id}").json()
    out["fill"] = {**job["progress"], "seconds": job["phase_seconds"], "eta": job["eta_seconds"]}
    t = time.perf_counter()
    client.__exit__(None, None, None)
    out["stop_s"] = time.perf_counter() - t
    with kgos.Workspace(home) as ws:
        st = ws.kg("s").embed_status()
    out["target_vectors"], out["nodes"], out["chunk"] = st.target_vectors, st.nodes, FILL_CHUNK
    with TestClient(create_app(home), base_url="http://127.0.0.1:8765") as idle:  # anchor: no job running
        out["idle_p50_ms"] = 1000 * statistics.median(_search_times(idle, "s")[len(QUERIES):])
    return out


def _search_times(client: Any, db_id: str) -> list[float]:
    lat = []
    for q in QUERIES * 3:
        t = time.perf_counter()
        client.post(f"/api/kg/{db_id}/search", json={"query": q, "k": 10})
        lat.append(time.perf_counter() - t)
    return lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="cli-man")
    ap.add_argument("--models", type=Path, default=None, help="folder with a built minilm-int8-static-256")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fill-seconds", type=float, default=30.0, help="let the fill-in run this long, then shut down")
    args = ap.parse_args()
    os.environ.pop("KGOS_EMBEDDER", None)
    with tempfile.TemporaryDirectory(prefix="kgos-upload-") as tmp:
        root = Path(tmp)
        print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
        timed = requests(root, args.dataset, args.models, args.repeat) if args.models else None
        s = served(root, args.dataset, args.models, args.fill_seconds)
    req = statistics.median(timed["served"]) if timed else s["request"]
    runs = f"median of {args.repeat}" if timed else "one run: a fresh home"
    print(f"\n| {args.dataset}: import request ({runs}) | wall s | ratio to anchor |")
    print("|---|---|---|")
    if timed:
        base = statistics.median(timed["anchor"])
        print(f"| anchor: import + fast tier inside the request (before) | {base:.2f} | 1.00 |")
        print(f"| background worker: the request | {req:.2f} | {req / base:.2f} |")
    else:
        fast = s["searchable"] - s["request"]
        print(f"| before: the request + the job's fast-tier phase (distill + embed), same run | {s['request'] + fast:.2f} | 1.00 |")
        print(f"| background worker: the request | {req:.2f} | {req / (s['request'] + fast):.2f} |")
    fill = s["fill"]
    print(f"\nsearchable by meaning {s['searchable']:.1f} s after the request started (request {s['request']:.2f} s; "
          f"{'fast tier copied in' if args.models else 'fast tier distilled by the job'})")
    print(f"search p50 (fast tier): {s['search_p50_ms']:.1f} ms during the fill-in, {s['idle_p50_ms']:.1f} ms "
          f"with no job running (same KG, after the shutdown)")
    rate = fill["done"] / fill["seconds"] if fill.get("seconds") else 0.0
    print(f"fill-in after {fill.get('seconds')} s: {fill.get('done')}/{fill.get('total')} nodes, "
          f"{rate:.1f} nodes/s, ETA shown {fill.get('eta')} s")
    print(f"shutdown with the fill-in running and one job queued: {s['stop_s']:.2f} s; "
          f"committed {s['target_vectors']} of {s['nodes']} default-model vectors "
          f"({'whole chunks' if s['target_vectors'] % s['chunk'] == 0 or s['target_vectors'] == s['nodes'] else 'NOT whole chunks'})")


if __name__ == "__main__":
    main()
