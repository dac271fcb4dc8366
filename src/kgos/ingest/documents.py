"""Tier 1 for documents: Markdown, HTML, PDF and plain text become document -> section -> chunk nodes.

* Markdown (markdown-it-py, already a dependency through rich): heading hierarchy, paragraphs and list
  items as chunks, fenced code blocks as ``code_block`` nodes with their language, links, YAML front
  matter (``title``, ``tags`` kept on the document).
* HTML (selectolax, ``kgos[ingest-docs]``): the main region (``main``, ``article``, ``[role=main]``, a
  Sphinx ``div.body``, else ``body`` without ``nav``/``header``/``footer``/``aside``/``script``), then
  its headings, text blocks and links. Spans are block numbers (HTML has no useful lines).
* PDF (pypdf, ``kgos[ingest-docs]``): a section per page, text chunks per page; an encrypted PDF
  without an empty password, or one pypdf cannot read, is skipped with the reason.
* Plain text and reStructuredText: blank-line paragraphs, underlined headings as sections.

Chunks gather consecutive paragraphs of one section up to ``CHUNK_CHARS``. Links become references the
linker resolves to documents and sections (``links_to``); mentions of code symbols and of other
documents' titles are found by the linker in the chunk text (``mentions``).
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..errors import MissingDependency
from ..model import slugify
from . import configs
from .facts import Facts, unique_id
from .files import SourceFile

CHUNK_CHARS = 1200
FRONT_MATTER_RE = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)


class DocBuilder:
    """Accumulates one document's sections, chunks and links into ``facts``."""

    def __init__(self, facts: Facts, rel: str, title: str, kind: str, unit: str = "line", **props: Any) -> None:
        self.facts, self.rel, self.unit = facts, rel, unit  # unit of spans: line, block (HTML) or page (PDF)
        self.doc = f"doc:{rel}"
        self.taken = {self.doc}
        facts.node(f"file:{rel}", rel.rsplit("/", 1)[-1], "file", kind=kind)
        facts.node(self.doc, title, "document", kind=kind, **props)
        facts.edge(f"file:{rel}", self.doc, "contains")
        self.sections: list[tuple[int, str]] = [(0, self.doc)]  # (level, id) of the open headings
        self.pending: list[str] = []
        self.span: list[int] = []
        self.count = 0

    @property
    def section(self) -> str:
        return self.sections[-1][1]

    def heading(self, level: int, text: str, start: int, end: int | None = None) -> None:
        self.flush()
        while len(self.sections) > 1 and self.sections[-1][0] >= level:
            self.sections.pop()
        sid = unique_id(self.taken, f"{self.doc}#{slugify(text)[:80]}")
        self.facts.node(sid, text[:300] or "section", "section", level=level, **self._span(start, end or start))
        self.facts.edge(self.section, sid, "contains")
        self.sections.append((level, sid))

    def _span(self, start: int, end: int) -> dict[str, Any]:
        return {f"{self.unit}_start": start, f"{self.unit}_end": end}

    def text(self, text: str, start: int, end: int) -> None:
        text = text.strip()
        if not text:
            return
        if self.pending and sum(map(len, self.pending)) + len(text) > CHUNK_CHARS:
            self.flush()
        self.pending.append(text)
        self.span = [self.span[0] if self.span else start, end]

    def flush(self) -> None:
        if not self.pending:
            return
        self.count += 1
        text = "\n".join(self.pending)
        cid = unique_id(self.taken, f"{self.section}/c{self.count}")
        self.facts.node(cid, _chunk_name(text), "chunk", text, **self._span(self.span[0], self.span[1]))
        self.facts.edge(self.section, cid, "contains")
        self.pending, self.span = [], []

    def code(self, code: str, language: str, start: int, end: int) -> None:
        self.flush()
        cid = unique_id(self.taken, f"{self.section}/code{start}")
        self.facts.node(cid, f"{language or 'code'} block", "code_block", code, language=language,
                        **self._span(start, end))
        self.facts.edge(self.section, cid, "contains")

    def link(self, href: str, line: int) -> None:
        href = href.strip()
        if href and not href.startswith(("mailto:", "javascript:", "tel:", "data:")):
            self.facts.ref(self.section, "link", href, doc=self.rel, line=line)


def _chunk_name(text: str) -> str:
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return first[:80] + ("..." if len(first) > 80 else "")


# -- Markdown ------------------------------------------------------------------------------------------
def extract_markdown(source: SourceFile) -> Facts:
    from markdown_it import MarkdownIt
    facts = Facts(source.rel)
    text, props, offset = _front_matter(source.text or "")
    tokens = MarkdownIt("commonmark").parse(text)
    title = props.pop("title", None) or _first_heading(tokens) or source.rel.rsplit("/", 1)[-1]
    b = DocBuilder(facts, source.rel, str(title), "markdown", lines=source.lines, sha256=source.sha256, **props)
    for i, tok in enumerate(tokens):
        start, end = ((tok.map[0] + 1 + offset, tok.map[1] + offset) if tok.map else (0, 0))
        if tok.type == "heading_open":
            b.heading(int(tok.tag[1]), tokens[i + 1].content, start, end)
        elif tok.type == "inline" and tokens[i - 1].type != "heading_open":
            b.text(tok.content, start, end)
            for child in tok.children or []:
                if child.type == "link_open":
                    b.link(str(child.attrs.get("href", "")), start)
        elif tok.type in ("fence", "code_block"):
            b.code(tok.content, tok.info.strip().split(" ")[0], start, end)
    b.flush()
    return facts


def _front_matter(text: str) -> tuple[str, dict[str, Any], int]:
    m = FRONT_MATTER_RE.match(text)
    if not m:
        return text, {}, 0
    yaml = configs.yaml_module()
    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        data = None
    props = {k: v for k, v in (data or {}).items() if k in ("title", "tags", "description", "category")
             and isinstance(v, (str, list))} if isinstance(data, dict) else {}
    return text[m.end():], props, text[:m.end()].count("\n")


def _first_heading(tokens: list[Any]) -> str | None:
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            return str(tokens[i + 1].content)
    return None


# -- HTML ----------------------------------------------------------------------------------------------
BLOCKS = "h1,h2,h3,h4,h5,h6,p,pre,li,dt,dd,blockquote"
MAIN = ("main", "article", "[role=main]", "div.body", "div.document", "div#content", "body")


def extract_html(source: SourceFile) -> Facts:
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError:
        raise MissingDependency("selectolax (HTML)", "ingest-docs") from None
    facts = Facts(source.rel)
    tree = LexborHTMLParser(source.text or "")
    tree.strip_tags(["script", "style", "noscript", "nav", "header", "footer", "aside", "form", "svg"])
    main = next((n for n in (tree.css_first(sel) for sel in MAIN) if n is not None), None)
    title_node = tree.css_first("title")
    h1 = main.css_first("h1") if main is not None else None
    # the first heading names the page; <title> often carries the site's name too ("... — Python 3.11 documentation")
    title = re.sub(r"\s*¶$", "", h1.text(separator=" ", strip=True) if h1 is not None else "") or \
        (title_node.text(strip=True) if title_node is not None else "") or source.rel.rsplit("/", 1)[-1]
    b = DocBuilder(facts, source.rel, title, "html", unit="block", sha256=source.sha256)
    for n, node in enumerate(main.css(BLOCKS) if main is not None else [], start=1):
        _html_block(b, node, n)
    b.flush()
    return facts


def _html_block(b: DocBuilder, node: Any, n: int) -> None:
    tag = node.tag
    if tag in ("li", "dd", "blockquote") and node.css_first("p") is not None:
        return  # its paragraphs are blocks of their own
    text = node.text(separator=" ", strip=True)
    if tag[0] == "h" and tag[1:].isdigit():
        b.heading(int(tag[1]), re.sub(r"\s*¶$", "", text), n)
    elif tag == "pre":
        b.code(node.text(), "", n, n)
    else:
        b.text(text, n, n)
    for a in node.css("a[href]"):
        b.link(a.attributes.get("href") or "", n)


# -- PDF -----------------------------------------------------------------------------------------------
def extract_pdf(source: SourceFile) -> Facts:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise MissingDependency("pypdf (PDF)", "ingest-docs") from None
    facts = Facts(source.rel)
    try:
        reader = PdfReader(io.BytesIO(source.data or b""))
        if reader.is_encrypted and not reader.decrypt(""):
            facts.error = "encrypted PDF (needs a password)"
            return facts
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = reader.metadata.get("/Title") if reader.metadata else None
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds on a damaged file; all mean: skip it
        facts.error = f"unreadable PDF ({type(exc).__name__}: {str(exc)[:200]})"
        return facts
    b = DocBuilder(facts, source.rel, str(meta_title or source.rel.rsplit("/", 1)[-1]), "pdf", unit="page",
                   pages=len(pages), sha256=source.sha256)
    for number, text in enumerate(pages, start=1):
        b.heading(1, f"Page {number}", number)
        for para in re.split(r"\n\s*\n", text):
            b.text(" ".join(para.split()), number, number)
        b.flush()
    return facts


# -- plain text ----------------------------------------------------------------------------------------
UNDERLINE_RE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def extract_text(source: SourceFile) -> Facts:
    facts = Facts(source.rel)
    lines = (source.text or "").splitlines()
    title = next((ln.strip() for ln in lines if ln.strip()), source.rel.rsplit("/", 1)[-1])[:200]
    b = DocBuilder(facts, source.rel, title, "text", lines=len(lines), sha256=source.sha256)
    levels: dict[str, int] = {}
    para: list[str] = []
    start = 1
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and UNDERLINE_RE.match(nxt) and len(nxt.strip()) >= len(line.strip()) * 0.6:
            b.text(" ".join(para), start, i)
            para = []
            b.heading(levels.setdefault(nxt.strip()[0], len(levels) + 1), line.strip(), i + 1)
        elif UNDERLINE_RE.match(line) or not line.strip():
            b.text(" ".join(para), start, i)
            para, start = [], i + 2
        else:
            para.append(line.strip())
    b.text(" ".join(para), start, len(lines))
    b.flush()
    return facts
