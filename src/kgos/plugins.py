"""One way to register a backend: a pluggy hook specification for every family (docs/plugins.md).

Each family of backends has one hook, ``register_<family>()``, that returns a mapping of names to
what the family needs (an embedder ``Backend`` row, a predictor class, a chat-provider factory, a
fusion function, a file format, an ingest extractor, pipeline module classes). The built-ins answer
the same hooks as third-party packages do: each family's registry registers its own built-in plugin (a module with a
``@hookimpl``) when it is imported, so this module, at the bottom of the layer order, never imports
a higher layer. A package adds backends by declaring an entry point in the group ``kgos``::

    [project.entry-points.kgos]
    my_plugin = "my_package.kgos_plugin"

    # my_package/kgos_plugin.py
    from kgos.plugins import hookimpl

    @hookimpl
    def register_embedders():
        from kgos.embed.registry import Backend
        return {"mine": Backend("mine", "my_package.embed:MyEmbedder", name="mine-v1", dims=256)}

Entry points load once, on the first lookup; one that fails to load, or a name already taken by an
earlier plugin, is reported by :func:`errors` (and ``kgos plugins``) and never breaks KG-OS.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy

__all__ = ["BUILTIN", "CATALOGUE", "ENTRY_POINT_GROUP", "FAMILIES", "Entry", "Installed", "add_builtin",
           "builtin_catalogue", "entries", "errors", "hookimpl", "hookspec", "installed", "listing", "manager",
           "register", "reload", "unregister"]

PROJECT = "kgos"
#: KG-OS's own backends, ``{family: {name: "module:qualname"}}``: what ``kgos plugins`` lists without
#: importing the registries (linkpred's and ingest's pull in the whole query layer, 5-9 s of a listing);
#: written by ``kgos plugins --write-catalogue``, checked against the registries by tests/test_plugins.py
CATALOGUE = Path(__file__).with_name("plugins_builtin.json")
ENTRY_POINT_GROUP = "kgos"
BUILTIN = "built-in"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Specs:
    """The hooks. Each returns ``{name: object}``; names are unique within a family."""

    @hookspec
    def register_embedders(self) -> Mapping[str, Any]:
        """Embedder backends: ``{kind: kgos.embed.registry.Backend}`` (specs ``<kind>[:<arg>]``)."""

    @hookspec
    def register_llm_providers(self) -> Mapping[str, Any]:
        """Chat providers: ``{name: factory(name, model, timeout, options) -> ChatProvider}``
        (specs ``<name>:<model>``)."""

    @hookspec
    def register_predictors(self) -> Mapping[str, Any]:
        """Link predictors: ``{name: Predictor subclass or factory(**params)}``."""

    @hookspec
    def register_fusions(self) -> Mapping[str, Any]:
        """Merge strategies of the research loop: ``{name: function(ranked lists) -> Fused}``."""

    @hookspec
    def register_formats(self) -> Mapping[str, Any]:
        """Import/export formats: ``{name: kgos.store.formats.Format}``."""

    @hookspec
    def register_extractors(self) -> Mapping[str, Any]:
        """Ingest extractors by file kind: ``{kind: kgos.ingest.files.Extractor(extract, suffixes)}``."""

    @hookspec
    def register_pipeline_modules(self) -> Mapping[str, Any]:
        """Pipeline modules and reasoners of spec/004: ``{module id: module class}``."""


FAMILIES = tuple(name.removeprefix("register_") for name in vars(Specs) if name.startswith("register_"))


@dataclass(frozen=True)
class Entry:
    """One registered backend: its family, name, the object, and where it came from (``built-in``,
    the distribution that installed it, or the name it was registered under)."""

    family: str
    name: str
    value: Any
    source: str


_lock = threading.RLock()
_manager: pluggy.PluginManager | None = None
_builtins: dict[str, object] = {}  # name -> KG-OS's own plugin, registered again by reload()
_errors: dict[str, str] = {}
_packages: dict[str, str] = {}  # entry point name -> the distribution that declared it


def manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, with the ``kgos`` entry points loaded (once)."""
    global _manager
    with _lock:
        if _manager is None:
            pm = pluggy.PluginManager(PROJECT)
            pm.add_hookspecs(Specs)
            for name, plugin in _builtins.items():
                pm.register(plugin, name=name)
            _manager = pm  # before the entry points: a plugin importing a family's registry registers on it
            _load_entry_points(pm)
        return _manager


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Register every entry point of the group ``kgos``, each on its own: one that fails to load is
    reported by :func:`errors` and the others still load. (Not ``pm.load_setuptools_entrypoints``:
    it stops at the first failure, and reads every distribution's metadata, 35 ms against 7 here.)"""
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            pm.register(ep.load(), name=ep.name)
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, never fatal
            _errors[ep.name] = f"{type(exc).__name__}: {exc}"
            continue
        _packages[ep.name] = ep.dist.name if ep.dist is not None else ep.value


def add_builtin(plugin: object, name: str) -> None:
    """Register one of KG-OS's own plugins (once; a family's registry calls this when imported)."""
    with _lock:
        pm = manager()
        if pm.get_plugin(name) is None:
            pm.register(plugin, name=name)
        _builtins[name] = plugin


def register(plugin: object, name: str | None = None) -> str:
    """Register a plugin object (a module or an instance with ``@hookimpl`` functions) at run time,
    e.g. an application's own backends or a test's; returns the name it is registered under."""
    with _lock:
        return manager().register(plugin, name=name) or ""


def unregister(name: str) -> None:
    with _lock:
        pm = manager()
        if pm.get_plugin(name) is not None:
            pm.unregister(name=name)
        _builtins.pop(name, None)


def reload() -> None:
    """Start again from the built-ins and the entry points installed now (after installing a plugin
    package in a running process; plugins registered with :func:`register` are dropped)."""
    global _manager
    with _lock:
        _manager = None
        _errors.clear()
        _packages.clear()
        manager()


def entries(family: str) -> list[Entry]:
    """Every backend of ``family``, built-ins first, then plugins in registration order; a name
    taken by an earlier plugin is skipped and reported by :func:`errors`."""
    if family not in FAMILIES:
        raise ValueError(f"unknown plugin family {family!r}; one of {', '.join(FAMILIES)}")
    with _lock:  # the hooks run outside the lock: a hook may import modules that register plugins
        pm = manager()
        impls = getattr(pm.hook, f"register_{family}").get_hookimpls()
        sources = {**_packages, **{name: BUILTIN for name in _builtins}}
        builtins = set(_builtins)
    found: dict[str, Entry] = {}
    for impl in sorted(impls, key=lambda i: i.plugin_name not in builtins):  # stable: order kept within
        source = sources.get(impl.plugin_name, impl.plugin_name)
        for name, value in dict(impl.function() or {}).items():
            if name in found:
                with _lock:
                    _errors[f"{family}:{name}"] = (f"{source} registers {name!r} again; "
                                                   f"{found[name].source}'s is used")
                continue
            found[name] = Entry(family, str(name), value, source)
    return list(found.values())


def errors() -> dict[str, str]:
    """Entry points that failed to load and names registered twice: what ``kgos plugins`` reports."""
    with _lock:
        return dict(_errors)


@dataclass(frozen=True)
class Installed:
    """What ``kgos plugins`` lists: every backend per family, with its source, and what failed."""

    entries: tuple[Entry, ...]
    errors: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        families: dict[str, list[dict[str, str]]] = {f: [] for f in FAMILIES}
        for e in self.entries:
            families[e.family].append({"name": e.name, "source": e.source, "object": _describe(e.value)})
        return {"families": families, "errors": dict(self.errors)}


def installed() -> Installed:
    """Every registered backend of every family. Only the families whose registry is imported have
    their built-ins registered: ``kgos plugins`` imports them all first."""
    found = tuple(e for family in FAMILIES for e in entries(family))
    return Installed(found, errors())


def _describe(value: Any) -> str:
    """``module:qualname`` of a class or function, else the object's own target (an embedder Backend's)."""
    target = getattr(value, "target", None)
    if isinstance(target, str):
        return target
    module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    return f"{module}:{name}" if module and name else type(value).__name__


@dataclass(frozen=True)
class _Catalogued:
    """A built-in backend known by its catalogue line only (its module is not imported)."""

    target: str


def builtin_catalogue() -> dict[str, dict[str, str]]:
    """The built-ins registered in this process, as :data:`CATALOGUE` stores them (``kgos plugins
    --write-catalogue`` imports every registry first)."""
    return {f: {e.name: _describe(e.value) for e in entries(f) if e.source == BUILTIN} for f in FAMILIES}


def listing() -> Installed:
    """What :func:`installed` returns once every registry is imported, without importing them: the
    built-ins from :data:`CATALOGUE`, then the plugins' backends from their hooks (a name a built-in
    has is reported, as :func:`entries` does)."""
    catalogue = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    found: list[Entry] = []
    for family in FAMILIES:
        own = catalogue.get(family, {})
        found += [Entry(family, name, _Catalogued(target), BUILTIN) for name, target in own.items()]
        for e in entries(family):
            if e.source == BUILTIN:
                continue
            if e.name in own:
                with _lock:
                    _errors[f"{family}:{e.name}"] = f"{e.source} registers {e.name!r} again; {BUILTIN}'s is used"
                continue
            found.append(e)
    return Installed(tuple(found), errors())
