"""The query adapter and name vectors through the KG facade, the CLI and HTTP (issue 13, levers 1 and 3):
``kg.adapt`` / ``drop_adapter`` / ``adapter_status``, ``kg.embed_names`` / ``drop_names`` /
``names_status``, ``kgos embed adapt --curriculum / --status``, ``/api/kg/{db_id}/adapter`` and
``/api/kg/{db_id}/names`` (status, a background job, removal)."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import numpy as np
import pytest
from api_helpers import SCRIPT, attach_readonly, client, error
from click.testing import CliRunner

import kgos
from kgos.api.jobs import registry_of
from kgos.cli import cli
from kgos.embed import adapter as A
from kgos.embed import get_embedder
from kgos.errors import AdapterNeedsData, InvalidArgument, ReadOnlyKG

# 45 nodes named by two of 12 words, each aliased by the same two words in another language: the
# aliases never occur in a node's full text, so the model alone ranks them poorly and the adapter can
# learn the word-to-word map from the other nodes (held-out MRR 0.553 -> 0.661 with "names": saved)
WORDS = ["apple", "river", "stone", "cloud", "maple", "tiger", "piano", "lemon", "ocean", "candle", "forest", "mirror"]
OTHER = ["pomme", "fleuve", "pierre", "nuage", "erable", "tigre", "clavier", "citron", "mer", "bougie", "foret", "miroir"]
PAIRS = list(itertools.combinations(range(len(WORDS)), 2))[:45]
QUERY = "pomme fleuve"


def build(ws: kgos.Workspace, db_id: str = "a", n: int = len(PAIRS), model: str = "hash") -> kgos.KG:
    kg = ws.create(db_id)
    with kg.batch():
        for i, (a, b) in enumerate(PAIRS[:n]):
            kg.add_node(f"{WORDS[a]} {WORDS[b]}", "thing", f"Where {WORDS[a]} meets {WORDS[b]}.",
                        {"aliases": [f"{OTHER[a]} {OTHER[b]}"]}, id=f"n{i}")
    for i in range(n - 1):
        kg.add_edge(f"n{i}", f"n{i + 1}", "relates_to")
    kg.embed(model)
    return kg


def scores(kg: kgos.KG) -> list[tuple[str, float]]:
    return [(h.node.id, round(h.score, 6)) for h in kg.search(QUERY, k=10, mode="embedding").results]


def wait(c, job_id: str) -> dict:
    for _ in range(400):
        job = c.get(f"/api/jobs/{job_id}").json()
        if job["finished"] is not None:
            return job
        time.sleep(0.025)
    raise AssertionError("the job did not finish")


# -- the facade ----------------------------------------------------------------------------------------
def test_adapt_is_used_by_the_next_search_of_every_open_kg_and_drop_stops_it(ws: kgos.Workspace) -> None:
    kg = build(ws)
    other = kgos.Workspace(ws.home).kg("a")  # another process's view: it learns of the adapter by the KG's version
    plain, raw = scores(kg), get_embedder("hash").embed_query(QUERY)
    assert scores(other) == plain and kg.adapter_status() == A.AdapterStatus("a", "hash-512", False)
    report = kg.adapt()
    assert report.saved and report.val_mrr_after > report.val_mrr_before
    status = kg.adapter_status()
    assert (status.present, status.curriculum, status.pairs, status.val_mrr) == \
        (True, "names", report.pairs, round(report.val_mrr_after, 4))
    w = A.load_adapter(kg.meta(), "hash-512")
    assert np.allclose(kg.engine.embed_query(QUERY), A.adapt(w, raw)) and not np.allclose(A.adapt(w, raw), raw)
    adapted = scores(kg)
    assert adapted != plain and scores(other) == adapted
    assert kg.drop_adapter() is True and kg.drop_adapter() is False
    assert scores(kg) == plain and scores(other) == plain and not kg.adapter_status().present
    other.workspace.close()


def test_adapt_by_curriculum_name(ws: kgos.Workspace) -> None:
    kg = build(ws)
    assert kg.adapt("names+sentences").saved
    assert kg.adapter_status().curriculum == "names+sentences"
    before = kg.meta()
    with pytest.raises(InvalidArgument, match="'labels': one of names, names\\+sentences"):
        kg.adapt("labels")
    assert kg.meta() == before


def test_a_kg_that_cannot_teach_an_adapter_is_left_unchanged(ws: kgos.Workspace) -> None:
    kg = build(ws, n=5)
    before = (kg.store.version(), kg.meta())
    with pytest.raises(AdapterNeedsData, match="at least 20"):
        kg.adapt()
    assert (kg.store.version(), kg.meta()) == before and not kg.adapter_status().present
    plain = ws.create("plain")
    plain.add_node("x", "t", "d")
    assert plain.adapter_status() == A.AdapterStatus("plain", None, False)
    assert plain.names_status().to_dict() == {"db_id": "plain", "model": None, "kept": False, "nodes": 0}
    with pytest.raises(AdapterNeedsData, match="kgos embed plain"):
        plain.adapt()


def test_read_only_kgs_refuse_every_change(ws: kgos.Workspace, tmp_path: Path) -> None:
    attach_readonly(ws, tmp_path)
    mem = ws.kg("mem")
    for change in (mem.adapt, mem.drop_adapter, mem.embed_names, mem.drop_names):
        with pytest.raises(ReadOnlyKG):
            change()
    assert not mem.adapter_status().present and not mem.names_status().kept


def test_name_vectors_through_the_facade(ws: kgos.Workspace) -> None:
    kg = build(ws)
    plain = scores(kg)
    assert kg.embed_names() == len(PAIRS)
    assert kg.names_status().to_dict() == {"db_id": "a", "model": "hash-512", "kept": True, "nodes": len(PAIRS)}
    assert scores(kg) != plain  # the embedding signal now also scores the alias vectors
    assert kg.embed_names() == 0  # nothing changed since
    assert kg.drop_names() is True and kg.drop_names() is False
    assert kg.names_status().to_dict() == {"db_id": "a", "model": "hash-512", "kept": False, "nodes": 0}
    assert scores(kg) == plain


# -- the CLI -------------------------------------------------------------------------------------------
def test_cli_adapt_with_a_curriculum_status_and_drop(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with kgos.Workspace(home) as w:
        build(w)
    runner = CliRunner()

    def run(*args: str) -> str:
        done = runner.invoke(cli, ["--home", str(home), "embed", *args])
        assert done.exit_code == 0, done.output
        return done.output
    assert "no query adapter of hash-512" in run("adapt", "a", "--status")
    report = json.loads(run("a", "--adapt", "--curriculum", "names+sentences", "--json"))
    assert report["saved"] is True and report["model"] == "hash-512"
    status = json.loads(run("adapt", "a", "--status", "--json"))
    assert status["present"] is True and status["curriculum"] == "names+sentences" and status["pairs"] == report["pairs"]
    assert run("a", "--adapt", "--status", "--plain").split("\t")[:4] == ["a", "hash-512", "True", "names+sentences"]
    assert "query adapter removed" in run("a", "--drop-adapter")
    assert json.loads(run("adapt", "a", "--status", "--json"))["present"] is False
    assert "name vectors of 45 nodes embedded" in run("a", "--names")
    assert "kept, 45 nodes have one" in run("names", "a", "--status")
    bad = runner.invoke(cli, ["--home", str(home), "embed", "adapt", "a", "--curriculum", "labels"])
    assert bad.exit_code == 2 and "names+sentences" in bad.output


# -- HTTP ----------------------------------------------------------------------------------------------
@pytest.fixture
def served(ws: kgos.Workspace, tmp_path: Path):
    build(ws)
    build(ws, "small", n=5)
    attach_readonly(ws, tmp_path)
    return ws, client(ws)


def test_http_adapter_job_status_and_drop(served) -> None:
    ws, c = served
    plain = scores(ws.kg("a"))
    assert c.get("/api/kg/a/adapter").json() == {**ws.kg("a").adapter_status().to_dict(), "job": None}
    started = c.post("/api/kg/a/adapter", json={"curriculum": "names"})
    assert started.status_code == 202 and (started.json()["kind"], started.json()["subject"]) == ("adapter", "a")
    job = wait(c, started.json()["job_id"])
    assert job["status"] == "complete" and job["result"]["saved"] is True and job["result"]["db_id"] == "a"
    status = c.get("/api/kg/a/adapter").json()
    assert status == {**ws.kg("a").adapter_status().to_dict(), "job": job}
    assert status["present"] is True and status["pairs"] == job["result"]["pairs"]
    assert scores(ws.kg("a")) != plain  # the server's own KG searches with it from its next query
    assert c.delete("/api/kg/a/adapter").json() == {"db_id": "a", "dropped": True}
    assert c.delete("/api/kg/a/adapter").json() == {"db_id": "a", "dropped": False}
    assert c.get("/api/kg/a/adapter").json()["present"] is False and scores(ws.kg("a")) == plain


def test_http_adapter_body_is_optional_and_a_running_job_is_not_doubled(served) -> None:
    _, c = served
    queued = registry_of(c.app.state).create("adapter", subject="a")  # stands for a job still running
    again = c.post("/api/kg/a/adapter", headers=SCRIPT)
    assert again.status_code == 202 and again.json()["job_id"] == queued.job_id
    other = c.post("/api/kg/small/adapter", headers=SCRIPT)
    assert other.status_code == 202 and other.json()["job_id"] != queued.job_id
    assert wait(c, other.json()["job_id"])["error_kind"] == "AdapterNeedsData"  # a 5-node KG


def test_http_adapter_errors(served) -> None:
    ws, c = served
    for method in ("get", "post", "delete"):
        for route in ("adapter", "names"):
            error(getattr(c, method)(f"/api/kg/nope/{route}", **({"json": {}} if method == "post" else {})),
                  404, "KGNotFound")
    for route in ("adapter", "names"):
        error(c.post(f"/api/kg/mem/{route}", json={}), 409, "ReadOnlyKG")
        error(c.delete(f"/api/kg/mem/{route}"), 409, "ReadOnlyKG")
    assert "names+sentences" in error(c.post("/api/kg/a/adapter", json={"curriculum": "labels"}), 422)["detail"]
    error(c.post("/api/kg/a/adapter", json={"curriculum": "names", "epochs": 3}), 422)
    error(c.post("/api/kg/a/names", json={"batch_size": 0}), 422)
    error(c.get("/api/kg/NOT%20AN%20ID/adapter"), 422)
    assert registry_of(c.app.state).list() == []  # no job was started by a refused request
    before = ws.kg("small").meta()
    job = wait(c, c.post("/api/kg/small/adapter", json={}).json()["job_id"])
    assert (job["status"], job["error_kind"]) == ("failed", "AdapterNeedsData") and "at least 20" in job["error"]
    assert ws.kg("small").meta() == before


def test_http_names_job_status_and_drop(served) -> None:
    _, c = served
    assert c.get("/api/kg/a/names").json() == {"db_id": "a", "model": "hash-512", "kept": False, "nodes": 0, "job": None}
    started = c.post("/api/kg/a/names", json={"batch_size": 8})
    assert started.status_code == 202 and started.json()["kind"] == "names"
    job = wait(c, started.json()["job_id"])
    assert job["status"] == "complete" and job["result"] == {"db_id": "a", "embedded": len(PAIRS)}
    assert job["progress"]["done"] == 2 * len(PAIRS)  # texts: each node's name and its alias
    status = c.get("/api/kg/a/names").json()
    assert (status["kept"], status["nodes"], status["job"]["job_id"]) == (True, len(PAIRS), job["job_id"])
    assert c.delete("/api/kg/a/names").json() == {"db_id": "a", "dropped": True}
    assert c.get("/api/kg/a/names").json()["nodes"] == 0


def test_routes_are_in_the_openapi_document(served) -> None:
    _, c = served
    paths = c.get("/openapi.json").json()["paths"]
    for route in ("adapter", "names"):
        assert set(paths[f"/api/kg/{{db_id}}/{route}"]) == {"get", "post", "delete"}
