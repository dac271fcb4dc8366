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
from .kg import KG, KGInfo, Workspace
from .methods import RetrievalConfig, classify_intent
from .model import Edge, Neighbor, Node

__version__ = "0.1.0"

__all__ = [
    "Workspace", "KG", "KGInfo", "Node", "Edge", "Neighbor", "classify_intent", "RetrievalConfig",
    "KGOSError", "InvalidName", "InvalidArgument", "KGNotFound", "KGExists", "NodeNotFound",
    "AmbiguousNode", "EdgeNotFound", "NoPath", "ReadOnlyKG", "ImportFailed", "SchemaNotRecognized",
    "MissingDependency",
]
