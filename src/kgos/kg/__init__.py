"""The kg layer: the ``KG`` facade and the ``Workspace`` that opens KGs (DESIGN.md section 3).

``KG`` composes the layers below it (store, index and search engine, query methods, embedder) into
the one object users hold; everything above (memory, experts, eval, the servers) uses it.
"""

from .facade import KG
from .workspace import KGInfo, Workspace, check_db_id, default_home

__all__ = ["KG", "KGInfo", "Workspace", "check_db_id", "default_home"]
