"""The expert configuration of spec/000 section 8, validated (schema_version 1).

An expert is ``KG + persona + retrieval config + playbook skills + dimension filters + goal
mappings``. ``ExpertConfig`` is the portable part (what export/import and duplicate carry);
``Expert`` adds the id and timestamps the workspace assigns.

>>> cfg = ExpertConfig(name="Python Expert", kg_db_id="python-kg")
>>> cfg.kgs, cfg.retrieval.weights()
(('python-kg',), (0.35, 0.4, 0.15, 0.1))
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import InvalidArgument, InvalidConfig, KGOSError
from ..kg import check_db_id

SCHEMA_VERSION = 1
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # edge types, dimensions, goal keywords
SKILL_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")  # playbook file stems


def _names(values: list[str], pattern: re.Pattern[str], what: str) -> list[str]:
    bad = [v for v in values if not pattern.fullmatch(v)]
    if bad:
        raise ValueError(f"invalid {what} {bad[0]!r}: use lowercase letters, digits and '_' (pattern {pattern.pattern})")
    return list(dict.fromkeys(values))


def _name_list(pattern: re.Pattern[str], what: str) -> Any:
    """A list of at most 32 names matching ``pattern``, deduplicated in order."""
    return Annotated[list[str], Field(max_length=32), AfterValidator(lambda v: _names(v, pattern, what))]


EdgeTypes = _name_list(NAME_RE, "edge type")
DimensionNames = _name_list(NAME_RE, "dimension")
PlaybookNames = _name_list(SKILL_RE, "playbook name")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Persona(_Strict):
    """Injected as the first part of the system prompt."""

    name: str = Field("Expert", min_length=1, max_length=100)
    instructions: str = Field("", max_length=20_000)
    style: Literal["professional", "casual", "academic", "concise", "friendly", "technical"] = "professional"
    greeting: str = Field("", max_length=2_000)


class Retrieval(_Strict):
    """How the expert retrieves: the 4-weight formula (spec/000 default 0.35/0.40/0.15/0.10),
    ``methods`` ("hybrid" alone skips the method routes of intent_search), ``limit`` KG nodes in
    context, ``expand_depth`` hops of edges around the top hits, ``boost_types`` for method 12."""

    methods: list[Literal["hybrid", "intent"]] = Field(default_factory=lambda: ["hybrid", "intent"], min_length=1)
    alpha: float = Field(0.35, ge=0.0, le=1e6)
    beta: float = Field(0.40, ge=0.0, le=1e6)
    gamma: float = Field(0.15, ge=0.0, le=1e6)
    delta: float = Field(0.10, ge=0.0, le=1e6)
    limit: int = Field(10, ge=1, le=50)
    expand_depth: int = Field(1, ge=0, le=2)
    boost_types: EdgeTypes = Field(default_factory=list)

    @model_validator(mode="after")
    def _weights(self) -> Retrieval:
        w = self.weights()
        if not all(math.isfinite(x) for x in w) or sum(w) <= 0:
            raise ValueError("alpha + beta + gamma + delta must be positive and finite")
        return self

    def weights(self) -> tuple[float, float, float, float]:
        return (self.alpha, self.beta, self.gamma, self.delta)


class GoalMapping(_Strict):
    """When the query matches the goal keyword: edge types to boost instead of the defaults, and
    dimensions whose high values lift a node."""

    boost_types: EdgeTypes = Field(default_factory=list)
    dimension_boosts: DimensionNames = Field(default_factory=list)


class Delegate(_Strict):
    """A remote expert this expert asks: ``peer`` (a name in KGOS_FEDERATION_PEERS), its ``expert`` id,
    and ``when``: every turn, or only when the expert's own KGs found nothing."""

    peer: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    expert: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
    when: Literal["always", "fallback"] = "always"


class ExpertConfig(_Strict):
    """Everything that defines an expert (spec/000 section 8), without id and timestamps."""

    schema_version: Literal[1] = SCHEMA_VERSION
    name: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=5_000)
    kg_db_id: str | None = None
    kg_db_ids: list[str] = Field(default_factory=list, max_length=16)
    persona: Persona = Field(default_factory=Persona)
    retrieval: Retrieval = Field(default_factory=Retrieval)
    dimension_filters: dict[str, dict[str, float]] = Field(default_factory=dict)
    playbook_skills: PlaybookNames = Field(default_factory=list)
    custom_goal_mappings: dict[str, GoalMapping] = Field(default_factory=dict)
    tools: bool = True  # may the model call KG-OS methods as functions (providers that support it)
    # propose what users state in a chat ("X requires Y") to the KGs' review queue (docs/learning.md)
    learn_from_conversations: bool = True
    # federation (docs/learning.md): may peers ask this expert; which remote experts this one asks
    share_with_peers: bool = False
    delegate: list[Delegate] = Field(default_factory=list, max_length=4)
    # multi-KG experts: each KG's scores are multiplied by its weight before the merge (default 1.0)
    kg_weights: dict[str, float] = Field(default_factory=dict, max_length=16)

    @field_validator("kg_weights")
    @classmethod
    def _kg_weights(cls, v: dict[str, float]) -> dict[str, float]:
        for db_id, weight in v.items():
            _db(db_id)
            if not 0 <= weight <= 100:
                raise ValueError(f"kg_weights[{db_id!r}] must be between 0 and 100")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("name must not be blank")
        return v.strip()

    @field_validator("kg_db_id")
    @classmethod
    def _db_id(cls, v: str | None) -> str | None:
        return None if v is None else _db(v)

    @field_validator("kg_db_ids")
    @classmethod
    def _db_ids(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(_db(x) for x in v))

    @field_validator("dimension_filters")
    @classmethod
    def _filters(cls, v: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        if not v:
            return {}
        from ..methods.dimensions import check_filters
        try:
            return check_filters(v)
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None

    @field_validator("custom_goal_mappings")
    @classmethod
    def _goals(cls, v: dict[str, GoalMapping]) -> dict[str, GoalMapping]:
        _names(list(v), NAME_RE, "goal keyword")
        return v

    @model_validator(mode="after")
    def _some_kg(self) -> ExpertConfig:
        if not self.kg_db_id and not self.kg_db_ids:
            raise ValueError("give kg_db_id (or kg_db_ids): the KG the expert answers from")
        return self

    @property
    def kgs(self) -> tuple[str, ...]:
        """The KGs to query: ``kg_db_ids`` when given (it takes precedence), else ``kg_db_id``."""
        return tuple(self.kg_db_ids) if self.kg_db_ids else (self.kg_db_id,)  # type: ignore[return-value]

    @property
    def primary_kg(self) -> str:
        return self.kg_db_id if self.kg_db_id in self.kgs else self.kgs[0]  # type: ignore[return-value]


def _db(value: str) -> str:
    try:
        return check_db_id(value)
    except KGOSError as exc:
        raise ValueError(str(exc)) from None


class Expert(BaseModel):
    """A stored expert: its config plus ``id``, ``created_at``, ``updated_at``."""

    model_config = ConfigDict(frozen=True)

    id: str
    config: ExpertConfig
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        """The spec/000 expert JSON: the config's fields plus id and timestamps."""
        return {"id": self.id, **self.config.model_dump(mode="json"), "created_at": self.created_at,
                "updated_at": self.updated_at}


def parse_config(data: Any) -> ExpertConfig:
    """An ExpertConfig from a mapping, or InvalidConfig naming every offending field."""
    if isinstance(data, ExpertConfig):
        return data
    if not isinstance(data, Mapping):
        raise InvalidConfig(f"an expert config must be a JSON object, not {type(data).__name__}")
    try:
        return ExpertConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise config_error(exc) from None


def config_error(exc: ValidationError) -> InvalidConfig:
    problems = [(".".join(str(p) for p in e["loc"]) or "(config)", e["msg"]) for e in exc.errors()]
    text = "; ".join(f"{loc}: {msg}" for loc, msg in problems[:8])
    return InvalidConfig(f"invalid expert config — {text}", [loc for loc, _ in problems])


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return patch
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
