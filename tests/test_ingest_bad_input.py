"""Bad input to kgos ingest: every file that cannot be used is skipped with its reason, paths that
would leave the root are refused, and nothing raises a traceback."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from api_helpers import MEMORY_DDL
from ingest_helpers import run, write_tree

import kgos
from kgos.errors import IngestFailed


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "messy", {
        "good.py": "def ok():\n    return 1\n",
        "syntax.py": "def broken(:\n",
        "config.json": '{"unterminated": ',
        "bad.yaml": "key: [unclosed\n",
        "bad.toml": "= nope\n",
        "deep.json": "[" * 5000 + "]" * 5000,
    })
    (root / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (root / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    (root / "image.png").write_bytes(b"\x89PNG")  # unsupported kind: silently not a candidate
    with open(root / "huge.json", "wb") as f:  # a 100 MB JSON file (sparse: no disk used)
        f.truncate(100_000_000)
    (root / "empty_dir").mkdir()
    os.symlink(root, root / "loop")  # a link back to the root: a loop
    outside = write_tree(tmp_path / "outside", {"secret.py": "TOKEN = 1\n"})
    os.symlink(outside / "secret.py", root / "escape.py")  # leaves the root: refused
    os.symlink(outside, root / "escape_dir")
    os.symlink(root / "missing.py", root / "dangling.py")
    os.symlink(root / "good.py", root / "alias.py")  # inside the root: allowed
    return root


def test_bad_files_are_skipped_with_reasons(ws: kgos.Workspace, messy: Path) -> None:
    report = run(ws, [messy, messy.parent / "nope"])
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["messy/syntax.py"].startswith("Python syntax error at line 1")
    assert reasons["messy/config.json"].startswith("invalid JSON")
    assert reasons["messy/bad.yaml"].startswith("invalid YAML")
    assert reasons["messy/bad.toml"].startswith("invalid TOML")
    assert reasons["messy/deep.json"].startswith("invalid JSON")  # nesting too deep for the parser
    assert reasons["messy/latin1.md"] == "not UTF-8 (byte 3)"
    assert reasons["messy/binary.txt"] == "binary content"
    assert reasons["messy/huge.json"] == "over the size cap (100,000,000 > 5,000,000 bytes)"
    assert reasons["messy/escape.py"] == "symlink leaves the ingested root (refused)"
    assert reasons["messy/escape_dir"] == "symlink leaves the ingested root (refused)"
    assert reasons["messy/loop"].startswith("symlink loop")
    assert reasons["messy/dangling.py"] == "broken symlink or symlink loop"
    assert reasons[str(messy.parent / "nope")] == "does not exist"
    assert "messy/image.png" not in reasons
    assert reasons["messy/good.py"] == "same file as messy/alias.py (symlink)"  # one real file, read once
    kg = ws.kg("code")
    assert kg.node("py:good.ok").type == "function"
    assert not [n for n in kg.nodes() if "secret" in n.id]
    assert report.files == {"python": 1}


def test_size_cap_is_an_option(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "small", {"a.py": "x = 1\n" * 50, "b.py": "y = 2\n"})
    report = run(ws, [root], max_bytes=100)
    assert [s.path for s in report.skipped] == ["small/a.py"] and report.files == {"python": 1}


def test_empty_folder_and_nothing_to_ingest(ws: kgos.Workspace, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestFailed, match="empty folder"):
        run(ws, [tmp_path / "empty"])
    assert not ws.exists("code")
    root = write_tree(tmp_path / "one", {"a.py": "x = 1\n"})
    report = run(ws, [root, tmp_path / "empty"])
    assert {s.path: s.reason for s in report.skipped}[str(tmp_path / "empty")].startswith("empty folder")


def test_a_syntax_error_in_a_known_file_keeps_its_previous_version(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"a.py": "def f():\n    return 1\n"})
    run(ws, [root])
    (root / "a.py").write_text("def f(:\n")
    report = run(ws, [root])
    assert report.skipped[0].reason.endswith("(previous version kept)")
    assert ws.kg("code").node("py:a.f").type == "function"


def test_include_and_exclude_globs(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"src/a.py": "x = 1\n", "tests/test_a.py": "y = 1\n", "README.md": "# R\n"})
    report = run(ws, [root], include=("*.py",), exclude=("tests/*",))
    assert report.files == {"python": 1}
    assert ws.kg("code").get_node("py:src.a") is not None and ws.kg("code").get_node("py:tests.test_a") is None


def test_an_attached_read_only_kg_is_refused(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"a.py": "x = 1\n"})
    foreign = tmp_path / "memory.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.executescript(MEMORY_DDL)
    ws.attach("ro", foreign)
    with pytest.raises(kgos.errors.InvalidArgument, match="not a writable SQLite KG"):
        run(ws, [root], db_id="ro")


def test_two_folders_of_one_name_are_refused(ws: kgos.Workspace, tmp_path: Path) -> None:
    a = write_tree(tmp_path / "a" / "src", {"x.py": "x = 1\n"})
    b = write_tree(tmp_path / "b" / "src", {"y.py": "y = 1\n"})
    with pytest.raises(kgos.errors.InvalidArgument, match="two folders named 'src'"):
        run(ws, [a, b])
