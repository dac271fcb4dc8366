"""Tier 1 for Python, with the standard library's ``ast``.

One module node per file (``package`` for ``__init__.py``), one node per class, function and method,
nested ones included, each with a stable id ``py:<module>.<qualname>``, its file and line span,
signature, decorators and docstring. Names the file uses but does not define become references for the
linker: imports (with their local aliases), calls (the dotted callee as written, e.g. ``self.save``,
``json.dumps``), base classes and decorators. Structural features that tier 2's pattern rules read
(``features``: e.g. a class holding its own instance, a function returning an inner function) are
recorded on the nodes, so patterns need no second parse.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Any

from .facts import Facts, unique_id
from .files import SourceFile


@lru_cache(maxsize=4096)
def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file()


def module_name(path: Path, root: Path) -> str:
    """Dotted module name: up through the folders that are packages (``__init__.py``), else the path
    relative to ``root``."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    if _is_package(folder):
        while _is_package(folder) and folder != folder.parent:
            parts.insert(0, folder.name)
            folder = folder.parent
    else:
        try:
            parts = list(path.relative_to(root).with_suffix("").parts)
        except ValueError:
            pass
    return ".".join(p for p in parts if p) or path.stem


def extract_python(source: SourceFile, root: Path) -> Facts:
    facts = Facts(source.rel)
    try:
        tree = ast.parse(source.text or "", filename=source.rel)
    except MemoryError:  # the worker's ceiling (kgos.worker): skip the file, keep the run
        facts.error = "too large to parse within the memory ceiling (MemoryError; KGOS_JOB_MEMORY_MB)"
        return facts
    except (SyntaxError, ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        facts.error = f"Python syntax error{f' at line {line}' if line else ''}: {getattr(exc, 'msg', exc)}"
        return facts
    module = module_name(source.path, root)
    _Visitor(facts, module, source.path.name == "__init__.py").run(tree, source)
    return facts


def dotted(expr: ast.AST) -> str | None:
    """``a.b.c`` for a name or attribute chain; ``super().m`` kept; ``?.m`` when the chain starts at
    an expression (``f().m``), which the linker can only match by name."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = dotted(expr.value)
        return f"{base or '?'}.{expr.attr}" if not (base or "").startswith("?") else f"?.{expr.attr}"
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id == "super":
            return "super()"
        return "?"
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, facts: Facts, module: str, package: bool) -> None:
        self.facts, self.module, self.package = facts, module, package
        self.taken: set[str] = set()
        self.stack: list[tuple[str, str, str]] = []  # (node id, kind, qualname)

    def run(self, tree: ast.Module, source: SourceFile) -> None:
        mid = f"py:{self.module}"
        self.taken.add(mid)
        f = self.facts
        f.node(f"file:{source.rel}", source.rel.rsplit("/", 1)[-1], "file", kind="python", lines=source.lines,
               sha256=source.sha256)
        f.node(mid, self.module, "package" if self.package else "module", ast.get_docstring(tree) or "",
               qualname=self.module, language="python", line_start=1, line_end=source.lines)
        f.edge(f"file:{source.rel}", mid, "contains")
        self.stack.append((mid, "module", ""))
        for stmt in tree.body:
            self.visit(stmt)

    # -- definitions --------------------------------------------------------------------------------
    def _define(self, node: ast.AST, name: str, kind: str, **props: Any) -> str:
        parent_id, _, parent_q = self.stack[-1]
        qual = f"{parent_q}.{name}" if parent_q else name
        nid = unique_id(self.taken, f"py:{self.module}.{qual}")
        decorators = [d for d in (dotted(x.func if isinstance(x, ast.Call) else x) for x in node.decorator_list) if d]  # type: ignore[attr-defined]
        self.facts.node(nid, name, kind, ast.get_docstring(node) or "", qualname=f"{self.module}.{qual}",  # type: ignore[arg-type]
                        language="python", line_start=node.lineno, line_end=node.end_lineno,  # type: ignore[attr-defined]
                        decorators=decorators, **props)
        self.facts.edge(parent_id, nid, "contains")
        for d in decorators:
            self.facts.ref(nid, "decorated_by", d, scope=self.module, line=node.lineno)  # type: ignore[attr-defined]
        self.stack.append((nid, kind, qual))
        return nid

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        bases = [b for b in (dotted(x) for x in node.bases) if b and not b.startswith("?")]
        methods = [s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        nid = self._define(node, node.name, "class", bases=bases, methods=len(methods),
                           lines=(node.end_lineno or node.lineno) - node.lineno + 1,
                           attributes=_class_attributes(node), features=_class_features(node, methods))
        for b in bases:
            self.facts.ref(nid, "inherits", b, scope=self.module, line=node.lineno)
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expr in [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            self.visit(expr)
        kind = "method" if self.stack[-1][1] == "class" else "function"
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        self._define(node, node.name, kind, signature=f"{prefix} {node.name}({_args(node.args)})",
                     lines=(node.end_lineno or node.lineno) - node.lineno + 1, features=_function_features(node))
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _leaf(self, node: ast.AST) -> None:
        """Names, constants and contexts hold no call or definition: not walked (a third of the visit)."""

    visit_Name = visit_Constant = visit_Load = visit_Store = visit_Del = _leaf  # type: ignore[assignment]

    # -- uses ---------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        name = dotted(node.func)
        if name and name != "?":
            self.facts.ref(self.stack[-1][0], "calls", name, scope=self.module, cls=self._class(), line=node.lineno)
        self.generic_visit(node)

    def _class(self) -> str:
        """Qualname of the innermost enclosing class (for ``self.x`` / ``super()``), or ''."""
        for nid, kind, qual in reversed(self.stack):
            if kind == "class":
                return f"{self.module}.{qual}"
        return ""

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            target = alias.name if alias.asname else alias.name.split(".")[0]
            self.facts.ref(f"py:{self.module}", "alias", local, target=target, scope=self.module)
            self.facts.ref(f"py:{self.module}", "imports", alias.name, scope=self.module, line=node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node)
        if base is None:
            return
        for alias in node.names:
            full = f"{base}.{alias.name}" if base else alias.name
            if alias.name != "*":
                self.facts.ref(f"py:{self.module}", "alias", alias.asname or alias.name, target=full, scope=self.module)
            self.facts.ref(f"py:{self.module}", "imports", full if alias.name != "*" else base, scope=self.module,
                           line=node.lineno, star=alias.name == "*")

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        if not node.level:
            return node.module or ""
        parts = self.module.split(".")
        keep = len(parts) - node.level + (1 if self.package else 0)
        if keep < 0:
            return None
        return ".".join(parts[:keep] + ([node.module] if node.module else []))


def _args(args: ast.arguments) -> str:
    try:
        return ast.unparse(args)
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree does not fail in practice
        return "..."


def _class_attributes(node: ast.ClassDef) -> list[str]:
    names = []
    for stmt in node.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names[:50]


def _class_features(node: ast.ClassDef, methods: list[str]) -> list[str]:
    """Structural hints for tier 2: a class attribute holding the instance (singleton), ``__new__``,
    ``__getattr__`` delegation (adapter/proxy), a registry dict filled by a ``register`` method."""
    found = set()
    attrs = {a.lower() for a in _class_attributes(node)}
    if attrs & {"_instance", "__instance", "instance", "_instances"}:
        found.add("instance_attribute")
    if "__new__" in methods:
        found.add("overrides_new")
    if "__getattr__" in methods:
        found.add("delegates_getattr")
    if any(m.startswith("register") for m in methods):
        found.add("register_method")
    if any(m.startswith(("create", "make", "build", "from_")) for m in methods):
        found.add("factory_methods")
    if any(m in ("instance", "get_instance", "getInstance", "shared", "default_instance") for m in methods):
        found.add("instance_accessor")
    return sorted(found)


def _function_features(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Hints for tier 2: returns an inner function (decorator), wraps (functools.wraps), stores into a
    subscript of a module-level name (registry), returns a new instance of a capitalised name (factory)."""
    found = set()
    inner = {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for sub in _statements(node):
        if isinstance(sub, ast.Return) and sub.value is not None:
            if isinstance(sub.value, ast.Name) and sub.value.id in inner:
                found.add("returns_inner_function")
            elif isinstance(sub.value, ast.Call):
                callee = dotted(sub.value.func) or ""
                if callee.rsplit(".", 1)[-1][:1].isupper():
                    found.add("returns_new_instance")
        elif isinstance(sub, ast.Assign) and any(isinstance(t, ast.Subscript) and isinstance(t.value, (ast.Name, ast.Attribute))
                                                 for t in sub.targets):
            found.add("stores_in_mapping")
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                (dotted(d.func if isinstance(d, ast.Call) else d) or "").endswith("wraps") for d in sub.decorator_list):
            found.add("uses_wraps")
    return sorted(found)


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(node: ast.AST) -> list[ast.AST]:
    """Every statement under ``node`` (nested blocks and definitions included), without walking the
    expressions: the features above are statement-level, and a full ``ast.walk`` per function cost
    a third of tier 1."""
    out: list[ast.AST] = []
    stack = [node]
    while stack:
        current = stack.pop()
        for field in _BLOCKS:
            for child in getattr(current, field, ()) or ():
                out.append(child)
                stack.append(child)
    return out
