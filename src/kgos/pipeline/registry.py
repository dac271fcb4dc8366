"""The registry of pipeline modules and reasoning strategies (spec/004 "Extensibility Model").

A class registers under a dotted id with the decorator::

    from kgos.pipeline import BaseModule, register

    @register("search.my_backend")
    class MySearch(BaseModule):
        name = "My Custom Search"
        category = "search"
        ...

and a plugin package registers by being installed, the way every backend family does
(kgos.plugins, docs/plugins.md): its ``kgos`` entry point answers the ``register_pipeline_modules``
hook with ``{module id: class}``. The older group ``kgos.modules`` still works: its object is a module
class, a Python module (importing it runs its ``@register`` decorators) or a callable returning
module classes::

    [project.entry-points."kgos.modules"]
    my_backend = "my_package.search:MySearch"

The built-in modules (kgos.research, kgos.ingest.modules) answer the same hook.

Entry points are loaded once, on the first lookup that misses or listing; a plugin that fails to load
is reported in ``Registry.errors`` and never breaks KG-OS. Reasoning strategies register the same way
under ``reason.<name>`` (their ``category`` is ``"reason"``).
"""

from __future__ import annotations

import difflib
import inspect
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, TypeVar

from ..errors import InvalidName, ModuleNotFound
from ..plugins import add_builtin, entries, hookimpl

__all__ = ["ENTRY_POINT_GROUP", "REGISTRY", "Registry", "register"]

ENTRY_POINT_GROUP = "kgos.modules"
T = TypeVar("T", bound=type)


class Registry:
    """Module classes by id, filled by ``register``, by entry points of ``group`` and, when ``hooks``
    (the process-wide :data:`REGISTRY`), by the ``register_pipeline_modules`` hook of kgos.plugins."""

    def __init__(self, group: str = ENTRY_POINT_GROUP, *, hooks: bool = False) -> None:
        self.group = group
        self.hooks = hooks
        self.errors: dict[str, str] = {}
        self._classes: dict[str, type] = {}
        self._discovered = False
        self._lock = threading.RLock()

    def register(self, module_id: str | None = None, *, replace: bool = False) -> Callable[[T], T]:
        """Class decorator: register under ``module_id`` (default: the class's ``id``)."""
        def decorate(cls: T) -> T:
            self.add(cls, module_id, replace=replace)
            return cls
        return decorate

    def add(self, cls: type, module_id: str | None = None, *, replace: bool = False) -> str:
        """Register ``cls``; its ``id`` becomes ``module_id`` (spec/004's example registers
        ``"search.my_backend"`` for a class whose id is ``"my_backend"``: the dotted name wins)."""
        key = module_id or getattr(cls, "id", "")
        if not key or not isinstance(key, str) or any(c.isspace() for c in key):
            raise InvalidName(f"a pipeline module needs a non-empty id without spaces, got {key!r}")
        own = getattr(cls, "id", "")
        if own and own != key and own != key.rsplit(".", 1)[-1]:
            raise InvalidName(f"{cls.__name__} has id {own!r} but is registered as {key!r}")
        cls.id = key  # type: ignore[attr-defined]
        with self._lock:
            if key in self._classes and self._classes[key] is not cls and not replace:
                raise InvalidName(f"pipeline module {key!r} is already registered "
                                  f"({self._classes[key].__module__}.{self._classes[key].__name__})")
            self._classes[key] = cls
        return key

    def get(self, module_id: str) -> type:
        """The class registered as ``module_id``; ``ModuleNotFound`` (with close ids) otherwise."""
        with self._lock:
            if module_id not in self._classes:
                self.discover()
            if module_id in self._classes:
                return self._classes[module_id]
            close = difflib.get_close_matches(module_id, list(self._classes), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ModuleNotFound(f"no pipeline module {module_id!r}{hint}", suggestions=close)

    def create(self, module_id: str, config: Mapping[str, Any] | None = None) -> Any:
        """A new instance of ``module_id`` configured with ``config``."""
        return self.get(module_id)(config)

    def ids(self, category: str | None = None) -> list[str]:
        """Registered ids (entry points included), of one ``category`` if given, sorted."""
        with self._lock:
            self.discover()
            return sorted(k for k, c in self._classes.items()
                          if category is None or getattr(c, "category", None) == category)

    def describe(self, category: str | None = None) -> list[dict[str, Any]]:
        """id, name, version, category, config schema and docstring of each module: what a UI lists."""
        return [{"id": k, "name": getattr(c, "name", "") or k, "version": getattr(c, "version", ""),
                 "category": getattr(c, "category", ""), "config_schema": getattr(c, "config_schema", {}),
                 "input_schema": _schema(c, "input_schema"), "output_schema": _schema(c, "output_schema"),
                 "description": inspect.getdoc(c) or ""}
                for k in self.ids(category) for c in [self._classes[k]]]

    def discover(self, *, force: bool = False) -> list[str]:
        """Load the entry points of ``group`` (once unless ``force``); returns the ids they added."""
        with self._lock:
            if self._discovered and not force:
                return []
            self._discovered = True
            before = set(self._classes)
            for entry in entries("pipeline_modules") if self.hooks else ():
                try:
                    self._load_entry(entry.name, entry.value)
                except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, never fatal
                    self.errors[entry.name] = f"{type(exc).__name__}: {exc}"
            for ep in entry_points(group=self.group):
                try:
                    self._load(ep.load())
                except Exception as exc:  # a broken plugin is reported, never fatal
                    self.errors[ep.name] = f"{type(exc).__name__}: {exc}"
            return sorted(set(self._classes) - before)

    def _load_entry(self, module_id: str, cls: Any) -> None:
        if not isinstance(cls, type):
            raise TypeError(f"{cls!r} is not a module class")
        if self._classes.get(module_id) is not cls:
            self.add(cls, module_id)

    def _load(self, obj: Any) -> None:
        if isinstance(obj, ModuleType):
            return  # importing it ran its @register decorators
        if isinstance(obj, type):
            if obj not in self._classes.values():
                self.add(obj)
            return
        if callable(obj):
            found: Iterable[type] = obj() or ()
            for cls in found:
                if cls not in self._classes.values():
                    self.add(cls)
            return
        raise TypeError(f"entry point object {obj!r} is not a class, module or callable")


def _schema(cls: type, which: str) -> dict[str, Any] | None:
    """A module's input or output JSON Schema (kgos.pipeline.BaseModule), None when it declares none."""
    get = getattr(cls, which, None)
    return get() if callable(get) else None


#: the process-wide registry that ``@register`` fills
REGISTRY = Registry(hooks=True)
register = REGISTRY.register
_BUILTIN_PACKAGES = ("kgos.research", "kgos.ingest")


@hookimpl
def register_pipeline_modules() -> dict[str, type]:
    """The built-in modules, through the hook third-party packages answer too (kgos.plugins):
    importing their packages runs their ``@register`` decorators."""
    from .. import research  # noqa: F401
    from ..ingest import modules  # noqa: F401
    classes = dict(REGISTRY._classes)  # a copy, without the lock: discover() holds it while calling hooks
    return {k: c for k, c in classes.items() if c.__module__.startswith(_BUILTIN_PACKAGES)}


add_builtin(sys.modules[__name__], "kgos.pipeline")
