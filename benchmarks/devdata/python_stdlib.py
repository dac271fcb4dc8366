"""Build the ``python-stdlib`` dev set: a code KG of Python 3.11's standard library, queried by its manual.

    cd /tmp/debs && apt-get download libpython3.11-minimal libpython3.11-stdlib python3.11-doc
    python benchmarks/devdata/python_stdlib.py --debs /tmp/debs   # -> benchmarks/data/python-stdlib/

KG (an ``ast`` walk of the ``.py`` sources Debian ships in ``libpython3.11-minimal`` and
``libpython3.11-stdlib``; nothing is imported or run): one node per public module, class, function
and method (no ``_`` name part; tests, IDLE, demos, codecs and platform shims left out). The
description is the docstring, the signature goes in ``properties.signature``. Edges:
``contains`` (package -> submodule, module -> class/function), ``has_method`` (class -> method),
``subclass_of`` (class -> base class resolved through the module's imports) and ``imports``
(module -> stdlib module it imports).

Probes: the library reference of ``python3.11-doc`` (Sphinx HTML). For every documented function,
method, class or exception whose reference id resolves to exactly one node, the query is the first
sentence of its reference entry, markup removed. Entries whose sentence is a copy of the node's
docstring (token-set Jaccard >= 0.8, or a substring of it) are dropped, so query and node text are
different writing; so are cross-references ("Alias for ...", "See ..."). Level ``literal`` when
the entry's own name is a word of the query, ``definition`` otherwise. No search result is used.
"""

from __future__ import annotations

import ast
import html
import random
import re
from pathlib import Path

from benchfiles import (
    clip,
    counts,
    dedupe_edges,
    merge_probes,
    run_builder,
    unpack,
    write_kg,
    write_probes,
)

NAME = "python-stdlib"
PACKAGES = ["libpython3.11-minimal", "libpython3.11-stdlib", "python3.11-doc"]
SKIP = re.compile(r"^(test|idlelib|lib2to3|turtledemo|ensurepip|pydoc_data|encodings|distutils|"
                  r"this|antigravity|sitecustomize|site|__phello__|__hello__|__future__)(\.|$)|(^|\.)_")
PUBLIC_ALIASES = {"os.path": "posixpath"}  # documented module -> the module that defines it on Linux
MAX_PROBES = 1000
MAX_ANSWERS = 3  # a sentence shared by more reference entries ("A subclass of HTTPException.") is too generic
VERSION_NOTE = re.compile(r"(New in version|Changed in version|Deprecated since version)")
DOC_KINDS = {"function", "method", "class", "exception", "classmethod", "staticmethod"}


def module_name(lib: Path, path: Path) -> str:
    parts = list(path.relative_to(lib).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Walker:
    """Collects nodes and edges of one stdlib tree."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.known_modules = set(files)
        self.packages = {m for m, p in files.items() if p.name == "__init__.py"}
        self.top_levels = {m.split(".")[0] for m in files}
        self.nodes: dict[str, dict] = {}
        self.edges: list[dict] = []
        self.bases: list[tuple[str, str, dict]] = []  # (class id, dotted base, module's import table)

    def module(self, name: str, tree: ast.Module) -> None:
        self._node(name, name, "module", ast.get_docstring(tree), {})
        if "." in name:
            self._edge(name.rsplit(".", 1)[0], name, "contains")
        imports = self._imports(name, tree)
        for target in sorted(set(imports.values())):
            self._edge(name, target.rsplit(".", 1)[0] if target not in self.known_modules else target, "imports")
        for item in tree.body:
            self._member(name, name, item, imports, "contains")

    def _member(self, module: str, parent: str, item: ast.stmt, imports: dict, edge: str) -> None:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or item.name.startswith("_"):
            return
        qid = f"{parent}.{item.name}"
        if isinstance(item, ast.ClassDef):
            self._node(qid, qid, "class", ast.get_docstring(item), {"module": module})
            for base in item.bases:
                self.bases.append((qid, ast.unparse(base), {**imports, "": module}))
            for sub in item.body:
                self._member(module, qid, sub, imports, "has_method")
        else:
            kind = "method" if edge == "has_method" else "function"
            sig = f"{item.name}({ast.unparse(item.args)})"
            self._node(qid, qid, kind, ast.get_docstring(item), {"module": module, "signature": sig})
        self._edge(parent, qid, edge)

    def _imports(self, module: str, tree: ast.Module) -> dict[str, str]:
        """Local name -> dotted stdlib name, for the module's top-level imports."""
        table = {}
        package = module if module in self.packages else module.rsplit(".", 1)[0]
        for item in tree.body:
            if isinstance(item, ast.Import):
                for a in item.names:
                    table[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(item, ast.ImportFrom):
                base = item.module or ""
                if item.level:
                    up = package.split(".")[: len(package.split(".")) - item.level + 1]
                    base = ".".join(up + ([item.module] if item.module else []))
                for a in item.names:
                    if a.name != "*":
                        table[a.asname or a.name] = f"{base}.{a.name}"
        return {k: v for k, v in table.items() if v.split(".")[0] in self.top_levels}

    def resolve_bases(self) -> None:
        for cls, base, imports in self.bases:
            head, _, tail = base.partition(".")
            candidates = [f"{imports['']}.{base}"]
            if head in imports:
                candidates.append(imports[head] + (f".{tail}" if tail else ""))
            target = next((c for c in candidates if self.nodes.get(f"py:{c}", {}).get("type") == "class"), None)
            if target:
                self._edge(cls, target, "subclass_of")

    def _node(self, qid: str, name: str, kind: str, doc: str | None, props: dict) -> None:
        self.nodes.setdefault(f"py:{qid}", {"id": f"py:{qid}", "name": name, "type": kind,
                                            "description": clip(doc or ""), "properties": props})

    def _edge(self, source: str, target: str, kind: str) -> None:
        self.edges.append({"source": f"py:{source}", "target": f"py:{target}", "type": kind})


def walk(lib: Path) -> Walker:
    files = {module_name(lib, p): p for p in sorted(lib.rglob("*.py"))
             if "site-packages" not in p.parts and "dist-packages" not in p.parts}
    files = {m: p for m, p in files.items() if m and not SKIP.search(m)}
    w = Walker(files)
    for name, path in files.items():
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except SyntaxError:
            continue
        w.module(name, tree)
    w.resolve_bases()
    return w


def reference(html_dir: Path) -> list[tuple[str, str, str]]:
    """``(reference id, kind, first sentence)`` for each documented callable of the library reference."""
    out = []
    entry = re.compile(r'<dl class="py (\w+)">\s*<dt class="sig[^"]*" id="([^"]+)">.*?</dt>\s*<dd>(.*?)</dd>', re.DOTALL)
    for page in sorted(html_dir.glob("*.html")):
        for kind, ref, body in entry.findall(page.read_text(encoding="utf-8")):
            paragraphs = [first_sentence(p) for p in re.findall(r"<p>(.*?)</p>", body, re.DOTALL)]
            paragraphs = [p for p in paragraphs if not VERSION_NOTE.match(p)]
            if kind in DOC_KINDS and paragraphs:
                out.append((ref, kind, paragraphs[0]))
    return out


def first_sentence(fragment: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", "", fragment)).replace("¶", "")
    text = re.sub(r"\s+", " ", text).strip()
    parts = re.split(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<=[.!?])\s+(?=[A-Z(])", text, maxsplit=1)
    return parts[0].rstrip(" :")


def resolve(ref: str, nodes: dict, by_leaf: dict[str, list[str]]) -> str | None:
    """The node a reference id names: itself, its Linux module (os.path), or one definition under its package."""
    for public, private in PUBLIC_ALIASES.items():
        if ref.startswith(public + "."):
            ref = private + ref[len(public):]
    if f"py:{ref}" in nodes:
        return f"py:{ref}"
    parts = ref.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # asyncio.create_task -> asyncio.tasks.create_task
        package, rest = ".".join(parts[:cut]), ".".join(parts[cut:])
        hits = [i for i in by_leaf.get(rest, []) if i.startswith(f"py:{package}.")]
        if hits:
            return hits[0] if len(hits) == 1 else None
    return None


def tokens(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def copied(query: str, description: str) -> bool:
    q, d = tokens(query), tokens(description)
    norm = lambda s: re.sub(r"\W+", " ", s.casefold()).strip()
    return bool(q) and (norm(query) in norm(description) or len(q & d) / len(q | d) >= 0.8)


def probes_for(refs: list, nodes: dict, source: str) -> tuple[list[dict], dict]:
    by_leaf: dict[str, list[str]] = {}
    for nid, n in nodes.items():
        if n["type"] != "module":
            qual = n["name"][len(n["properties"]["module"]) + 1:]
            by_leaf.setdefault(qual, []).append(nid)
    stats = {"documented": len(refs), "resolved": 0, "copied": 0, "cross_reference": 0}
    raw = []
    for ref, kind, sentence in refs:
        nid = resolve(ref, nodes, by_leaf)
        if not nid:
            continue
        stats["resolved"] += 1
        if len(sentence.split()) < 3 or re.match(r"(Alias|See|Same as|Deprecated|Equivalent to)\b", sentence):
            stats["cross_reference"] += 1
        elif copied(sentence, nodes[nid]["description"]):
            stats["copied"] += 1
        else:
            leaf = ref.rsplit(".", 1)[-1]
            level = "literal" if re.search(rf"(?<![\w.]){re.escape(leaf)}(?![\w])", sentence) else "definition"
            raw.append({"query": sentence, "relevant": [nid], "level": level, "ref": ref})
    return raw, stats


def build(debs: Path, out: Path, seed: int = 13) -> dict:
    root, versions = unpack(debs, PACKAGES)
    w = walk(root / "usr/lib/python3.11")
    nodes = w.nodes
    edges = dedupe_edges(w.edges, set(nodes))
    source = f"python3.11-doc {versions['python3.11-doc']} (library reference: {{}})"
    raw, stats = probes_for(reference(root / "usr/share/doc/python3.11/html/library"), nodes, source)
    probes = [p for p in merge_probes(raw) if len(p["relevant"]) <= MAX_ANSWERS]
    probes = sorted(random.Random(seed).sample(probes, min(MAX_PROBES, len(probes))), key=lambda p: p["ref"])
    probes = [{"id": f"pys-{i:04d}", "query": p["query"], "relevant": p["relevant"], "lenient": [],
               "level": p["level"], "source": source.format(p["ref"])} for i, p in enumerate(probes)]
    meta = {"name": NAME,
            "description": "Python 3.11 standard library as a code KG: public modules, classes, functions and "
                           "methods with their docstrings (ast walk, nothing imported); contains, has_method, "
                           "subclass_of and imports edges. Probes are first sentences of the library reference.",
            "source": ", ".join(f"Debian 12 {k} {v}" for k, v in versions.items()),
            "license": "PSF License Agreement for Python 3.11 (source, docstrings and documentation)"}
    write_kg(out / "kg.json.gz", meta, list(nodes.values()), edges)
    write_probes(out / "probes-dev.jsonl", probes)
    return {"versions": versions, "nodes": len(nodes), "node_types": counts(list(nodes.values()), "type"),
            "empty_descriptions": sum(not n["description"] for n in nodes.values()), "edges": len(edges),
            "edge_types": counts(edges, "type"), **stats, "eligible": len(raw), "probes": len(probes),
            "levels": counts(probes, "level"), "answers": len({r for p in probes for r in p["relevant"]})}


if __name__ == "__main__":
    run_builder(build, __doc__, NAME)
