"""Tier 1 for JavaScript, TypeScript, Go and Rust, with tree-sitter grammars from the registry
(``pip install kgos[ingest-code]``).

The same node and edge types as Python where they apply: a module node per file, classes (structs,
traits, interfaces), functions and methods with ids ``<lang>:<path without extension>.<qualname>``, line
spans, ``contains`` edges, and references for the linker: calls (callee as written), ``extends`` base
classes (``inherits``), Rust ``impl Trait for Type`` (``implements``) and JS/TS relative imports.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ..errors import MissingDependency
from .facts import Facts, unique_id
from .files import SourceFile

PREFIX = {"javascript": "js", "typescript": "ts", "tsx": "ts", "go": "go", "rust": "rs"}
# grammar node type -> KG node type
DEFS: dict[str, dict[str, str]] = {
    "javascript": {"function_declaration": "function", "generator_function_declaration": "function",
                   "class_declaration": "class", "method_definition": "method"},
    "go": {"function_declaration": "function", "method_declaration": "method", "type_spec": "class"},
    "rust": {"function_item": "function", "struct_item": "class", "enum_item": "class", "trait_item": "trait",
             "mod_item": "module"},
}
DEFS["typescript"] = DEFS["tsx"] = {**DEFS["javascript"], "interface_declaration": "interface",
                                    "abstract_class_declaration": "class", "method_signature": "method"}
CALLS = {"call_expression", "new_expression"}
_WORD_RE = re.compile(r"[A-Za-z_$][\w$]*")


@cache
def parser_for(kind: str) -> Any:
    """A tree-sitter parser for ``kind``; ``MissingDependency`` names the extra when grammars are absent."""
    try:
        from tree_sitter import Language, Parser
        if kind == "javascript":
            import tree_sitter_javascript
            lang = tree_sitter_javascript.language()
        elif kind in ("typescript", "tsx"):
            import tree_sitter_typescript as ts
            lang = ts.language_typescript() if kind == "typescript" else ts.language_tsx()
        elif kind == "go":
            import tree_sitter_go
            lang = tree_sitter_go.language()
        else:
            import tree_sitter_rust
            lang = tree_sitter_rust.language()
    except ImportError as exc:
        raise MissingDependency(f"tree-sitter and its {kind} grammar ({exc.name})", "ingest-code") from None
    return Parser(Language(lang))


def available(kind: str) -> bool:
    try:
        parser_for(kind)
    except MissingDependency:
        return False
    return True


def extract_tree(source: SourceFile) -> Facts:
    facts = Facts(source.rel)
    tree = parser_for(source.kind).parse((source.text or "").encode("utf-8"))
    module = source.rel.rsplit(".", 1)[0]
    prefix = PREFIX[source.kind]
    mid = f"{prefix}:{module}"
    facts.node(f"file:{source.rel}", source.rel.rsplit("/", 1)[-1], "file", kind=source.kind, lines=source.lines,
               sha256=source.sha256)
    facts.node(mid, module.rsplit("/", 1)[-1], "module", qualname=module, language=source.kind, line_start=1,
               line_end=source.lines)
    facts.edge(f"file:{source.rel}", mid, "contains")
    if tree.root_node.has_error:
        facts.nodes[-1]["properties"]["parse_errors"] = True  # tree-sitter recovers: keep what parsed
    _Walker(facts, source.kind, prefix, module, mid).walk(tree.root_node)
    return facts


class _Walker:
    def __init__(self, facts: Facts, kind: str, prefix: str, module: str, mid: str) -> None:
        self.facts, self.kind, self.prefix, self.module = facts, kind, prefix, module
        self.defs = DEFS[kind]
        self.taken: set[str] = {mid}
        self.stack: list[tuple[str, str, str]] = [(mid, "module", "")]

    def walk(self, root: Any) -> None:
        todo: list[tuple[Any, int]] = [(root, 0)]  # explicit stack: deep ASTs must not hit the recursion limit
        while todo:
            node, depth = todo.pop()
            while len(self.stack) > depth + 1:
                self.stack.pop()
            self._visit(node)
            for child in reversed(node.named_children):
                todo.append((child, len(self.stack) - 1))

    def _visit(self, node: Any) -> bool:
        t = node.type
        if t in CALLS:
            self._call(node)
        elif t == "import_statement":
            self._import(node)
        elif t == "variable_declarator" and (value := node.child_by_field_name("value")) is not None \
                and value.type in ("arrow_function", "function_expression", "function"):
            return self._define(node, "function")
        elif t == "impl_item":
            return self._impl(node)
        elif t in self.defs:
            return self._define(node, self.defs[t])
        return False

    def _name(self, node: Any) -> str | None:
        name = node.child_by_field_name("name")
        return name.text.decode("utf-8", "replace") if name is not None else None

    def _define(self, node: Any, kind: str) -> bool:
        name = self._name(node)
        if not name:
            return False
        parent_id, parent_kind, parent_q = self.stack[-1]
        if self.kind == "go" and node.type == "method_declaration":
            parent_q = self._go_receiver(node) or parent_q
        if kind == "function" and parent_kind in ("class", "trait", "interface", "impl"):
            kind = "method"
        qual = f"{parent_q}.{name}" if parent_q else name
        nid = unique_id(self.taken, f"{self.prefix}:{self.module}.{qual}")
        first = node.text.split(b"{", 1)[0].decode("utf-8", "replace").strip()
        self.facts.node(nid, name, kind, _comment_before(node), qualname=f"{self.module}.{qual}", language=self.kind,
                        line_start=node.start_point[0] + 1, line_end=node.end_point[0] + 1, signature=first[:300],
                        lines=node.end_point[0] - node.start_point[0] + 1)
        self.facts.edge(parent_id, nid, "contains")
        for base in self._bases(node):
            self.facts.ref(nid, "inherits", base, scope=self.module, line=node.start_point[0] + 1)
        self.stack.append((nid, kind, qual))
        return True

    def _go_receiver(self, node: Any) -> str | None:
        receiver = node.child_by_field_name("receiver")
        words = _WORD_RE.findall(receiver.text.decode("utf-8", "replace")) if receiver is not None else []
        return words[-1] if words else None

    def _bases(self, node: Any) -> list[str]:
        for child in node.named_children:
            if child.type == "class_heritage":
                text = child.text.decode("utf-8", "replace")
                m = re.search(r"extends\s+([\w$.]+)", text)
                return [m.group(1)] if m else []
        return []

    def _impl(self, node: Any) -> bool:
        """``impl [Trait for] Type { fn ... }``: the functions become methods of ``Type``."""
        type_node, trait = node.child_by_field_name("type"), node.child_by_field_name("trait")
        if type_node is None:
            return False
        type_name = _WORD_RE.findall(type_node.text.decode("utf-8", "replace"))[0]
        target = f"{self.prefix}:{self.module}.{type_name}"
        if trait is not None:
            self.facts.ref(target, "implements", trait.text.decode("utf-8", "replace").split("<")[0],
                           scope=self.module, line=node.start_point[0] + 1)
        self.stack.append((target, "impl", type_name))
        return True

    def _call(self, node: Any) -> None:
        fn = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        if fn is None:
            return
        text = fn.text.decode("utf-8", "replace")
        words = _WORD_RE.findall(text.replace("::", "."))
        if not words:
            return
        name = ".".join(words[-2:]) if len(words) > 1 else words[0]
        if text.startswith(("this.", "self.")):
            name = "self." + words[-1]
        self.facts.ref(self.stack[-1][0], "calls", name, scope=self.module, cls="", line=node.start_point[0] + 1)

    def _import(self, node: Any) -> None:
        src = node.child_by_field_name("source")
        if src is None:
            return
        path = src.text.decode("utf-8", "replace").strip("'\"`")
        self.facts.ref(self.stack[0][0], "imports_path", path, scope=self.module, line=node.start_point[0] + 1)


def _comment_before(node: Any) -> str:
    """The doc comment right above a definition (``/** */``, ``//``, ``///``)."""
    prev = node.prev_named_sibling
    if prev is not None and prev.type in ("comment", "line_comment", "block_comment") \
            and prev.end_point[0] + 1 >= node.start_point[0]:
        text = prev.text.decode("utf-8", "replace")
        text = re.sub(r"\s*\*/\s*$", "", text)
        return re.sub(r"^\s*(/\*\*?|\*/|\*|///?|//!)\s?", "", text, flags=re.MULTILINE).strip()
    return ""
