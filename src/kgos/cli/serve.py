"""``kgos serve``: the HTTP API (FastAPI on uvicorn) over the workspace.

The bearer token comes only from the environment (``KGOS_API_TOKEN``), never from a flag, so it
does not show up in ``ps`` or shell history. Binding anywhere but loopback needs it.
"""

from __future__ import annotations

import errno
import socket

import click

from ..errors import PortInUse
from . import cli, workspace


def check_port(host: str, port: int) -> None:
    """Refuse, before anything starts, a port another process listens on (uvicorn alone logged the
    bind error and exited 3 after starting the app)."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no conflict
        try:
            probe.bind((bare, port))
        except OSError as exc:
            why = "is in use (another server, perhaps kgos serve, listens on it)" if exc.errno == errno.EADDRINUSE \
                else f"cannot be bound ({exc.strerror})"
            raise PortInUse(f"{host}:{port} {why}: choose another --port or stop that server") from None


def url_host(host: str) -> str:
    """``host`` as it goes into a URL (IPv6 addresses in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback requires KGOS_API_TOKEN.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port to listen on.")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="Allow browser requests from ORIGIN (repeatable; default: CORS off, or $KGOS_CORS_ORIGINS).")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME[:PORT]",
              help="Also answer requests whose Host is NAME (repeatable; default: only the bound names, "
                   "or $KGOS_ALLOWED_HOSTS). For a reverse proxy or a LAN name.")
@click.option("--provider", help="Default LLM provider of expert chat (default: $KGOS_LLM_PROVIDER, else offline).")
@click.option("--model", help="Default LLM model (default: $KGOS_LLM_MODEL or the provider's).")
@click.option("--max-body", type=click.IntRange(min=1), metavar="BYTES",
              help="Largest JSON request body  [default: 1000000].")
@click.option("--max-upload", type=click.IntRange(min=1), metavar="BYTES",
              help="Largest KG upload  [default: 536870912].")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]),
              default="info", show_default=True, help="uvicorn's log level.")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Processes that answer search and the query methods (each holds its own search index: "
                   "memory grows with N). 1: the server's threads, in parallel but sharing one core's worth "
                   "of Python; 2 or more reach more cores (docs/performance.md).")
@click.option("--no-fill-in", "no_fill_in", is_flag=True,
              help="At start, neither resume the embedding fill-ins left pending (KGs still searched with the "
                   "fast tier) nor build a missing fast tier; uploads are still embedded in the background.")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, cors_origins: tuple[str, ...], allowed_hosts: tuple[str, ...],
          provider: str | None, model: str | None, max_body: int | None, max_upload: int | None,
          log_level: str, no_fill_in: bool, workers: int) -> None:
    """Serve the HTTP API: KGs, search and query methods under /api/kg, the spec's /api/kgos and
    /api/experts routes, OpenAPI at /openapi.json and interactive docs at /docs.

    Set KGOS_API_TOKEN to require 'Authorization: Bearer <token>' on every request (mandatory
    when --host is not a loopback address). Requests must name this server in Host (the bound
    address, localhost, or an --allowed-host); writes from another web origin are refused, and a
    POST that is not JSON (a multipart upload) needs the header 'X-KGOS-Client: <anything>'.

    One background worker embeds uploaded KGs (the fast tier, then the default model) one at a
    time; at start it builds the fast tier if this home has none and resumes the fill-ins a stopped
    server or command left pending (--no-fill-in: neither). Ctrl-C stops it between two commits;
    nothing committed is lost.
    """
    import uvicorn

    check_port(host, port)
    from ..api.app import create_app
    from ..api.runtime import ServerSettings
    settings = ServerSettings.from_env(host=host, port=port, cors_origins=tuple(cors_origins) or None,
                                       allowed_hosts=tuple(allowed_hosts) or None,
                                       provider=provider, model=model, max_body_bytes=max_body,
                                       max_upload_bytes=max_upload, fill_in=not no_fill_in, workers=workers)
    app = create_app(workspace(ctx), settings)
    base = f"http://{url_host(host)}:{port}"
    click.echo(f"KG-OS API on {base}/api  (docs: {base}/docs, workspace: {workspace(ctx).home})")
    click.echo("Every request must send 'Authorization: Bearer <KGOS_API_TOKEN>'." if settings.token
               else "No KGOS_API_TOKEN set: any process on this machine can use the API.")
    uvicorn.run(app, host=host, port=port, log_level=log_level, server_header=False)
