"""The ingest and extract modules of the pipeline protocol (spec/004, ``kgos.pipeline``), shared with
the research pipeline: each wraps one step of ``kgos.ingest`` as a registered, configurable,
snapshot-able module.

| id                 | category | input                                   | output                              |
|--------------------|----------|-----------------------------------------|-------------------------------------|
| ingest.files       | ingest   | ``paths``                               | ``files`` (rel, kind, path, sha256, lines), ``skipped`` |
| extract.structure  | extract  | ``files`` (rel + path, or rel + kind + text) | ``facts`` (tier 1 per file), ``skipped`` |
| extract.links      | extract  | ``facts``                               | ``edges`` per file, ``external`` nodes |
| extract.patterns   | extract  | ``facts``                               | ``edges`` per file, ``nodes`` (patterns, concepts) |
| extract.semantic   | extract  | ``facts``                               | ``facts`` with tier-3 nodes and edges, ``stats`` |
| ingest.kg          | ingest   | ``paths``                               | the ``IngestReport`` of a full run into a KG |

``extract.semantic`` reaches its LLM (``context.services["provider"]``) through
``context.external``, so a snapshot replays offline with the recorded answers.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from ..errors import InvalidArgument
from ..llm.base import ChatProvider, Message
from ..pipeline import BaseModule, ProcessContext, StageInput, StageOutput, register
from . import patterns
from .facts import Facts
from .files import DEFAULT_MAX_BYTES, KINDS, Selection, SourceFile, extractors, kind_of, read, walk
from .ingestion import IngestOptions, ingest
from .linker import Linker
from .semantic import SemanticExtractor

_GLOBS = {"type": "array", "items": {"type": "string", "minLength": 1}, "default": []}
_SELECTION = {"include": _GLOBS, "exclude": _GLOBS,
              "max_bytes": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_BYTES}}


def _facts(input: StageInput) -> list[Facts]:
    raw = input.data.get("facts")
    if not isinstance(raw, list):
        raise InvalidArgument("this module needs 'facts': a list of per-file facts (extract.structure's output)")
    return [Facts.from_dict(f) for f in raw]


@register()
class FilesModule(BaseModule):
    """Walk folders and files: the candidates with their content hash, and what was refused and why."""

    id = "ingest.files"
    name = "Source files"
    category = "ingest"
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": dict(_SELECTION)}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        selection = Selection(tuple(config["include"]), tuple(config["exclude"]), config["max_bytes"])
        found, skipped = walk(list(input.data.get("paths") or []), selection)
        files = []
        for path, root, rel in found:
            got = read(path, rel, selection)
            if isinstance(got, SourceFile):
                files.append({"rel": rel, "kind": got.kind, "path": str(path), "root": str(root),
                              "sha256": got.sha256, "lines": got.lines})
            elif not got.reason.startswith("unsupported"):
                skipped.append(got)
        return StageOutput({"files": files, "skipped": [s.to_dict() for s in skipped]},
                           metrics={"files": len(files), "skipped": len(skipped)})


@register()
class StructureModule(BaseModule):
    """Tier 1: nodes, edges and unresolved references of each file (Python ast, tree-sitter, configs,
    documents). A file may come as a path or inline (``text``, or ``base64`` for a PDF)."""

    id = "extract.structure"
    name = "Structure extraction (tier 1)"
    category = "extract"
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {
        "kinds": {"type": "array", "items": {"enum": sorted(set(KINDS.values()))}, "default": [],
                  "description": "only these kinds (empty: all)"},
        "max_bytes": _SELECTION["max_bytes"]}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        out, skipped = [], []
        for entry in input.data.get("files") or []:
            source = _source(entry, config["max_bytes"])
            if isinstance(source, str):
                skipped.append({"path": entry.get("rel", "?"), "reason": source})
                continue
            if config["kinds"] and source.kind not in config["kinds"]:
                continue
            facts = extractors()[source.kind].extract(source, Path(entry.get("root") or source.path.parent))
            if facts.error:
                skipped.append({"path": source.rel, "reason": facts.error})
            else:
                out.append(facts.to_dict())
        return StageOutput({"facts": out, "skipped": skipped}, metrics={"files": len(out), "skipped": len(skipped)})


def _source(entry: dict[str, Any], max_bytes: int) -> SourceFile | str:
    rel = str(entry.get("rel") or "")
    if not rel:
        return "a file entry needs 'rel'"
    if "path" in entry:
        got = read(Path(entry["path"]), rel, Selection(max_bytes=max_bytes))
        return got if isinstance(got, SourceFile) else got.reason
    kind = entry.get("kind") or kind_of(Path(rel))
    if kind not in extractors():
        return f"unsupported file type ({kind})"
    data = base64.b64decode(entry["base64"]) if "base64" in entry else None
    text = None if data is not None else str(entry.get("text") or "")
    digest = hashlib.sha256(data if data is not None else (text or "").encode()).hexdigest()
    return SourceFile(Path(rel), rel, kind, digest, len(data or (text or "").encode()), text, data)


@register()
class LinksModule(BaseModule):
    """Resolve calls, imports, inheritance, config references, links and mentions across files."""

    id = "extract.links"
    name = "Cross-file linking"
    category = "extract"
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        groups = {f.group: f for f in _facts(input)}
        edges, external = Linker(groups).link()
        return StageOutput({"edges": edges, "external": external},
                           metrics={"edges": sum(map(len, edges.values()))})


@register()
class PatternsModule(BaseModule):
    """Tier 2: design patterns and anti-patterns from structure, typed relations from cue phrases."""

    id = "extract.patterns"
    name = "Patterns and cue phrases (tier 2)"
    category = "extract"
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {
        "structure": {"type": "boolean", "default": True}, "cues": {"type": "boolean", "default": True}}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        groups = {f.group: f for f in _facts(input)}
        linker = Linker(groups)
        links, _ = linker.link()
        out: dict[str, list[dict[str, Any]]] = {}
        nodes: list[dict[str, Any]] = []
        if config["structure"]:
            imports = [(e["source"], e["target"], rel) for rel, es in links.items() for e in es
                       if e["type"] == "imports" and linker.types.get(e["target"]) in ("module", "package")]
            out = dict(patterns.structural(groups, imports))
            nodes = patterns.pattern_nodes(patterns.used_patterns(out))
        if config["cues"]:
            cues = patterns.CueExtractor(linker._symbol)
            for rel, found in cues.run(groups).items():
                out.setdefault(rel, []).extend(found)
            nodes += list(cues.concepts.values())
        return StageOutput({"edges": out, "nodes": nodes}, metrics={"edges": sum(map(len, out.values()))})


class _Recorded(ChatProvider):
    """The context's provider, with every answer going through ``context.external`` (replayable)."""

    name = "recorded"

    def __init__(self, context: ProcessContext) -> None:
        self.context = context

    def stream(self, messages: Sequence[Message], **kw: Any) -> Any:
        yield self.complete(messages, **kw)

    def complete(self, messages: Sequence[Message], **kw: Any) -> str:
        key = "llm:" + hashlib.sha256("\n".join(m.content for m in messages).encode()).hexdigest()[:32]

        def call() -> str:
            provider = self.context.services.get("provider")
            if provider is None:
                raise InvalidArgument("extract.semantic needs services['provider'] (a chat provider)")
            return str(provider.complete(messages, **kw))
        return str(self.context.external.fetch(key, call))


@register()
class SemanticModule(BaseModule):
    """Tier 3: concepts, goals, capabilities and limitations from an LLM, under spec/002's rules."""

    id = "extract.semantic"
    name = "Semantic extraction (tier 3, LLM)"
    category = "extract"
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {
        "max_calls": {"type": "integer", "minimum": 0, "default": 50},
        "max_edges": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        extractor = SemanticExtractor(_Recorded(context), config["max_calls"], config["max_edges"])
        facts = _facts(input)
        for f in facts:
            extractor.enrich(f)
            f.llm = True
        return StageOutput({"facts": [f.to_dict() for f in facts], "stats": extractor.stats.to_dict()},
                           metrics={"calls": extractor.stats.calls})


@register()
class IngestKGModule(BaseModule):
    """A whole incremental ingest of ``paths`` into the KG ``db_id`` of ``services['workspace']``."""

    id = "ingest.kg"
    name = "Ingest into a KG"
    category = "ingest"
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "required": ["db_id"], "properties": {
        "db_id": {"type": "string", "minLength": 1, "maxLength": 64},
        "tiers": {"type": "array", "items": {"enum": [1, 2]}, "default": [1, 2]},
        "embed": {"type": "boolean", "default": False}, "dimensions": {"type": "boolean", "default": False},
        **_SELECTION}}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        ws = context.services.get("workspace")
        if ws is None:
            raise InvalidArgument("ingest.kg needs services['workspace']")
        options = IngestOptions(tuple(config["include"]), tuple(config["exclude"]), tuple(config["tiers"]),
                                config["max_bytes"], config["embed"], dimensions=config["dimensions"])
        report = ingest(ws, config["db_id"], list(input.data.get("paths") or []), options)
        d = report.to_dict()
        d.pop("seconds")  # timings differ run to run; the output hash should not
        return StageOutput(d, metrics={"seconds": report.seconds})
