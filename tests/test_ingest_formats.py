"""Tier 1 beyond Python: tree-sitter languages, config files and documents, each with known answers."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from ingest_helpers import edges_of, run, write_tree

import kgos

pytest.importorskip("tree_sitter_javascript")
pytest.importorskip("selectolax")
pypdf = pytest.importorskip("pypdf")

CODE = {
    "web/util.js": '''
        export function helper(x) { return x + 1; }
        ''',
    "web/app.js": '''
        import { helper } from "./util";
        import React from "react";

        /** Base of widgets. */
        class Widget {}

        class Button extends Widget {
          render() { this.draw(); return helper(1); }
          draw() { return 0; }
        }
        const make = (x) => new Button(x);
        ''',
    "web/types.ts": '''
        interface Shape { area(): number; }
        export class Circle implements Shape {
          area(): number { return compute(2); }
        }
        function compute(r: number): number { return r * r; }
        ''',
    "svc/main.go": '''
        package main

        import "fmt"

        type Server struct{}

        func (s *Server) Start() { s.listen(); fmt.Println("up") }
        func (s *Server) listen() {}
        func main() { NewServer().Start() }
        func NewServer() *Server { return &Server{} }
        ''',
    "core/lib.rs": '''
        pub trait Shape { fn area(&self) -> f64; }
        pub struct Square { side: f64 }
        impl Shape for Square {
            fn area(&self) -> f64 { square(self.side) }
        }
        fn square(x: f64) -> f64 { x * x }
        ''',
}


def test_javascript_typescript_go_rust(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "poly", CODE)
    report = run(ws, [root])
    assert report.files == {"javascript": 2, "typescript": 1, "go": 1, "rust": 1}
    kg = ws.kg("code")
    render = kg.node("js:poly/web/app.Button.render")
    assert render.type == "method" and render.properties["line_start"] == 8
    assert kg.node("js:poly/web/app.Widget").description == "Base of widgets."
    assert kg.node("js:poly/web/app.make").type == "function"  # an arrow function bound to a name
    assert kg.node("ts:poly/web/types.Shape").type == "interface"
    assert kg.node("go:poly/svc/main.Server.Start").type == "method"  # receiver type is the owner
    assert kg.node("rs:poly/core/lib.Square.area").type == "method"  # impl block methods
    calls = edges_of(kg, "calls")
    for pair in [("js:poly/web/app.Button.render", "js:poly/web/app.Button.draw"),
                 ("js:poly/web/app.Button.render", "js:poly/web/util.helper"),
                 ("js:poly/web/app.make", "js:poly/web/app.Button"),
                 ("ts:poly/web/types.Circle.area", "ts:poly/web/types.compute"),
                 ("go:poly/svc/main.Server.Start", "go:poly/svc/main.Server.listen"),
                 ("go:poly/svc/main.main", "go:poly/svc/main.NewServer"),
                 ("rs:poly/core/lib.Square.area", "rs:poly/core/lib.square")]:
        assert pair in calls, pair
    assert ("js:poly/web/app.Button", "js:poly/web/app.Widget") in edges_of(kg, "inherits")
    assert ("rs:poly/core/lib.Square", "rs:poly/core/lib.Shape") in edges_of(kg, "implements")
    imports = edges_of(kg, "imports")
    assert ("js:poly/web/app", "js:poly/web/util") in imports and ("js:poly/web/app", "js:react") in imports


def test_config_files_keys_references_and_no_secrets(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "cfg", {
        "pkg/mod.py": "def main():\n    pass\n",
        "pyproject.toml": '[project]\nname = "demo"\n[project.scripts]\ndemo = "pkg.mod:main"\n',
        "deploy.yaml": "service:\n  entry: pkg/mod.py\n  api_key: sk-live-abcdefghijklmnopqrstuvwx\n---\nsecond: doc\n",
        "settings.json": '{"database": {"password": "hunter2hunter2", "host": "localhost"}, "list": ["README.md"]}',
        "README.md": "# Demo\n",
    })
    run(ws, [root])
    kg = ws.kg("code")
    assert kg.node("cfg:cfg/pyproject.toml:project.scripts.demo").type == "config_key"
    refs = edges_of(kg, "references")
    assert ("cfg:cfg/pyproject.toml:project.scripts.demo", "py:pkg.mod.main") in refs  # entry point
    assert ("cfg:cfg/deploy.yaml:service.entry", "py:pkg.mod") in refs  # a path to another file
    assert ("cfg:cfg/settings.json:list", "doc:cfg/README.md") in refs
    assert kg.node("cfg:cfg/deploy.yaml:second").type == "config_key"  # the second YAML document
    host = kg.node("cfg:cfg/settings.json:database.host")
    assert host.description == "host = localhost"
    stored = " ".join(f"{n.name} {n.description} {n.properties}" for n in kg.nodes())
    assert "hunter2hunter2" not in stored and "sk-live" not in stored


def test_markdown_sections_front_matter_code_links_and_mentions(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", {
        "lib.py": "def build_index():\n    pass\n",
        "guide.md": '''
            ---
            title: The Guide
            tags: [howto]
            ---
            # Getting started

            Call `build_index()` first. Read the [reference](ref.md#options).

            ## Options

            Some text.

            ```python
            build_index()
            ```

            # Second part
            ''',
        "ref.md": "# Reference\n\n## Options\n\nSee The Guide for examples.\n",
    })
    run(ws, [root])
    kg = ws.kg("code")
    doc = kg.node("doc:docs/guide.md")
    assert doc.name == "The Guide" and doc.type == "document" and doc.properties["tags"] == ["howto"]
    contains = edges_of(kg, "contains")
    assert ("doc:docs/guide.md", "doc:docs/guide.md#getting_started") in contains
    assert ("doc:docs/guide.md#getting_started", "doc:docs/guide.md#options") in contains  # h2 under h1
    assert ("doc:docs/guide.md", "doc:docs/guide.md#second_part") in contains  # next h1 back at the top
    section = kg.node("doc:docs/guide.md#options")
    assert section.properties["level"] == 2 and section.properties["line_start"] == 9
    code = [n for n in kg.nodes() if n.type == "code_block"]
    assert len(code) == 1 and code[0].properties["language"] == "python"
    assert ("doc:docs/guide.md#getting_started", "doc:docs/ref.md#options") in edges_of(kg, "links_to")
    mentions = edges_of(kg, "mentions")
    assert ("doc:docs/guide.md#getting_started/c1", "py:lib.build_index") in mentions
    assert ("doc:docs/ref.md#options/c1", "doc:docs/guide.md") in mentions  # another document's title


def test_html_main_text_headings_and_links(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "site", {
        "index.html": '''
            <html><head><title>Site home</title><script>var x = "hidden";</script></head>
            <body><nav><a href="nav.html">Navigation junk</a></nav>
            <div class="body"><h1>Welcome</h1><p>Start with the <a href="page.html#setup">setup page</a>.</p>
            <h2>Details</h2><ul><li>one item</li></ul><pre>code here</pre></div>
            <footer>Footer junk</footer></body></html>
            ''',
        "page.html": "<html><body><main><h1 id='setup'>Setup</h1><p>Install it.</p></main></body></html>",
    })
    run(ws, [root])
    kg = ws.kg("code")
    assert kg.node("doc:site/index.html").name == "Welcome"  # the first heading, not <title>
    assert kg.node("doc:site/page.html").name == "Setup"
    assert kg.node("doc:site/index.html#details").properties["block_start"] > 0
    text = " ".join(n.description for n in kg.nodes())
    assert "Start with the setup page" in text and "one item" in text
    assert "Navigation junk" not in text and "Footer junk" not in text and "hidden" not in text
    assert ("doc:site/index.html#welcome", "doc:site/page.html#setup") in edges_of(kg, "links_to")


def _pdf(text: str) -> bytes:
    """A one-page PDF with ``text`` in Helvetica, written by hand (no PDF library needed to make it)."""
    content = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
             b"/Resources << /Font << /F1 5 0 R >> >> >>"),
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    return out.getvalue()


def test_pdf_pages_and_refused_pdfs(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pdfs"
    root.mkdir()
    (root / "good.pdf").write_bytes(_pdf("The parser handles large inputs."))
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(_pdf("secret text"))))
    writer.encrypt("password")
    buf = io.BytesIO()
    writer.write(buf)
    (root / "locked.pdf").write_bytes(buf.getvalue())
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf at all")
    report = run(ws, [root])
    kg = ws.kg("code")
    assert kg.node("doc:pdfs/good.pdf#page_1").properties["page_start"] == 1
    assert any("The parser handles large inputs." in n.description for n in kg.nodes() if n.type == "chunk")
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["pdfs/locked.pdf"] == "encrypted PDF (needs a password)"
    assert reasons["pdfs/broken.pdf"].startswith("unreadable PDF")
    assert kg.get_node("doc:pdfs/locked.pdf") is None


def test_plain_text_and_rst_sections(ws: kgos.Workspace, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "notes", {"intro.rst": "Title\n=====\n\nFirst para.\n\nUsage\n-----\n\nSecond para.\n"})
    run(ws, [root])
    kg = ws.kg("code")
    assert kg.node("doc:notes/intro.rst#title").properties["level"] == 1
    assert kg.node("doc:notes/intro.rst#usage").properties["level"] == 2
    assert kg.node("doc:notes/intro.rst#usage/c2").description == "Second para."
