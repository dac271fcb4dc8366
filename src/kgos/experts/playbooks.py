"""Playbook skills (spec/000 section 9, stage 3): markdown files whose sections are injected into
an expert's prompt when they match the query.

Playbooks are ``<name>.md`` files in ``$KGOS_HOME/playbooks`` (the user's, which win) and in the
package's ``kgos/data/playbooks`` (the demo's). A playbook splits into sections at its ``#``
headings; sections are ranked by BM25 (the engine's own ``TextIndex``, heading counted twice) and
an expert only ever sees the playbooks named in its ``playbook_skills``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument, KGOSError, PlaybookNotFound
from ..index.text import TextConfig, TextIndex
from .config import SKILL_RE

HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class Section:
    playbook: str
    heading: str
    text: str
    preamble: bool = False  # the text under the title, before the first section


@dataclass(frozen=True)
class SkillExcerpt:
    """A section chosen for a query, with its BM25 score."""

    playbook: str
    heading: str
    text: str
    score: float
    # how well the section fits the question, by meaning: the cosine of the question with the
    # section's heading and first sentence, by ``embedder`` (the model that ranked the KG); None when
    # no model was at hand. The offline answer shows a tip only above that model's calibrated cut.
    fit: float | None = None
    embedder: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"playbook": self.playbook, "heading": self.heading, "text": self.text, "score": round(self.score, 4)}


def split_sections(name: str, markdown: str) -> list[Section]:
    """Sections at headings (text before the first heading belongs to the playbook's title)."""
    sections: list[Section] = []
    heading, lines, title, first = name, [], False, True  # title: under the document's leading "# Title"
    for line in markdown.splitlines():
        m = HEADING_RE.match(line)
        if not m:
            lines.append(line)
            continue
        if "".join(lines).strip():
            sections.append(Section(name, heading, "\n".join(lines).strip(), title))
        title = first and len(m.group(1)) == 1
        heading, lines, first = m.group(2) or name, [], False
    if "".join(lines).strip():
        sections.append(Section(name, heading, "\n".join(lines).strip(), title and bool(sections)))
    return [s if s is not sections[0] or len(sections) > 1 else replace(s, preamble=False) for s in sections]
    return sections


class PlaybookLibrary:
    """The playbooks a workspace can inject."""

    def __init__(self, home: Path | None) -> None:
        self.folders = [p for p in (home / "playbooks" if home else None, _bundled()) if p is not None]

    def names(self) -> list[str]:
        return sorted({p.stem for folder in self.folders if folder.is_dir() for p in folder.glob("*.md")
                       if SKILL_RE.fullmatch(p.stem)})

    def path(self, name: str) -> Path:
        if not isinstance(name, str) or not SKILL_RE.fullmatch(name):
            raise InvalidArgument(f"invalid playbook name {name!r}: use lowercase letters, digits, '-' and '_'")
        for folder in self.folders:
            candidate = folder / f"{name}.md"
            if candidate.is_file():
                return candidate
        raise PlaybookNotFound(f"no playbook named '{name}'; known: {', '.join(self.names()) or 'none'} "
                               f"(add {name}.md to {self.folders[0]})")

    def read(self, name: str) -> str:
        return _read(self.path(name), name)

    def sections(self, names: list[str]) -> list[Section]:
        """The sections of the named playbooks that exist (missing ones are skipped)."""
        return list(_indexed(self._files(names)).sections)

    def _files(self, names: list[str]) -> tuple[tuple[str, str, int], ...]:
        """(name, path, mtime) of the named playbooks that exist: the key of their cached index."""
        found = []
        for name in names:
            try:
                path = self.path(name)
            except PlaybookNotFound:
                continue
            found.append((name, str(path), path.stat().st_mtime_ns))
        return tuple(found)

    def relevant(self, query: str, allowed: list[str], limit: int = 3, max_chars: int = 2_000) -> list[SkillExcerpt]:
        """The best-matching sections of the ``allowed`` playbooks, within ``max_chars`` in all."""
        if not allowed or not query.strip():
            return []
        cached = _indexed(self._files(allowed))
        sections, index = cached.ranked, cached.index
        if index is None:
            return []
        scores = index.scores(index.query_terms(query))
        chosen, used = [], 0
        for i in sorted(range(len(sections)), key=lambda i: (-scores[i], i))[:limit]:
            if scores[i] <= 0 or used >= max_chars:
                break
            text = sections[i].text[: max_chars - used]
            used += len(text)
            chosen.append(SkillExcerpt(sections[i].playbook, sections[i].heading, text, float(scores[i])))
        return chosen


def with_fit(ws: Any, kgs: tuple[str, ...], embedder: str, query: str,
             skills: list[SkillExcerpt]) -> tuple[SkillExcerpt, ...]:
    """``skills`` with their fit to ``query`` measured by ``embedder``, the model that ranked one of
    ``kgs`` (unmeasured when none of them has it: then no tip is shown offline)."""
    engine = _engine(ws, kgs, embedder) if skills and embedder else None
    if engine is None:
        return tuple(skills)
    from .answer import first_sentence
    try:
        q = engine.embed_query(query)
        return tuple(replace(s, fit=float(q @ engine.embed_query(f"{s.heading}. {first_sentence(s.text)}")),
                             embedder=embedder) for s in skills)
    except (KGOSError, OSError, ValueError):  # no usable model here: the tips stay unmeasured
        return tuple(skills)


def _engine(ws: Any, kgs: tuple[str, ...], embedder: str) -> Any:
    """The retrieval engine of the first local KG of ``kgs`` whose query model is ``embedder``."""
    for db_id in kgs:
        try:
            engine = ws.kg(db_id).engine if ws.exists(db_id) else None
            if engine is not None and getattr(engine.query_embedder(), "name", None) == embedder:
                return engine
        except (KGOSError, OSError, ValueError):
            continue
    return None


@dataclass(frozen=True)
class _Indexed:
    sections: tuple[Section, ...]  # all of them, in file order
    ranked: tuple[Section, ...]    # the ones a query may get: an introduction only when nothing else
    index: TextIndex | None        # BM25 over ``ranked``


@lru_cache(maxsize=64)
def _indexed(files: tuple[tuple[str, str, int], ...]) -> _Indexed:
    """Cached until a file changes: its mtime is part of the key."""
    sections = tuple(s for name, path, _ in files for s in split_sections(name, _read(Path(path), name)))
    ranked = tuple(s for s in sections if not s.preamble) or sections
    docs = [(s.heading, s.heading, s.playbook, s.text) for s in ranked]
    return _Indexed(sections, ranked, TextIndex.build(docs, TextConfig()) if docs else None)


def _read(path: Path, name: str) -> str:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise InvalidArgument(f"playbook '{name}' is larger than {MAX_FILE_BYTES:,} bytes")
    return path.read_text(encoding="utf-8", errors="replace")


def _bundled() -> Path:
    return Path(str(resources.files("kgos.data") / "playbooks"))
