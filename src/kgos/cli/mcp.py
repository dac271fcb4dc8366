"""``kgos mcp``: the MCP server (``kgos.api.mcp``) over stdio, for Claude Desktop and other MCP clients.

stdout carries the protocol and nothing else: this command prints nothing, and logs go to stderr.
"""

from __future__ import annotations

import click

from . import cli, workspace


@cli.command("mcp")
@click.option("--allow-writes", is_flag=True, envvar="KGOS_MCP_WRITES",
              help="Also offer the write tools (add_node, add_edge, proposal_accept, proposal_reject); "
                   "default: read-only tools, or $KGOS_MCP_WRITES=1.")
@click.option("--provider", help="LLM provider ask_expert answers with (default: $KGOS_LLM_PROVIDER, else offline), "
                                 "e.g. local, openai, anthropic:claude-sonnet-4-5.")
@click.option("--model", help="Model of that provider (for local: a GGUF path or a bundled model name).")
@click.pass_context
def mcp(ctx: click.Context, allow_writes: bool, provider: str | None, model: str | None) -> None:
    """Serve the KGs, query methods, experts and memory as an MCP server over stdio.

    Configure an MCP client to run `kgos mcp` (with --home or KGOS_HOME for the workspace); the
    tools take the Python API's argument names, e.g. search {"kg": "demo", "query": "...", "k": 10}.
    The same server is mounted on `kgos serve` at /mcp (streamable HTTP).
    """
    from ..api.mcp import create_server
    from ..llm import get_provider

    chat = get_provider(provider, model=model)  # a bad spec or model fails here, before a client connects
    server = create_server(workspace(ctx), allow_writes=allow_writes, provider=lambda: chat)
    server.run("stdio")
