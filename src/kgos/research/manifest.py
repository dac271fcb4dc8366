"""Run manifests (spec/004 "Run Reproducibility") and where runs live in the workspace.

A run is a folder ``<home>/research/<run_id>/``::

    manifest.json            the manifest below, sealed by manifest_sha256
    snapshots/<i>-<stage>.json   one pipeline Snapshot per stage call (config, input, output, outside responses)
    blobs/<sha256>.json      large input/output values, stored once and referenced as {"$blob": "sha256:..."}
    outputs/answer.md        the synthesized answer with its citations
    outputs/answer.json      the same, structured
    outputs/kg_delta.json    every iteration's KG delta, merged (node-link JSON)

The manifest holds the query and its intent, per iteration the stages (module id and version, sha256 of
config, input and output, status, seconds, snapshot file) and the reasoning (assessment, decision,
rationale), the final state, the output's hashes and the artifacts. ``manifest_sha256`` is the sha256
of everything else in it: an edited manifest is refused on replay, naming that hash.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..errors import InvalidArgument, RunNotFound, SnapshotMismatch
from ..pipeline import Snapshot, content_hash

__all__ = ["FORMAT", "PgRunStore", "RunStore", "run_store", "seal", "verify_seal"]

FORMAT = "kgos-research-run/1"
BLOB_BYTES = 16_384  # values this large are stored once per run by content hash
_RUN_ID = re.compile(r"^r_\d{4}-\d{2}-\d{2}_\d{3,}$")


def seal(manifest: dict[str, Any]) -> dict[str, Any]:
    """Set ``manifest_sha256`` to the hash of the rest of the manifest."""
    manifest.pop("manifest_sha256", None)
    manifest["manifest_sha256"] = content_hash(manifest)
    return manifest


def verify_seal(manifest: Mapping[str, Any]) -> None:
    stored = manifest.get("manifest_sha256", "")
    actual = content_hash({k: v for k, v in manifest.items() if k != "manifest_sha256"})
    if stored != actual:
        raise SnapshotMismatch(f"run {manifest.get('run_id')}: the manifest was changed after it was written "
                               f"(manifest_sha256 {stored or '(missing)'} but its content hashes to {actual})",
                               field="manifest_sha256", expected=str(stored), actual=actual)


def run_store(ws: Any) -> RunStore:
    """The runs of workspace ``ws``: its folder, or with a PostgreSQL workspace its database too."""
    shared = ws.shared
    from ..store.postgres_workspace import is_postgres
    return PgRunStore(ws.home, shared) if is_postgres(shared) else RunStore(ws.home)


class RunStore:
    """The runs of one workspace, under ``<home>/research``. Every read and write of a run's files goes
    through ``_put`` / ``_get`` / ``_exists`` / ``_claim`` / ``run_ids``, which ``PgRunStore`` overrides."""

    def __init__(self, home: Path) -> None:
        self.root = Path(home) / "research"

    def new_run_id(self) -> str:
        """``r_<UTC date>_<seq>`` as in spec/004, claimed exclusively (no two runs share one)."""
        day = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
        seq = 1 + self._count_day(day)
        while not self._claim(f"r_{day}_{seq:03d}"):
            seq += 1
        return f"r_{day}_{seq:03d}"

    def _count_day(self, day: str) -> int:
        return sum(1 for _ in self.root.glob(f"r_{day}_*")) if self.root.is_dir() else 0

    def _claim(self, run_id: str) -> bool:
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            (self.root / run_id).mkdir()
            return True
        except FileExistsError:
            return False

    def folder(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
            raise InvalidArgument(f"{run_id!r} is not a run id (like r_2026-01-09_001)")
        if not self._exists(run_id, "manifest.json"):
            raise RunNotFound(f"no research run {run_id} in {self.root}: see `kgos research runs`")
        return self.root / run_id

    def _exists(self, run_id: str, relative: str) -> bool:
        return (self.root / run_id / relative).is_file()

    def _put(self, run_id: str, relative: str, data: bytes) -> None:
        path = self.root / run_id / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def _get(self, run_id: str, relative: str) -> bytes:
        """A file of the run; OSError if it is missing."""
        return (self.root / run_id / relative).read_bytes()

    def write_json(self, run_id: str, relative: str, value: Any) -> str:
        self._put(run_id, relative, orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        return relative

    def write_text(self, run_id: str, relative: str, text: str) -> str:
        self._put(run_id, relative, text.encode("utf-8"))
        return relative

    def save_manifest(self, manifest: dict[str, Any]) -> None:
        self.write_json(manifest["run_id"], "manifest.json", seal(manifest))

    def manifest(self, run_id: str) -> dict[str, Any]:
        self.folder(run_id)
        try:
            data = json.loads(self._get(run_id, "manifest.json").decode("utf-8"))
        except ValueError as exc:
            raise SnapshotMismatch(f"run {run_id}: manifest.json is not valid JSON ({exc})",
                                   field="manifest_sha256") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise SnapshotMismatch(f"run {run_id}: manifest.json is not a {FORMAT} manifest", field="manifest_sha256")
        return data

    def save_snapshot(self, run_id: str, relative: str, snap: Snapshot) -> str:
        """Write a snapshot; large top-level values of its input and output (the merged knowledge, which
        four stages of every iteration carry) go to ``blobs/<sha256>.json`` once and are referenced."""
        d = snap.to_dict()
        for part in ("input", "output"):
            d[part] = {k: self._blob(run_id, v) for k, v in d[part].items()}
        return self.write_json(run_id, relative, d)

    def _blob(self, run_id: str, value: Any) -> Any:
        if not isinstance(value, (dict, list)):
            return value
        raw = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        if len(raw) < BLOB_BYTES:
            return value
        digest = content_hash(value)
        relative = f"blobs/{digest.split(':')[1]}.json"
        if not self._exists(run_id, relative):
            self._put(run_id, relative, raw)
        return {"$blob": digest}

    def snapshot(self, run_id: str, relative: str) -> Snapshot:
        self.folder(run_id)
        try:
            d = json.loads(self._get(run_id, relative).decode("utf-8"))
            for part in ("input", "output"):
                if isinstance(d.get(part), dict):
                    d[part] = {k: self._unblob(run_id, v) for k, v in d[part].items()}
            return Snapshot.from_dict(d)
        except (OSError, ValueError) as exc:
            raise SnapshotMismatch(f"run {run_id}: snapshot {relative} or a blob it references is missing or "
                                   f"unreadable ({exc})", field=relative) from None

    def _unblob(self, run_id: str, value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"$blob"} and isinstance(value["$blob"], str):
            name = value["$blob"].removeprefix("sha256:")
            if not re.fullmatch(r"[0-9a-f]{64}", name):
                raise ValueError(f"bad blob reference {value['$blob']!r}")
            return json.loads(self._get(run_id, f"blobs/{name}.json").decode("utf-8"))
        return value

    def read_json(self, run_id: str, relative: str) -> Any:
        self.folder(run_id)
        return json.loads(self._get(run_id, relative).decode("utf-8"))

    def run_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted((p.name for p in self.root.iterdir() if _RUN_ID.match(p.name)
                       and (p / "manifest.json").is_file()), reverse=True)

    def summaries(self, limit: int = 50) -> list[dict[str, Any]]:
        out = []
        for run_id in self.run_ids()[:limit]:
            try:
                m = self.manifest(run_id)
            except SnapshotMismatch:
                continue
            out.append(summary(m))
        return out


class PgRunStore(RunStore):
    """The runs of a PostgreSQL workspace: every file of a run is also a row of ``research_files`` (run
    id, relative path, bytes), so any server lists and reads the runs of any other; reads come from the
    database. The local folder keeps a copy of the files this server wrote (the path a result names)."""

    def __init__(self, home: Path, shared: Any) -> None:
        super().__init__(home)
        self.db = shared

    def _count_day(self, day: str) -> int:
        row = self.db.execute("SELECT count(DISTINCT run_id) FROM research_files WHERE run_id LIKE ?",
                              (f"r_{day}_%",)).fetchone()
        return int(row[0])

    def _claim(self, run_id: str) -> bool:
        """The run id is taken by the row of its (empty) folder marker: one server wins it."""
        claimed = self.db.execute("INSERT INTO research_files VALUES (?, '', ?, ?) ON CONFLICT DO NOTHING",
                                  (run_id, b"", _now())).rowcount > 0
        if claimed:
            (self.root / run_id).mkdir(parents=True, exist_ok=True)
        return claimed

    def _exists(self, run_id: str, relative: str) -> bool:
        return self.db.execute("SELECT 1 FROM research_files WHERE run_id = ? AND path = ?",
                               (run_id, relative)).fetchone() is not None

    def _put(self, run_id: str, relative: str, data: bytes) -> None:
        self.db.execute("INSERT INTO research_files VALUES (?, ?, ?, ?) ON CONFLICT (run_id, path) DO UPDATE "
                        "SET body = excluded.body, written_at = excluded.written_at", (run_id, relative, data, _now()))
        super()._put(run_id, relative, data)

    def _get(self, run_id: str, relative: str) -> bytes:
        row = self.db.execute("SELECT body FROM research_files WHERE run_id = ? AND path = ?",
                              (run_id, relative)).fetchone()
        if row is None:
            raise FileNotFoundError(f"{run_id}/{relative}")
        return bytes(row[0])

    def run_ids(self) -> list[str]:
        rows = self.db.execute("SELECT run_id FROM research_files WHERE path = 'manifest.json' ORDER BY run_id DESC")
        return [r[0] for r in rows if _RUN_ID.match(r[0])]


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def summary(m: Mapping[str, Any]) -> dict[str, Any]:
    """The short form of a manifest: what ``kgos research runs`` lists."""
    final = m.get("final_state") or {}
    return {"run_id": m["run_id"], "created": m.get("created"), "status": m.get("status"),
            "question": m["query"]["original"], "iterations": len(m.get("iterations", [])),
            "stopped_by": final.get("convergence_reason"), "confidence": final.get("confidence"),
            "coverage": final.get("coverage"), "output_sha256": m.get("output_sha256")}
