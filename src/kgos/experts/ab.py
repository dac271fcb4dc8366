"""A/B tests of an expert's configuration (spec/000 section 14): two or more variants of one expert,
each a JSON merge patch over its config (other weights, another retrieval limit, filters...), served
to conversations by a deterministic random assignment, and compared on what the turns recorded.

Assignment: ``sha256(test id + conversation id)`` read as a number in [0, 1) picks a variant by the
variants' weights, so a conversation keeps its variant for every turn and across servers, and the
split follows the weights without any stored state. Each turn of a test stores ``ab: {test,
variant}`` and its latency in the assistant message's metadata.

The report gives per variant: turns, conversations, votes, the positive rate (up / votes) with its
Wilson 95% interval, the feedback rate (votes / turns), citation use (cited nodes / nodes retrieved,
mean over turns), latency p50 and the top intents. **Decision rule**: once every variant has at least
``min_votes`` votes (default 30), the variant with the highest positive rate wins if a two-sided
two-proportion z-test against each other variant gives p < 0.05; otherwise the report says what is
missing (votes) or that no difference is significant.

>>> import tempfile, kgos
>>> from kgos.data import load_demo
>>> ws = kgos.Workspace(tempfile.mkdtemp()); _ = load_demo(ws, embedder=None)
>>> test = ABService(ws).create("demo", [{"name": "a"}, {"name": "b", "overrides": {"retrieval": {"limit": 4}}}])
>>> ABService(ws).assign(test, "conv_1").name == ABService(ws).assign(test, "conv_1").name
True
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import statistics
import threading
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import ABTestConflict, ABTestNotFound, InvalidArgument, InvalidConfig
from ..store.migrations import now_iso
from ..store.postgres_workspace import write_transaction
from .config import Expert, ExpertConfig, merge_patch
from .turnlog import json_object

if TYPE_CHECKING:
    from ..kg import Workspace

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_VARIANTS = 8
ALPHA = 0.05


@dataclass(frozen=True)
class Variant:
    name: str
    overrides: dict[str, Any]
    weight: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "overrides": self.overrides, "weight": self.weight}


@dataclass(frozen=True)
class ABTest:
    id: str
    expert_id: str
    variants: tuple[Variant, ...]
    status: str  # active | stopped
    min_votes: int
    created_at: str
    stopped_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "expert_id": self.expert_id, "variants": [v.to_dict() for v in self.variants],
                "status": self.status, "min_votes": self.min_votes, "created_at": self.created_at,
                "stopped_at": self.stopped_at}


@dataclass(frozen=True)
class VariantStats:
    name: str
    turns: int
    conversations: int
    up: int
    down: int
    positive_rate: float | None
    interval: tuple[float, float] | None  # Wilson 95%
    feedback_rate: float | None
    citation_use: float | None
    latency_p50_ms: float | None
    intents: dict[str, int]

    @property
    def votes(self) -> int:
        return self.up + self.down

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "turns": self.turns, "conversations": self.conversations, "votes": self.votes,
                "up": self.up, "down": self.down, "positive_rate": _r(self.positive_rate),
                "interval": [_r(x) for x in self.interval] if self.interval else None,
                "feedback_rate": _r(self.feedback_rate), "citation_use": _r(self.citation_use),
                "latency_p50_ms": _r(self.latency_p50_ms), "intents": self.intents}


@dataclass(frozen=True)
class ABReport:
    test: ABTest
    variants: tuple[VariantStats, ...]
    winner: str | None
    p_value: float | None  # the largest p of the winner's comparisons (or of the best's, undecided)
    decision: str  # a sentence: who won and why, or what is missing

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.test.to_dict(), "variants": [v.to_dict() for v in self.variants],
                "winner": self.winner, "p_value": _r(self.p_value), "decision": self.decision,
                "rule": f"each variant >= {self.test.min_votes} votes; the best positive rate wins if a "
                        f"two-proportion z-test against every other variant gives p < {ALPHA}"}


class ABService:
    """A/B tests in ``workspace.db`` (migration ``006_ab_tests``)."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.conn: Any = workspace.shared  # workspace.db or PostgreSQL
        self._lock = threading.RLock()

    # -- lifecycle -----------------------------------------------------------------------------------------
    def create(self, expert_id: str, variants: Sequence[Mapping[str, Any] | Variant], *, test_id: str | None = None,
               min_votes: int = 30) -> ABTest:
        """Start a test of ``expert_id``; each variant's overrides must give a valid config. One active
        test per expert."""
        from .service import ExpertService
        expert = ExpertService(self.ws).get(expert_id)
        parsed = tuple(_variant(v, i) for i, v in enumerate(variants))
        _check_variants(parsed, expert)
        if not 1 <= min_votes <= 1_000_000:
            raise InvalidArgument("min_votes must be between 1 and 1,000,000")
        tid = _name(test_id, "test id") if test_id else f"ab_{uuid.uuid4().hex[:12]}"
        with write_transaction(self.conn, self._lock) as conn:
            if self._active_row(conn, expert.id) is not None:
                raise ABTestConflict(f"expert '{expert.id}' already has an active A/B test; stop it first "
                                     "(kgos expert ab stop TEST)")
            try:
                conn.execute("INSERT INTO ab_tests VALUES (?, ?, ?, 'active', ?, ?, NULL)",
                             (tid, expert.id, json.dumps([v.to_dict() for v in parsed]), min_votes, now_iso()))
            except sqlite3.IntegrityError:
                raise ABTestConflict(f"an A/B test with id '{tid}' already exists") from None
        return self.get(tid)

    def get(self, test_id: str) -> ABTest:
        row = self.conn.execute(f"SELECT {_COLS} FROM ab_tests WHERE id = ?", (test_id,)).fetchone()
        if row is None:
            raise ABTestNotFound(f"no A/B test '{test_id}' (kgos expert ab list shows them)")
        return _test(row)

    def list(self, expert_id: str | None = None) -> list[ABTest]:
        sql = f"SELECT {_COLS} FROM ab_tests" + (" WHERE expert_id = ?" if expert_id else "") + " ORDER BY created_at"
        return [_test(r) for r in self.conn.execute(sql, (expert_id,) if expert_id else ())]

    def stop(self, test_id: str) -> ABTest:
        with write_transaction(self.conn, self._lock) as conn:
            if conn.execute("UPDATE ab_tests SET status = 'stopped', stopped_at = ? WHERE id = ? AND status = 'active'",
                            (now_iso(), test_id)).rowcount == 0:
                self.get(test_id)  # raises for an unknown id
                raise ABTestConflict(f"A/B test '{test_id}' is already stopped")
        return self.get(test_id)

    def active(self, expert_id: str) -> ABTest | None:
        row = self._active_row(self.conn, expert_id)
        return None if row is None else _test(row)

    @staticmethod
    def _active_row(conn: Any, expert_id: str) -> tuple[Any, ...] | None:
        return conn.execute(f"SELECT {_COLS} FROM ab_tests WHERE expert_id = ? AND status = 'active'",
                            (expert_id,)).fetchone()

    # -- serving -------------------------------------------------------------------------------------------
    @staticmethod
    def assign(test: ABTest, conversation_id: str) -> Variant:
        """The conversation's variant: deterministic, weighted (see the module docstring)."""
        digest = hashlib.sha256(f"{test.id}\x00{conversation_id}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64 * sum(v.weight for v in test.variants)
        for v in test.variants:
            point -= v.weight
            if point < 0:
                return v
        return test.variants[-1]

    @staticmethod
    def apply(expert: Expert, variant: Variant) -> Expert:
        config = ExpertConfig.model_validate(merge_patch(expert.config.model_dump(mode="json"), variant.overrides))
        return expert.model_copy(update={"config": config})

    # -- report --------------------------------------------------------------------------------------------
    def report(self, test_id: str) -> ABReport:
        test = self.get(test_id)
        rows = self.conn.execute(
            "SELECT json_extract(a.metadata, '$.ab.variant'), a.conversation_id, a.metadata, f.rating "
            "FROM messages a LEFT JOIN feedback f ON f.turn_id = a.turn_id "
            "WHERE a.role = 'assistant' AND json_extract(a.metadata, '$.ab.test') = ?", (test.id,)).fetchall()
        stats = tuple(_stats(v.name, [r for r in rows if r[0] == v.name]) for v in test.variants)
        winner, p, decision = decide(stats, test.min_votes)
        return ABReport(test, stats, winner, p, decision)


# -- statistics ------------------------------------------------------------------------------------------------
def wilson(up: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """Wilson score interval of a proportion (Wilson 1927; Agresti & Coull 1998)."""
    if n == 0:
        return None
    p = up / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def two_proportion_p(up_a: int, n_a: int, up_b: int, n_b: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test (e.g. Agresti, Categorical Data Analysis 2.4)."""
    if n_a == 0 or n_b == 0:
        return 1.0
    pooled = (up_a + up_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 1.0
    z = (up_a / n_a - up_b / n_b) / se
    return math.erfc(abs(z) / math.sqrt(2))


def decide(stats: Sequence[VariantStats], min_votes: int) -> tuple[str | None, float | None, str]:
    short = [s for s in stats if s.votes < min_votes]
    if short:
        need = ", ".join(f"{s.name} {min_votes - s.votes} more" for s in short)
        return None, None, f"no decision yet: every variant needs {min_votes} votes ({need})"
    best = max(stats, key=lambda s: (s.positive_rate or 0.0, s.votes))
    ps = [two_proportion_p(best.up, best.votes, s.up, s.votes) for s in stats if s is not best]
    worst_p = max(ps) if ps else 1.0
    if worst_p < ALPHA:
        return best.name, worst_p, (f"{best.name} wins: positive rate {best.positive_rate:.1%} against every other "
                                    f"variant at p < {ALPHA} (largest p = {worst_p:.3g})")
    return None, worst_p, f"no significant difference yet (best: {best.name}, p = {worst_p:.3g} >= {ALPHA})"


def _stats(name: str, rows: list[tuple[Any, ...]]) -> VariantStats:
    metas = [json_object(r[2]) for r in rows]
    up = sum(1 for r in rows if r[3] == 1)
    down = sum(1 for r in rows if r[3] == -1)
    votes = up + down
    uses = [len((m.get("citations") or {}).get("valid") or []) / len(m["kg_nodes_used"])
            for m in metas if m.get("kg_nodes_used")]
    latency = [float(m["latency_ms"]) for m in metas if isinstance(m.get("latency_ms"), (int, float))]
    intents = Counter(str(m.get("intent")) for m in metas if m.get("intent"))
    return VariantStats(name, len(rows), len({r[1] for r in rows}), up, down, up / votes if votes else None,
                        wilson(up, votes), votes / len(rows) if rows else None,
                        statistics.fmean(uses) if uses else None, statistics.median(latency) if latency else None,
                        dict(intents.most_common(3)))


# -- parsing ---------------------------------------------------------------------------------------------------
def _variant(v: Mapping[str, Any] | Variant, i: int) -> Variant:
    if isinstance(v, Variant):
        return v
    if not isinstance(v, Mapping):
        raise InvalidArgument(f"variants[{i}] must be an object {{name, overrides?, weight?}}")
    unknown = set(v) - {"name", "overrides", "weight"}
    if unknown:
        raise InvalidArgument(f"variants[{i}] has unknown field(s) {', '.join(sorted(unknown))}")
    overrides = v.get("overrides") or {}
    weight = v.get("weight", 1.0)
    if not isinstance(overrides, Mapping):
        raise InvalidArgument(f"variants[{i}].overrides must be an object (a JSON merge patch of the config)")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= 1_000:
        raise InvalidArgument(f"variants[{i}].weight must be a number in (0, 1000]")
    return Variant(_name(v.get("name"), f"variants[{i}].name"), dict(overrides), float(weight))


def _check_variants(variants: tuple[Variant, ...], expert: Expert) -> None:
    if not 2 <= len(variants) <= MAX_VARIANTS:
        raise InvalidArgument(f"an A/B test needs 2 to {MAX_VARIANTS} variants, not {len(variants)}")
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise InvalidArgument("variant names must differ")
    for v in variants:
        for key in ("name", "kg_db_id", "kg_db_ids", "schema_version"):
            if key in v.overrides:
                raise InvalidArgument(f"variant {v.name!r} may not change {key} (a test compares configs of one "
                                      "expert over the same KGs)")
        try:
            ABService.apply(expert, v)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InvalidConfig(f"variant {v.name!r}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise InvalidArgument(f"{what} must be 1-64 letters, digits, '_', '-' or '.', not {value!r}")
    return value


_COLS = "id, expert_id, variants, status, min_votes, created_at, stopped_at"


def _test(row: tuple[Any, ...]) -> ABTest:
    variants = tuple(Variant(v["name"], v.get("overrides") or {}, float(v.get("weight", 1.0)))
                     for v in json.loads(row[2]))
    return ABTest(row[0], row[1], variants, row[3], int(row[4]), row[5], row[6])


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
