"""The routes that read paths on the server's disk: ``POST /api/kg/attach`` (an existing SQLite KG
file, read-only) and ``POST /api/kg/{db_id}/ingest``: build or update a KG from folders and files,
as a background job (``kgos.api.jobs``) whose work runs in a worker process with a memory ceiling
(``kgos.worker``): the answer is 202 with the job, ``GET /api/jobs/{job_id}`` shows its progress
and, at the end, the ingest report.

The job opens its own ``Workspace`` on the same folder, so its SQLite connections are its own and the
other routes are not held up while it runs (readers see the new version when its one transaction
commits). Paths are checked before the job starts: the server reads only below the folders listed in
``KGOS_INGEST_ROOTS`` (``os.pathsep``-separated; unset: HTTP ingest is off, 403), so a request cannot
make it read ``/`` or a home folder; none existing is a 400, not a failed job.
"""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field

from ..errors import IngestFailed, IngestPathRefused
from ..ingest import IngestOptions, ingest
from ..ingest.files import DEFAULT_MAX_BYTES, MAX_FILE_BYTES
from ..kg import Workspace, check_db_id
from .errors import RESPONSES
from .jobs import JobOut, JobRegistry, ProgressFn, jobs
from .models import DbIdIn, KGInfoOut
from .runtime import Runtime, runtime
from ..worker import run_in_worker

router = APIRouter(prefix="/api", responses=RESPONSES, tags=["ingest"])


class IngestRequest(BaseModel):
    """What to ingest: server-side ``paths`` (folders or files) and the options of ``kgos ingest``."""

    model_config = ConfigDict(extra="forbid")
    paths: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(min_length=1, max_length=100)
    include: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(default_factory=list, max_length=50)
    exclude: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(default_factory=list, max_length=50)
    tiers: list[Annotated[int, Field(ge=1, le=3)]] = Field(default=[1, 2], min_length=1, max_length=3,
                                                           description="1 structure, 2 patterns, 3 LLM concepts (uses provider/model)")
    provider: str | None = Field(default=None, max_length=100,
                                 description="LLM for tier 3 (default: the server's), e.g. openai:gpt-4o-mini")
    model: str | None = Field(default=None, max_length=200)
    max_llm_calls: int = Field(default=50, ge=0, le=10_000)
    llm_review: bool = Field(default=True, description="Tier 3's concepts wait in the review queue (false: written)")
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1, le=MAX_FILE_BYTES,
                           description="skip files larger than this; a hard maximum of 10 MB (docs/limits.md)")
    embed: bool = True
    embedder: str = Field(default="default", max_length=200)
    dimensions: bool = True
    prune: bool = Field(default=True, description="Remove the nodes of files gone from a folder")


def allowed_roots() -> list[FilePath]:
    from ..settings import current

    return [FilePath(p).expanduser().resolve() for p in current().ingest_roots]


def check_roots(paths: list[str], verb: str = "ingest", command: str = "kgos ingest") -> None:
    """Every path (symlinks resolved) lies below an allowed root, or ``IngestPathRefused`` saying how
    to allow it (``verb``/``command``: what the route does and its CLI equivalent)."""
    roots = allowed_roots()
    if not roots:
        raise IngestPathRefused(f"{verb} over HTTP is off: start the server with KGOS_INGEST_ROOTS=<folders it may "
                                f"read> (or use `{command}` on the command line)")
    for p in paths:
        real = FilePath(p).expanduser().resolve()
        if not any(real == r or real.is_relative_to(r) for r in roots):
            raise IngestPathRefused(f"{p} is outside the folders this server may {verb} (KGOS_INGEST_ROOTS)")


class RootsOut(BaseModel):
    """Whether the routes that read server-side paths (ingest, attach, a research corpus) are on."""

    enabled: bool
    roots: list[str]


@router.get("/ingest/roots", response_model=RootsOut)
def ingest_roots() -> Any:
    """The folders below which this server reads paths a request names (``KGOS_INGEST_ROOTS``)."""
    roots = allowed_roots()
    return {"enabled": bool(roots), "roots": [str(r) for r in roots]}


class AttachRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    db_id: DbIdIn
    path: str = Field(min_length=1, max_length=4096, description="a SQLite KG file on the server, below KGOS_INGEST_ROOTS")
    profile: str | None = Field(default=None, min_length=1, max_length=40,
                                description="schema profile (default: detected), as `kgos kg attach --profile`")


@router.post("/kg/attach", response_model=KGInfoOut, status_code=201, tags=["kg"])
def attach_kg(body: AttachRequest, rt: Annotated[Runtime, Depends(runtime)]) -> Any:
    """Attach an existing SQLite KG file on the server as DB_ID, read-only (`kgos kg attach`); only
    below ``KGOS_INGEST_ROOTS`` (unset: 403)."""
    check_roots([body.path], "attach files", "kgos kg attach")
    with rt.lock:
        rt.workspace.attach(body.db_id, FilePath(body.path), profile=body.profile)
        return rt.workspace.info(body.db_id).to_dict()


@router.post("/kg/{db_id}/ingest", response_model=JobOut, status_code=202)
def start_ingest(db_id: Annotated[str, Path()], body: IngestRequest, rt: Annotated[Runtime, Depends(runtime)],
                 registry: Annotated[JobRegistry, Depends(jobs)]) -> Any:
    """Start ingesting ``paths`` into DB_ID (created if missing); poll the returned job."""
    db_id = check_db_id(db_id)
    check_roots(body.paths)
    missing = [p for p in body.paths if not FilePath(p).expanduser().exists()]
    if len(missing) == len(body.paths):
        raise IngestFailed(f"nothing to ingest: no such path on the server: {', '.join(missing[:5])}")
    options = IngestOptions(tuple(body.include), tuple(body.exclude), tuple(body.tiers), body.max_bytes, body.embed,
                            body.embedder, body.dimensions, True, body.prune, body.max_llm_calls,
                            body.llm_review).checked()
    chat = rt.provider(body.provider, body.model) if 3 in options.tiers else None  # a bad provider: 4xx now
    home = rt.workspace.home
    args = (home, db_id, list(body.paths), options)

    def work(progress: ProgressFn) -> dict[str, Any]:
        if chat is not None:  # tier 3's provider object lives in this process: the job thread runs it
            with Workspace(home) as ws:
                return ingest(ws, db_id, list(body.paths), options, chat, progress).to_dict()
        return run_in_worker(ingest_job, args, progress)
    return registry.submit("ingest", work).to_dict()


def ingest_job(home: FilePath, db_id: str, paths: list[str], options: IngestOptions,
               progress: ProgressFn) -> dict[str, Any]:
    """An ingest in a worker process (``kgos.worker``): its parse holds no GIL or memory of the
    server's, and its memory is capped."""
    with Workspace(home) as ws:
        return ingest(ws, db_id, paths, options, None, progress).to_dict()
