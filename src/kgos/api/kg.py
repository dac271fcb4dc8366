"""/api/kg: KGs, nodes, edges, import/export, search and every query method (DESIGN.md section 4),
plus multi-KG search at ``POST /api/search``.

Each route parses its input (``models``), makes one library call and returns the result's
``to_dict()``: reads (nodes, edges, search, the query methods) through ``read_kg``, in parallel and
without the workspace lock; writes of nodes, edges and dimensions through ``write_kg``, serialised
per KG by its store; the rest inside ``with rt.lock:``. Node ids may contain ':' and '/': routes that end in a node id
use ``{node_id:path}``; the ``/neighbors`` and ``/dims`` sub-resources are declared first, so a
node id ending in ``/neighbors`` or ``/dims`` cannot be created through the API (it could not be
addressed unambiguously). Query methods take node references (an id or an unambiguous name) in
the JSON body instead.
"""

from __future__ import annotations

import gzip
import inspect
import shutil
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable
from itertools import islice
from pathlib import Path as FilePath
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, File, Path, Query, UploadFile
from fastapi.responses import FileResponse
from pydantic import AfterValidator
from starlette.background import BackgroundTask

from ..errors import EdgeNotFound, ImportFailed, InvalidArgument, NodeChanged
from ..kg import KG, Workspace, check_db_id
from ..kg.catalogue import EDGE_SIDE, METHODS, Direction, Method
from ..kg.embedding import ImportEmbedding, embedding_work
from ..settings import current
from . import models as m
from .embedding import EmbedWorker, embed_worker
from .errors import RESPONSES
from .runtime import Runtime, runtime
from .schemas import derived
from ..worker import run_in_worker

T = TypeVar("T")
router = APIRouter(prefix="/api", responses=RESPONSES)

Rt = Annotated[Runtime, Depends(runtime)]
DbId = Annotated[str, Path(description="The KG's db_id: 1-64 lowercase letters, digits, '-' or '_'",
                           examples=["demo"]), AfterValidator(check_db_id)]
NodeId = Annotated[str, Path(description="A node id (may contain ':' and '/')", examples=["goal:cost_reduction"])]
Limit = Annotated[int, Query(ge=1, le=m.MAX_K)]
Offset = Annotated[int, Query(ge=0, le=2**62)]
RESERVED_SUFFIXES = ("/neighbors", "/dims")


def locked(rt: Runtime, fn: Callable[[Workspace], T]) -> T:
    """Run ``fn(workspace)`` holding the runtime's lock (SQLite connections are not thread-safe)."""
    with rt.lock:
        return fn(rt.workspace)


def on_kg(rt: Runtime, db_id: str, fn: Callable[[KG], Any]) -> Any:
    """``fn(kg)`` under the lock, for the KG named ``db_id`` (404 when there is none)."""
    return locked(rt, lambda ws: fn(ws.kg(db_id)))


def write_kg(rt: Runtime, db_id: str, fn: Callable[[KG], Any]) -> Any:
    """``fn(kg)``, a write of nodes, edges or dimensions: serialised per KG by its store, without the
    workspace lock (``Workspace.write``)."""
    return rt.workspace.write(db_id, fn)


def read_kg(rt: Runtime, db_id: str, fn: Callable[[KG], Any]) -> Any:
    """``fn(kg)``, a read: in parallel with the other requests, without the workspace lock, where the
    KG's store allows it (``Workspace.read``); 404 when there is no such KG, also when it is deleted
    while read (or the answer of the version read)."""
    return rt.workspace.read(db_id, fn)


# -- KGs -----------------------------------------------------------------------------------------------
@router.get("/kg", tags=["kg"], response_model=list[m.KGInfoOut])
def list_kgs(rt: Rt) -> Any:
    """The KGs of the workspace, native and attached, with their sizes."""
    return locked(rt, lambda ws: [info.to_dict() for info in ws.list()])


@router.post("/kg", tags=["kg"], status_code=201, response_model=m.KGInfoOut)
def create_kg(body: m.KGCreate, rt: Rt) -> Any:
    """Create an empty native KG (409 when the db_id is taken)."""
    def create(ws: Workspace) -> Any:
        ws.create(body.db_id, name=body.name, description=body.description)
        return ws.info(body.db_id).to_dict()
    return locked(rt, create)


@router.get("/kg/{db_id}", tags=["kg"], response_model=m.KGDetail)
def get_kg(db_id: DbId, rt: Rt) -> Any:
    """A KG's info and statistics: counts by type, degrees, orphans, components."""
    return locked(rt, lambda ws: {**ws.info(db_id).to_dict(), "stats": ws.kg(db_id).stats().to_dict()})


@router.delete("/kg/{db_id}", tags=["kg"], response_model=m.KGDeleted)
def delete_kg(db_id: DbId, rt: Rt) -> Any:
    """Delete a native KG's file, or detach an attached KG (its file is kept)."""
    return locked(rt, lambda ws: {"db_id": db_id, "result": ws.delete(db_id)})


@router.get("/kg/{db_id}/validate", tags=["kg"], response_model=m.ValidationOut)
def validate_kg(db_id: DbId, rt: Rt, max_examples: Annotated[int, Query(ge=0, le=1000)] = 20) -> Any:
    """Check the KG against the 12 validation rules."""
    return on_kg(rt, db_id, lambda kg: kg.validate(max_examples=max_examples).to_dict())


# -- nodes -----------------------------------------------------------------------------------------------
@router.get("/kg/{db_id}/nodes", tags=["nodes"], response_model=m.NodePage)
def list_nodes(db_id: DbId, rt: Rt, limit: Limit = 50, offset: Offset = 0,
               type: Annotated[str | None, Query(max_length=m.MAX_REF)] = None) -> Any:
    """A page of nodes in storage order, optionally of one type; ``total`` counts them all."""
    def page(kg: KG) -> Any:
        total, nodes = kg.nodes_page(limit, offset, type)
        return {"total": total, "limit": limit, "offset": offset, "nodes": [n.to_dict() for n in nodes]}
    return read_kg(rt, db_id, page)


def unless_changed(kg: KG, node_id: str, if_updated_at: str | None, write: Callable[[], T]) -> T:
    """``write()``, refused (409 NodeChanged, nothing written) when it is based on a version of the node
    that is no longer current: the studio sends the ``updated_at`` it showed, so a concurrent edit is
    never silently overwritten. The check and the write are one unit of work of the store: no other
    write lands between them."""
    if if_updated_at is None:
        return write()
    with kg.writing():
        unchanged(kg, node_id, if_updated_at)
        return write()


def unchanged(kg: KG, node_id: str, if_updated_at: str | None) -> None:
    """Raise NodeChanged when the node's ``updated_at`` is not ``if_updated_at`` (None: no check)."""
    if if_updated_at is None:
        return
    current = kg.node(node_id).updated_at
    if current != if_updated_at:
        raise NodeChanged(f"node '{node_id}' changed since it was read (read at {if_updated_at}, now {current}): "
                          "reload it and make the change again; nothing was written")


def _addressable(node_id: str | None) -> None:
    if node_id is not None and node_id.endswith(RESERVED_SUFFIXES):
        raise InvalidArgument(f"node id {node_id!r} ends in {'/'.join(RESERVED_SUFFIXES)}, which the API "
                              "reserves for sub-resources; choose another id")


@router.post("/kg/{db_id}/nodes", tags=["nodes"], status_code=201, response_model=m.NodeDetail)
def create_node(db_id: DbId, body: m.NodeCreate, rt: Rt) -> Any:
    """Add a node; its id defaults to ``<type>:<slug of name>`` (400 if the id is taken)."""
    _addressable(body.id)
    return write_kg(rt, db_id, lambda kg: kg.add_node(body.name, body.type, body.description, body.properties,
                                                      id=body.id).to_dict(timestamps=True))


@router.get("/kg/{db_id}/nodes/{node_id:path}/neighbors", tags=["nodes"], response_model=m.NeighborsOut)
def neighbors(db_id: DbId, node_id: NodeId, rt: Rt, direction: Direction = "both",
              type: Annotated[list[str] | None, Query(description="Only these edge types")] = None,
              limit: Limit = 100) -> Any:
    """The nodes one edge away, strongest edges first."""
    def hop(kg: KG) -> Any:
        found = kg.neighbors(node_id, EDGE_SIDE[direction], type, limit)
        return {"node": kg.node(node_id).to_dict(), "direction": direction, "neighbors": [n.to_dict() for n in found]}
    return read_kg(rt, db_id, hop)


@router.get("/kg/{db_id}/nodes/{node_id:path}/dims", tags=["dimensions"], response_model=m.NodeDimensionsOut)
def get_dimensions(db_id: DbId, node_id: NodeId, rt: Rt) -> Any:
    """A node's semantic dimension values, marking those ``dims auto`` inferred."""
    return read_kg(rt, db_id, lambda kg: kg.dimensions(node_id).to_dict())


@router.put("/kg/{db_id}/nodes/{node_id:path}/dims", tags=["dimensions"], response_model=m.NodeDimensionsOut)
def set_dimensions(db_id: DbId, node_id: NodeId, body: m.DimensionsSet, rt: Rt) -> Any:
    """Set dimension values (0..1); names outside the catalog need ``custom``."""
    def write(kg: KG) -> Any:
        return unless_changed(kg, node_id, body.if_updated_at,
                              lambda: kg.set_dimensions(node_id, body.values, custom=body.custom).to_dict())
    return write_kg(rt, db_id, write)


@router.get("/kg/{db_id}/nodes/{node_id:path}", tags=["nodes"], response_model=m.NodeDetail)
def get_node(db_id: DbId, node_id: NodeId, rt: Rt) -> Any:
    """One node by id (404 with close ids as ``suggestions``)."""
    return read_kg(rt, db_id, lambda kg: kg.node(node_id).to_dict(timestamps=True))


@router.post("/kg/{db_id}/nodes/{node_id:path}", tags=["nodes"], response_model=m.NodeDetail)
def upsert_node(db_id: DbId, node_id: NodeId, body: m.NodeUpsert, rt: Rt) -> Any:
    """Create the node with this id, or update it (properties merged, created_at kept)."""
    _addressable(node_id)
    return write_kg(rt, db_id, lambda kg: kg.upsert_node(node_id, body.name, body.type, body.description,
                                                         body.properties).to_dict(timestamps=True))


@router.patch("/kg/{db_id}/nodes/{node_id:path}", tags=["nodes"], response_model=m.NodeDetail)
def update_node(db_id: DbId, node_id: NodeId, body: m.NodePatch, rt: Rt) -> Any:
    """Change some fields of a node; properties are merged unless ``replace_properties``."""
    changes = body.model_dump(exclude_unset=True)
    expected = changes.pop("if_updated_at", None)

    def write(kg: KG) -> Any:
        return unless_changed(kg, node_id, expected, lambda: kg.update_node(node_id, **changes).to_dict(timestamps=True))
    return write_kg(rt, db_id, write)


@router.delete("/kg/{db_id}/nodes/{node_id:path}", tags=["nodes"], response_model=m.NodeDeleted)
def delete_node(db_id: DbId, node_id: NodeId, rt: Rt,
                if_updated_at: Annotated[str | None, Query(max_length=64, description="409 NodeChanged when the node changed since")] = None) -> Any:
    """Delete a node and its edges."""
    def delete(kg: KG) -> Any:
        return unless_changed(kg, node_id, if_updated_at,
                              lambda: {"deleted": node_id, "edges_removed": kg.delete_node(node_id)})
    return write_kg(rt, db_id, delete)


# -- edges -------------------------------------------------------------------------------------------------
@router.get("/kg/{db_id}/edges", tags=["edges"], response_model=m.EdgePage)
def list_edges(db_id: DbId, rt: Rt, limit: Limit = 50, offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
               type: Annotated[str | None, Query(max_length=m.MAX_REF)] = None) -> Any:
    """A page of edges in storage order, optionally of one type."""
    def page(kg: KG) -> Any:
        edges = (e for e in kg.edges() if type is None or e.type == type)
        return {"limit": limit, "offset": offset, "edges": [e.to_dict() for e in islice(edges, offset, offset + limit)]}
    return read_kg(rt, db_id, page)


@router.post("/kg/{db_id}/edges", tags=["edges"], status_code=201, response_model=m.EdgeOut)
def add_edge(db_id: DbId, body: m.EdgeCreate, rt: Rt) -> Any:
    """Add an edge, or strengthen the existing (source, target, type) edge (weight = max)."""
    return write_kg(rt, db_id, lambda kg: kg.add_edge(body.source, body.target, body.type, body.weight,
                                                      body.properties).to_dict())


@router.delete("/kg/{db_id}/edges", tags=["edges"], response_model=m.EdgeDeleted)
def delete_edge(db_id: DbId, rt: Rt, source: Annotated[str, Query(min_length=1, max_length=m.MAX_REF)],
                target: Annotated[str, Query(min_length=1, max_length=m.MAX_REF)],
                type: Annotated[str, Query(min_length=1, max_length=m.MAX_REF)]) -> Any:
    """Delete the edge (source, target, type); 404 when there is none."""
    def delete(kg: KG) -> Any:
        if not kg.delete_edge(source, target, type):
            raise EdgeNotFound(f"no {type!r} edge from '{source}' to '{target}' in KG '{db_id}'")
        return {"deleted": True, "source": source, "target": target, "type": type}
    return write_kg(rt, db_id, delete)


# -- import / export ------------------------------------------------------------------------------------------
SUFFIXES = {"nodelink": ".json", "jsonl": ".jsonl", "graphml": ".graphml", "csv": ".csv"}
KNOWN_SUFFIXES = (".json", ".jsonl", ".ndjson", ".graphml", ".xml", ".csv")


@router.post("/kg/{db_id}/import", tags=["import/export"], response_model=m.ImportOut)
def import_kg(db_id: DbId, rt: Rt, worker: Annotated[EmbedWorker, Depends(embed_worker)],
              file: Annotated[UploadFile, File(description="The KG file")],
              mode: Literal["create", "merge", "replace"] = "create",
              format: Literal["nodelink", "jsonl", "csv", "graphml"] | None = None,
              skip_dangling: bool = False, skip_invalid: bool = False,
              embed: Literal["fast", "none"] = "fast", dimensions: bool = True) -> Any:
    """Import an uploaded file (node-link JSON, JSON Lines, GraphML, a nodes CSV or a zip of
    nodes.csv + edges.csv; any of them gzipped) all or nothing: a bad file is a 400 naming the
    record, and the KG is left as it was (``skip_invalid``: records failing their checks are left out and
    counted instead). ``mode``: create (409 if the KG exists), merge, replace. The answer comes once the
    rows are committed. ``embed``: ``fast`` (default) embeds the KG in the server's background worker
    when it has no vectors or a pending fill-in: the fast tier, then the default model (``embedding.job_id``:
    poll ``GET /api/jobs/{job_id}``; search uses text and graph, then each tier as it lands); ``none``
    leaves it to text and graph search. ``dimensions``: infer dimension values (``dims auto``; the report's
    ``dimensions`` says how many)."""
    folder = FilePath(tempfile.mkdtemp(prefix="kgos-upload-"))
    try:
        path = save_upload(file, folder, format, rt.settings.max_upload_bytes)
        fmt = "csv" if path.is_dir() else format
        if _size(path, worker_bytes()) >= worker_bytes():  # a big upload: parsed in a capped worker process
            done = run_in_worker(import_job, (rt.workspace.home, rt.workspace.database_url, db_id, path, fmt, mode,
                                              skip_dangling, skip_invalid, dimensions), lambda *_: None, wait=False)
            report, pending = done["report"], done["pending"]
            with rt.lock:
                rt.workspace._forget(db_id)  # the worker wrote (or replaced) the file: reopen it on next use
        else:
            report, pending = import_here(rt, db_id, (path, fmt, mode, skip_dangling, skip_invalid, dimensions))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {**report, "embedding": _embedding(worker, db_id, embed == "fast", pending, mode)}


_IMPORTING: dict[str, threading.Lock] = {}  # one in-thread import per KG at a time: its temp file is per pid
_IMPORTING_LOCK = threading.Lock()


def import_here(rt: Runtime, db_id: str, args: tuple[Any, ...]) -> tuple[dict[str, Any], str | None]:
    """A small upload imported in the request thread on a workspace of its own (as the worker does), so
    its parse and build hold no workspace lock: other routes and health answer meanwhile. A worker
    process would cost a spawn (~1-2 s) for a file parsed in well under that."""
    with _IMPORTING_LOCK:
        one = _IMPORTING.setdefault(db_id, threading.Lock())
    with one:
        with Workspace(rt.workspace.home, rt.workspace.database_url) as ws:
            done = _import(ws, db_id, *args)
        rt.workspace._forget(db_id)  # the file was written (or replaced) by another connection: reopen it
    return done


def worker_bytes() -> int:
    """Uploads of at least this many bytes (``KGOS_IMPORT_WORKER_BYTES``, default 8 MB; a gzip counts its
    expanded size) are imported in a worker process (``worker.py``): their parse then holds neither the server's GIL nor the
    workspace lock, and its memory is capped; smaller ones are imported in the request thread
    (``import_here``: no process start, ~1-2 s; no workspace lock either)."""
    return current().import_worker_bytes


def _size(path: FilePath, enough: int) -> int:
    """The bytes the import will parse, counted up to ``enough``: a gzip counts what it expands to, since
    a 2.2 MB gzip of 20 MB of JSON (the bench's go) parses as long as the 20 MB and stalled health in the
    request thread (0.65-1.8 s, issue 33)."""
    if path.is_dir():
        return sum(_size(p, enough) for p in path.iterdir())
    return _gunzipped(path, enough) if path.name.endswith(".gz") else path.stat().st_size


def _gunzipped(path: FilePath, enough: int) -> int:
    """The gzip's expanded size, read no further than ``enough`` (so a bomb costs at most that much
    reading); a broken gzip counts what came out, and its import names the error."""
    total = 0
    try:
        with gzip.open(path, "rb") as f:
            while total < enough and (chunk := f.read(1 << 20)):
                total += len(chunk)
    except (OSError, EOFError, zlib.error):
        pass
    return total


def import_job(home: FilePath, database_url: str | None, db_id: str, path: FilePath, fmt: str | None, mode: str,
               skip_dangling: bool, skip_invalid: bool, dimensions: bool, progress: Any) -> dict[str, Any]:
    """``_import`` in a worker process, on a workspace of its own (same home, same database URL)."""
    with Workspace(home, database_url) as ws:
        report, pending = _import(ws, db_id, path, fmt, mode, skip_dangling, skip_invalid, dimensions)
    return {"report": report, "pending": pending}


def _import(ws: Workspace, db_id: str, path: FilePath, fmt: str | None, mode: str, skip_dangling: bool,
            skip_invalid: bool, dimensions: bool = True) -> tuple[dict[str, Any], str | None]:
    """The import's report, and the embedding the KG needs (``embedding_work``)."""
    report = ws.import_file(db_id, path, fmt, mode, skip_dangling, skip_invalid=skip_invalid,
                            dimensions=dimensions).to_dict()
    return report, embedding_work(ws.kg(db_id))


def _embedding(worker: EmbedWorker, db_id: str, enabled: bool, pending: str | None, mode: str) -> dict[str, Any]:
    """What happens to the upload's vectors: nothing (``embed=none``, or kept), or a background job
    (ahead of the fill-ins when the KG has no vectors yet)."""
    if not enabled:
        return ImportEmbedding(db_id, skipped="disabled", note="Not embedded: search uses text and graph until "
                               f"POST /api/kg/{db_id}/embedding (or `kgos embed {db_id}`).").to_dict()
    if not pending:
        return ImportEmbedding(db_id, skipped="kept", note="Kept the KG's vectors: search by meaning as before.").to_dict()
    if mode != "merge":  # a job still embedding the file this import replaced would work on a ghost
        worker.stop_running(db_id, "the KG was imported again; a new job embeds the new version")
    job = worker.submit(db_id, urgent=pending == "fast")
    return ImportEmbedding(db_id, job_id=job.job_id, note=f"Embedding in the background (the fast tier, then the "
                           f"default model): GET /api/jobs/{job.job_id}.").to_dict()


def save_upload(file: UploadFile, folder: FilePath, format: str | None, max_bytes: int) -> FilePath:
    """Write the upload into ``folder`` under a name the format readers recognise (the client's
    file name is used only for its suffix); a zip is unpacked to a CSV folder."""
    head = file.file.read(4)
    file.file.seek(0)
    if head.startswith(b"PK"):
        return unzip_csv(file, folder / "kg", max_bytes)
    suffix = SUFFIXES[format] if format else _suffix(file.filename or "")
    gz = ".gz" if head.startswith(b"\x1f\x8b") else ""
    path = folder / (("nodes" if suffix == ".csv" else "upload") + suffix + gz)
    with open(path, "wb") as out:
        shutil.copyfileobj(file.file, out, 1 << 20)
    return path


def _suffix(filename: str) -> str:
    name = filename.lower().removesuffix(".gz")
    for suffix in KNOWN_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    raise InvalidArgument(f"cannot tell the format of {filename[:200]!r}: name the file .json, .jsonl, .graphml or "
                          ".csv (optionally .gz), or pass ?format=nodelink|jsonl|graphml|csv")


def unzip_csv(file: UploadFile, folder: FilePath, max_bytes: int) -> FilePath:
    """Unpack nodes.csv and edges.csv (optionally .gz) from a zip, refusing anything bigger than
    ``max_bytes`` once unpacked; other members are ignored and no member path is trusted."""
    wanted = {"nodes.csv", "edges.csv", "nodes.csv.gz", "edges.csv.gz"}
    folder.mkdir()
    try:
        archive = zipfile.ZipFile(file.file)
        members = [i for i in archive.infolist() if FilePath(i.filename).name.lower() in wanted and not i.is_dir()]
        if sum(i.file_size for i in members) > max_bytes:
            raise ImportFailed(f"the zip unpacks to more than the upload limit of {max_bytes:,} bytes")
        budget = max_bytes  # the sizes a zip declares may lie: count what really comes out
        for info in members:
            with archive.open(info) as src, open(folder / FilePath(info.filename).name.lower(), "wb") as out:
                budget = _copy_capped(src, out, budget, max_bytes)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
        raise ImportFailed(f"the upload is not a readable zip archive ({exc})") from None
    return folder


def _copy_capped(src: Any, out: Any, budget: int, max_bytes: int) -> int:
    """Copy ``src`` to ``out``; returns the budget left, refusing to go below zero."""
    while chunk := src.read(1 << 20):
        budget -= len(chunk)
        if budget < 0:
            raise ImportFailed(f"the zip unpacks to more than the upload limit of {max_bytes:,} bytes")
        out.write(chunk)
    return budget


EXPORT_TYPES = {"nodelink": "application/json", "jsonl": "application/x-ndjson", "graphml": "application/xml",
                "csv": "application/zip"}


@router.get("/kg/{db_id}/export", tags=["import/export"], response_class=FileResponse,
            responses={200: {"description": "The KG as a file download",
                             "content": {t: {} for t in {*EXPORT_TYPES.values(), "application/gzip"}}}})
def export_kg(db_id: DbId, rt: Rt, format: Literal["nodelink", "jsonl", "graphml", "csv"] = "nodelink",
              gzip: bool = False) -> FileResponse:
    """Download the KG: node-link JSON (default), JSON Lines, GraphML, or a zip of nodes.csv and
    edges.csv; ``gzip`` compresses the JSON and GraphML formats."""
    folder = FilePath(tempfile.mkdtemp(prefix="kgos-export-"))
    try:
        gz = ".gz" if gzip and format != "csv" else ""
        path = folder / f"{db_id}{SUFFIXES[format] if format != 'csv' else ''}{gz}"
        locked(rt, lambda ws: ws.export(db_id, path, format))
        if format == "csv":
            path = FilePath(shutil.make_archive(str(folder / f"{db_id}-csv"), "zip", path))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    media = "application/gzip" if gz else EXPORT_TYPES[format]
    return FileResponse(path, media_type=media, filename=path.name,
                        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True))


# -- search -----------------------------------------------------------------------------------------------------
def search_dict(result: Any, explain: bool) -> dict[str, Any]:
    """A SearchResult's document; without ``explain`` the per-hit breakdowns are null."""
    d = result.to_dict()
    if not explain:
        for hit in d["results"]:
            hit["components"] = hit["edge_annotations"] = None
    return d


@router.post("/kg/{db_id}/search", tags=["search"], response_model=m.SearchOut)
def search(db_id: DbId, body: m.SearchIn, rt: Rt) -> Any:
    """Intent-adaptive hybrid search; each hit explains its score signal by signal."""
    return rt.read(db_id, "search", body)  # readpool.execute


@router.post("/search", tags=["search"], response_model=m.SearchOut)
def search_many(body: m.MultiSearchIn, rt: Rt) -> Any:
    """One query over several KGs: hits tagged with ``source_kg``, duplicates by name merged."""
    ws = rt.workspace
    return ws.read_many(body.db_ids, lambda: search_dict(ws.search(body.db_ids, body.query, k=body.k,
                                                                   weights=m.weights_arg(body.weights),
                                                                   intent=body.intent, mode=body.mode,
                                                                   filters=body.filters, model=body.model),
                                                         body.explain))


# -- query methods: one route per catalogue method (kgos.kg.catalogue) --------------------------------------------
def method_route(method: Method) -> Callable[..., Any]:
    """``POST /api/kg/{db_id}/<path>``: the method's parameter type is the body, its result type's derived
    model the response (and so the OpenAPI schema)."""
    def endpoint(db_id: str, body: Any, rt: Runtime) -> Any:
        return rt.read(db_id, "method", method.name, body)  # every method only reads
    # FastAPI reads the signature: the body type is the method's, known only here
    signature = inspect.Signature([
        inspect.Parameter("db_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=DbId),
        inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=method.params),
        inspect.Parameter("rt", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Rt)])
    setattr(endpoint, "__signature__", signature)  # noqa: B010  (functions have no declared __signature__)
    endpoint.__name__ = endpoint.__qualname__ = method.name
    endpoint.__doc__ = method.summary
    return endpoint


for _method in METHODS:
    router.add_api_route(f"/kg/{{db_id}}/{_method.path}", method_route(_method), methods=["POST"],
                         tags=[_method.tag], response_model=derived(_method.result), name=_method.name)


@router.post("/kg/{db_id}/dims/infer", tags=["dimensions"], response_model=m.InferOut)
def infer_dimensions(db_id: DbId, body: m.DimensionsInfer, rt: Rt) -> Any:
    """Infer dimension values from the graph and the text; values a person set are kept."""
    return on_kg(rt, db_id, lambda kg: kg.infer_dimensions(body.dims, dry_run=body.dry_run).to_dict())


# -- analytics ---------------------------------------------------------------------------------------------------------
@router.get("/kg/{db_id}/analyze/centrality", tags=["analytics"], response_model=m.CentralityOut)
def centrality(db_id: DbId, rt: Rt, metric: Literal["combined", "degree", "betweenness", "pagerank"] = "combined",
               k: Limit = 20) -> Any:
    """Critical components: the top k by degree, betweenness, PageRank or their combination."""
    return on_kg(rt, db_id, lambda kg: kg.analytics.centrality(metric, k=k).to_dict())


@router.get("/kg/{db_id}/analyze/bottlenecks", tags=["analytics"], response_model=m.CentralityOut)
def bottlenecks(db_id: DbId, rt: Rt, k: Limit = 20) -> Any:
    """Articulation points ranked by betweenness."""
    return on_kg(rt, db_id, lambda kg: kg.analytics.bottlenecks(k=k).to_dict())


@router.get("/kg/{db_id}/analyze/communities", tags=["analytics"], response_model=m.CommunitiesOut)
def communities(db_id: DbId, rt: Rt, k: Limit = 20) -> Any:
    """Communities (Leiden), largest first, with their top members and node types."""
    return on_kg(rt, db_id, lambda kg: kg.analytics.communities(k=k).to_dict())


@router.get("/kg/{db_id}/analyze/gaps", tags=["analytics"], response_model=m.GapsOut)
def gaps(db_id: DbId, rt: Rt, limit: Limit = 20) -> Any:
    """Orphans, cut-off components, unmitigated limitations, nodes without dimensions."""
    return on_kg(rt, db_id, lambda kg: kg.analytics.gaps(limit=limit).to_dict())
