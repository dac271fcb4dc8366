"""The MCP server: KG-OS's query methods, experts and memory as Model Context Protocol tools,
resources and prompts, built with the official SDK (``mcp``; its ``MCPServer`` is what SDK 1.x
called ``FastMCP``).

- ``kgos mcp`` serves it over stdio (Claude Desktop, Claude Code, any MCP client);
- ``kgos serve`` mounts the same server at ``/mcp`` (streamable HTTP) behind the API's token,
  Host and Origin checks (``security.py``, ``origin.SiteGuard``).

Tool arguments carry the Python API's names (``kg`` is the KG's db_id, then ``query``, ``k``,
``node``, ``direction``, ``max_depth``...), and every tool returns the library result's ``to_dict()``.
A library error (unknown KG or node, bad argument) comes back as an MCP tool error with the
library's message; arguments of the wrong type are refused by the tool's JSON schema the same way.
Write tools (``add_node``, ``add_edge``, ``proposal_accept``, ``proposal_reject``, ``ingest``, ``memory_add``)
exist only on a
server created with ``allow_writes=True`` (``kgos mcp --allow-writes``, ``KGOS_MCP_WRITES=1``).

Resources: ``kgos://kg/{db_id}`` (a KG's summary and stats) and ``kgos://kg/{db_id}/node/{node_id}``
(a node with its neighbours). Prompts: one per expert, its persona and the retrieval context for a
question.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from .. import __version__
from ..errors import KGOSError, MissingDependency
from ..kg.catalogue import EDGE_SIDE, METHODS, Direction, Method
from ..retrieval.hybrid import MAX_K
from .jobs import JobRegistry
from .schemas import derived
from .turns import ask

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..kg import Workspace
    from ..llm.base import ChatProvider

log = logging.getLogger(__name__)
SERVER_NAME = "kgos"
INSTRUCTIONS = ("KG-OS knowledge graphs. Call list_kgs first to learn the KG ids (the `kg` argument of every "
                "other tool), then search or the query methods; ask_expert answers a question with citations "
                "[Source: kg:node] to graph nodes.")

KgId = Annotated[str, Field(description="the KG's db_id, as list_kgs shows it (e.g. 'demo')", min_length=1,
                            max_length=128)]
Text = Annotated[str, Field(min_length=1, max_length=8_000)]
NodeRef = Annotated[str, Field(description="a node id (e.g. 'feature:batch_api') or an unambiguous node name",
                               min_length=1, max_length=1_000)]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"how many results (1-{MAX_K})")]


def load_sdk() -> Any:
    """The SDK's server module, or MissingDependency naming the ``mcp`` extra."""
    try:
        from mcp.server import mcpserver
    except ImportError as exc:
        raise MissingDependency("the MCP SDK (mcp)", "mcp") from exc
    return mcpserver


def create_server(workspace: Workspace, *, allow_writes: bool = False,
                  provider: Callable[[], ChatProvider] | None = None, jobs: JobRegistry | None = None) -> MCPServer:
    """The MCP server over ``workspace``. ``provider()`` makes the chat provider ``ask_expert`` answers
    with (default: ``kgos.llm.get_provider()``, i.e. ``$KGOS_LLM_PROVIDER`` or offline); ``jobs``: where
    background jobs (ingest) run (the HTTP server passes its own, so /api/jobs shows them too)."""
    sdk = load_sdk()
    server = sdk.MCPServer(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    tools = Tools(workspace, provider or _default_provider, jobs)
    for fn, read_only in tools.catalogue(allow_writes):
        server.add_tool(_tool_errors(fn), name=fn.__name__, description=fn.__doc__,
                        annotations=_annotations(read_only, fn.__name__), structured_output=True)
    for method in METHODS:
        if allow_writes or not method.writes:
            server.add_tool(_tool_errors(method_tool(tools, method)), name=method.name, description=method.summary,
                            annotations=_annotations(not method.writes, method.name), structured_output=True)
    _add_resources(server, tools)
    _add_prompts(server, tools)
    return server


def _default_provider() -> ChatProvider:
    from ..llm import get_provider
    return get_provider()


# Writes that leave the KG as one call left it however often they are repeated: add_edge keeps one
# (source, target, type) edge at the maximum weight given.
IDEMPOTENT_WRITES = frozenset({"add_edge"})


def _annotations(read_only: bool, name: str) -> Any:
    from mcp.types import ToolAnnotations
    return ToolAnnotations(read_only_hint=read_only, destructive_hint=False,
                           idempotent_hint=read_only or name in IDEMPOTENT_WRITES, open_world_hint=False)


def method_tool(tools: Tools, method: Method) -> Callable[..., Any]:
    """A catalogue method as a tool function: ``kg`` then the parameter type's fields (their docs and
    bounds become the input schema), returning the result's document (its derived model is the
    ``outputSchema``; the SDK sends it as ``structuredContent`` too)."""
    def tool(kg: str, **values: Any) -> Any:
        params = method.parse(values)
        return tools._read(kg, lambda g: method.run(g, params))
    parameters = [inspect.Parameter("kg", inspect.Parameter.KEYWORD_ONLY, annotation=KgId)]
    parameters += [_parameter(name, info) for name, info in method.params.model_fields.items()]
    signature = inspect.Signature(parameters, return_annotation=derived(method.result))
    setattr(tool, "__signature__", signature)  # noqa: B010  (functions have no declared __signature__)
    tool.__name__ = method.name
    tool.__doc__ = method.summary
    return tool


def _parameter(name: str, info: Any) -> inspect.Parameter:
    """A keyword parameter carrying the field's type, bounds and description (the SDK builds its
    argument model from the signature)."""
    from pydantic import Field
    annotation = Annotated[(info.annotation, *info.metadata, Field(description=info.description,
                                                                    validation_alias=info.validation_alias))]
    default = info.get_default(call_default_factory=True)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                             default=inspect.Parameter.empty if info.is_required() else default)


def _tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A library error becomes an MCP tool error (``isError``) carrying the library's message."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KGOSError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc
    return run


class Tools:
    """The tool functions; their names, docstrings and annotated parameters are what clients see."""

    def __init__(self, workspace: Workspace, provider: Callable[[], ChatProvider],
                 jobs: JobRegistry | None = None) -> None:
        self.ws = workspace
        self.provider = provider
        self.jobs = jobs or JobRegistry()

    def catalogue(self, allow_writes: bool) -> list[tuple[Callable[..., Any], bool]]:
        """The hand-written tools (the query methods come from ``kgos.kg.catalogue``), each with
        whether it is read-only."""
        reads: list[Callable[..., Any]] = [self.list_kgs, self.search, self.get_node, self.neighbors, self.proposals,
                                           self.memory_context, self.job_status]
        # memory_add writes to the memory KG, so it is a write tool like add_node (issue 33, row 9)
        writes: list[Callable[..., Any]] = [self.add_node, self.add_edge, self.proposal_accept, self.proposal_reject,
                                            self.ingest, self.memory_add]
        # ask_expert and feedback write to the workspace (the conversation, the vote) but not to any KG
        chats: list[Callable[..., Any]] = [self.ask_expert, self.feedback]
        return [(f, True) for f in reads] + [(f, False) for f in chats + (writes if allow_writes else [])]

    def _kg(self, kg: str) -> Any:
        return self.ws.kg(kg)

    def _locked(self, kg: str, call: Callable[[Any], Any]) -> Any:
        with self.ws.lock:
            result = call(self._kg(kg))
            return result.to_dict() if hasattr(result, "to_dict") else result

    def _read(self, kg: str, call: Callable[[Any], Any]) -> Any:
        """A read of one KG, in parallel with the other calls where its store allows (``Workspace.read``)."""
        result = self.ws.read(kg, call)
        return result.to_dict() if hasattr(result, "to_dict") else result

    def _write(self, kg: str, call: Callable[[Any], Any]) -> Any:
        """A write of one KG's nodes or edges, serialised by its store (``Workspace.write``)."""
        result = self.ws.write(kg, call)
        return result.to_dict() if hasattr(result, "to_dict") else result

    # -- reads ------------------------------------------------------------------------------------------
    def list_kgs(self) -> dict[str, Any]:
        """List the knowledge graphs of this workspace: db_id (the `kg` argument of the other tools),
        name, description, node and edge counts."""
        with self.ws.lock:
            return {"kgs": [i.to_dict() for i in self.ws.list()]}

    def search(self, kg: KgId, query: Text, k: K = 10,
               intent: Annotated[str | None, Field(description="one of the 8 retrieval intents; omit to "
                                                               "classify the query")] = None) -> dict[str, Any]:
        """Intent-adaptive hybrid search (meaning + BM25 text + graph + intent signals) of one KG. Returns
        the ranked hits, each with its node, score and per-signal components, plus the detected intent."""
        return self._read(kg, lambda g: g.search(query, k=k, intent=intent))

    def get_node(self, kg: KgId, node: NodeRef) -> dict[str, Any]:
        """One node by id or name: id, name, type, description and properties."""
        return self._read(kg, lambda g: g.resolve(node))

    def neighbors(self, kg: KgId, node: NodeRef, direction: Direction = "both", limit: K = 50) -> dict[str, Any]:
        """Nodes one edge away from a node, with the edge type and direction of each."""
        def read(g: Any) -> dict[str, Any]:
            ref = g.resolve(node)
            found = g.neighbors(ref.id, EDGE_SIDE[direction], limit=limit)
            return {"node": ref.id, "neighbors": [n.to_dict() for n in found]}
        return self._read(kg, read)

    def proposals(self, kg: KgId, status: Literal["pending", "accepted", "rejected"] = "pending",
                  limit: Annotated[int, Field(ge=1, le=200)] = 20) -> dict[str, Any]:
        """The KG's review queue: proposed edges and nodes (from link prediction and other sources), most
        confident first, each with its id for proposal_accept / proposal_reject."""
        def read(g: Any) -> dict[str, Any]:
            total, page = g.proposals.list(status=status, limit=limit)
            return {"total": total, "proposals": [p.to_dict() for p in page]}
        return self._locked(kg, read)

    def job_status(self, job_id: Annotated[str, Field(min_length=1, max_length=64)]) -> dict[str, Any]:
        """A background job started by a tool (ingest): status queued / running / complete / failed,
        progress, and at the end its result or error."""
        return self.jobs.get(job_id).to_dict()

    def memory_context(self, query: Text) -> dict[str, Any]:
        """What the agent memory knows about a query: the context block an expert would inject, with the
        entities and edges behind it."""
        from ..memory import MemoryService
        with self.ws.lock:
            return MemoryService(self.ws).context(query).to_dict()

    # -- conversation and memory (workspace writes, no KG writes) ----------------------------------------
    def ask_expert(self, expert: Annotated[str, Field(description="the expert's id (prompts/list shows one "
                                                                  "prompt per expert)", min_length=1)],
                   question: Text,
                   conversation_id: Annotated[str | None, Field(description="continue this conversation")] = None
                   ) -> dict[str, Any]:
        """Ask an expert (a KG + persona): a grounded answer citing graph nodes as [Source: kg:node], the
        sources it was given, and the citation check (citations that point at nodes it was not shown)."""
        answer = ask(self.ws, self.provider(), expert, question, conversation_id=conversation_id)
        return answer.to_dict()

    def feedback(self, turn_id: Annotated[str, Field(description="the turn_id ask_expert returned",
                                                     min_length=1, max_length=64)],
                 rating: Literal["up", "down"],
                 comment: Annotated[str | None, Field(max_length=2000)] = None) -> dict[str, Any]:
        """Vote on an expert's answer (up or down, with an optional comment); voting again replaces the
        vote. Down votes feed the KG's gap report."""
        from ..experts.feedback import FeedbackService
        with self.ws.lock:
            return FeedbackService(self.ws).give(turn_id, rating, comment).to_dict()

    def memory_add(self, content: Text, tags: list[str] | None = None) -> dict[str, Any]:
        """Remember something (a fact, a preference): stored in the agent memory and linked into the
        memory KG; secrets such as API keys are redacted first."""
        from ..memory import MemoryService
        with self.ws.lock:
            return MemoryService(self.ws).add(content, tags or ()).to_dict()

    # -- KG writes (only with allow_writes) --------------------------------------------------------------
    def add_node(self, kg: KgId, name: Text, type: str = "entity", description: str = "",
                 properties: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
        """Add a node to a KG (writable KGs only); returns it with its id."""
        return self._write(kg, lambda g: g.add_node(name, type, description, properties, id=id))

    def add_edge(self, kg: KgId, source: NodeRef, target: NodeRef, type: Text,
                 weight: Annotated[float, Field(ge=0.0, le=1e6)] = 1.0,
                 properties: dict[str, Any] | None = None) -> dict[str, Any]:
        """Add an edge between two existing nodes of a KG (ids or names)."""
        def write(g: Any) -> Any:
            return g.add_edge(g.resolve(source).id, g.resolve(target).id, type, weight, properties)
        return self._write(kg, write)

    def proposal_accept(self, kg: KgId, proposal_id: Annotated[int, Field(ge=1)],
                        note: str | None = None) -> dict[str, Any]:
        """Accept a proposal of the review queue: its edge (or node) is added to the KG with provenance."""
        return self._locked(kg, lambda g: g.proposals.accept(proposal_id, reviewer="mcp", note=note))

    def ingest(self, kg: KgId,
               paths: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]],
                                Field(min_length=1, max_length=100, description="folders or files on this machine, "
                                      "below the folders KGOS_INGEST_ROOTS allows")],
               tiers: Annotated[list[Annotated[int, Field(ge=1, le=3)]], Field(
                   min_length=1, max_length=3, description="1 structure, 2 patterns, 3 LLM concepts")
               ] = [1, 2],  # noqa: B006  (read only: pydantic copies the default per call)
               embed: bool = True) -> dict[str, Any]:
        """Build or update a KG (created if missing) from code, config files and documents, as a background
        job: returns the job at once; poll job_status with its job_id for progress and the ingest report."""
        from ..ingest import IngestOptions
        from ..ingest import ingest as run_ingest
        from ..kg import Workspace, check_db_id
        from .ingest import check_roots
        db_id = check_db_id(kg)
        check_roots(paths)
        options = IngestOptions(tiers=tuple(tiers), embed=embed).checked()
        chat = self.provider() if 3 in options.tiers else None
        home = self.ws.home

        def work(progress: Any) -> dict[str, Any]:
            with Workspace(home) as ws:
                return run_ingest(ws, db_id, list(paths), options, chat, progress).to_dict()
        return self.jobs.submit("ingest", work).to_dict()

    def proposal_reject(self, kg: KgId, proposal_id: Annotated[int, Field(ge=1)],
                        note: str | None = None) -> dict[str, Any]:
        """Reject a proposal of the review queue; the same edge is not proposed again."""
        return self._locked(kg, lambda g: g.proposals.reject(proposal_id, reviewer="mcp", note=note))


# -- resources and prompts --------------------------------------------------------------------------------
def _add_resources(server: Any, tools: Tools) -> None:
    from mcp.server.mcpserver.exceptions import ResourceError

    def guarded(read: Callable[..., dict[str, Any]]) -> Callable[..., str]:
        @functools.wraps(read)
        def run(**kwargs: str) -> str:
            try:
                return json.dumps(read(**kwargs), ensure_ascii=False, default=str)
            except KGOSError as exc:
                raise ResourceError(f"{type(exc).__name__}: {exc}") from exc
        return run

    def kg_summary(db_id: str) -> dict[str, Any]:
        with tools.ws.lock:
            return {"kg": tools.ws.info(db_id).to_dict(), "stats": tools.ws.kg(db_id).stats().to_dict()}

    def node(db_id: str, node_id: str) -> dict[str, Any]:
        return {"node": tools.get_node(db_id, node_id),
                "neighbors": tools.neighbors(db_id, node_id, limit=50)["neighbors"]}

    server.resource("kgos://kg/{db_id}", name="kg", mime_type="application/json",
                    description="A KG's summary: name, description, kind, node and edge counts, type statistics"
                    )(guarded(kg_summary))
    server.resource("kgos://kg/{db_id}/node/{node_id}", name="node", mime_type="application/json",
                    description="A node (id or name) with its neighbours")(guarded(node))
    from mcp.server.mcpserver.resources import FunctionResource
    with tools.ws.lock:
        infos = tools.ws.list()
    for info in infos:  # listed concretely too, so resources/list shows the KGs there are at start
        server.add_resource(FunctionResource.from_function(
            functools.partial(guarded(kg_summary), db_id=info.db_id), uri=f"kgos://kg/{info.db_id}",
            name=f"kg-{info.db_id}", title=info.name, mime_type="application/json",
            description=f"KG '{info.db_id}': {info.description or info.name} ({info.nodes} nodes, {info.edges} edges)"))


def _add_prompts(server: Any, tools: Tools) -> None:
    from mcp.server.mcpserver.prompts.base import Prompt

    from ..experts import ExpertService
    with tools.ws.lock:
        experts = ExpertService(tools.ws).list()
    for summary in experts:
        server.add_prompt(Prompt.from_function(_expert_prompt(tools, summary.id), name=summary.id,
                                               title=summary.name,
                                               description=f"Answer as the expert '{summary.name}': its persona "
                                                           "and the knowledge-graph context for the question"))


def _expert_prompt(tools: Tools, expert_id: str) -> Callable[[str], str]:
    from ..experts import ExpertService
    from ..experts.context import assemble_prompt, retrieve

    def prompt(question: str) -> str:
        with tools.ws.lock:
            expert = ExpertService(tools.ws).get(expert_id)
            ctx = retrieve(tools.ws, expert.config, question)
        return f"{assemble_prompt(expert.config, ctx)}\n\nQuestion: {question}"
    return prompt


# -- the HTTP mount of ``kgos serve`` ------------------------------------------------------------------------
MCP_PATH = "/mcp"


def mount(app: Any, workspace: Workspace, provider: Callable[[], ChatProvider], allow_writes: bool) -> None:
    """Serve the MCP server at ``/mcp`` of ``app`` (streamable HTTP, stateless, JSON answers). It sits
    inside the app's middleware, so the bearer token, body limits and SiteGuard's Host/Origin checks
    apply to it as to every route; the SDK's own Host check is off (SiteGuard's allow-list is the one
    ``--allowed-host`` configures). The server is built when the app starts (``running``), not here:
    building its tool schemas costs ~40 ms and importing the SDK ~0.7 s, which an app that is only
    tested never needs. Without the ``mcp`` extra, ``/mcp`` answers 501 naming it."""
    from importlib.util import find_spec
    if find_spec("mcp") is None:
        def unavailable() -> None:
            raise MissingDependency("the MCP SDK (mcp)", "mcp")
        app.add_api_route(MCP_PATH, unavailable, methods=["GET", "POST", "DELETE"], include_in_schema=False)
        return
    if getattr(app.state, "jobs", None) is None:
        app.state.jobs = JobRegistry()
    app.state.mcp_factory = lambda: create_server(workspace, allow_writes=allow_writes, provider=provider,
                                                  jobs=app.state.jobs)
    app.router.add_route(MCP_PATH, Forward(app), include_in_schema=False)


class Forward:
    """``/mcp``: hands the request to the SDK's streamable-HTTP app once the app's lifespan started it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        http = getattr(self.app.state, "mcp_http", None)
        if http is None:
            from .errors import send_error
            await send_error(send, 503, "the MCP server starts with the HTTP server (its lifespan), which has "
                             "not run: serve the app with uvicorn or use TestClient as a context manager",
                             "ServiceUnavailable")
            return
        await http(scope, receive, send)


@contextlib.asynccontextmanager
async def running(app: Any) -> AsyncIterator[None]:
    """Build the mounted server and run its session manager for the app's lifespan (a mounted app's own
    lifespan never runs)."""
    factory = getattr(app.state, "mcp_factory", None)
    if factory is None:
        yield
        return
    from mcp.server.transport_security import TransportSecuritySettings
    server = factory()
    app.state.mcp_http = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    try:
        async with server.session_manager.run():
            yield
    finally:
        app.state.mcp_http = None


def writes_allowed() -> bool:
    """``$KGOS_MCP_WRITES`` is 1/true/yes: the HTTP mount offers the write tools too."""
    from ..settings import current

    return current().mcp_writes
