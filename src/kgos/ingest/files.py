"""Which files an ingest reads: walking the given roots, and refusing what must not be read.

A root is a folder or a single file. Walking follows symlinks only while they stay inside the root they
were found in (a link that leaves it is refused, a loop is cut), honours ``--include`` / ``--exclude``
globs (matched against the path relative to the root, ``**`` allowed) and skips version-control and
cache folders. Every file is then read once: over the size cap, binary (a NUL byte in the first 8 KB)
or not UTF-8 (for text kinds) means skipped, with the reason; the rest carry their text and its sha256,
the identity incremental re-ingest compares.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument
from ..plugins import entries

# extension -> kind; the kind picks the extractor
KINDS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
    ".pdf": "pdf", ".txt": "text", ".rst": "text",
}
BINARY_KINDS = frozenset({"pdf"})
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "_sources"})
DEFAULT_MAX_BYTES = 5_000_000  # a 5 MB source file is generated or data, not knowledge worth a node per key
# the hard maximum of max_bytes: parsing costs ~150x a file's size (a 12 MB .py took 1.8 GB), so no
# request or option may raise the cap past 10 MB (docs/limits.md)
MAX_FILE_BYTES = 10_000_000
SNIFF = 8192


@dataclass(frozen=True)
class SourceFile:
    """A file to extract: ``rel`` is its key in the KG (root folder name + path inside it, ``/``-separated)."""

    path: Path
    rel: str
    kind: str
    sha256: str
    size: int
    text: str | None = None  # None for binary kinds (PDF): extractors read ``data``
    data: bytes | None = None

    @property
    def lines(self) -> int:
        return self.text.count("\n") + 1 if self.text else 0


@dataclass(frozen=True)
class Skipped:
    """A file or path left out, and why (shown in the report)."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class Selection:
    """What to read from the roots."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES

    def excluded(self, rel: str, folder: bool = False) -> bool:
        """An ``--exclude`` glob matches the path (a folder also as ``rel/``: ``_static/*`` leaves it out)."""
        return any(_match(rel, g) or (folder and _match(rel + "/", g)) for g in self.exclude)

    def wants(self, rel: str) -> bool:
        if self.include and not any(_match(rel, g) for g in self.include):
            return False
        return not any(_match(rel, g) for g in self.exclude)


def _match(rel: str, glob: str) -> bool:
    """``fnmatch`` on the relative path, on its base name, and with ``**/`` meaning any depth (or none)."""
    name = rel.rsplit("/", 1)[-1]
    return (fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(name, glob)
            or (glob.startswith("**/") and fnmatch.fnmatchcase(rel, glob[3:])))


def root_label(root: Path) -> str:
    """A root's key prefix: its folder name (a single file's parent name), so two roots rarely collide."""
    return (root.name if root.is_dir() else root.parent.name) or "root"


def walk(roots: Iterable[str | Path], selection: Selection) -> tuple[list[tuple[Path, Path, str]], list[Skipped]]:
    """``(path, root, rel)`` of every candidate file under ``roots`` (sorted), and what was refused."""
    found: list[tuple[Path, Path, str]] = []
    skipped: list[Skipped] = []
    for raw in roots:
        root = Path(raw).expanduser()
        if not os.path.lexists(root):
            skipped.append(Skipped(str(raw), "does not exist"))
            continue
        real = root.resolve()
        if real.is_file():
            found.append((real, real.parent, f"{root_label(real)}/{real.name}"))
        elif real.is_dir():
            found.extend(_walk_dir(real, selection, skipped))
        else:
            skipped.append(Skipped(str(raw), "not a regular file or folder"))
    return _unique_files(found, skipped), skipped


def _unique_files(found: list[tuple[Path, Path, str]], skipped: list[Skipped]) -> list[tuple[Path, Path, str]]:
    """One entry per real file: a symlink to a file already found (or two roots holding it) is skipped."""
    first: dict[Path, str] = {}
    out = []
    for path, root, rel in sorted(set(found), key=lambda f: f[2]):
        if path in first:
            skipped.append(Skipped(rel, f"same file as {first[path]} (symlink)"))
            continue
        first[path] = rel
        out.append((path, root, rel))
    return out


def _walk_dir(root: Path, selection: Selection, skipped: list[Skipped]) -> Iterator[tuple[Path, Path, str]]:
    label = root_label(root)
    seen_dirs = {root}
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(str(folder), f"cannot list folder ({exc.strerror})"))
            continue
        for entry in entries:
            yield from _entry(root, label, Path(entry.path), entry.is_symlink(), selection, skipped, seen_dirs, stack)


def _entry(root: Path, label: str, path: Path, is_link: bool, selection: Selection, skipped: list[Skipped],
           seen_dirs: set[Path], stack: list[Path]) -> Iterator[tuple[Path, Path, str]]:
    rel = path.relative_to(root).as_posix()
    if selection.excluded(rel, folder=path.is_dir()):
        return  # left out on purpose: not walked, not reported
    try:
        real = path.resolve(strict=True) if is_link else path
    except (OSError, RuntimeError):  # a dangling link or a loop of links
        skipped.append(Skipped(f"{label}/{rel}", "broken symlink or symlink loop"))
        return
    if is_link and not real.is_relative_to(root):
        skipped.append(Skipped(f"{label}/{rel}", "symlink leaves the ingested root (refused)"))
        return
    if real.is_dir():
        if path.name in SKIP_DIRS or path.name.startswith("."):
            return
        if real in seen_dirs:
            skipped.append(Skipped(f"{label}/{rel}", "symlink loop (folder already walked)"))
            return
        seen_dirs.add(real)
        stack.append(path)
    elif real.is_file() and selection.wants(rel):
        yield real, root, f"{label}/{rel}"


@dataclass(frozen=True)
class Extractor:
    """One file kind's extractor, as the ``register_extractors`` hook returns it (kgos.plugins):
    ``extract(source, root) -> Facts`` for the files whose name ends in one of ``suffixes``
    (``binary``: read as bytes, ``source.data``, not decoded as text)."""

    extract: Callable[..., Any]
    suffixes: tuple[str, ...] = ()
    binary: bool = False


def extractors() -> dict[str, Extractor]:
    """Every extractor by kind: the built-ins (kgos.ingest.ingestion), then those of plugins."""
    return {e.name: e.value for e in entries("extractors") if isinstance(e.value, Extractor)}


def kind_of(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in KINDS:
        return KINDS[suffix]
    return next((kind for kind, ex in extractors().items() if suffix in ex.suffixes), None)


def read(path: Path, rel: str, selection: Selection) -> SourceFile | Skipped:
    """The file's bytes checked and decoded, or why it is skipped. Never raises for a bad file."""
    kind = kind_of(path)
    if kind is None:
        return Skipped(rel, f"unsupported file type ({path.suffix or 'no extension'})")
    try:
        size = path.stat().st_size
        if size > selection.max_bytes:
            return Skipped(rel, f"over the size cap ({size:,} > {selection.max_bytes:,} bytes)")
        data = path.read_bytes()
    except OSError as exc:
        return Skipped(rel, f"cannot read ({exc.strerror})")
    digest = hashlib.sha256(data).hexdigest()
    if kind in BINARY_KINDS or kind not in KINDS.values() and extractors()[kind].binary:
        return SourceFile(path, rel, kind, digest, size, data=data)
    if b"\0" in data[:SNIFF]:
        return Skipped(rel, "binary content")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Skipped(rel, f"not UTF-8 (byte {exc.start})")
    return SourceFile(path, rel, kind, digest, size, text=text)


def check_globs(globs: Iterable[str] | None, what: str) -> tuple[str, ...]:
    out = tuple(globs or ())
    for g in out:
        if not isinstance(g, str) or not g.strip():
            raise InvalidArgument(f"{what} globs must be non-empty strings, not {g!r}")
    return out
