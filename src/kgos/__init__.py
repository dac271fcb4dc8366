"""KG-OS: a local-first operating system for knowledge graphs.

>>> import kgos, tempfile
>>> ws = kgos.Workspace(tempfile.mkdtemp())
>>> kg = ws.create("demo-mini")
>>> a = kg.add_node("Prompt caching", type="feature")
>>> b = kg.add_node("Cost reduction", type="goal")
>>> kg.add_edge(a.id, b.id, "enables").type
'enables'
>>> [n.node.name for n in kg.neighbors(a.id)]
['Cost reduction']
"""

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
                     AmbiguousNode,
                     EdgeNotFound,
                     ImportFailed,
                     InvalidArgument,
                     InvalidName,
                     KGExists,
                     KGNotFound,
                     KGOSError,
                     MissingDependency,
                     NodeNotFound,
                     NoPath,
                     ReadOnlyKG,
                     SchemaNotRecognized,
)
from .model import Edge, Neighbor, Node

if TYPE_CHECKING:
    from .kg import KG, KGInfo, Workspace
    from .methods import RetrievalConfig, classify_intent

__version__ = "0.1.0"

# The facade pulls in numpy, scipy and the query layers (~1-2 s on a loaded machine): loaded on first
# use of these names, so ``import kgos`` (the CLI, ``kgos.errors``) stays cheap (DESIGN.md section 7).
_LAZY = {"Workspace": "kg", "KG": "kg", "KGInfo": "kg", "RetrievalConfig": "methods", "classify_intent": "methods"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kgos' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value

__all__ = [
    "KG",
    "AmbiguousNode",
    "Edge",
    "EdgeNotFound",
    "ImportFailed",
    "InvalidArgument",
    "InvalidName",
    "KGExists",
    "KGInfo",
    "KGNotFound",
    "KGOSError",
    "MissingDependency",
    "Neighbor",
    "NoPath",
    "Node",
    "NodeNotFound",
    "ReadOnlyKG",
    "RetrievalConfig",
    "SchemaNotRecognized",
    "Workspace",
    "classify_intent",
]
