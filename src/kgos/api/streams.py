"""A bound on the server-sent event streams open at once (research events, expert chat, /v1 chat).

Each open stream holds a connection and, for research events, a worker thread waiting on the run;
1,000 of them pushed ``/api/health`` to 1.8 s. Beyond ``KGOS_MAX_STREAMS`` (default 64) open streams a
new one is refused with 503 ``ServerBusy`` and ``Retry-After``, before any work starts; a slot is
given back when its stream ends or its client goes away.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

from ..errors import ServerBusy
from ..settings import current



class StreamSlots:
    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit if limit is not None else current().max_streams
        self.open = 0
        self._lock = threading.Lock()

    def take(self) -> None:
        """Claim a slot, or ServerBusy when all are in use."""
        with self._lock:
            if self.open >= self.limit:
                raise ServerBusy(f"{self.open} event streams are open, the most this server keeps "
                                 f"(KGOS_MAX_STREAMS={self.limit}); retry in a few seconds")
            self.open += 1

    def give_back(self) -> None:
        with self._lock:
            self.open = max(self.open - 1, 0)

    async def held(self, stream: AsyncIterator[str]) -> AsyncIterator[str]:
        """``stream``, giving its slot back when it ends (or its client disconnects)."""
        try:
            async for chunk in stream:
                yield chunk
        finally:
            self.give_back()


SLOTS = StreamSlots()


def bounded(stream: AsyncIterator[str]) -> AsyncIterator[str]:
    """Claim a slot for ``stream`` (ServerBusy when none is free) and release it when it ends."""
    SLOTS.take()
    return SLOTS.held(stream)
