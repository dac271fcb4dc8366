"""The module protocol of spec/004 ("Module Abstraction Layer") and the types it exchanges.

Every stage of a pipeline (search, ingest, extract, merge, ...) is a ``PipelineModule``: it names itself
(``id``, ``name``, ``version``, ``category``), describes its configuration as JSON Schema (so a UI can
build a form), takes a new configuration while the pipeline runs (hot reload: the next ``process`` call
uses it, a call already running keeps the one it started with), processes a ``StageInput`` into a
``StageOutput``, reports its ``ModuleState`` and turns one call into a ``Snapshot`` that ``replay``
re-executes offline.

``BaseModule`` implements everything but the work itself: a subclass sets the class attributes and
writes ``run``. Inputs and outputs are JSON-shaped (dicts of lists, strings, numbers), so their sha256
identifies them across processes (``kgos.pipeline.digest``). Responses from outside the process (an LLM,
an HTTP backend) go through ``ProcessContext.external``: recorded on a live run, served from the
snapshot on a replay, so a replay needs no network and gives the same output hash.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any, ClassVar, Protocol, runtime_checkable

from ..errors import InvalidArgument, InvalidConfig, PipelineError, ReplayMiss, SnapshotMismatch
from .digest import content_hash

__all__ = ["BaseModule", "ExternalResponses", "ModuleState", "PipelineModule", "ProcessContext", "Snapshot",
           "StageInput", "StageOutput", "public_config"]

SECRET_MASK = "***"


@dataclass(frozen=True)
class StageInput:
    """What a stage receives: JSON-shaped ``data`` (the previous stage's output data, or the query)."""

    data: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def sha256(self) -> str:  # inputs are not mutated once made: hashed once
        return content_hash(self.data)

    def to_dict(self) -> dict[str, Any]:
        return {"data": copy.deepcopy(dict(self.data)), "sha256": self.sha256}


@dataclass(frozen=True)
class StageOutput:
    """What a stage produced. ``status``: complete | failed | skipped. ``external`` holds the outside
    responses the call consumed (key -> response) and ``metrics`` counts and timings; neither is part
    of the hash, which covers ``status``, ``data`` and ``error`` only."""

    data: Mapping[str, Any] = field(default_factory=dict)
    status: str = "complete"
    error: str | None = None
    external: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def sha256(self) -> str:
        return content_hash({"status": self.status, "data": self.data, "error": self.error})

    def to_dict(self) -> dict[str, Any]:
        return {"data": copy.deepcopy(dict(self.data)), "status": self.status, "error": self.error,
                "metrics": dict(self.metrics), "sha256": self.sha256}


class ExternalResponses:
    """Record (live run) or serve (replay) the responses of calls that leave the process.

    ``fetch(key, call)`` returns the stored response for ``key`` when there is one, else — on a live
    run — calls ``call()`` and stores its JSON-shaped result; on a replay a missing key raises
    ``ReplayMiss`` instead of reaching the network. ``used`` lists the keys asked for, in order.
    """

    def __init__(self, responses: Mapping[str, Any] | None = None, *, replay: bool = False) -> None:
        self.responses: dict[str, Any] = dict(responses or {})
        self.replay = replay
        self.used: list[str] = []
        self._lock = threading.Lock()

    def fetch(self, key: str, call: Callable[[], Any]) -> Any:
        with self._lock:
            self.used.append(key)
            if key in self.responses:
                return copy.deepcopy(self.responses[key])
        if self.replay:
            raise ReplayMiss(f"replay needs the response {key!r}, which the snapshot does not hold")
        value = call()
        with self._lock:
            self.responses[key] = copy.deepcopy(value)
        return value

    def since(self, mark: int) -> dict[str, Any]:
        """The responses of the keys asked for after ``mark`` (a former ``len(self.used)``)."""
        with self._lock:
            keys = self.used[mark:]
            return {k: copy.deepcopy(self.responses[k]) for k in keys if k in self.responses}


@dataclass
class ProcessContext:
    """Where a call runs: its run, iteration and stage, the outside-response recorder, a deadline
    (``time.monotonic()`` value) and shared ``services`` (a workspace, an embedder, a chat provider).
    ``emit(event, payload)``, when set, reports progress (the API turns it into SSE)."""

    run_id: str = ""
    iteration: int = 0
    stage: str = ""
    external: ExternalResponses = field(default_factory=ExternalResponses)
    deadline: float | None = None
    services: dict[str, Any] = field(default_factory=dict)
    emit: Callable[[str, dict[str, Any]], None] | None = None

    @property
    def replaying(self) -> bool:
        return self.external.replay

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


@dataclass(frozen=True)
class ModuleState:
    """What a module is doing and did last: the debugger's inspector view of one module.
    ``status``: idle | running | complete | error."""

    id: str
    version: str
    status: str
    config_sha256: str
    calls: int = 0
    errors: int = 0
    last_error: str | None = None
    last_input_sha256: str | None = None
    last_output_sha256: str | None = None
    last_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Snapshot:
    """One call of one module, complete enough to re-execute it: the module's id and version, its
    (secret-masked) config, the input, the output and the outside responses the call consumed, each
    content with its sha256."""

    module_id: str
    module_version: str
    config: Mapping[str, Any]
    config_sha256: str
    input: Mapping[str, Any]
    input_sha256: str
    output: Mapping[str, Any]
    output_sha256: str
    status: str = "complete"
    error: str | None = None
    external: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as a JSON document (sharing, not copying, the recorded values: treat as read-only)."""
        return {"module_id": self.module_id, "module_version": self.module_version, "config": dict(self.config),
                "config_sha256": self.config_sha256, "input": dict(self.input), "input_sha256": self.input_sha256,
                "output": dict(self.output), "output_sha256": self.output_sha256, "status": self.status,
                "error": self.error, "external": dict(self.external)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Snapshot:
        try:
            return cls(**{k: d[k] for k in ("module_id", "module_version", "config", "config_sha256", "input",
                                             "input_sha256", "output", "output_sha256")},
                       status=d.get("status", "complete"), error=d.get("error"), external=d.get("external") or {})
        except (KeyError, TypeError) as exc:
            raise InvalidArgument(f"not a pipeline snapshot: missing or bad field {exc}") from None

    def verify(self) -> None:
        """Raise ``SnapshotMismatch`` naming the first stored hash that its content no longer gives
        (an edited config, input or output)."""
        out = StageOutput(self.output, self.status, self.error)
        for name, stored, actual in (("config", self.config_sha256, content_hash(self.config)),
                                     ("input", self.input_sha256, content_hash(self.input)),
                                     ("output", self.output_sha256, out.sha256)):
            if stored != actual:
                raise SnapshotMismatch(f"{self.module_id}: stored {name} hash {stored} but its content hashes "
                                       f"to {actual}", field=f"{name}_sha256", expected=stored, actual=actual)


@runtime_checkable
class PipelineModule(Protocol):
    """spec/004's interface, verbatim; ``BaseModule`` is the usual way to implement it."""

    id: str
    name: str
    version: str
    category: str

    @property
    def config_schema(self) -> dict[str, Any]: ...

    def configure(self, config: Mapping[str, Any]) -> Any: ...

    def get_config(self) -> dict[str, Any]: ...

    async def process(self, input: StageInput, context: ProcessContext) -> StageOutput: ...

    def get_state(self) -> ModuleState: ...

    def snapshot(self, input: StageInput, output: StageOutput) -> Snapshot: ...

    async def replay(self, snapshot: Snapshot) -> StageOutput: ...


def public_config(schema: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the values of properties marked ``"secret": true`` in ``schema`` masked, so
    snapshots and manifests never hold an API key."""
    props = schema.get("properties", {})
    return {k: (SECRET_MASK if props.get(k, {}).get("secret") and v else copy.deepcopy(v))
            for k, v in config.items()}


class BaseModule:
    """A ``PipelineModule`` whose subclass only writes ``run``.

    ``configure`` validates against ``config_schema`` (JSON Schema, defaults of top-level properties
    filled in) and swaps the config atomically; an invalid config raises ``InvalidConfig`` naming the
    fields and leaves the current one in place.
    """

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    version: ClassVar[str] = "1.0.0"
    category: ClassVar[str] = ""
    config_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    #: the typed payloads it reads and returns (TypedDicts, e.g. kgos.research.contracts); None: any object.
    #: Their JSON Schemas are checked on every call (``input_schema()``, ``output_schema()``).
    input_type: ClassVar[type | None] = None
    output_type: ClassVar[type | None] = None

    @classmethod
    def input_schema(cls) -> dict[str, Any] | None:
        return payload_schema(cls.input_type) if cls.input_type is not None else None

    @classmethod
    def output_schema(cls) -> dict[str, Any] | None:
        return payload_schema(cls.output_type) if cls.output_type is not None else None

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._config = self._validated(config or {})
        self._calls = self._errors = 0
        self._status = "idle"
        self._last: dict[str, Any] = {}

    async def run(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        """The module's work, with the config captured when the call started."""
        raise NotImplementedError

    def configure(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the configuration (unset properties take their schema defaults); returns it."""
        new = self._validated(config)
        with self._lock:
            self._config = new
        return self.get_config()

    def get_config(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._config)

    async def process(self, input: StageInput, context: ProcessContext) -> StageOutput:
        return await self._call(input, context, self.get_config())

    def get_state(self) -> ModuleState:
        with self._lock:
            return ModuleState(self.id, self.version, self._status, content_hash(self._public()), self._calls,
                               self._errors, **self._last)

    def snapshot(self, input: StageInput, output: StageOutput) -> Snapshot:
        """The call as a Snapshot. It shares the input and output values (stage data is never mutated
        after a stage returns it), so taking one costs the hashes only."""
        config = self._public()
        return Snapshot(self.id, self.version, config, content_hash(config), dict(input.data), input.sha256,
                        dict(output.data), output.sha256, output.status, output.error, dict(output.external))

    async def replay(self, snapshot: Snapshot, context: ProcessContext | None = None) -> StageOutput:
        """Re-execute a snapshot with its stored config and outside responses (never the network).
        ``context`` may supply services (a workspace); its outside responses are replaced."""
        if snapshot.module_id != self.id:
            raise InvalidArgument(f"snapshot of module {snapshot.module_id!r} cannot be replayed by {self.id!r}")
        snapshot.verify()
        config = self._validated(self._restore_secrets(snapshot.config))
        ctx = copy.copy(context) if context is not None else ProcessContext()
        ctx.external = ExternalResponses(snapshot.external, replay=True)
        return await self._call(StageInput(copy.deepcopy(dict(snapshot.input))), ctx, config)

    # -- internals -------------------------------------------------------------------------------------

    async def _call(self, input: StageInput, context: ProcessContext, config: dict[str, Any]) -> StageOutput:
        mark, started = len(context.external.used), time.perf_counter()
        self._set(status="running")
        try:
            self._check(self.input_type, input.data, "input")
            output = await self.run(input, context, config)
            if output.status == "complete":
                self._check(self.output_type, output.data, "output")
        except Exception as exc:
            self._finish(input, None, started, f"{type(exc).__name__}: {exc}")
            raise
        output = StageOutput(output.data, output.status, output.error, context.external.since(mark),
                             output.metrics)
        self._finish(input, output, started, None)
        return output

    def _check(self, payload_type: type | None, data: Mapping[str, Any], which: str) -> None:
        """A PipelineError naming the fields where ``data`` does not match ``payload_type``'s schema."""
        if payload_type is None:
            return
        errors = sorted(_validator(payload_type).iter_errors(data), key=lambda e: list(e.path))
        if errors:
            where = "; ".join(f"{'.'.join(str(p) for p in e.path) or '(top)'}: {e.message[:200]}" for e in errors[:5])
            raise PipelineError(f"{self.id}: its {which} is not a {payload_type.__name__}: {where}")

    def _set(self, **changes: Any) -> None:
        with self._lock:
            self._status = changes.get("status", self._status)

    def _finish(self, input: StageInput, output: StageOutput | None, started: float, error: str | None) -> None:
        with self._lock:
            self._calls += 1
            self._errors += error is not None
            self._status = "error" if error else "complete"
            self._last = {"last_error": error, "last_input_sha256": input.sha256,
                          "last_output_sha256": output.sha256 if output else None,
                          "last_seconds": round(time.perf_counter() - started, 6)}

    def _public(self) -> dict[str, Any]:
        return public_config(self.config_schema, self._config)

    def _restore_secrets(self, config: Mapping[str, Any]) -> dict[str, Any]:
        current = self.get_config()
        return {k: (current.get(k) if v == SECRET_MASK else v) for k, v in config.items()}

    def _validated(self, config: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(config, Mapping):
            raise InvalidConfig(f"{self.id}: config must be an object, got {type(config).__name__}")
        full = {k: copy.deepcopy(p["default"]) for k, p in self.config_schema.get("properties", {}).items()
                if isinstance(p, Mapping) and "default" in p}
        full.update(copy.deepcopy(dict(config)))
        import jsonschema  # ~75 ms; only once a module is configured, not on every CLI start

        errors = sorted(jsonschema.Draft202012Validator(self.config_schema).iter_errors(full),
                        key=lambda e: list(e.path))
        if errors:
            fields = [".".join(str(p) for p in e.path) or "(config)" for e in errors]
            raise InvalidConfig(f"{self.id}: invalid config: " + "; ".join(
                f"{f}: {e.message}" for f, e in zip(fields, errors)), fields=fields)
        return full


@cache
def payload_schema(payload_type: type) -> dict[str, Any]:
    """The JSON Schema of a stage payload type (a TypedDict), from pydantic, once per type."""
    from pydantic import TypeAdapter  # only when a typed stage runs or is described
    return _lean(TypeAdapter(payload_type).json_schema())


def _lean(schema: Any) -> Any:
    """``schema`` without the no-op ``additionalProperties: true`` and ``items: {}`` pydantic writes for
    ``dict[str, Any]`` / ``list[Any]``: jsonschema would visit every item of a large knowledge map to
    check nothing (34 ms for 5,000 claims, against well under 1 ms without)."""
    if isinstance(schema, dict):
        return {k: _lean(v) for k, v in schema.items()
                if not (k == "additionalProperties" and v is True or k == "items" and v == {})}
    return [_lean(v) for v in schema] if isinstance(schema, list) else schema


@cache
def _validator(payload_type: type) -> Any:
    import jsonschema
    return jsonschema.Draft202012Validator(payload_schema(payload_type))
