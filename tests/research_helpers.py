"""The small corpus the research tests share: three man-page-like documents and a binary file."""

from __future__ import annotations

from pathlib import Path

import pytest

DOCS = {
    "tar.txt": "tar - an archiving utility\n\ntar is an archiving program designed to store multiple files in a "
               "single file. The --exclude option excludes files matching a pattern. Use -z, --gzip to filter "
               "the archive through gzip.\n\nExample: tar -czf archive.tar.gz dir creates a compressed archive.\n",
    "zip.txt": "zip - package and compress files\n\nzip is a compression and file packaging utility. zip compresses "
               "each file separately, unlike tar. The default compression level is 6.\n\nExample: zip -r "
               "archive.zip dir adds a folder recursively.\n",
    "gzip.md": "# gzip\n\ngzip reduces the size of files using Lempel-Ziv coding. The default compression level is 9. "
               "gzip is an alternative to zip for single files.\n",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A corpus folder of DOCS (and one binary file the corpus must skip)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "blob.bin").write_bytes(b"\x00\x01binary")
    return folder
