"""A folder of documents searched by BM25 and by embeddings: the research pipeline's corpus backend.

Files (text, Markdown, reStructuredText, HTML as its text, source code; anything that decodes as UTF-8
and is at most ``MAX_FILE_BYTES``) are cut into chunks of whole paragraphs of about ``chunk_chars``
characters; each chunk keeps its character span in the document's text so a claim can cite it. The
BM25 side is the engine's own ``kgos.index.text.TextIndex``; the vector side is one float32 matrix of
unit rows from a ``kgos.embed`` embedder. A built index is cached per (content fingerprint, chunking,
embedder) in memory and under the workspace cache, so a second run over an unchanged folder reads it.

A server's run indexes its corpus in a capped worker process (``worker.py``; ``open_corpus(...,
check=...)``): the index build holds the GIL for up to 0.9 s per C call and takes ~22x the text in memory
(1.4 GB at the bound), neither of which the server may pay (docs/limits.md, row 10f). The worker saves
the index under the cache folder and the server maps it (``np.load(mmap_mode="r")``): chunks are rows
of an int64 table over one UTF-8 blob, read when a hit is shown, so opening a corpus at its bound costs
milliseconds of GIL and no private memory per chunk (before: a 1.5 s JSON parse and 160,000 strings).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np

from ..embed.registry import get_embedder
from ..errors import InputTooLarge, InvalidArgument, WorkerFailed
from ..index.text import TextConfig, TextIndex
from .extract import prose_only

__all__ = ["MAX_CORPUS_BYTES", "MAX_FILE_BYTES", "Chunk", "ChunkTable", "Corpus", "LazyCorpus", "chunk_text", "document_text",
           "index_job", "open_corpus"]

MAX_FILE_BYTES = 2_000_000
MAX_FILES = 50_000
# the text a corpus may hold in all (its files up to MAX_FILE_BYTES each, summed): indexing takes ~22x
# the text (1.4 GB at the bound, in a worker for the server's runs) and the index maps ~6x, so 50,000
# files of 2 MB would otherwise ask for hundreds of GB
MAX_CORPUS_BYTES = 64_000_000
MAX_OPEN = 8
NICE = 10  # the index worker's priority, as the embedding thread's: on 2 busy cores the routes win the CPU
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv"}
_lock = threading.Lock()
_open: dict[str, Corpus] = {}


@dataclass(frozen=True)
class Chunk:
    """A passage of one document: ``path`` relative to the corpus folder, ``start``/``end`` its
    character span in the document's text (HTML: in its extracted text)."""

    id: str
    path: str
    title: str
    start: int
    end: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _TextOfHTML(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._skip += tag in ("script", "style")
        self._in_title = tag == "title"
        if tag in ("p", "div", "br", "li", "h1", "h2", "h3", "h4", "pre", "dt", "dd", "tr", "section"):
            self.parts.append("\n\n" if tag in ("p", "h1", "h2", "h3", "h4", "pre", "section") else "\n")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style") and self._skip > 0
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def document_text(path: Path) -> tuple[str, str] | None:
    """(title, text) of a file, or None when it is not text (binary, too large, not UTF-8)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in raw[:4096]:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if path.suffix.lower() in (".html", ".htm"):
        parser = _TextOfHTML()
        parser.feed(text)
        body = "".join(parser.parts)
        lines = [" ".join(line.split()) for line in body.splitlines()]
        return (" ".join(parser.title.split()) or path.stem, "\n".join(lines).strip())
    return (path.stem, text)


def chunk_text(text: str, chunk_chars: int = 700) -> list[tuple[int, int]]:
    """Spans of chunks made of whole paragraphs (blank-line separated) up to ``chunk_chars``; a longer
    paragraph is cut at the last sentence end or space before the limit."""
    spans: list[tuple[int, int]] = []
    start = end = None
    for p_start, p_end in _paragraphs(text):
        for s, e in _pieces(text, p_start, p_end, chunk_chars):
            if start is not None and e - start > chunk_chars:
                spans.append((start, end))  # type: ignore[arg-type]
                start = None
            start = s if start is None else start
            end = e
    if start is not None:
        spans.append((start, end))  # type: ignore[arg-type]
    return spans


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    pos = 0
    for block in text.split("\n\n"):
        lead = len(block) - len(block.lstrip())
        body = block.strip()
        if body:
            yield pos + lead, pos + lead + len(body)
        pos += len(block) + 2


def _pieces(text: str, start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    while end - start > limit:
        window = text[start:start + limit]
        cut = max(window.rfind(". "), window.rfind("\n"))
        cut = cut + 1 if cut > limit // 3 else (window.rfind(" ") if window.rfind(" ") > limit // 3 else limit)
        yield start, start + cut
        start += cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        yield start, end


class ChunkTable(Sequence[Chunk]):
    """The chunks of a corpus as one int64 table (file, number in the file, start, end, and the byte
    span of the chunk's text in ``blob``, its UTF-8 concatenation), a ``Chunk`` made when asked for.
    ``blob`` is ``bytes`` or a read-only map of the saved file: a corpus at its bound holds 160,000
    chunks, which as objects took 1.5 s of one JSON parse to load and ~0.3 GB of the server's heap."""

    def __init__(self, files: Sequence[str], titles: Sequence[str], rows: np.ndarray, blob: Any) -> None:
        self.files, self.titles, self.rows, self.blob = list(files), list(titles), rows, blob

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> ChunkTable:
        """The table of chunks built in memory (ids ``path#number``, as ``_build`` makes them)."""
        at: dict[str, int] = {}
        titles: list[str] = []
        rows = np.zeros((len(chunks), 6), np.int64)
        parts, offset = [], 0
        for i, c in enumerate(chunks):
            if c.path not in at:
                at[c.path] = len(at)
                titles.append(c.title)
            data = c.text.encode("utf-8")
            rows[i] = (at[c.path], int(c.id.rsplit("#", 1)[1]), c.start, c.end, offset, offset + len(data))
            parts.append(data)
            offset += len(data)
        return cls(list(at), titles, rows, b"".join(parts))

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def __getitem__(self, i: int) -> Chunk:  # type: ignore[override]
        f, number, start, end, lo, hi = (int(v) for v in self.rows[i])
        path = self.files[f]
        return Chunk(f"{path}#{number}", path, self.titles[f], start, end, bytes(self.blob[lo:hi]).decode("utf-8"))

    @property
    def file_of(self) -> np.ndarray:
        """The file number of each chunk."""
        return self.rows[:, 0] if len(self) else np.zeros(0, np.int64)


class Corpus:
    """The chunks of a folder with their BM25 index and embedding matrix."""

    def __init__(self, root: Path, fingerprint: str, chunks: ChunkTable, text_index: TextIndex,
                 vectors: np.ndarray, embedder: str) -> None:
        self.root, self.fingerprint, self.chunks = root, fingerprint, chunks
        self.text_index, self.vectors, self.embedder_spec = text_index, vectors, embedder
        self._masks: dict[tuple[str, str], np.ndarray] = {}
        self.text_bytes = len(chunks.blob)  # what the open-corpus cache counts

    def __len__(self) -> int:
        return len(self.chunks)

    def search_scored(self, query: str, k: int = 10, backend: str = "bm25",
                      allowed: np.ndarray | None = None) -> list[tuple[Chunk, float]]:
        """Top ``k`` (chunk, score) by ``backend`` (``bm25`` or ``vector``), among ``allowed`` rows."""
        if not self.chunks:
            return []
        return _top(self._scores(query, backend, allowed), k, self.chunks)

    def count_matches(self, query: str, backend: str = "bm25", allowed: np.ndarray | None = None) -> int:
        """How many chunks score above zero: the size of the candidate set (too broad or too narrow)."""
        if not self.chunks:
            return 0
        scores = self._scores(query, backend, allowed)
        # cosine is positive for most chunks: count those at least half as close as the best
        floor = 0.5 * float(scores.max()) if backend == "vector" and scores.size else 0.0
        return int(np.count_nonzero(scores > max(floor, 0.0)))

    def _scores(self, query: str, backend: str, allowed: np.ndarray | None) -> np.ndarray:
        if backend == "bm25":
            scores = self.text_index.scores(self.text_index.query_terms(query))
        elif backend == "vector":
            q = get_embedder(self.embedder_spec).embed_query(query)
            scores = self.vectors @ q
        else:
            raise InvalidArgument(f"corpus backend must be bm25 or vector, not {backend!r}")
        if allowed is not None:
            scores = np.where(allowed, scores, 0.0)
        return scores

    def routed(self, backend: str, routing: Mapping[str, Sequence[str]]) -> np.ndarray:
        """Rows whose file is routed to ``backend`` (``fusion.routed_backends``), computed once per routing."""
        key = (backend, json.dumps(routing, sort_keys=True))
        if key not in self._masks:
            from .fusion import routed_backends
            keep = [i for i, p in enumerate(self.chunks.files) if backend in routed_backends(p, routing)]
            self._masks[key] = np.isin(self.chunks.file_of, np.asarray(keep, np.int64))
        return self._masks[key]


def _top(scores: np.ndarray, k: int, chunks: Sequence[Chunk]) -> list[tuple[Chunk, float]]:
    live = np.flatnonzero(scores > 0)
    if live.size > k:
        live = live[np.argpartition(-scores[live], k - 1)[:k]]
    # ties by chunk order: deterministic across runs
    order = sorted(live.tolist(), key=lambda i: (-float(scores[i]), i))
    return [(chunks[i], round(float(scores[i]), 6)) for i in order]


def files_of(root: Path) -> list[Path]:
    """The files of ``root`` (sorted, hidden and tool folders skipped), at most ``MAX_FILES``."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if not f.startswith("."))
        if len(found) > MAX_FILES:
            raise InvalidArgument(f"corpus {root} has more than {MAX_FILES} files: point at a smaller folder")
    _check_total(root, found)
    return found


def _check_total(root: Path, files: Sequence[Path]) -> None:
    """Refuse a corpus whose readable files hold more than ``MAX_CORPUS_BYTES``, before any is read."""
    total = 0
    for f in files:
        try:
            size = f.stat().st_size
        except OSError:
            continue
        total += size if size <= MAX_FILE_BYTES else 0  # a larger file is skipped unread
        if total > MAX_CORPUS_BYTES:
            raise InputTooLarge(f"corpus {root} holds more than {MAX_CORPUS_BYTES:,} bytes of files up to "
                                f"{MAX_FILE_BYTES:,} bytes each (MAX_CORPUS_BYTES): point at a smaller folder")


def fingerprint(root: Path, files: Sequence[Path]) -> str:
    """sha256 over (relative path, sha256 of bytes) of every file: the corpus's content identity."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        try:
            h.update(hashlib.sha256(f.read_bytes()).digest())
        except OSError:
            h.update(b"unreadable")
    return "sha256:" + h.hexdigest()


def open_corpus(root: str | Path, cache_dir: Path | None = None, embedder: str = "default",
                chunk_chars: int = 700, check: Callable[[], None] | None = None) -> Corpus:
    """The indexed corpus of folder ``root`` (built, or read from the cache when unchanged). With
    ``check`` (a server's run) the build runs in a capped worker process, which ``check`` may stop by
    raising; ``InputTooLarge`` when it runs out of its memory ceiling (``KGOS_JOB_MEMORY_MB``)."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise InvalidArgument(f"corpus folder {root} does not exist or is not a folder")
    files = files_of(path)
    spec = get_embedder(embedder).name
    fp = fingerprint(path, files)
    key = hashlib.sha256(f"{fp}|{chunk_chars}|{spec}|{embedder}|table1".encode()).hexdigest()[:24]
    with _lock:
        if key in _open:
            return _open[key]
    corpus = _load(path, fp, cache_dir / key, embedder) if cache_dir else None
    if corpus is None and cache_dir and check is not None:
        corpus = _built_in_worker(path, files, fp, embedder, chunk_chars, cache_dir / key, check)
    if corpus is None:
        corpus = _build(path, files, fp, embedder, chunk_chars)
        if cache_dir:
            _save(corpus, cache_dir / key)
    with _lock:
        _open[key] = corpus
        # a long-lived server keeps the few corpora it uses, not all: at most MAX_OPEN, and no more
        # text than one corpus at its bound (the newest is always kept)
        while len(_open) > MAX_OPEN or (len(_open) > 1 and sum(c.text_bytes for c in _open.values()) > MAX_CORPUS_BYTES):
            _open.pop(next(iter(_open)))
    return corpus


def _built_in_worker(root: Path, files: Sequence[Path], fp: str, embedder: str, chunk_chars: int, folder: Path,
                     check: Callable[[], None]) -> Corpus:
    """Build and save the index in a capped worker process, then map what it saved."""
    from ..worker import memory_ceiling_mb, run_in_worker
    try:
        run_in_worker(index_job, (str(root), [str(f) for f in files], fp, embedder, chunk_chars, str(folder)),
                      lambda *_: check(), check=check, nice=NICE)
    except InputTooLarge as exc:  # the worker's message speaks of ingest's options: say what to do here
        raise InputTooLarge(f"indexing corpus {root} ran out of its worker's memory ceiling of {memory_ceiling_mb():,} MB "
                            "(KGOS_JOB_MEMORY_MB): point at a smaller folder or raise the ceiling") from exc
    corpus = _load(root, fp, folder, embedder)
    if corpus is None:
        raise WorkerFailed(f"the corpus index of {root} was not readable after its worker built it ({folder})")
    return corpus


def index_job(root: str, files: list[str], fp: str, embedder: str, chunk_chars: int, folder: str,
              progress: Callable[[str, int, int], None]) -> dict[str, Any]:
    """The worker's side (module level, so a spawned process can import it): build, save, count."""
    corpus = _build(Path(root), [Path(f) for f in files], fp, embedder, chunk_chars)
    _save(corpus, Path(folder))
    return {"chunks": len(corpus), "pid": os.getpid()}


class LazyCorpus:
    """A run's corpus, opened (indexed and embedded: minutes for a large folder) at its first use, in
    the run's own thread, rather than in the request that starts the run; its fingerprint, which
    the run's manifest records at once, costs a walk and a hash of the files. ``isolate(check)``: the
    index is built in a capped worker process (a server's runs), ``check`` raising to stop it."""

    def __init__(self, root: str | Path, cache_dir: Path | None = None, embedder: str = "default") -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise InvalidArgument(f"corpus folder {root} does not exist or is not a folder")
        self.fingerprint = fingerprint(path, files_of(path))
        self._args = (path, cache_dir, embedder)
        self._check: Callable[[], None] | None = None
        self._corpus: Corpus | None = None
        self._lock = threading.Lock()

    def isolate(self, check: Callable[[], None]) -> None:
        self._check = check

    def opened(self) -> Corpus:
        with self._lock:
            if self._corpus is None:
                self._corpus = open_corpus(*self._args, check=self._check)
            return self._corpus

    def __getattr__(self, name: str) -> Any:  # search_scored, routed, chunks...: the opened corpus's
        return getattr(self.opened(), name)

    def __len__(self) -> int:
        return len(self.opened())

    def __bool__(self) -> bool:  # ``if corpus`` must not open it
        return True


def _build(root: Path, files: Sequence[Path], fp: str, embedder: str, chunk_chars: int) -> Corpus:
    chunks: list[Chunk] = []
    for f in files:
        doc = document_text(f)
        if doc is None:
            continue
        title, text = doc
        text = prose_only(text)  # code, shell, tables, box drawing blanked, offsets kept (issue 29)
        rel = f.relative_to(root).as_posix()
        for i, (s, e) in enumerate(chunk_text(text, chunk_chars)):
            chunks.append(Chunk(f"{rel}#{i}", rel, title, s, e, text[s:e]))
    index = TextIndex.build([(c.title, c.path, "", c.text) for c in chunks], TextConfig())
    vectors = (get_embedder(embedder).embed([c.text for c in chunks]) if chunks
               else np.zeros((0, 1), np.float32))
    return Corpus(root, fp, ChunkTable.of(chunks), index, np.ascontiguousarray(vectors, np.float32), embedder)


# the saved index: flat arrays a reader maps (np.load mmap_mode="r"), no pickles, no JSON per chunk
def _save(corpus: Corpus, folder: Path) -> None:
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    table = corpus.chunks
    (tmp / "files.json").write_text(json.dumps({"files": table.files, "titles": table.titles}), encoding="utf-8")
    np.save(tmp / "chunks.npy", np.ascontiguousarray(table.rows, np.int64))
    (tmp / "text.bin").write_bytes(bytes(table.blob))
    np.save(tmp / "vectors.npy", corpus.vectors)
    corpus.text_index.save_flat(tmp)
    try:
        tmp.rename(folder)
    except OSError:  # another process saved it first
        pass


def _load(root: Path, fp: str, folder: Path, embedder: str) -> Corpus | None:
    try:
        meta = json.loads((folder / "files.json").read_text(encoding="utf-8"))
        rows = np.load(folder / "chunks.npy", mmap_mode="r")
        size = (folder / "text.bin").stat().st_size
        blob = np.memmap(folder / "text.bin", np.uint8, "r") if size else b""  # an empty file cannot be mapped
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        index = TextIndex.load_mapped(folder, rows.shape[0], TextConfig())
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return Corpus(root, fp, ChunkTable(meta["files"], meta["titles"], rows, blob), index, vectors, embedder)

