"""One hierarchy for every error KG-OS raises on purpose.

Each error says what was wrong and what to do. The CLI prints ``str(err)`` and exits non-zero;
the HTTP API maps ``status`` to the response code. Anything that is not a ``KGOSError`` is a bug.
"""

from __future__ import annotations


class KGOSError(Exception):
    """Base class. ``status`` is the HTTP status the API answers with."""

    status = 400


class InvalidName(KGOSError, ValueError):
    """A db_id, dimension name or other identifier that is not allowed."""


class InvalidArgument(KGOSError, ValueError):
    """A parameter out of range or of the wrong kind (k <= 0, negative weights, bad direction...)."""


class PropertiesTooLarge(InvalidArgument):
    """Node, edge or memory properties nested deeper or serialised larger than ``store.limits``
    allows (a bound that keeps every reader, exporter and JSON encoder working on the KG)."""


class InputTooLarge(InvalidArgument):
    """A file, upload or request that crosses a bound of ``store.bounds`` or ``limits`` (nesting
    depth, string or line length, size): refused before it is parsed further, so no input can
    exhaust the memory of the process reading it."""

    status = 413


class KGNotFound(KGOSError, LookupError):
    status = 404


class KGExists(KGOSError):
    status = 409


class NodeNotFound(KGOSError, LookupError):
    """No node with that id or name. ``suggestions`` holds close matches, if any."""

    status = 404

    def __init__(self, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.suggestions = suggestions or []


class AmbiguousNode(KGOSError, LookupError):
    """A name that matches several nodes; ``candidates`` lists their ids."""

    status = 409

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


class EdgeNotFound(KGOSError, LookupError):
    status = 404


class NoPath(KGOSError):
    status = 404


class ReadOnlyKG(KGOSError):
    """A write to a KG that was attached read-only."""

    status = 409


class ImportFailed(KGOSError):
    """An import that was rolled back. ``record`` names the offending record (e.g. ``edges[12]``)."""

    def __init__(self, message: str, record: str | None = None) -> None:
        super().__init__(f"{record}: {message}" if record else message)
        self.record = record


class SchemaNotRecognized(KGOSError):
    """A file that is not SQLite, or has no table layout KG-OS can read as a KG."""


class MissingDependency(KGOSError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    status = 501

    def __init__(self, package: str, extra: str) -> None:
        # kgos is installed from a clone (not from PyPI), so the extra is installed the same way.
        super().__init__(f"{package} is not installed: install the kgos[{extra}] extra, e.g. "
                         f"pip install -e '.[{extra}]'  in the KG-OS folder")
        self.package = package
        self.extra = extra


class InvalidConfig(KGOSError, ValueError):
    """A configuration (an expert, a request body) that fails validation; ``fields`` names the
    offending fields (dotted paths, e.g. ``retrieval.alpha``)."""

    status = 422

    def __init__(self, message: str, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.fields = fields or []


class ExpertNotFound(KGOSError, LookupError):
    status = 404


class ConversationNotFound(KGOSError, LookupError):
    status = 404


class ExpertExists(KGOSError):
    status = 409


class MemoryNotFound(KGOSError, LookupError):
    status = 404


class AliasNotFound(KGOSError, LookupError):
    status = 404


class TurnNotFound(KGOSError, LookupError):
    """Feedback for a turn id no conversation holds (ids come from a chat's ``done`` event, the
    ``turn_id`` of ``kgos expert chat --json`` or the ``/v1`` completion id)."""

    status = 404


class ABTestNotFound(KGOSError, LookupError):
    """No A/B test with that id."""

    status = 404


class ABTestConflict(KGOSError):
    """An A/B test that cannot start or stop: the expert already runs one, the id is taken, or it stopped."""

    status = 409


class FederationRefused(KGOSError):
    """A federated request that failed authentication: unknown peer, stale timestamp, replayed nonce
    or a signature that does not match."""

    status = 401


class RateLimited(KGOSError):
    """Too many requests of one kind in a short time (for example feedback on one conversation)."""

    status = 429


class PlaybookNotFound(KGOSError, LookupError):
    status = 404


class EmbeddingServiceError(KGOSError):
    """A remote embedding service failed (HTTP error, timeout, malformed answer)."""

    status = 502


class ProviderError(KGOSError):
    """The model could not answer (timeout, HTTP error, malformed output)."""

    status = 502


class ProviderTimeout(ProviderError):
    status = 504


class ProviderNotConfigured(ProviderError):
    """A provider that cannot be used as configured (no API key, no model); the message names the
    environment variable or option to set."""

    status = 503


class IndexDamaged(KGOSError, ValueError):
    """An index file in the workspace cache that is stale, half-written or not an index at all. KG-OS
    rebuilds such a cache from the KG; the message names the folder if it reaches a user."""

    status = 500


class DemoChanged(KGOSError):
    """``kgos demo`` would overwrite demo KGs that were edited since it loaded them."""

    status = 409


class DatabaseUnavailable(KGOSError):
    """The PostgreSQL server of a KG cannot be reached or refused the login (down, wrong URL or
    password). Requests fail with this until it is back; nothing needs a restart. ``retry_after``
    is the seconds a client should wait before trying again (HTTP ``Retry-After``)."""

    status = 503
    retry_after = 5


class StoreBusy(DatabaseUnavailable):
    """Every connection of the PostgreSQL pool stayed busy for the bounded wait: try again shortly."""

    retry_after = 1


class SchemaTooNew(KGOSError):
    """A database (or KG file) migrated by a newer KG-OS than this one: upgrade KG-OS to open it."""

    status = 409


class ProposalNotFound(KGOSError, LookupError):
    """No proposal with that id in the KG's review queue."""

    status = 404


class ProposalConflict(KGOSError):
    """A review that clashes with the proposal's state: accepting or rejecting one already decided
    (another reviewer was first), undoing a pending one."""

    status = 409


class ProposalStale(KGOSError):
    """A proposal whose nodes were deleted since it was proposed: it cannot be promoted."""

    status = 409


class NotTrained(KGOSError):
    """A link predictor asked to score before it was fitted, or that cannot be fitted on this KG
    (no edges, one entity)."""

    status = 422


class AdapterNeedsData(KGOSError):
    """A query adapter asked of a KG that cannot teach one (too few nodes whose name or aliases say
    something apart from their full text, or no vectors yet): nothing was changed."""

    status = 422


class PipelineError(KGOSError):
    """A pipeline module or research run that cannot do what was asked (spec/004)."""


class ModuleNotFound(PipelineError, LookupError):
    """No pipeline module or reasoner registered under that id; ``suggestions`` holds close ids."""

    status = 404

    def __init__(self, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.suggestions = suggestions or []


class SnapshotMismatch(PipelineError):
    """A stored hash (config, input, output, manifest) that its content no longer gives, or a replay
    whose output hash differs from the recorded one: ``field`` names the hash, with both values."""

    status = 409

    def __init__(self, message: str, field: str = "", expected: str = "", actual: str = "") -> None:
        super().__init__(message)
        self.field, self.expected, self.actual = field, expected, actual


class ReplayMiss(PipelineError):
    """A replay that needs an outside response (LLM, HTTP) its snapshot does not hold."""

    status = 409


class RunNotFound(PipelineError, LookupError):
    """No research run with that id in the workspace."""

    status = 404


class RunStateConflict(PipelineError):
    """A control request the run's state does not allow (answering a run that asks nothing,
    resuming a finished run)."""

    status = 409


class IngestFailed(KGOSError):
    """An ingest that could not start or was rolled back (no readable path, nothing to ingest); the KG
    is unchanged. Files that merely could not be read are skipped and listed in the report instead."""


class JobNotFound(KGOSError, LookupError):
    """No background job with that id (finished jobs are kept for a while, then forgotten)."""

    status = 404


class IngestPathRefused(KGOSError):
    """An HTTP ingest of a path outside the folders the server may read (``KGOS_INGEST_ROOTS``)."""

    status = 403


class JobCancelled(KGOSError):
    """A background job stopped on request (or at server shutdown) before its end; what it committed
    stays (an embedding fill-in keeps its chunks and resumes)."""

    status = 409


class JobNotCancellable(KGOSError):
    """A cancel request for a job that cannot be stopped (an ingest: one transaction) or has ended."""

    status = 409


class WorkerFailed(KGOSError):
    """A job's worker process ended without a result (killed for memory, crashed): the job fails, the
    server goes on (``kgos.worker``)."""

    status = 503


class PortInUse(KGOSError):
    """``kgos serve`` on a port another process listens on: exit code 1 with this message."""

    status = 409


class ServerBusy(KGOSError):
    """A bounded resource of the server (open event streams) is in use up to its limit: retry later."""

    status = 503
    retry_after = 5


class NodeChanged(KGOSError):
    """A write that names the version it was based on (``if_updated_at``) to a node changed since:
    someone else's edit came first; read the node again and redo the change (nothing was written)."""

    status = 409


class QueryTooBroad(KGOSError):
    """A pushed-down query (a PostgreSQL KG in pushdown mode, docs/postgres.md) that would read more
    than its bound: the planner's estimate was above ``KGOS_PUSHDOWN_MAX_ROWS``, or the statement ran
    past ``KGOS_PUSHDOWN_TIMEOUT_MS``. Narrow the query (fewer hops, a more specific text)."""

    status = 422
