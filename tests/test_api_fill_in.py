"""The server embeds uploads in the background: the import answers once its rows are committed, one
worker runs the fast tier then the default model's fill-in (one job at a time, progress and ETA on the
job and the KG), search works meanwhile, a shutdown stops between two commits and the next start
resumes, and an embedder that cannot run fails the job, not the KG.

The default model here is ``gated``: a hash embedder whose every batch waits for the test's permit,
so each step is observed where it stands, without sleeps; the fast tier is ``hash:32``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from api_helpers import BASE_URL, SCRIPT, error
from conftest import write_nodelink
from fastapi.testclient import TestClient

import kgos
from kgos.api.app import create_app
from kgos.api.embedding import SHUTDOWN
from kgos.api.runtime import ServerSettings
from kgos.embed import nodes as embed_nodes
from kgos.embed import registry
from kgos.embed.hashing import HashingEmbedder
from kgos.index.vectors import models

CHUNK, N = 8, 24  # three fill-in chunks (one batch each)
WAIT = 10.0


class GatedEmbedder(HashingEmbedder):
    """hash:16 whose batches embedded with a progress callback (a KG's embedding passes) each take one
    permit of ``gate`` (announced on ``started``); queries and name vectors pass freely."""

    min_batch = 1
    gate = threading.Semaphore(0)
    started = threading.Semaphore(0)
    active = 0
    most_active = 0
    lock = threading.Lock()

    def __init__(self) -> None:
        super().__init__(16)
        self.name, self.spec = "gated-16", "gated"

    def embed(self, texts: Any, *, batch_size: int = 64, progress: Callable[[int], None] | None = None) -> Any:
        if progress is None:
            return super().embed(texts, batch_size=batch_size)
        cls = GatedEmbedder
        with cls.lock:
            cls.active += 1
            cls.most_active = max(cls.most_active, cls.active)
        try:
            return super().embed(texts, batch_size=batch_size, progress=lambda n: self._gated(n, progress))
        finally:
            with cls.lock:
                cls.active -= 1

    @staticmethod
    def _gated(n: int, progress: Callable[[int], None]) -> None:
        GatedEmbedder.started.release()
        assert GatedEmbedder.gate.acquire(timeout=WAIT), "the test never let this batch through"
        progress(n)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> type[GatedEmbedder]:
    monkeypatch.setitem(registry.BACKENDS, "gated", registry.Backend("gated", f"{__name__}:GatedEmbedder",
                                                                       name="gated-16", dims=16))
    monkeypatch.setattr(registry, "_cache", {})
    monkeypatch.setattr(embed_nodes, "FILL_CHUNK", CHUNK)
    monkeypatch.setenv("KGOS_EMBEDDER", "gated")
    monkeypatch.setenv("KGOS_FAST_EMBEDDER", "hash:32")
    GatedEmbedder.gate, GatedEmbedder.started = threading.Semaphore(0), threading.Semaphore(0)
    GatedEmbedder.active = GatedEmbedder.most_active = 0
    return GatedEmbedder


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def _server(home, fill_in: bool = False) -> TestClient:
    return TestClient(create_app(home, ServerSettings(fill_in=fill_in)), base_url=BASE_URL, headers=SCRIPT)


def _upload(client: TestClient, tmp_path, db_id: str = "t", **params: str) -> dict[str, Any]:
    nodes = [{"id": f"n{i}", "name": f"{w} {i}", "type": "tool", "description": f"Manage the {w} of host {i}."}
             for i, w in enumerate(["tar archive", "network socket", "disk quota", "cron schedule"] * (N // 4))]
    path = write_nodelink(tmp_path / f"{db_id}.json", nodes, [])
    r = client.post(f"/api/kg/{db_id}/import", params=params, files={"file": (path.name, path.read_bytes())})
    assert r.status_code == 200, r.text
    return r.json()


def _started(n: int = 1) -> None:
    for _ in range(n):
        assert GatedEmbedder.started.acquire(timeout=WAIT), "no gated batch started"


def _job(client: TestClient, job_id: str, until: tuple[str, ...] = ("complete", "failed", "cancelled")) -> dict:
    deadline = time.monotonic() + WAIT
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in until or time.monotonic() > deadline:
            return job
        time.sleep(0.02)


def _search(client: TestClient, db_id: str = "t") -> dict[str, Any]:
    r = client.post(f"/api/kg/{db_id}/search", json={"query": "tar archive", "k": 3})
    assert r.status_code == 200, r.text
    return r.json()


def _meaning(found: dict[str, Any]) -> float:
    return max(hit["components"]["embedding"] for hit in found["results"])


def test_the_import_answers_before_embedding_and_search_works_during_the_fill_in(tmp_path, home, gated):
    with _server(home) as client:
        answer = _upload(client, tmp_path)
        assert answer["nodes"] == N and answer["embedding"]["job_id"] and answer["embedding"]["fast"] is None
        job_id = answer["embedding"]["job_id"]
        _started()  # the fill-in's first batch waits: the fast tier is in place, the default model is not
        status = client.get("/api/kg/t/embedding").json()
        assert (status["search_model"], status["target"], status["target_vectors"]) == ("hash:32", "gated", 0)
        assert status["job"]["job_id"] == job_id and status["job"]["status"] == "running"
        assert status["job"]["progress"]["phase"] == "fill-in" and status["job"]["progress"]["total"] == N
        found = _search(client)
        assert found["results"][0]["node"]["name"].startswith("tar archive") and _meaning(found) > 0
        gated.gate.release()
        _started()  # chunk 1 committed, chunk 2 waiting
        job = client.get(f"/api/jobs/{job_id}").json()
        assert job["progress"]["done"] == CHUNK and job["eta_seconds"] is not None and job["phase_seconds"] > 0
        assert client.get("/api/kg/t/embedding").json()["target_vectors"] == CHUNK
        assert _meaning(_search(client)) > 0  # still the fast tier: one model per scan
        for _ in range(N // CHUNK - 1):
            gated.gate.release()
        job = _job(client, job_id)
        assert job["status"] == "complete", job
        assert job["result"]["fast"]["embedded"] == N and job["result"]["full"]["embedded"] == N
        status = client.get("/api/kg/t/embedding").json()
        assert (status["search_model"], status["target"]) == ("gated", None)
        found = _search(client)
        assert found["results"][0]["node"]["name"].startswith("tar archive") and _meaning(found) > 0
        assert not found["warnings"]
    assert models(kgos.Workspace(home).kg("t").store) == {"gated-16": N}  # the fast tier's vectors dropped


def test_two_imports_queue_and_a_kg_without_vectors_goes_first(tmp_path, home, gated):
    with _server(home) as client:
        first = _upload(client, tmp_path, "a")["embedding"]["job_id"]
        _started()  # a's fill-in: first batch waiting
        second = _upload(client, tmp_path, "b")["embedding"]["job_id"]
        assert client.get(f"/api/jobs/{first}").json()["status"] == "running"
        assert client.get(f"/api/jobs/{second}").json()["status"] == "queued"
        assert client.get("/api/kg/b/embedding").json()["search_model"] is None  # text and graph only, for now
        gated.gate.release()  # a's batch reaches its progress call and pauses: b has no vectors yet
        _started()  # b's fill-in: its fast tier is in place
        assert client.get(f"/api/jobs/{first}").json()["status"] == "queued"
        assert client.get(f"/api/jobs/{second}").json()["status"] == "running"
        assert client.get("/api/kg/b/embedding").json()["search_model"] == "hash:32" and _meaning(_search(client, "b")) > 0
        assert client.get("/api/kg/a/embedding").json()["target_vectors"] == 0  # a's paused chunk was not written
        for _ in range(2 * N // CHUNK):
            gated.gate.release()
        a, b = _job(client, first), _job(client, second)
        assert a["status"] == b["status"] == "complete" and a["result"]["full"]["embedded"] == N
        assert gated.most_active == 1  # never two embedding passes at once
        assert b["finished"] <= a["finished"]


def test_shutdown_stops_between_chunks_and_the_next_start_resumes(tmp_path, home, gated):
    server = _server(home, fill_in=True).__enter__()  # left below, from another thread, as on Ctrl-C
    job_id = _upload(server, tmp_path)["embedding"]["job_id"]
    _started()
    gated.gate.release()
    _started()  # chunk 1 committed; chunk 2 embedded up to its progress call, not written
    registry_ = server.app.state.jobs
    closing = threading.Thread(target=server.__exit__, args=(None, None, None))
    closing.start()  # the lifespan's shutdown: stop the worker
    deadline = time.monotonic() + WAIT
    while registry_.stop_requested(job_id) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    gated.gate.release()  # chunk 2's batch reaches its progress call, which stops the job
    closing.join(WAIT)
    assert not closing.is_alive()
    job = registry_.get(job_id)
    assert (job.status, job.error) == ("cancelled", SHUTDOWN)
    kg = kgos.Workspace(home).kg("t")
    assert models(kg.store) == {"hash-32": N, "gated-16": CHUNK}  # whole chunks only
    assert (kg.embed_status().search_model, kg.embed_status().target) == ("hash:32", "gated")

    with _server(home, fill_in=False) as client:  # --no-fill-in: nothing resumed
        assert client.get("/api/jobs").json() == []
        assert _meaning(_search(client)) > 0

    with _server(home, fill_in=True) as client:
        for _ in range(N // CHUNK):
            gated.gate.release()
        status = client.get("/api/kg/t/embedding").json()
        assert status["job"] is not None, "the pending fill-in was not resumed"
        job = _job(client, status["job"]["job_id"])
        assert job["status"] == "complete" and job["result"]["fast"] is None
        assert job["result"]["full"]["embedded"] == N - CHUNK  # resumed, not restarted
        assert client.get("/api/kg/t/embedding").json()["search_model"] == "gated"


def test_a_failing_embedder_fails_the_job_and_search_runs_on_text(tmp_path, home, monkeypatch):
    monkeypatch.setenv("KGOS_EMBEDDER", "openai:some-model")
    monkeypatch.setenv("KGOS_FAST_EMBEDDER", "none")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with _server(home) as client:
        job = _job(client, _upload(client, tmp_path)["embedding"]["job_id"])
        assert job["status"] == "failed" and job["error"] and job["error_kind"] not in (None, "InternalError"), job
        found = _search(client)
        assert found["results"][0]["node"]["name"].startswith("tar archive") and _meaning(found) == 0
        assert any("no node vectors" in w for w in found["warnings"])
        assert client.get("/api/kg/t/embedding").json()["search_model"] is None


def test_cancel_and_the_routes_edges(tmp_path, home, gated):
    with _server(home) as client:
        answer = _upload(client, tmp_path, "off", embed="none")["embedding"]
        assert answer["skipped"] == "disabled" and answer["job_id"] is None
        running = _upload(client, tmp_path, "a")["embedding"]["job_id"]
        _started()  # "a" waits inside a gated batch: "off" (urgent, no vectors) cannot take its turn yet
        queued = client.post("/api/kg/off/embedding").json()
        assert queued["status"] == "queued" and client.post("/api/kg/off/embedding").json()["job_id"] == queued["job_id"]
        assert client.post(f"/api/jobs/{queued['job_id']}/cancel").json()["status"] == "cancelled"
        assert client.post(f"/api/jobs/{running}/cancel").status_code == 200
        gated.gate.release()
        assert _job(client, running)["status"] == "cancelled"
        error(client.post(f"/api/jobs/{running}/cancel"), 409, "JobNotCancellable")
        other = client.app.state.jobs.submit("ingest", lambda progress: {})
        _job(client, other.job_id)
        error(client.post(f"/api/jobs/{other.job_id}/cancel"), 409, "JobNotCancellable")
        error(client.get("/api/kg/nope/embedding"), 404, "KGNotFound")
        error(client.post("/api/kg/Bad!/embedding"), 422)
        assert client.get("/api/kg/off/embedding").json()["search_model"] is None


def test_a_server_start_builds_a_missing_fast_tier_in_the_background(home, tmp_path, monkeypatch):
    """The default model's fast tier (``fast``) is distilled at start when the home has none; the
    distillation itself (33 CPU s, covered by tests/test_embed_tiers.py) is replaced by a file write."""
    from kgos.embed import static
    if registry.BACKENDS["fast"].missing():
        pytest.skip("the onnx extra is not installed")
    monkeypatch.delenv("KGOS_EMBEDDER")
    monkeypatch.setenv("KGOS_HOME", str(tmp_path / "models-home"))
    monkeypatch.setattr(static, "PACKAGED_FAST", tmp_path / "stripped")  # an install without the prebuilt one
    built = []
    monkeypatch.setattr(static, "distill_onnx", lambda out, overwrite, progress=None: built.append(out) or
                        (out.mkdir(parents=True), (out / "model.safetensors").write_bytes(b"")))
    with _server(home, fill_in=False) as client:
        assert client.get("/api/jobs").json() == []  # --no-fill-in: nothing at start
    with _server(home, fill_in=True) as client:
        [job] = client.get("/api/jobs").json()
        job = _job(client, job["job_id"])
        assert job["status"] == "complete" and job["subject"] is None
        assert job["result"]["fast_tier"] == str(static.fast_static_path()) and len(built) == 1
    with _server(home, fill_in=True) as client:
        assert client.get("/api/jobs").json() == []  # built once per home


def test_a_shutdown_stops_the_fast_tier_distillation_between_two_batches(home, tmp_path, monkeypatch):
    """The distillation reports each batch of its token pass; a stopping server cancels it there, so
    its thread has ended (nothing written) before the process could exit under onnxruntime's feet."""
    from kgos.embed import static
    if registry.BACKENDS["fast"].missing():
        pytest.skip("the onnx extra is not installed")
    monkeypatch.delenv("KGOS_EMBEDDER")
    monkeypatch.setenv("KGOS_HOME", str(tmp_path / "models-home"))
    monkeypatch.setattr(static, "PACKAGED_FAST", tmp_path / "stripped")  # an install without the prebuilt one
    entered, batches = threading.Event(), []

    def endless_distill(out: Any, overwrite: bool, progress: Callable[[int, int], None]) -> None:
        entered.set()
        while len(batches) < 10_000:  # batches of ~0.01 s, far longer than the test waits
            time.sleep(0.01)
            batches.append(1)
            progress(len(batches) * 512, 30_000 * 512)

    monkeypatch.setattr(static, "distill_onnx", endless_distill)
    with _server(home, fill_in=True) as client:
        assert entered.wait(WAIT)
        [job] = client.get("/api/jobs").json()
        assert job["status"] == "running" and job["progress"]["phase"] == "distilling the fast tier"
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 5.0
    assert not [t for t in threading.enumerate() if t.name == "kgos-embed-worker" and t.is_alive()]
    assert 0 < len(batches) < 10_000 and not (static.fast_static_path() / "model.safetensors").exists()


@pytest.fixture(autouse=True)
def _no_worker_left() -> Iterator[None]:
    before = {t for t in threading.enumerate() if t.name == "kgos-embed-worker"}  # other tests' idle ones
    yield
    left = {t for t in threading.enumerate() if t.name == "kgos-embed-worker"} - before
    assert not left, "an embedding worker outlived its server"
