"""kgos ingest through the CLI, the HTTP API (a background job) and the pipeline modules of spec/004."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from api_helpers import BASE_URL, client, error
from click.testing import CliRunner
from fastapi.testclient import TestClient
from ingest_helpers import ANSWER, DOC, PKG, FakeLLM, write_tree

import kgos
from kgos.api.app import create_app
from kgos.api.runtime import ServerSettings
from kgos.cli import cli
from kgos.ingest import modules  # noqa: F401  (registers the modules)
from kgos.pipeline import REGISTRY, PipelineModule, ProcessContext, StageInput


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "src", PKG)


def test_cli_ingest_json_and_rerun(tmp_path: Path, tree: Path) -> None:
    home = str(tmp_path / "home")
    args = ["--home", home, "ingest", "code", str(tree / "shop"), "--no-embed", "--no-dims", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["files"] == {"python": 5} and report["changed"] == 5 and report["validation"]["ok"]
    again = json.loads(CliRunner().invoke(cli, args).stdout)
    assert again["changed"] == 0 and again["unchanged"] == 5
    plain = CliRunner().invoke(cli, ["--home", home, "ingest", "code", str(tree / "shop"), "--no-embed", "--plain"])
    assert plain.stdout.split("\t")[:5] == ["code", "5", "0", "5", "0"]


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "ingest", "code", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith("Error: nothing to ingest") and "does not exist" in result.stderr
    bad = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "ingest", "code", str(tmp_path), "--tiers", "x"])
    assert bad.exit_code == 1 and "--tiers takes numbers" in bad.stderr


def test_http_ingest_job(ws: kgos.Workspace, tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with client(ws) as c:
        error(c.post("/api/kg/code/ingest", json={"paths": [str(tree)]}), 403, "IngestPathRefused")  # off by default
        monkeypatch.setenv("KGOS_INGEST_ROOTS", str(tree))
        error(c.post("/api/kg/code/ingest", json={"paths": ["/"]}), 403, "IngestPathRefused")
        error(c.post("/api/kg/code/ingest", json={"paths": [str(tree / "..")]}), 403, "IngestPathRefused")
        started = c.post("/api/kg/code/ingest", json={"paths": [str(tree / "shop")], "embed": False,
                                                     "dimensions": False})
        assert started.status_code == 202, started.text
        job_id = started.json()["job_id"]
        for _ in range(200):
            job = c.get(f"/api/jobs/{job_id}").json()
            if job["status"] in ("complete", "failed"):
                break
            time.sleep(0.05)
        assert job["status"] == "complete", job
        assert job["result"]["files"] == {"python": 5} and job["progress"]["phase"] in ("tier1", "read")
        assert job_id in [j["job_id"] for j in c.get("/api/jobs").json()]
        assert c.get("/api/kg/code").json()["nodes"] == sum(job["result"]["nodes"].values())
        error(c.post("/api/kg/code/ingest", json={"paths": [str(tree / "nope")]}), 400, "IngestFailed")
        error(c.post("/api/kg/code/ingest", json={"paths": []}), 422)
        error(c.post("/api/kg/code/ingest", json={"paths": [str(tree)], "tiers": [4]}), 422)
        error(c.post("/api/kg/code/ingest", json={"paths": [str(tree)], "tiers": [1, 3], "provider": "nope"}), 400)
        error(c.post("/api/kg/code/ingest", json={"paths": ["x"], "surprise": 1}), 422)
        error(c.get("/api/jobs/nope"), 404, "JobNotFound")


def _run(module: PipelineModule, data: dict, context: ProcessContext | None = None):  # type: ignore[no-untyped-def]
    return asyncio.run(module.process(StageInput(data), context or ProcessContext()))


def test_pipeline_modules_chain_and_replay(ws: kgos.Workspace, tree: Path) -> None:
    assert {"ingest.files", "ingest.kg"} <= set(REGISTRY.ids("ingest"))
    assert {"extract.structure", "extract.links", "extract.patterns", "extract.semantic"} <= set(REGISTRY.ids("extract"))
    files = _run(REGISTRY.create("ingest.files", {"include": ["*.py"]}), {"paths": [str(tree / "shop")]})
    assert len(files.data["files"]) == 5
    structure = REGISTRY.create("extract.structure")
    facts = _run(structure, {"files": files.data["files"]})
    links = _run(REGISTRY.create("extract.links"), {"facts": facts.data["facts"]})
    calls = {(e["source"], e["target"]) for es in links.data["edges"].values() for e in es if e["type"] == "calls"}
    assert ("py:shop.orders.Order.total", "py:shop.util.add_all") in calls
    inline = _run(structure, {"files": [{"rel": "x/a.py", "text": "def f():\n    return g()\n\ndef g():\n    pass\n"}]})
    assert [n["id"] for n in inline.data["facts"][0]["nodes"]][-2:] == ["py:a.f", "py:a.g"]
    snapshot = structure.snapshot(StageInput({"files": files.data["files"]}), facts)
    assert asyncio.run(structure.replay(snapshot)).sha256 == snapshot.output_sha256
    out = _run(REGISTRY.create("ingest.kg", {"db_id": "mod"}), {"paths": [str(tree / "shop")]},
               ProcessContext(services={"workspace": ws}))
    assert out.data["files"] == {"python": 5} and ws.kg("mod").node("py:shop.orders.Order").type == "class"


def test_semantic_module_replays_offline(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", {"cache.md": DOC})
    facts = _run(REGISTRY.create("extract.structure"), {"files": [{"rel": "docs/cache.md", "path": str(root / "cache.md")}]})
    llm = FakeLLM(ANSWER)
    semantic = REGISTRY.create("extract.semantic")
    live = _run(semantic, {"facts": facts.data["facts"]}, ProcessContext(services={"provider": llm}))
    assert live.data["stats"]["edges"] == 2 and llm.calls == 1 and live.external
    snapshot = semantic.snapshot(StageInput({"facts": facts.data["facts"]}), live)
    replayed = asyncio.run(semantic.replay(snapshot))  # no provider at all: the recorded answer is used
    assert replayed.sha256 == live.sha256 and llm.calls == 1


def test_http_ingest_with_the_llm_tier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "docs", {"cache.md": DOC})
    monkeypatch.setenv("KGOS_INGEST_ROOTS", str(root))
    llm = FakeLLM(ANSWER)
    app = create_app(tmp_path / "home", ServerSettings(), provider_factory=lambda name, model: llm)
    with TestClient(app, base_url=BASE_URL) as c:
        job_id = c.post("/api/kg/notes/ingest", json={"paths": [str(root)], "tiers": [1, 2, 3], "embed": False,
                                                      "dimensions": False}).json()["job_id"]
        for _ in range(200):
            job = c.get(f"/api/jobs/{job_id}").json()
            if job["status"] in ("complete", "failed"):
                break
            time.sleep(0.05)
    assert job["status"] == "complete", job
    assert job["result"]["semantic"]["edges"] == 2 and llm.calls == 1
