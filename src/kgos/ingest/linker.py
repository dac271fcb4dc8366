"""Resolving references across files: calls, imports, inheritance, decorators, config paths and entry
points, document links and mentions.

The linker sees every file's facts (fresh ones and the cached facts of unchanged files), so a change in
one file re-resolves the references of the others. Python names resolve through the module's imports
(aliases, re-exports followed up to ``MAX_HOPS``), its own definitions, ``self``/``cls`` (the enclosing
class and its bases) and ``super()``. A call that does not resolve is matched by its last name against
the definitions of the same language: kept when at most ``MAX_CANDIDATES`` definitions carry that name,
with the lower weight ``NAME_MATCH_WEIGHT`` (shared among them) and ``resolution: name_matched``.
The weights follow spec/002's "Weight Semantics": 1.0 for an explicit (resolved) reference; 0.3 for a
name match, below the 0.5 of a "weak association" because on rich only 17 of 20 sampled name matches
were right (docs/ingest.md), so search and impact analysis rank resolved edges first.
"""

from __future__ import annotations

import builtins
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from .facts import Facts

MAX_HOPS = 6
MAX_CANDIDATES = 3
NAME_MATCH_WEIGHT = 0.3
MAX_MENTIONS = 20
EXTERNAL = "@external"
DEFINITIONS = frozenset({"function", "method", "class", "trait", "interface"})
FAMILY = {"py": "py", "js": "js", "ts": "js", "go": "go", "rs": "rs"}
# attribute names so common on builtin containers and strings that a name match on them is noise
COMMON = frozenset(dir(builtins)) | frozenset(
    ["append", "extend", "get", "items", "keys", "values", "pop", "update", "join", "split", "format", "strip", "replace", "startswith", "endswith", "lower", "upper", "add", "remove", "copy", "sort", "write", "read", "close", "encode", "decode", "setdefault", "insert", "index", "count", "find", "group", "match", "search", "sub", "then", "catch", "push", "map", "filter", "reduce", "forEach", "log", "error", "warn", "info", "debug", "toString", "length", "slice", "String", "Error", "Errorf", "Println", "Printf", "Sprintf", "new", "unwrap", "clone", "collect", "iter", "into", "to_string", "len"])
_WORDS_RE = re.compile(r"\w+")
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
_IDENT_RE = re.compile(r"`([^`\n]{2,80})`|\b([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)\b(?:\(\))?|\b([A-Za-z_]\w{3,})\(\)")


class Linker:
    def __init__(self, groups: dict[str, Facts]) -> None:
        self.groups = groups
        self.ids: set[str] = set()
        self.types: dict[str, str] = {}
        self.modules: set[str] = set()
        self.aliases: dict[str, dict[str, str]] = defaultdict(dict)
        self.short: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.qual_suffix: dict[str, list[str]] = defaultdict(list)  # "Class.method" -> python ids
        self.file_main: dict[str, str] = {}  # file rel -> its module / config / document node
        self.titles: dict[str, str] = {}  # lower-cased document title -> document id
        self.bases: dict[str, list[str]] = defaultdict(list)
        self.external: dict[str, dict[str, Any]] = {}
        self._by_words: dict[tuple[str, ...], str] | None = None
        self._lengths: dict[str, set[int]] = {}  # first word of a title -> its lengths in words
        self._index()

    def _index(self) -> None:
        for rel, facts in self.groups.items():
            for n in facts.nodes:
                nid, t = n["id"], n["type"]
                self.ids.add(nid)
                self.types[nid] = t
                if t in ("module", "package") and nid.startswith("py:"):
                    self.modules.add(n["properties"].get("qualname", nid[3:]))
                if t in DEFINITIONS:
                    fam = FAMILY.get(nid.split(":", 1)[0], "")
                    self.short[(fam, n["name"])].append(nid)
                    if fam == "py" and "#" not in nid:
                        parts = nid[3:].split(".")
                        self.qual_suffix[".".join(parts[-2:])].append(nid)
                if t in ("module", "package", "config", "document") and rel not in self.file_main:
                    self.file_main[rel] = nid
                if t == "document" and len(n["name"]) >= 6:
                    self.titles.setdefault(n["name"].lower(), nid)
            for r in facts.refs:
                if r["kind"] == "alias":
                    self.aliases[r["scope"]][r["name"]] = r["target"]

    # -- the run --------------------------------------------------------------------------------------
    def link(self) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
        """Edges per group (keyed like ``groups``) and the external nodes they point at."""
        for facts in self.groups.values():  # bases first: method lookups walk them
            for r in facts.refs:
                if r["kind"] == "inherits":
                    target = self._resolve(r)
                    if target:
                        self.bases[r["source"]].append(target)
        out: dict[str, list[dict[str, Any]]] = {}
        for rel, facts in self.groups.items():
            edges: dict[tuple[str, str, str], dict[str, Any]] = {}
            for r in facts.refs:
                for edge in self._edges_of(r, rel):
                    _merge(edges, edge)
            for edge in self._mentions(facts, rel):
                _merge(edges, edge)
            out[rel] = list(edges.values())
        return out, list(self.external.values())

    def _edges_of(self, r: dict[str, Any], rel: str) -> Iterable[dict[str, Any]]:
        kind, src = r["kind"], r["source"]
        props = {"source_file": rel, "tier": 1, **({"line": r["line"]} if r.get("line") else {})}
        if kind in ("calls", "decorated_by"):
            yield from self._call_edges(r, kind, props)
        elif kind in ("inherits", "implements", "symbol"):
            target = (self._lookup(r["name"]) if kind == "symbol" else
                      self._unique(src, r["name"]) if kind == "implements" else self._resolve(r))
            if target:
                yield _edge(src, target, "references" if kind == "symbol" else kind, 1.0, props, "resolved")
        elif kind == "imports":
            target = self._import_target(r["name"])
            if target and target != src:
                yield _edge(src, target, "imports", 1.0, props, "resolved")
        elif kind == "imports_path":
            target = self._path_target(r, rel) or self._external(src.split(":", 1)[0], r["name"])
            if target and target != src:
                yield _edge(src, target, "imports", 1.0, props, "resolved")
        elif kind in ("path", "link"):
            target = self._link_target(r, rel) if kind == "link" else self._path_target(r, rel)
            if target and target != src:
                yield _edge(src, target, "links_to" if kind == "link" else "references", 1.0, props, "resolved")

    def _call_edges(self, r: dict[str, Any], kind: str, props: dict[str, Any]) -> Iterable[dict[str, Any]]:
        src = r["source"]
        target = self._resolve(r)
        if target:
            if target != src:
                yield _edge(src, target, kind, 1.0, props, "resolved")
            return
        last = r["name"].rsplit(".", 1)[-1]
        if last in COMMON or last.startswith("__") or last in ("?", "super()"):
            return
        fam = FAMILY.get(src.split(":", 1)[0], "")
        cands = [c for c in self.short.get((fam, last), ()) if c != src]
        if 0 < len(cands) <= MAX_CANDIDATES:
            for c in cands:
                yield _edge(src, c, kind, round(NAME_MATCH_WEIGHT / len(cands), 3), props, "name_matched")

    # -- name resolution ------------------------------------------------------------------------------
    def _resolve(self, r: dict[str, Any]) -> str | None:
        src, name = r["source"], r["name"]
        if src.startswith("py:"):
            return self._enclosing(src, name) or self._resolve_py(name, r.get("scope", ""), r.get("cls", ""))
        return self._unique(src, name)

    def _enclosing(self, src: str, name: str) -> str | None:
        """A function nested in the caller or in a function around it (``def outer(): def helper()``)."""
        if "." in name:
            return None
        scope = src.split("#", 1)[0]
        while self.types.get(scope) in ("function", "method"):
            if f"{scope}.{name}" in self.ids:
                return f"{scope}.{name}"
            scope = scope.rsplit(".", 1)[0]
        return None

    def _unique(self, src: str, name: str) -> str | None:
        """Other languages: ``self.m`` in the same file's class, a same-file definition, else the one
        definition of that name in the language family."""
        prefix, _, rest = src.partition(":")
        module = rest.split(".", 1)[0]
        last = name.rsplit(".", 1)[-1]
        if name.startswith("self."):
            owner = rest.rsplit(".", 1)[0] if src.count(".") >= 2 else rest
            for candidate in (f"{prefix}:{owner}.{last}", f"{prefix}:{module}.{last}"):
                if candidate in self.ids:
                    return candidate
        local = f"{prefix}:{module}.{name}"
        if local in self.ids:
            return local
        cands = self.short.get((FAMILY.get(prefix, ""), last), [])
        return cands[0] if len(cands) == 1 and "." not in name else None

    def _resolve_py(self, name: str, scope: str, cls: str) -> str | None:
        head, _, tail = name.partition(".")
        if head in ("self", "cls") and cls:
            return self._member(f"py:{cls}", tail) if tail and "." not in tail else None
        if head == "super()" and cls:
            return next((m for b in self.bases.get(f"py:{cls}", []) if (m := self._member(b, tail))), None) \
                if tail and "." not in tail else None
        if f"py:{scope}.{head}" in self.ids:
            full = f"{scope}.{name}"
        elif head in self.aliases.get(scope, {}):
            full = self.aliases[scope][head] + (f".{tail}" if tail else "")
        else:
            return None
        return self._lookup(full)

    def _lookup(self, full: str, hops: int = 0) -> str | None:
        """The node ``full`` (a dotted name) denotes, following re-exports and class members."""
        if f"py:{full}" in self.ids:
            return f"py:{full}"
        parts = full.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod, rest = ".".join(parts[:i]), parts[i:]
            if mod in self.modules:
                break
        else:
            return None
        alias = self.aliases.get(mod, {}).get(rest[0])
        if alias and hops < MAX_HOPS and alias != f"{mod}.{rest[0]}":
            return self._lookup(".".join([alias, *rest[1:]]), hops + 1)
        owner = f"py:{mod}.{rest[0]}"
        if len(rest) == 2 and owner in self.ids:
            return self._member(owner, rest[1])
        return None

    def _member(self, cls_id: str, attr: str) -> str | None:
        """``attr`` on the class or the first base (depth-first, like a simple MRO) that defines it."""
        seen: set[str] = set()
        todo = [cls_id]
        while todo and len(seen) < 50:
            c = todo.pop(0)
            if c in seen:
                continue
            seen.add(c)
            if f"{c}.{attr}" in self.ids:
                return f"{c}.{attr}"
            todo.extend(self.bases.get(c, []))
        return None

    def _import_target(self, full: str) -> str | None:
        parts = full.split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.modules:
                return f"py:{mod}"
        top = parts[0]
        return self._external("py", top) if top else None

    def _external(self, prefix: str, name: str) -> str | None:
        if not name or name.startswith("."):
            return None
        nid = f"{prefix}:{name}"
        if nid not in self.ids:
            self.external.setdefault(nid, {"id": nid, "name": name, "type": "external_module", "description": "",
                                           "properties": {"source": EXTERNAL, "external": True}})
        return nid

    # -- files, links and mentions -------------------------------------------------------------------
    def _path_target(self, r: dict[str, Any], rel: str) -> str | None:
        value = r["name"]
        if not value.startswith((".", "/")) and r["kind"] == "imports_path":
            return None  # a package import (node_modules): external
        base = posixpath.dirname(rel)
        joined = posixpath.normpath(posixpath.join(base, value.lstrip("/")))
        for suffix in ("", ".js", ".ts", ".tsx", ".jsx", ".mjs", "/index.js", "/index.ts"):
            if joined + suffix in self.file_main:
                return self.file_main[joined + suffix]
        tail = "/" + value.lstrip("./")
        hits = [f for f in self.file_main if f.endswith(tail)]
        return self.file_main[hits[0]] if len(hits) == 1 else None

    def _link_target(self, r: dict[str, Any], rel: str) -> str | None:
        href = r["name"]
        if _SCHEME_RE.match(href):
            return None  # an outside URL
        path, _, anchor = href.partition("#")
        path = path.split("?", 1)[0]
        target_rel = posixpath.normpath(posixpath.join(posixpath.dirname(rel), path)) if path else rel
        doc = self.file_main.get(target_rel)
        if doc is None:
            return None
        section = f"{doc}#{anchor.lower()}" if anchor else None
        return section if section in self.ids else doc

    def _mentions(self, facts: Facts, rel: str) -> Iterable[dict[str, Any]]:
        own = self.file_main.get(rel)
        for n in facts.nodes:
            if n["type"] != "chunk":
                continue
            found: dict[str, float] = {}
            for m in _IDENT_RE.finditer(n["description"]):
                target = self._symbol(m.group(1) or m.group(2) or m.group(3), bool(m.group(1)))
                if target:
                    found.setdefault(target, 0.8)
            for doc in self._titles_in(n["description"]):
                if doc != own:
                    found.setdefault(doc, 0.6)
            for target, weight in list(found.items())[:MAX_MENTIONS]:
                yield _edge(n["id"], target, "mentions", weight, {"source_file": rel, "tier": 1}, "resolved")

    def _symbol(self, text: str, quoted: bool) -> str | None:
        text = text.strip().removesuffix("()")
        if not re.fullmatch(r"[A-Za-z_][\w.]*", text):
            return None
        if "." in text:
            suffix = self.qual_suffix.get(".".join(text.split(".")[-2:])) or []
            return self._lookup(text) or (suffix[0] if suffix else None)
        if not quoted and not ("_" in text or any(c.isupper() for c in text[1:])):
            return None
        cands = [c for fam in ("py", "js", "go", "rs") for c in self.short.get((fam, text), [])]
        return cands[0] if len(cands) == 1 and len(text) >= 4 else None

    def _titles_in(self, text: str) -> list[str]:
        """Documents whose title (2-8 words) occurs in ``text``, by word n-gram lookup (a regex
        alternation of hundreds of titles is tried at every position: 100x slower on a doc set)."""
        if self._by_words is None:
            self._by_words = {tuple(_WORDS_RE.findall(t)): d for t, d in self.titles.items()
                              if 2 <= len(_WORDS_RE.findall(t)) <= 8}
            for key in self._by_words:
                self._lengths.setdefault(key[0], set()).add(len(key))
        if not self._by_words:
            return []
        words = _WORDS_RE.findall(text.lower())
        found = []
        for i, word in enumerate(words):
            for n in self._lengths.get(word, ()):  # only where some title starts
                doc = self._by_words.get(tuple(words[i:i + n]))
                if doc is not None:
                    found.append(doc)
        return found


def _edge(source: str, target: str, type: str, weight: float, props: dict[str, Any], resolution: str) -> dict[str, Any]:
    return {"source": source, "target": target, "type": type, "weight": weight,
            "properties": {**props, "resolution": resolution}}


def _merge(edges: dict[tuple[str, str, str], dict[str, Any]], edge: dict[str, Any]) -> None:
    key = (edge["source"], edge["target"], edge["type"])
    old = edges.get(key)
    if old is None:
        edge["properties"]["count"] = 1
        edges[key] = edge
        return
    old["properties"]["count"] += 1
    if edge["weight"] > old["weight"]:
        old["weight"], old["properties"]["resolution"] = edge["weight"], edge["properties"]["resolution"]
