"""What every route shares: the workspace, its lock, the read workers, the server settings and the
LLM provider factory.

FastAPI runs plain ``def`` routes in a thread pool. Reads of a KG (search, the query methods, nodes
and edges) run in parallel without any workspace-wide lock: a KG's store reads on a connection per
thread and serialises its own writes (``Workspace.read``); with ``--workers N`` search and the query
methods run in worker processes (``readpool``). The other routes (writes, experts, research, the
workspace's own SQLite file) run inside ``with rt.lock:``. LLM streaming happens outside the lock,
so one slow model does not stall the other routes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request  # at runtime: FastAPI reads the annotation of ``runtime(request)``

from ..errors import InvalidArgument
from ..settings import current
from .origin import is_loopback, origin_of, split_host
from .readpool import MAX_WORKERS, ReadPool, execute

if TYPE_CHECKING:
    from ..kg import Workspace
    from ..llm.base import ChatProvider


@dataclass(frozen=True)
class ServerSettings:
    """How ``kgos serve`` runs. ``token``: bearer token every route requires (mandatory off loopback,
    from ``KGOS_API_TOKEN``); ``cors_origins``: allowed origins (none = CORS off); ``allowed_hosts``:
    Host names answered besides the bound ones (``origin.HostPolicy``, ``KGOS_ALLOWED_HOSTS``); body limits in
    bytes for JSON requests and for KG uploads; ``provider``/``model``: the default LLM (None:
    ``KGOS_LLM_PROVIDER``, else an OpenAI-compatible base URL if one is set, else offline);
    ``fill_in``: at start, queue the KGs whose embedding fill-in is pending (``kgos.api.embedding``)."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = 1_000_000
    max_upload_bytes: int = 512 * 1024 * 1024
    provider: str | None = None
    model: str | None = None
    llm_timeout: float = 60.0
    fill_in: bool = False  # at start, resume the pending embedding fill-ins (`kgos serve` sets it)
    workers: int = 1  # processes answering search and the query methods (1: the server's threads)

    @classmethod
    def from_env(cls, **overrides: Any) -> ServerSettings:
        env = current()
        values: dict[str, Any] = {"token": env.api_token, "cors_origins": env.cors_origins,
                                  "allowed_hosts": env.allowed_hosts, "provider": env.llm_provider,
                                  "model": env.llm_model}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values).checked()

    def checked(self) -> ServerSettings:
        if not is_loopback(self.host) and not self.token:
            raise InvalidArgument(f"refusing to serve on {self.host} without a token: set KGOS_API_TOKEN "
                                  "(every request must then send 'Authorization: Bearer <token>'), "
                                  "or bind to 127.0.0.1")
        if not 0 < self.port < 65536:
            raise InvalidArgument(f"port must be 1-65535, not {self.port}")
        if not 1 <= self.workers <= MAX_WORKERS:
            raise InvalidArgument(f"workers must be 1-{MAX_WORKERS}, not {self.workers}")
        if self.max_body_bytes <= 0 or self.max_upload_bytes <= 0:
            raise InvalidArgument("body size limits must be positive")
        self.check_names()
        return self

    def check_names(self) -> None:
        """Allowed hosts are ``name`` or ``name:port``; CORS origins ``scheme://host[:port]``, and
        ``*`` (any origin) only with a token."""
        for name in self.allowed_hosts:
            if split_host(name) is None:
                raise InvalidArgument(f"allowed host {name!r} is not a host name: give NAME or NAME:PORT "
                                      "(e.g. kg.example.com or 192.168.1.10:8765), without a scheme")
        for origin in self.cors_origins:
            if origin == "*" and not self.token:
                raise InvalidArgument("CORS origin '*' lets every web page use the API: it needs KGOS_API_TOKEN")
            if origin != "*" and origin_of(origin) != origin.rstrip("/").lower():
                raise InvalidArgument(f"CORS origin {origin!r} must look like http://host:port, without a path")


@dataclass
class Runtime:
    """Shared state of one app: ``with rt.lock:`` around every workspace call."""

    workspace: Workspace
    settings: ServerSettings = field(default_factory=ServerSettings)
    provider_factory: Callable[[str | None, str | None], ChatProvider] | None = None
    lock: threading.RLock = field(init=False)
    reads: ReadPool | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.lock = self.workspace.lock  # the workspace's own, so in-process callers can share it
        if self.settings.workers > 1:
            self.reads = ReadPool(self.workspace.home, self.workspace.database_url, self.settings.workers)

    def read(self, db_id: str, op: str, *args: Any) -> Any:
        """A named read (``readpool.execute``): in a worker process with ``--workers N``, else in
        this thread, in parallel with the other requests."""
        if self.reads is not None:
            return self.reads.run(self.workspace, db_id, op, args)
        return execute(self.workspace, db_id, op, args)

    def close(self) -> None:
        if self.reads is not None:
            self.reads.close()

    def provider(self, name: str | None = None, model: str | None = None) -> ChatProvider:
        """The chat provider for a request (its ``provider``/``model``, else the server default)."""
        if self.provider_factory is not None:
            return self.provider_factory(name or self.settings.provider, model or self.settings.model)
        from ..llm import get_provider
        return get_provider(name or self.settings.provider, model=model or self.settings.model,
                            timeout=self.settings.llm_timeout)


def runtime(request: Request) -> Runtime:
    """FastAPI dependency: the app's Runtime."""
    return request.app.state.runtime  # type: ignore[no-any-return]
