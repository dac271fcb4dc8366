"""What every route shares: the workspace, one lock around it, the server settings and the LLM
provider factory.

SQLite connections are not safe to use from two threads at once, and FastAPI runs plain ``def``
routes in a thread pool, so every route touches the workspace only inside ``with rt.lock:``. LLM
streaming happens outside the lock, so one slow model does not stall the other routes.
"""

from __future__ import annotations

import ipaddress
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request  # at runtime: FastAPI reads the annotation of ``runtime(request)``

from ..errors import InvalidArgument

if TYPE_CHECKING:
    from ..llm.base import ChatProvider
    from ..kg import Workspace


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``: the only binds that may run without a token."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerSettings:
    """How ``kgos serve`` runs. ``token``: bearer token every route requires (mandatory off loopback,
    from ``KGOS_API_TOKEN``); ``cors_origins``: allowed origins (none = CORS off); body limits in
    bytes for JSON requests and for KG uploads; ``provider``/``model``: the default LLM (None:
    ``KGOS_LLM_PROVIDER``, else an OpenAI-compatible base URL if one is set, else offline)."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = 1_000_000
    max_upload_bytes: int = 512 * 1024 * 1024
    provider: str | None = None
    model: str | None = None
    llm_timeout: float = 60.0

    @classmethod
    def from_env(cls, **overrides: Any) -> ServerSettings:
        env = os.environ
        values: dict[str, Any] = {
            "token": env.get("KGOS_API_TOKEN") or None,
            "cors_origins": tuple(o.strip() for o in env.get("KGOS_CORS_ORIGINS", "").split(",") if o.strip()),
            "provider": env.get("KGOS_LLM_PROVIDER") or None,
            "model": env.get("KGOS_LLM_MODEL") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values).checked()

    def checked(self) -> ServerSettings:
        if not is_loopback(self.host) and not self.token:
            raise InvalidArgument(f"refusing to serve on {self.host} without a token: set KGOS_API_TOKEN "
                                  "(every request must then send 'Authorization: Bearer <token>'), "
                                  "or bind to 127.0.0.1")
        if not 0 < self.port < 65536:
            raise InvalidArgument(f"port must be 1-65535, not {self.port}")
        if self.max_body_bytes <= 0 or self.max_upload_bytes <= 0:
            raise InvalidArgument("body size limits must be positive")
        return self


@dataclass
class Runtime:
    """Shared state of one app: ``with rt.lock:`` around every workspace call."""

    workspace: Workspace
    settings: ServerSettings = field(default_factory=ServerSettings)
    provider_factory: Callable[[str | None, str | None], ChatProvider] | None = None
    lock: threading.RLock = field(init=False)

    def __post_init__(self) -> None:
        self.lock = self.workspace.lock  # the workspace's own, so in-process callers can share it

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
