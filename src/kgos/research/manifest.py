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

__all__ = ["FORMAT", "RunStore", "seal", "verify_seal"]

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


class RunStore:
    """The runs of one workspace, under ``<home>/research``."""

    def __init__(self, home: Path) -> None:
        self.root = Path(home) / "research"

    def new_run_id(self) -> str:
        """``r_<UTC date>_<seq>`` as in spec/004, the folder created exclusively (no two runs share one)."""
        self.root.mkdir(parents=True, exist_ok=True)
        day = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
        seq = 1 + sum(1 for p in self.root.glob(f"r_{day}_*"))
        while True:
            run_id = f"r_{day}_{seq:03d}"
            try:
                (self.root / run_id).mkdir()
                return run_id
            except FileExistsError:
                seq += 1

    def folder(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
            raise InvalidArgument(f"{run_id!r} is not a run id (like r_2026-01-09_001)")
        path = self.root / run_id
        if not (path / "manifest.json").is_file():
            raise RunNotFound(f"no research run {run_id} in {self.root}: see `kgos research runs`")
        return path

    def write_json(self, run_id: str, relative: str, value: Any) -> str:
        path = self.root / run_id / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        os.replace(tmp, path)
        return relative

    def write_text(self, run_id: str, relative: str, text: str) -> str:
        path = self.root / run_id / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return relative

    def save_manifest(self, manifest: dict[str, Any]) -> None:
        self.write_json(manifest["run_id"], "manifest.json", seal(manifest))

    def manifest(self, run_id: str) -> dict[str, Any]:
        path = self.folder(run_id) / "manifest.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
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
        path = self.root / run_id / "blobs" / f"{digest.split(':')[1]}.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(raw)
            os.replace(tmp, path)
        return {"$blob": digest}

    def snapshot(self, run_id: str, relative: str) -> Snapshot:
        path = self.folder(run_id) / relative
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
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
            return json.loads((self.root / run_id / "blobs" / f"{name}.json").read_text(encoding="utf-8"))
        return value

    def read_json(self, run_id: str, relative: str) -> Any:
        return json.loads((self.folder(run_id) / relative).read_text(encoding="utf-8"))

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


def summary(m: Mapping[str, Any]) -> dict[str, Any]:
    """The short form of a manifest: what ``kgos research runs`` lists."""
    final = m.get("final_state") or {}
    return {"run_id": m["run_id"], "created": m.get("created"), "status": m.get("status"),
            "question": m["query"]["original"], "iterations": len(m.get("iterations", [])),
            "stopped_by": final.get("convergence_reason"), "confidence": final.get("confidence"),
            "coverage": final.get("coverage"), "output_sha256": m.get("output_sha256")}
