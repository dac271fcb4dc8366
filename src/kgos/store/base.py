"""The read interface every KG store offers, native or foreign.

Layers above (index, methods, server) only talk to a ``GraphStore``; whether the rows come from
the native schema or a mapped foreign schema is the store's business.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from ..errors import ImportFailed, InvalidArgument, NodeNotFound, ReadOnlyKG
from ..model import DIRECTIONS, Edge, Neighbor, Node
from .arrays import GraphArrays, codes
from .limits import nests_too_deep, unreadable
from .writing import WriteLog, WriteOps, Writer, Written

CommitHook = Callable[["GraphStore", Written], None]


def check_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise InvalidArgument(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    return direction


def load_json_object(text: str | None, what: str) -> dict[str, Any]:
    """Parse a properties/metadata column; ``None`` and empty mean ``{}``."""
    if text is None or text == "" or text == "{}":  # most nodes: no parse
        return {}
    try:
        value = json.loads(text)
    except RecursionError:  # deeper than the parser goes (~1000 levels): stored by an old version
        return unreadable(what)
    except (TypeError, ValueError) as exc:
        raise ImportFailed(f"{what} is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        return {"value": value}
    return unreadable(what) if nests_too_deep(text, value) else value


@contextmanager
def sqlite_read(conn: sqlite3.Connection, lock: threading.RLock) -> Iterator[None]:
    """One SQLite read transaction on ``conn``: every statement inside sees the same state of the file.

    Writers in other processes go on meanwhile (WAL) or wait for it to end (rollback journal), so
    several reads can be combined without seeing half of another process's write. Re-entrant: inside
    a transaction already open on ``conn`` it adds nothing."""
    with lock:  # the connection is shared by the threads of this process
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")  # deferred: the read snapshot starts at the first SELECT
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")


class GraphStore(ABC):
    """Read access to one KG. Writes raise ``ReadOnlyKG`` unless a subclass allows them."""

    db_id: str
    read_only: bool = True
    # KG-OS's own schema (SQLite file or PostgreSQL): metadata, vectors and settings are kept in the KG
    native_schema: bool = False

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """Reads inside see one consistent state of the KG (stores backed by SQLite override this)."""
        yield

    # -- metadata -------------------------------------------------------------------------
    @abstractmethod
    def meta(self) -> dict[str, str]:
        """name, description, format and other key/values stored with the KG."""

    @abstractmethod
    def version(self) -> str:
        """Changes whenever the KG's content changes; derived indexes are keyed by it."""

    @abstractmethod
    def close(self) -> None: ...

    # -- counts and lookups -----------------------------------------------------------------
    @abstractmethod
    def node_count(self) -> int: ...

    @abstractmethod
    def edge_count(self) -> int: ...

    @abstractmethod
    def get_node(self, node_id: str) -> Node | None: ...

    @abstractmethod
    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, Node]: ...

    @abstractmethod
    def find_nodes(self, name: str, type: str | None = None, limit: int = 50) -> list[Node]:
        """Nodes whose normalised name equals ``name``'s (optionally of one type)."""

    @abstractmethod
    def search_names(self, text: str, limit: int = 10) -> list[Node]:
        """Nodes whose name or id contains ``text`` (case-insensitive), shortest names first."""

    def not_found(self, node_id: str) -> NodeNotFound:
        """A NodeNotFound that suggests close ids and names (difflib over the names sharing a prefix)."""
        candidates = self.search_names(node_id[:3], limit=500) if node_id else []
        pool = {n.id: n for n in candidates}
        pool.update((n.name, n) for n in candidates)
        close = difflib.get_close_matches(node_id, list(pool), n=5, cutoff=0.5)
        ids = list(dict.fromkeys(pool[c].id for c in close))
        hint = f"; did you mean {', '.join(ids)}?" if ids else ""
        return NodeNotFound(f"no node '{node_id}' in KG '{self.db_id}'{hint}", ids)

    @abstractmethod
    def iter_nodes(self) -> Iterator[Node]: ...

    @abstractmethod
    def iter_edges(self) -> Iterator[Edge]: ...

    def neighbors(self, node_id: str, direction: str = "both",
                  edge_types: Iterable[str] | None = None, limit: int | None = None) -> list[Neighbor]:
        """Nodes one edge away, strongest edges first; ``direction`` outgoing, incoming or both."""
        check_direction(direction)
        key = self._node_key(node_id)
        types = list(edge_types) if edge_types is not None else None
        out: list[Neighbor] = []
        for side in ("outgoing", "incoming"):
            if direction in (side, "both"):
                out += self._hop(key, side, types, limit)
        return out[:limit] if limit is not None else out

    @abstractmethod
    def _node_key(self, node_id: str) -> Any:
        """How the store's edge table refers to this node (raises NodeNotFound)."""

    @abstractmethod
    def _hop(self, key: Any, side: str, types: list[str] | None, limit: int | None) -> list[Neighbor]:
        """One hop from ``key``: its out-edges (side "outgoing") or in-edges ("incoming")."""

    @abstractmethod
    def get_edge(self, source: str, target: str, type: str) -> Edge | None: ...

    def node_types(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.iter_nodes():
            counts[node.type] = counts.get(node.type, 0) + 1
        return counts

    def edge_types(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for edge in self.iter_edges():
            counts[edge.type] = counts.get(edge.type, 0) + 1
        return counts

    def graph_arrays(self) -> GraphArrays:
        """All nodes and edges as aligned arrays. Subclasses override with a faster query."""
        nodes = list(self.iter_nodes())
        index = {n.id: i for i, n in enumerate(nodes)}
        edges = list(self.iter_edges())
        ntype, ntype_names = codes([n.type for n in nodes])
        etype, etype_names = codes([e.type for e in edges])
        return GraphArrays(
            node_ids=tuple(index), node_types=ntype, node_type_names=ntype_names,
            src=np.fromiter((index[e.source] for e in edges), np.int32, len(edges)),
            dst=np.fromiter((index[e.target] for e in edges), np.int32, len(edges)),
            type_code=etype, types=etype_names,
            weight=np.fromiter((e.weight for e in edges), np.float32, len(edges)))

    def require_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyKG(f"KG '{self.db_id}' is read-only; attach it with --writable to change it")

    # -- capabilities: what callers may ask of a backend instead of checking its class -------------------
    @property
    def writable(self) -> bool:
        """Takes writes now (``writing()`` works)."""
        return not self.read_only and self.supports_writes

    supports_writes: bool = False  # the backend implements ``_write_scope`` and ``_write_ops``
    supports_bulk: bool = False  # ``writing(bulk=True)`` takes ``merge_node_rows`` / ``merge_edge_rows``
    sql_dialect: str | None = None  # "sqlite" or "postgresql": the dialect of the pushed-down queries

    def node_table(self) -> Any:
        """How pushed-down queries reach the node rows (``methods.nodesql``), or None: iterate."""
        return None

    def vector_table(self) -> Any:
        """Where this KG keeps its own node vectors (``index.vectors``), or None: a sidecar file."""
        return None

    def proposal_store(self) -> Any:
        """The review queue this backend keeps itself, or None (``proposals.open_proposal_store``)."""
        return None

    def vector_models(self) -> dict[str, int]:
        """Models with vectors in the KG's own table and how many nodes each covers ({} without one)."""
        return {}

    def row_reader(self) -> Any:
        """Rowid-level reads of a native SQLite file (``native_rows.RowReader``) for the snapshot
        builder, or None: it reads ``graph_arrays`` and ``iter_nodes`` instead."""
        return None

    # -- the unit of work ------------------------------------------------------------------------------
    def on_commit(self, hook: CommitHook) -> None:
        """Call ``hook(store, written)`` after each outermost unit of work that changed nodes or edges
        commits (the kg layer embeds the written nodes). Not called for a failed unit."""
        hooks = self.__dict__.setdefault("_commit_hooks", [])
        if hook not in hooks:
            hooks.append(hook)

    def _units(self) -> list[WriteLog]:
        """The open units of work of this thread, outermost first."""
        local = self.__dict__.get("_unit_local")
        if local is None:
            local = self.__dict__.setdefault("_unit_local", threading.local())
        if not hasattr(local, "stack"):
            local.stack = []
        return local.stack  # type: ignore[no-any-return]

    @contextmanager
    def _unit(self, bump: bool = True, bulk: bool = False) -> Iterator[tuple[Any, WriteLog]]:
        """One (possibly nested) transaction with its write log: a nested one is a savepoint, taken
        back alone if it fails; the outermost commits and then runs the commit hooks."""
        self.require_writable()
        stack = self._units()
        log = WriteLog(bulk=bulk, bump=bump)
        outermost = not stack
        with self._write_scope(not outermost, lambda: log.bump) as conn:
            stack.append(log)
            try:
                yield conn, log
            finally:
                stack.pop()
        if not outermost:
            stack[-1].absorb(log)
            return
        written = log.written()
        if not written.empty:
            for hook in list(self.__dict__.get("_commit_hooks", ())):
                hook(self, written)

    def writing(self, bulk: bool = False) -> AbstractContextManager[Writer]:
        """``with store.writing() as w: w.upsert_entity(...); w.add_edge(...)``: every write inside lands,
        or none does. Nests (an inner unit is a savepoint). ``bulk``: an import's many rows; the
        nodes it writes are embedded by the fill-in, not one by one."""
        return self._writer(bulk)

    @contextmanager
    def _writer(self, bulk: bool) -> Iterator[Writer]:
        if not self.supports_writes:
            self.require_writable()
            raise ReadOnlyKG(f"KG '{self.db_id}' does not support writes")
        with self._unit(bulk=bulk) as (conn, log):
            yield Writer(self._write_ops(conn), log, self.not_found)

    def _write_scope(self, nested: bool, bump: Callable[[], bool]) -> AbstractContextManager[Any]:
        """The backend's transaction (``nested``: a savepoint in the open one); ``bump()`` says, at the
        outermost commit, whether to bump the KG version (any unit inside asked for it)."""
        raise ReadOnlyKG(f"KG '{self.db_id}' does not support writes")

    def _write_ops(self, conn: Any) -> WriteOps:
        raise ReadOnlyKG(f"KG '{self.db_id}' does not support writes")

    # -- the public write operations, once for every backend -------------------------------------------
    def add_node(self, name: str, type: str = "entity", description: str = "",
                 properties: dict[str, Any] | None = None, id: str | None = None) -> Node:
        """Insert a new node; ``id`` defaults to ``<type>:<slug of name>`` made unique."""
        with self.writing() as w:
            node_id = w.add_node(name, type, description, properties, id=id).id
        return self._written_node(node_id)

    def upsert_node(self, id: str, name: str, type: str = "entity", description: str = "",
                    properties: dict[str, Any] | None = None) -> Node:
        """Insert, or update the node with this id (properties merged, created_at kept)."""
        with self.writing() as w:
            node_id = w.upsert_node(id, name, type, description, properties).id
        return self._written_node(node_id)

    def upsert_entity(self, name: str, type: str, properties: dict[str, Any] | None = None,
                      description: str = "", id: str | None = None) -> Node:
        """Entity semantics of spec/002: unique by (normalised name, type); metadata merged."""
        with self.writing() as w:
            node_id = w.upsert_entity(name, type, properties, description, id=id).id
        return self._written_node(node_id)

    def update_node(self, id: str, name: str | None = None, type: str | None = None,
                    description: str | None = None, properties: dict[str, Any] | None = None,
                    replace_properties: bool = False) -> Node:
        """Change the given fields; properties are merged unless ``replace_properties``."""
        with self.writing() as w:
            w.update_node(id, name, type, description, properties, replace_properties)
        return self._written_node(id)

    def delete_node(self, id: str) -> int:
        """Delete a node and its edges; returns the number of edges removed with it."""
        with self.writing() as w:
            return w.delete_node(id)

    def add_edge(self, source: str, target: str, type: str, weight: float = 1.0,
                 properties: dict[str, Any] | None = None, id: str | None = None) -> Edge:
        """Upsert by (source, target, type): weight = max(old, new), properties/evidence merged,
        the original ``created_at`` kept (spec/002)."""
        with self.writing() as w:
            w.add_edge(source, target, type, weight, properties, id=id)
        return self.get_edge(source, target, type)  # type: ignore[return-value]

    def delete_edge(self, source: str, target: str, type: str) -> bool:
        with self.writing() as w:
            return w.delete_edge(source, target, type)

    def _written_node(self, node_id: str) -> Node:
        """The node as stored (a read after the commit: what the next reader sees)."""
        node = self.get_node(node_id)
        if node is None:  # deleted by another writer between the commit and this read
            raise self.not_found(node_id)
        return node

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
