"""``ingest``: folders and files in, a KG out (and kept current), with the report of what happened.

A run walks the roots, reads each file once, extracts tier 1 from the files whose content hash
changed (the cached facts of the others are reused), links references across every file of the KG,
recognises tier-2 patterns and cue-phrase relations, optionally asks an LLM (tier 3), and writes only
the groups whose output changed, in one transaction (``writer``). Then it validates the KG (the 12
rules), infers dimensions and embeds the changed nodes; each of those steps reports, none can undo the
write. A fatal problem (no readable path, a KG that is not native) raises ``IngestFailed`` or
``InvalidArgument`` before anything is written.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IngestFailed, InvalidArgument, KGOSError, MissingDependency
from ..plugins import add_builtin, hookimpl
from ..kg.embedding import embed_after_import
from ..store.base import GraphStore
from ..store.proposals import ProposalDraft
from . import configs, documents, patterns, python, treesitter
from .facts import Facts
from .files import (
    BINARY_KINDS,
    DEFAULT_MAX_BYTES,
    KINDS,
    MAX_FILE_BYTES,
    Extractor,
    Selection,
    Skipped,
    SourceFile,
    check_globs,
    extractors,
    read,
    walk,
)
from .linker import EXTERNAL, Linker
from .semantic import SemanticExtractor
from .writer import CachedGroup, GroupOutput, WriteCounts, load_cache, tiers_key, write

if TYPE_CHECKING:
    from ..kg import KG, Workspace
    from ..llm.base import ChatProvider

Progress = Callable[[str, int, int], None]  # (phase, done, total)
TIERS = (1, 2, 3)


def _code(source: SourceFile, root: Path) -> Facts:
    return treesitter.extract_tree(source)


EXTRACTORS: dict[str, Callable[[SourceFile, Path], Facts]] = {
    "python": python.extract_python,
    "javascript": _code, "typescript": _code, "tsx": _code, "go": _code, "rust": _code,
    "json": lambda s, r: configs.extract_config(s), "yaml": lambda s, r: configs.extract_config(s),
    "toml": lambda s, r: configs.extract_config(s),
    "markdown": lambda s, r: documents.extract_markdown(s), "html": lambda s, r: documents.extract_html(s),
    "pdf": lambda s, r: documents.extract_pdf(s), "text": lambda s, r: documents.extract_text(s),
}



@hookimpl
def register_extractors() -> dict[str, Extractor]:
    """The built-in extractors, through the hook third-party packages answer too (kgos.plugins)."""
    return {kind: Extractor(fn, tuple(s for s, k in KINDS.items() if k == kind), kind in BINARY_KINDS)
            for kind, fn in EXTRACTORS.items()}


add_builtin(sys.modules[__name__], "kgos.ingest")


@dataclass(frozen=True)
class IngestOptions:
    """What to read and which steps to run. ``tiers``: 1 structure, 2 patterns, 3 LLM (needs
    ``provider``). ``prune``: files gone from a root are removed from the KG."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    tiers: tuple[int, ...] = (1, 2)
    max_bytes: int = DEFAULT_MAX_BYTES
    embed: bool = True
    model: str = "default"
    dimensions: bool = True
    validate: bool = True
    prune: bool = True
    max_llm_calls: int = 50
    # tier 3's concepts and relations go to the KG's review queue (origin "ingest.llm") instead of the
    # KG: a model's reading waits for a person; False writes them directly
    llm_review: bool = True

    def checked(self) -> IngestOptions:
        tiers = tuple(sorted(set(self.tiers)))
        if not tiers or any(t not in TIERS for t in tiers) or 1 not in tiers:
            raise InvalidArgument(f"tiers must include 1 and be among 1, 2, 3; got {list(self.tiers)}")
        if not isinstance(self.max_bytes, int) or not 0 < self.max_bytes <= MAX_FILE_BYTES:
            raise InvalidArgument(f"max_bytes must be a positive integer up to {MAX_FILE_BYTES:,} (the hard "
                                  f"maximum: parsing takes ~150x a file's size in memory), not {self.max_bytes!r}")
        return IngestOptions(check_globs(self.include, "include"), check_globs(self.exclude, "exclude"), tiers,
                             self.max_bytes, self.embed, self.model, self.dimensions, self.validate, self.prune,
                             self.max_llm_calls, bool(self.llm_review))


@dataclass(frozen=True)
class IngestReport:
    """What a run did. ``files``: files by kind in the KG after the run; ``changed`` / ``unchanged`` /
    ``deleted``: this run's files by what happened to them; ``nodes`` / ``edges``: the ingest's whole
    output by type (empty when nothing changed and nothing was written); ``skipped``: path and reason;
    ``seconds``: per phase."""

    db_id: str
    roots: tuple[str, ...]
    tiers: tuple[int, ...]
    files: dict[str, int]
    changed: int
    unchanged: int
    deleted: int
    lines: int
    nodes: dict[str, int]
    edges: dict[str, int]
    skipped: tuple[Skipped, ...]
    writes: WriteCounts
    dropped_edges: int
    seconds: dict[str, float]
    validation: dict[str, Any] | None = None
    dimensions: dict[str, Any] | None = None
    embedding: dict[str, Any] | None = None
    semantic: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["skipped"] = [s.to_dict() for s in self.skipped]
        return d


def ingest(ws: Workspace, db_id: str, paths: Sequence[str | Path], options: IngestOptions | None = None,
           provider: ChatProvider | None = None, progress: Progress | None = None) -> IngestReport:
    """Ingest ``paths`` (folders or files) into the native KG ``db_id`` (created if missing)."""
    opts = (options or IngestOptions()).checked()
    if 3 in opts.tiers and provider is None:
        raise InvalidArgument("tier 3 needs an LLM provider (--provider, or pass provider=...)")
    if isinstance(paths, (str, Path)) or not paths:
        raise InvalidArgument("give a list of one or more paths to ingest")
    run = _Run(opts, progress or (lambda phase, done, total: None))
    sources = run.read_all(paths)
    created = not ws.exists(db_id)
    if created and not sources:
        raise IngestFailed(_nothing(paths, run.skipped))
    kg = ws.create(db_id) if created else ws.kg(db_id)
    store = kg.store
    try:
        # the group table rides in the KG file: a writable native SQLite KG (asked of the store)
        if not (store.writable and store.native_schema and store.sql_dialect == "sqlite"):
            raise InvalidArgument(
                f"'{db_id}' is not a writable SQLite KG: ingest writes native SQLite KGs only (not yet PostgreSQL "
                "or attached ones); ingest into a local workspace, then move the KG with `kgos kg copy`")
        redo = store.meta().get(PENDING_KEY) == "1"  # a run killed after its commit left its steps undone
        _pending(store, True)
        report = run.apply(kg, store, sources, paths, provider)
    except BaseException:
        if created:  # a KG this run created and could not fill is not left behind empty
            ws.delete(db_id)
        raise
    report = run.after(kg, report, redo)
    _pending(store, False)
    return report


# The steps after the main commit (dimensions, embedding) cannot share its transaction (they read the
# committed KG); a mark set before the commit and cleared after them tells the next run that a kill
# came between, and that run redoes them even when every file is unchanged.
PENDING_KEY = "ingest_post_commit_pending"


def _pending(store: GraphStore, pending: bool) -> None:
    """Set or clear the mark, without a version bump (no snapshot reads it). ``store`` is the native
    SQLite store ``ingest`` checked it is."""
    with store.transaction(bump=False) as conn:  # type: ignore[attr-defined]
        if pending:
            conn.execute("INSERT OR REPLACE INTO kg_meta VALUES (?, '1')", (PENDING_KEY,))
        else:
            conn.execute("DELETE FROM kg_meta WHERE key = ?", (PENDING_KEY,))


def _check_labels(paths: Sequence[str | Path]) -> None:
    """Files are keyed ``<folder name>/<path>``: two different folders of one name would collide."""
    seen: dict[str, Path] = {}
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            real = p.resolve()
            other = seen.setdefault(real.name, real)
            if other != real:
                raise InvalidArgument(f"two folders named '{real.name}' ({other}, {real}): their files would share "
                                      "keys; give their parent folder instead, or ingest them into separate KGs")


def _nothing(paths: Sequence[str | Path], skipped: list[Skipped]) -> str:
    why = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:5]) or "no files of a supported type"
    return f"nothing to ingest from {', '.join(map(str, paths))} ({why})"


class _Run:
    def __init__(self, opts: IngestOptions, progress: Progress) -> None:
        self.opts, self.progress = opts, progress
        self.selection = Selection(opts.include, opts.exclude, opts.max_bytes)
        self.skipped: list[Skipped] = []
        self.seconds: dict[str, float] = {}
        self.notes: list[str] = []
        self._t = time.perf_counter()
        self.labels: set[str] = set()
        self.single_files: set[str] = set()

    def _lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + now - self._t, 4)
        self._t = now

    # -- reading --------------------------------------------------------------------------------------
    def read_all(self, paths: Sequence[str | Path]) -> list[tuple[SourceFile, Path]]:
        _check_labels(paths)
        found, skipped = walk(paths, self.selection)
        self.skipped += skipped
        for raw in paths:
            p = Path(raw).expanduser()
            if p.is_dir():
                self.labels.add(p.resolve().name or "root")
                if not any(rel.startswith(f"{p.resolve().name}/") for _, _, rel in found):
                    self.skipped.append(Skipped(str(raw), "empty folder: no files of a supported type"))
            elif p.is_file():
                real = p.resolve()
                self.single_files.add(f"{real.parent.name}/{real.name}")
        out = []
        for i, (path, root, rel) in enumerate(found):
            got = read(path, rel, self.selection)
            if isinstance(got, Skipped):
                if not got.reason.startswith("unsupported file type"):
                    self.skipped.append(got)
            else:
                out.append((got, root))
            self.progress("read", i + 1, len(found))
        self._lap("read")
        return out

    # -- extraction, linking, patterns, write -------------------------------------------------------
    def apply(self, kg: KG, store: GraphStore, sources: list[tuple[SourceFile, Path]], paths: Sequence[str | Path],
              provider: ChatProvider | None) -> IngestReport:
        cache = load_cache(store)
        groups, changed, kinds = self._extract(sources, cache)
        unchanged = sum(1 for s, _ in sources if s.rel in cache and cache[s.rel].sha256 == s.sha256)
        seen = {s.rel for s, _ in sources}
        deleted = [rel for rel, c in cache.items() if c.kind not in ("", "@") and rel not in seen and self._owned(rel)] \
            if self.opts.prune else []
        if not changed and not deleted and store.meta().get("ingest_tiers") == tiers_key(self.opts.tiers):
            return self._unchanged(kg, sources, cache, paths, len(sources) - unchanged)
        for rel, c in cache.items():  # files of other roots stay in the KG and in the linker's view
            if rel not in groups and rel not in deleted and not rel.startswith("@"):
                groups[rel] = Facts.from_dict(c.facts)
                kinds[rel] = c.kind
        if 3 in self.opts.tiers and provider is not None:
            self._semantic(groups, changed, provider)
        outputs, dropped = self._outputs(groups, kinds, {s.rel: s.sha256 for s, _ in sources}, cache)
        drafts = llm_drafts(outputs, changed) if 3 in self.opts.tiers and self.opts.llm_review else []
        produced = {g.rel for g in outputs}
        deleted += [rel for rel in cache if rel.startswith("@") and rel not in produced]  # e.g. tier 2 now off
        self._lap("link" if 2 not in self.opts.tiers else "link+tier2")
        counts = write(store, outputs, deleted, cache, self.opts.tiers)
        if drafts:
            self._propose(kg, drafts)
        self._lap("write")
        files = Counter(kinds[rel] for rel in groups)
        return IngestReport(kg.db_id, tuple(map(str, paths)), self.opts.tiers, dict(files), len(changed),
                            unchanged, len(deleted), sum(s.lines for s, _ in sources),
                            dict(Counter(n["type"] for g in outputs for n in g.nodes)),
                            dict(Counter(e["type"] for g in outputs for e in g.edges)), tuple(self.skipped), counts,
                            dropped, self.seconds, notes=tuple(self.notes))

    def _unchanged(self, kg: KG, sources: list[tuple[SourceFile, Path]], cache: dict[str, CachedGroup],
                   paths: Sequence[str | Path], failed: int) -> IngestReport:
        """Nothing changed since the last run with these tiers: the KG stays as it is, not a row written."""
        self.notes.append("no file changed since the last ingest: the KG was left as it was")
        files = Counter(c.kind for c in cache.values() if c.kind != "@")
        return IngestReport(kg.db_id, tuple(map(str, paths)), self.opts.tiers, dict(files), 0, len(sources) - failed,
                            0, sum(s.lines for s, _ in sources), {}, {}, tuple(self.skipped), WriteCounts(0, 0, 0, 0, 0, 0),
                            0, self.seconds, notes=tuple(self.notes))

    def _owned(self, rel: str) -> bool:
        """A cached file this run is responsible for: under one of the folders given, or a file given."""
        return rel.split("/", 1)[0] in self.labels or rel in self.single_files

    def _extract(self, sources: list[tuple[SourceFile, Path]], cache: dict[str, CachedGroup]
                 ) -> tuple[dict[str, Facts], set[str], dict[str, str]]:
        groups: dict[str, Facts] = {}
        changed: set[str] = set()
        kinds: dict[str, str] = {}
        missing: set[str] = set()
        for i, (source, root) in enumerate(sources):
            cached = cache.get(source.rel)
            kinds[source.rel] = source.kind
            if cached is not None and cached.sha256 == source.sha256:
                groups[source.rel] = Facts.from_dict(cached.facts)
            else:
                facts = self._one(source, root, missing)
                if facts.error:
                    kept = " (previous version kept)" if cached is not None else ""
                    self.skipped.append(Skipped(source.rel, facts.error + kept))
                    if cached is not None:
                        groups[source.rel] = Facts.from_dict(cached.facts)
                    continue
                groups[source.rel] = facts
                changed.add(source.rel)
            self.progress("tier1", i + 1, len(sources))
        self._lap("tier1")
        return groups, changed, kinds

    def _one(self, source: SourceFile, root: Path, missing: set[str]) -> Facts:
        try:
            return extractors()[source.kind].extract(source, root)
        except MissingDependency as exc:
            if source.kind not in missing:
                missing.add(source.kind)
                self.notes.append(str(exc))
            return Facts(source.rel, error=f"no extractor installed ({exc})")
        except (RecursionError, MemoryError, ValueError) as exc:  # a pathological file: skip it, keep the run
            return Facts(source.rel, error=f"extraction failed ({type(exc).__name__}: {str(exc)[:200]})")

    def _semantic(self, groups: dict[str, Facts], changed: set[str], provider: ChatProvider) -> None:
        extractor = SemanticExtractor(provider, self.opts.max_llm_calls)
        for rel, facts in groups.items():
            if rel in changed or not facts.llm:
                extractor.enrich(facts)
                facts.llm = True
                changed.add(rel)
        self.semantic = extractor.stats.to_dict()
        self._lap("tier3")

    def _propose(self, kg: KG, drafts: list[ProposalDraft]) -> None:
        """Stage tier 3's output in the review queue (nodes already in the KG are not proposed again)."""
        fresh = [d for d in drafts if d.kind != "node" or kg.get_node(d.source) is None]
        report = kg.proposals.propose(fresh) if fresh else None
        stats = getattr(self, "semantic", None)
        if stats is not None:
            stats["proposed"] = len(report.added) if report else 0
            stats["proposals_merged"] = len(report.merged) if report else 0

    def _outputs(self, groups: dict[str, Facts], kinds: dict[str, str], shas: dict[str, str],
                 cache: dict[str, CachedGroup]) -> tuple[list[GroupOutput], int]:
        linker = Linker(groups)
        links, external = linker.link()
        tier2: dict[str, list[dict[str, Any]]] = {}
        shared: dict[str, list[dict[str, Any]]] = {EXTERNAL: external}
        shared_edges: dict[str, list[dict[str, Any]]] = {}
        if 2 in self.opts.tiers:
            imports = [(e["source"], e["target"], rel) for rel, es in links.items() for e in es
                       if e["type"] == "imports" and linker.types.get(e["target"]) in ("module", "package")]
            structural = patterns.structural(groups, imports)
            cues = patterns.CueExtractor(linker._symbol)
            phrases = cues.run(groups)
            tier2 = {rel: structural.get(rel, []) + phrases.get(rel, []) for rel in set(structural) | set(phrases)}
            used = patterns.used_patterns(structural)
            shared[patterns.PATTERNS] = patterns.pattern_nodes(used)
            shared[patterns.CONCEPTS] = list(cues.concepts.values())
            shared_edges[patterns.PATTERNS] = patterns.pattern_edges(used)
        outputs: list[GroupOutput] = []
        for rel in sorted(groups):
            f = groups[rel]
            sha = shas.get(rel) or (cache[rel].sha256 if rel in cache else "")
            outputs.append(GroupOutput(rel, sha, kinds[rel], f.to_dict(), f.nodes,
                                       f.edges + links.get(rel, []) + tier2.get(rel, [])))
        for name, nodes in shared.items():
            outputs.append(GroupOutput(name, "", "@", {}, nodes, shared_edges.get(name, [])))
        return outputs, _dedupe(outputs)

    # -- after the write ----------------------------------------------------------------------------
    def after(self, kg: KG, report: IngestReport, redo: bool = False) -> IngestReport:
        """Validation, dimensions and embedding of what the run wrote (``redo``: of what a killed run
        wrote, even when this one wrote nothing)."""
        extra: dict[str, Any] = {"semantic": getattr(self, "semantic", None)}
        written = report.writes.groups_written or redo
        if self.opts.validate and (report.writes.groups_written or report.writes.groups_deleted):
            v = kg.validate(max_examples=5)
            extra["validation"] = {"ok": v.ok, "errors": v.errors, "warnings": v.warnings, "infos": v.infos,
                                   "issues": [i.to_dict() for i in v.issues][:12]}
            self._lap("validate")
        if self.opts.dimensions and written:
            d = kg.infer_dimensions()
            extra["dimensions"] = {"nodes_written": d.nodes_written, "inferred": len(d.inferred)}
            self._lap("dimensions")
        if self.opts.embed and written:
            extra["embedding"] = self._embed(kg)
            self._lap("embed")
        return IngestReport(**{**report.__dict__, **extra, "seconds": dict(self.seconds),
                               "notes": tuple(self.notes)})

    def _embed(self, kg: KG) -> dict[str, Any]:
        if kg.embed_status().search_model:  # already embedded: the changed nodes only, by content hash
            return {"model": kg.embed_status().search_model, "embedded": kg.engine.embed_changed()}
        state = {"total": 0, "done": 0}

        def total(n: int) -> None:
            state["total"] = n

        def step(n: int) -> None:
            state["done"] += n
            self.progress("embed", state["done"], state["total"])
        try:
            return embed_after_import(kg, self.opts.model, progress=step, total=total).to_dict()
        except KGOSError as exc:  # the ingest stands; embedding can be redone with `kgos embed`
            return {"skipped": "failed", "error": str(exc)}


def _dedupe(outputs: list[GroupOutput]) -> int:
    """Nodes: first group wins. Edges: endpoints must exist, first group owns a (source, target, type).
    Returns how many edges were dropped for a missing endpoint."""
    nodes: set[str] = set()
    for g in outputs:
        unique = []
        for n in g.nodes:
            if n["id"] not in nodes:
                nodes.add(n["id"])
                unique.append(n)
        g.nodes = unique
    seen: set[tuple[str, str, str]] = set()
    dropped = 0
    for g in outputs:
        kept = []
        for e in g.edges:
            key = (e["source"], e["target"], e["type"])
            if e["source"] not in nodes or e["target"] not in nodes:
                dropped += 1
            elif key not in seen and e["source"] != e["target"]:
                seen.add(key)
                kept.append(e)
        g.edges = kept
    return dropped


def ingest_into(ws: Workspace, db_id: str, paths: Sequence[str | Path], provider: ChatProvider | None = None,
                progress: Progress | None = None, **options: Any) -> IngestReport:
    """``ingest_into(ws, db_id, paths, tiers=(1, 2), include=..., ...)``: ``options`` are ``IngestOptions`` fields."""
    try:
        opts = IngestOptions(**options)
    except TypeError as exc:
        raise InvalidArgument(f"unknown ingest option ({exc}); options are the fields of IngestOptions") from None
    return ingest(ws, db_id, paths, opts, provider, progress)


def watch(ws: Workspace, db_id: str, paths: Sequence[str | Path], options: IngestOptions | None = None,
          interval: float = 2.0, provider: ChatProvider | None = None) -> Iterator[IngestReport]:
    """Ingest now, then again whenever a file under ``paths`` changes (polled every ``interval`` s)."""
    opts = (options or IngestOptions()).checked()
    last = None
    while True:
        state = _fingerprint(paths, Selection(opts.include, opts.exclude, opts.max_bytes))
        if state != last:
            yield ingest(ws, db_id, paths, opts, provider)
            last = state
        time.sleep(interval)


def _fingerprint(paths: Sequence[str | Path], selection: Selection) -> frozenset[tuple[str, int, int]]:
    found, _ = walk(paths, selection)
    out = set()
    for path, _, rel in found:
        try:
            st = path.stat()
        except OSError:
            continue
        out.add((rel, st.st_mtime_ns, st.st_size))
    return frozenset(out)


LLM_ORIGIN = "ingest.llm"


def llm_drafts(outputs: list[GroupOutput], changed: set[str]) -> list[ProposalDraft]:
    """Take tier 3's nodes and edges out of ``outputs`` (they are not written) and return the review
    queue drafts of the changed groups': each with its source, its evidence (the quote, its span, the
    file) and its confidence (the model's edge weight; 0.8, the tier's ``mentions`` weight, for a node)."""
    drafts: list[ProposalDraft] = []
    for g in outputs:
        nodes = [n for n in g.nodes if n["properties"].get("tier") == 3]
        edges = [e for e in g.edges if e["properties"].get("tier") == 3]
        if not (nodes or edges):
            continue
        g.nodes = [n for n in g.nodes if n["properties"].get("tier") != 3]
        g.edges = [e for e in g.edges if e["properties"].get("tier") != 3]
        if g.rel not in changed:
            continue
        for n in nodes:
            props = n["properties"]
            drafts.append(ProposalDraft(n["id"], "", n["type"], LLM_ORIGIN, 0.8, {"llm": 0.8}, _evidence(g.rel, props),
                                        {"name": n["name"], "description": n["description"], "properties": props},
                                        kind="node"))
        for e in edges:
            props, weight = e["properties"], float(e["weight"])
            drafts.append(ProposalDraft(e["source"], e["target"], e["type"], LLM_ORIGIN, weight, {"llm": weight},
                                        _evidence(g.rel, props), {"weight": weight, "properties": props}))
    return drafts


def _evidence(rel: str, props: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"file": rel}
    for key in ("evidence", "evidence_span", "from_node"):
        if props.get(key) is not None:
            out[key] = props[key]
    return out
