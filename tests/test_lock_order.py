"""Issue 33 goal 2's lock-order rule (docs/limits.md, "Locks: the order rule"), checked: each long
operation of the server is held open while ``/api/health`` and a route that needs the workspace lock
are probed on a real server on loopback. Health must answer, and answer ``busy: false`` (the workspace
lock is free), while the operation runs: link prediction's discover (training in a worker) and eval,
an embedding job, a research run building its corpus. Row 3 (the fast tier's build) is
``test_abuse.py::test_health_and_names_delete_answer_while_the_fast_tier_builds``."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import free_port, live_server
from research_helpers import corpus  # noqa: F401  (the shared corpus fixture)
from test_linkpred import FAST, family_kg

import kgos
from kgos.api.app import create_app
from kgos.linkpred import link_predictor

PARAMS = {"predictor": "ensemble", "params": {k: v for k, v in FAST.items() if k != "predictor"}}
HEADERS = {"X-KGOS-Client": "test"}
SLOW = 2.0  # s: a probe slower than this waited for something (load headroom on a shared 2-core machine)


def _probe_while(c: httpx.Client, running: Callable[[], bool], deadline: float = 120) -> list[tuple[float, bool]]:
    """(latency, busy) of health probes, plus a listing of the KGs (it takes the workspace lock), every
    0.05 s while ``running()``; at least one probe."""
    probes: list[tuple[float, bool]] = []
    end = time.monotonic() + deadline
    while (running() or not probes) and time.monotonic() < end:
        probes.append(_probe(c))
        time.sleep(0.05)
    return probes


def _probe(c: httpx.Client) -> tuple[float, bool]:
    t0 = time.monotonic()
    busy = c.get("/api/health").json()["busy"]
    assert c.get("/api/kg").status_code == 200
    return time.monotonic() - t0, busy


def _assert_free(probes: list[tuple[float, bool]]) -> None:
    assert not any(busy for _, busy in probes), f"a probe found the workspace lock held: {probes}"
    assert max(t for t, _ in probes) < SLOW, probes


def _hold(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> tuple[threading.Event, threading.Event]:
    """Patch ``module.name`` to wait, once called, until ``release`` is set (``started`` says it was
    called), then run the real function: a long operation held open for as long as a test needs."""
    started, release = threading.Event(), threading.Event()
    real = getattr(module, name)

    def held(*args: Any, **kw: Any) -> Any:
        started.set()
        release.wait(60)
        return real(*args, **kw)
    monkeypatch.setattr(module, name, held)
    return started, release


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


@pytest.mark.parametrize("route", ["discover", "eval"])
def test_link_prediction_trains_with_the_workspace_lock_free(ws: kgos.Workspace, route: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: discover and eval trained under the workspace lock (seconds to minutes on a big KG),
    and health answered ``busy`` meanwhile, every other route waiting."""
    from kgos import worker
    # the worker slots are process-wide: a research run another test left indexing may hold one, and
    # a request that finds none free is a 503 by design (tested below), not what this test is about
    monkeypatch.setattr(worker, "_SLOTS", threading.BoundedSemaphore(2))
    family_kg(ws)
    body = ({"node": "g0", "k": 3, **PARAMS} if route == "discover"
            else {"predictor": "metapath", "holdout": 0.2, "params": {"max_length": 2}})
    with live_server(create_app(ws), free_port()) as base, httpx.Client(base_url=base, timeout=120) as c:
        _probe(c)  # warm: the first listing's imports are not the operation's doing
        t, out = _in_thread(lambda: c.post(f"/api/kg/fam/predictions/{route}", json=body, headers=HEADERS))
        probes = _probe_while(c, t.is_alive)
        t.join(120)
    assert out and out[0].status_code == 200, out and out[0].text
    assert len(probes) >= 2, "the training lasted several probes (a worker's start alone takes ~1 s)"
    _assert_free(probes)


def test_an_embedding_job_holds_no_workspace_lock(ws: kgos.Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job (here held open inside its embedding call) runs on a workspace of its own."""
    from kgos.api import embedding
    kg = ws.create("t")
    kg.add_node("Alpha", id="a")
    started, release = _hold(monkeypatch, embedding, "embed_tiers")
    with live_server(create_app(ws), free_port()) as base, httpx.Client(base_url=base, timeout=30) as c:
        job = c.post("/api/kg/t/embedding", json={}, headers=HEADERS)
        assert job.status_code == 202, job.text
        assert started.wait(30), "the job reached its embedding call"
        _assert_free([_probe(c) for _ in range(5)])
        assert c.get(f"/api/jobs/{job.json()['job_id']}").json()["status"] == "running"
        release.set()


def test_a_research_run_building_its_corpus_holds_no_workspace_lock(ws: kgos.Workspace, corpus: Path,  # noqa: F811
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's long step (indexing and embedding its corpus, in its worker) held open: health and the
    KG listing answer, the workspace lock free; the run completes when released."""
    from kgos.research import corpus as corpus_mod
    started, release = _hold(monkeypatch, corpus_mod, "_built_in_worker")
    # open corpora are cached by content, and the corpus fixture's files are the same in every test:
    # another test of this process may have opened them, and then no build would run to hold
    monkeypatch.setattr(corpus_mod, "_open", {})
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(corpus.parent))
    with live_server(create_app(ws), free_port()) as base, httpx.Client(base_url=base, timeout=30) as c:
        run = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus),
                                                 "max_iterations": 1, "embedder": "hash"}, headers=HEADERS)
        assert run.status_code == 202, run.text
        assert started.wait(30), "the run reached its corpus build"
        _assert_free([_probe(c) for _ in range(5)])
        release.set()
        run_id = run.json()["run_id"]
        deadline = time.monotonic() + 180  # a loaded machine; a hang still fails
        while c.get(f"/api/research/runs/{run_id}").json()["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert c.get(f"/api/research/runs/{run_id}").json()["status"] == "completed"


def test_discover_adopts_the_workers_training_and_answers_in_the_request(ws: kgos.Workspace) -> None:
    """The first discovery trains in a worker (it completes while the workspace lock is held); the
    server keeps the fitted predictor, so the next one answers in the request: with every worker slot
    taken (a worker would be a 503), it is a 200 with the same predictions."""
    from api_helpers import client, error

    from kgos import worker
    family_kg(ws)
    c = client(ws)
    body = {"node": "g0", "relations": ["grandparent"], "side": "out", "k": 3, **PARAMS}
    first: list[Any] = []
    with ws.lock:
        t = threading.Thread(target=lambda: first.append(c.post("/api/kg/fam/predictions/discover", json=body)),
                             daemon=True)
        t.start()
        t.join(120)
        assert first, "the discovery waited for the workspace lock"
    assert first[0].status_code == 200, first[0].text
    assert link_predictor(ws.kg("fam")).is_trained("ensemble", **PARAMS["params"]), "the server adopted it"
    slots = [worker._SLOTS.acquire(blocking=False) for _ in range(8)]
    try:
        again = c.post("/api/kg/fam/predictions/discover", json=body)
        busy = c.post("/api/kg/fam/predictions/eval", json={"predictor": "metapath", "holdout": 0.2})
    finally:
        for took in slots:
            if took:
                worker._SLOTS.release()
    assert again.status_code == 200, again.text
    assert again.json()["predictions"] == first[0].json()["predictions"]
    assert again.json()["predictions"][0]["target"] == "c0b"
    error(busy, 503, "ServerBusy")
    error(c.post("/api/kg/fam/predictions/discover", json={"node": "nobody", **PARAMS}), 404, "NodeNotFound")
    error(c.post("/api/kg/nope/predictions/eval", json={"holdout": 0.2}), 404, "KGNotFound")
    error(c.post("/api/kg/fam/predictions/eval", json={"predictor": "metapath"}), 400, "InvalidArgument")


def test_a_kg_changed_after_training_trains_again() -> None:
    """A predictor fitted on another version (or other rows) is not adopted: it would rank wrong rows."""
    import tempfile
    with tempfile.TemporaryDirectory() as home, kgos.Workspace(home) as ws:
        kg = family_kg(ws)
        lp = link_predictor(kg)
        trained = lp.export(**PARAMS["params"])
        assert lp.adopt(trained)
        kg.add_edge("g0", "c0a", "parent")
        assert not lp.is_trained("ensemble", **PARAMS["params"])
        assert not lp.adopt(trained), "fitted on the version before the write"


# -- research: what a run may hold in memory is bounded ------------------------------------------------------
def test_a_corpus_over_its_bound_is_a_413_before_any_file_is_read(ws: kgos.Workspace, corpus: Path,  # noqa: F811
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: 50,000 files of 2 MB were allowed (100 GB of text held by the run). Now the files' total
    is checked by a stat per file when the run starts: 413 InputTooLarge naming the bound."""
    from api_helpers import client, error

    from kgos.errors import InputTooLarge
    from kgos.research import corpus as corpus_mod
    total = sum(f.stat().st_size for f in corpus.iterdir() if f.is_file())
    monkeypatch.setattr(corpus_mod, "MAX_CORPUS_BYTES", total - 1)
    monkeypatch.setattr(corpus_mod, "_build", lambda *a, **k: pytest.fail("a file was read"))
    with pytest.raises(InputTooLarge, match="MAX_CORPUS_BYTES"):
        corpus_mod.files_of(corpus)
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(corpus.parent))
    body = error(client(ws).post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus)}),
                 413, "InputTooLarge")
    assert f"{total - 1:,} bytes" in body["detail"]
    monkeypatch.setattr(corpus_mod, "MAX_CORPUS_BYTES", total)
    assert len(corpus_mod.files_of(corpus)) == 4, "at the bound it passes"


def test_research_runs_at_once_are_bounded(ws: kgos.Workspace, corpus: Path,  # noqa: F811
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run may hold a corpus at its bound in the server's memory: beyond MAX_RUNNING a new run is a
    503 with Retry-After, and the slot is free again when a run ends."""
    from api_helpers import client, error

    from kgos.research import corpus as corpus_mod
    from kgos.research import live
    monkeypatch.setattr(live, "MAX_RUNNING", 1)
    release, real = threading.Event(), corpus_mod._built_in_worker
    monkeypatch.setattr(corpus_mod, "_built_in_worker", lambda *a, **k: (release.wait(60), real(*a, **k))[1])
    monkeypatch.setattr(corpus_mod, "_open", {})  # cached by content: the build must run to be held
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(corpus.parent))
    c = client(ws)
    body = {"question": "What is zip?", "corpus": str(corpus), "max_iterations": 1, "embedder": "hash"}
    first = c.post("/api/research/runs", json=body)
    assert first.status_code == 202, first.text
    busy = error(c.post("/api/research/runs", json=body), 503, "ServerBusy")
    assert "at most 1 at once" in busy["detail"]
    release.set()
    deadline = time.monotonic() + 60
    while c.get(f"/api/research/runs/{first.json()['run_id']}").json()["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.2)  # the run's thread ends just after its manifest says so
    assert c.post("/api/research/runs", json={**body, "wait": True}).status_code == 200


def _run_to_end(c: Any, body: dict[str, Any]) -> dict[str, Any]:
    run = c.post("/api/research/runs", json=body)
    assert run.status_code == 202, run.text
    deadline = time.monotonic() + 120
    while (m := c.get(f"/api/research/runs/{run.json()['run_id']}").json())["status"] == "running":
        assert time.monotonic() < deadline, m
        time.sleep(0.1)
    return m  # type: ignore[no-any-return]


def test_a_research_run_indexes_its_corpus_in_a_worker_process(ws: kgos.Workspace, corpus: Path,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the server's run thread built the index (0.9 s C calls holding the GIL, 1.4 GB at the
    bound: health 1.14 s, row 10f). Now a spawned worker builds and saves it, the server maps it: the
    server never runs the build, the worker's pid is another, the run completes with the same chunks."""
    from api_helpers import client

    from kgos import worker
    from kgos.research import corpus as corpus_mod
    monkeypatch.setattr(corpus_mod, "_open", {})
    monkeypatch.setattr(corpus_mod, "_build", lambda *a, **k: pytest.fail("the server built the index"))
    done: list[dict[str, Any]] = []
    real = worker.run_in_worker
    monkeypatch.setattr(worker, "run_in_worker", lambda *a, **k: done.append(real(*a, **k)) or done[-1])
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(corpus.parent))
    c = client(ws)
    m = _run_to_end(c, {"question": "What is zip?", "corpus": str(corpus), "max_iterations": 1, "embedder": "hash"})
    assert m["status"] == "completed", m.get("error")
    assert len(done) == 1 and done[0]["pid"] != os.getpid()
    assert done[0]["chunks"] == m["sources"]["corpus_chunks"] > 0
    result = c.get(f"/api/research/runs/{m['run_id']}/result").json()
    assert "zip.txt" in json.dumps(result), "the answer cites the mapped corpus's chunks"


def test_a_corpus_past_the_workers_memory_ceiling_fails_the_run_not_the_server(
        ws: kgos.Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Half a megabyte of prose needs more than the smallest ceiling (256 MB) to index: the worker
    runs out of memory, the run fails with InputTooLarge naming the ceiling, the server answers."""
    from api_helpers import client

    from kgos.research import corpus as corpus_mod
    folder = tmp_path / "roots" / "big"
    folder.mkdir(parents=True)
    words = [f"w{i}x{i * 7919 % 1000}" for i in range(5000)]
    for n in range(4):
        (folder / f"doc{n}.txt").write_text("\n\n".join(" ".join(words[(n + k) % 5000:(n + k) % 5000 + 12]) + "."
                                                         for k in range(0, 25_000, 2)), encoding="utf-8")
    monkeypatch.setattr(corpus_mod, "_open", {})
    monkeypatch.setenv("KGOS_JOB_MEMORY_MB", "256")
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(tmp_path / "roots"))
    c = client(ws)
    m = _run_to_end(c, {"question": "What is w1?", "corpus": str(folder), "max_iterations": 1, "embedder": "hash"})
    assert m["status"] == "failed"
    assert m["error"].startswith("InputTooLarge: indexing corpus") and "256 MB (KGOS_JOB_MEMORY_MB)" in m["error"]
    assert c.get("/api/health").json()["status"] == "ok"


def test_stopping_a_run_terminates_its_indexing_worker(ws: kgos.Workspace, corpus: Path,  # noqa: F811
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop while the worker indexes: the worker is terminated (no orphan building on), the run stopped."""
    import multiprocessing as mp

    from api_helpers import client

    from kgos import worker
    from kgos.research import corpus as corpus_mod
    monkeypatch.setattr(corpus_mod, "_open", {})
    monkeypatch.setattr(worker, "_child", _slow_child)  # the worker sleeps: a build that lasts
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(corpus.parent))
    c = client(ws)
    run = c.post("/api/research/runs", json={"question": "What is zip?", "corpus": str(corpus), "embedder": "hash"})
    assert run.status_code == 202, run.text
    run_id = run.json()["run_id"]
    deadline = time.monotonic() + 60
    while not [p for p in mp.active_children() if p.name == "kgos-job-worker"]:
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.05)
    assert c.post(f"/api/research/runs/{run_id}/control", json={"action": "stop"}).status_code == 200
    while (m := c.get(f"/api/research/runs/{run_id}").json())["status"] == "running":
        assert time.monotonic() < deadline, m
        time.sleep(0.1)
    assert m["status"] == "stopped", m
    assert not [p for p in mp.active_children() if p.name == "kgos-job-worker"]


def _slow_child(writer: Any, *args: Any) -> None:
    time.sleep(60)


MEASURE = """
import resource, sys
from kgos.research.corpus import open_corpus
c = open_corpus(sys.argv[1], None, "hash")
print(len(c), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


@pytest.mark.slow  # 64 MB of prose indexed and embedded (hash): about 2 minutes on 2 busy cores
def test_a_corpus_at_its_bound_is_indexed_within_a_gigabyte(tmp_path: Path) -> None:
    """The process indexing a corpus at MAX_CORPUS_BYTES peaks under 2 GB (931 MB and 1,704 MB
    measured in two runs), which bounds what one research run holds."""
    import random
    import subprocess
    import sys

    from kgos.research.corpus import MAX_CORPUS_BYTES
    rnd = random.Random(0)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(3, 9))) for _ in range(20000)]
    for i in range(32):
        with open(tmp_path / f"doc{i}.txt", "w") as f:
            while f.tell() < MAX_CORPUS_BYTES // 32 - 10_000:
                f.write(" ".join(" ".join(rnd.choice(words) for _ in range(14)).capitalize() + "." for _ in range(4))
                        + "\n\n")
    done = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path)], capture_output=True, text=True, timeout=900,
                          check=True)
    chunks, peak = map(int, done.stdout.split())
    assert chunks > 50_000 and peak < 2000, (chunks, peak)
