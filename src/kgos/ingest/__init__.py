"""Building KGs from code and documents: the 3-tier extraction pipeline of spec/000 section 4.

``ingest(ws, db_id, paths)`` walks folders and files, extracts structure (tier 1: Python with ``ast``;
JavaScript/TypeScript, Go, Rust with tree-sitter; JSON/YAML/TOML; Markdown, HTML, PDF, text), patterns
and cue-phrase relations (tier 2) and, optionally, LLM-extracted concepts (tier 3), and writes them
incrementally (only changed files, one transaction). See docs/ingest.md.
"""

from __future__ import annotations

from . import modules  # noqa: F401  (registers the ingest and extract pipeline modules)
from .facts import Facts
from .files import Selection, Skipped, SourceFile
from .ingestion import IngestOptions, IngestReport, ingest, ingest_into, watch

__all__ = ["Facts", "IngestOptions", "IngestReport", "Selection", "Skipped", "SourceFile", "ingest", "ingest_into",
           "watch"]
