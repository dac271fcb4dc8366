"""Stopping the query adapter and name-vector jobs (issue 13): ``kg.adapt(progress=...)`` reports each
embedding batch and epoch, and whatever the callback raises stops the fit with nothing stored; over
HTTP both jobs are cancellable (``POST /api/jobs/{job_id}/cancel``): a cancelled adapter job stores
nothing, a cancelled names job keeps the chunks it committed and the next POST embeds only the rest.

The KGs served here are embedded with ``gated``: a hash embedder whose batches, once ``armed``, each
announce themselves on ``started`` and wait for a permit of ``gate`` before reporting progress, so
the test cancels a job at a known point, without sleeps."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from api_helpers import SCRIPT, client
from test_adapter_api import PAIRS, build, wait

import kgos
from kgos.embed import adapter as A
from kgos.embed import nodes as embed_nodes
from kgos.embed import registry
from kgos.embed.hashing import HashingEmbedder

WAIT = 10.0
CHUNK = 10  # nodes per names transaction: 45 nodes are five chunks


class GatedEmbedder(HashingEmbedder):
    """hash:64 whose batches embedded with a progress callback wait for the test once ``armed``."""

    min_batch = 1
    armed = False
    gate = threading.Semaphore(0)
    started = threading.Semaphore(0)

    def __init__(self) -> None:
        super().__init__(64)
        self.name, self.spec = "gated-64", "gated"

    def embed(self, texts: Any, *, batch_size: int = 64, progress: Callable[[int], None] | None = None) -> Any:
        if progress is None or not GatedEmbedder.armed:
            return super().embed(texts, batch_size=batch_size, progress=progress)
        return super().embed(texts, batch_size=batch_size, progress=lambda n: self._gated(n, progress))

    @staticmethod
    def _gated(n: int, progress: Callable[[int], None]) -> None:
        GatedEmbedder.started.release()
        assert GatedEmbedder.gate.acquire(timeout=WAIT), "the test never let this batch through"
        progress(n)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[GatedEmbedder]]:
    monkeypatch.setitem(registry.BACKENDS, "gated", registry.Backend("gated", f"{__name__}:GatedEmbedder",
                                                                       name="gated-64", dims=64))
    monkeypatch.setattr(registry, "_cache", {})
    monkeypatch.setattr(embed_nodes, "WRITE_CHUNK", CHUNK)
    GatedEmbedder.gate, GatedEmbedder.started = threading.Semaphore(0), threading.Semaphore(0)
    GatedEmbedder.armed = False
    yield GatedEmbedder
    GatedEmbedder.gate.release(100)  # a failed test leaves no job waiting on the gate


def started() -> None:
    assert GatedEmbedder.started.acquire(timeout=WAIT), "no gated batch started"


def cancel_at_the_next_batch(c: Any, job_id: str) -> dict[str, Any]:
    """Cancel a job that waits inside a gated batch, let the batch report, and return the ended job."""
    started()
    asked = c.post(f"/api/jobs/{job_id}/cancel")
    assert asked.status_code == 200 and asked.json()["status"] == "running"
    GatedEmbedder.gate.release()
    return wait(c, job_id)


# -- the library ---------------------------------------------------------------------------------------
class Stop(Exception):
    pass


def test_adapt_reports_batches_and_epochs_and_a_raising_callback_stores_nothing(ws: kgos.Workspace) -> None:
    kg = build(ws)
    before = (kg.store.version(), kg.meta())

    def stop_at_epoch_2(phase: str, done: int, total: int) -> None:
        if (phase, done) == (A.EPOCHS_PHASE, 2):
            raise Stop
    with pytest.raises(Stop):
        kg.adapt(progress=stop_at_epoch_2)
    assert (kg.store.version(), kg.meta()) == before and not kg.adapter_status().present
    assert A.meta_key("hash-512") not in kg.meta()

    calls: list[tuple[str, int, int]] = []
    report = kg.adapt(progress=lambda *call: calls.append(call))
    epochs = A.AdapterConfig().epochs
    assert report.saved and [c for c in calls if c[0] == A.EPOCHS_PHASE] == \
        [(A.EPOCHS_PHASE, e, epochs) for e in range(report.epochs + 1)]
    names = [c for c in calls if c[0] == A.NAMES_PHASE]
    assert names and names[-1] == (A.NAMES_PHASE, 2 * len(PAIRS), 2 * len(PAIRS))  # every name and alias
    assert calls.index(names[-1]) < calls.index((A.EPOCHS_PHASE, 0, epochs))


def test_names_sentences_curriculum_reports_its_sentences(ws: kgos.Workspace) -> None:
    calls: list[tuple[str, int, int]] = []
    build(ws).adapt("names+sentences", progress=lambda *call: calls.append(call))
    assert (A.SENTENCES_PHASE, len(PAIRS), len(PAIRS)) in calls  # one description sentence per node


# -- HTTP ----------------------------------------------------------------------------------------------
def test_a_cancelled_adapter_job_stores_nothing(ws: kgos.Workspace, gated: type[GatedEmbedder]) -> None:
    kg = build(ws, model="gated")
    before = kg.meta()
    c = client(ws, headers=SCRIPT)
    gated.armed = True
    job = c.post("/api/kg/a/adapter", json={"curriculum": "names"}).json()
    assert job["cancellable"] is True
    ended = cancel_at_the_next_batch(c, job["job_id"])
    assert (ended["status"], ended["error_kind"], ended["result"]) == ("cancelled", "JobCancelled", None)
    assert ended["progress"]["phase"] != A.EPOCHS_PHASE  # stopped while embedding the names, before training
    status = c.get("/api/kg/a/adapter").json()
    assert (status["present"], status["job"]["job_id"]) == (False, job["job_id"])
    assert ws.kg("a").meta() == before and A.meta_key("gated-64") not in before
    gated.armed = False
    again = wait(c, c.post("/api/kg/a/adapter").json()["job_id"])  # a new job runs to its end
    assert again["status"] == "complete" and c.get("/api/kg/a/adapter").json()["present"] is again["result"]["saved"]


def test_a_cancelled_names_job_keeps_its_chunks_and_the_next_embeds_the_rest(
        ws: kgos.Workspace, gated: type[GatedEmbedder]) -> None:
    build(ws, model="gated")
    c = client(ws, headers=SCRIPT)
    gated.armed = True
    job = c.post("/api/kg/a/names", json={"batch_size": 2 * CHUNK}).json()  # one batch per chunk
    assert job["cancellable"] is True
    started()
    gated.gate.release()  # the first chunk is embedded and committed
    ended = cancel_at_the_next_batch(c, job["job_id"])
    assert (ended["status"], ended["error_kind"]) == ("cancelled", "JobCancelled")
    status = c.get("/api/kg/a/names").json()
    assert (status["kept"], status["nodes"]) == (True, CHUNK)
    assert ws.kg("a").names_status().to_dict() == {"db_id": "a", "model": "gated-64", "kept": True, "nodes": CHUNK}
    gated.armed = False
    again = wait(c, c.post("/api/kg/a/names", json={"batch_size": 2 * CHUNK}).json()["job_id"])
    assert (again["status"], again["result"]) == ("complete", {"db_id": "a", "embedded": len(PAIRS) - CHUNK})
    assert again["progress"]["done"] == 2 * (len(PAIRS) - CHUNK)
    assert c.get("/api/kg/a/names").json()["nodes"] == len(PAIRS)
