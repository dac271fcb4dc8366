"""Time for memories: ranges from words ("last week"), and confidence decay (spec/002 "Future
Extensions": 1. temporal queries, "What was I working on last week?"; 4. confidence decay).

Ranges are half-open ``[start, end)`` and computed in the local time zone of ``now`` (the user's day,
not UTC's), then compared with memory timestamps in UTC. Calendar words mean calendar periods:
"last week" is Monday to Monday of the previous week, "last month" the previous calendar month;
"past 7 days" / "last 7 days" is a rolling window.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ..errors import InvalidArgument

ISO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # what now_iso() writes; string order is time order
FORMS = ("today", "yesterday", "this week", "last week", "this month", "last month", "this year",
         "last N days|weeks|months|hours", "past N days|weeks|months|hours", "since YYYY-MM-DD",
         "YYYY-MM-DD", "YYYY-MM-DD..YYYY-MM-DD")


@dataclass(frozen=True)
class TimeRange:
    start: datetime | None  # inclusive; None = since the beginning
    end: datetime | None    # exclusive; None = until now and beyond
    label: str

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "start": iso(self.start) if self.start else None,
                "end": iso(self.end) if self.end else None}

    @property
    def since(self) -> str | None:
        return iso(self.start) if self.start else None

    @property
    def until(self) -> str | None:
        return iso(self.end) if self.end else None


def iso(moment: datetime) -> str:
    """A datetime as the UTC string memories are stored with (naive datetimes are taken as local)."""
    return moment.astimezone(UTC).strftime(ISO_FORMAT)


def parse_iso(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)  # 3.11 reads "Z"
    except (TypeError, ValueError):
        raise InvalidArgument(f"{text!r} is not an ISO 8601 timestamp (e.g. 2026-01-12T03:00:00Z)") from None
    return moment if moment.tzinfo else moment.astimezone()


def _now(now: datetime | None) -> datetime:
    now = now or datetime.now().astimezone()
    return now if now.tzinfo else now.astimezone()


def _day(d: date, tz: Any) -> datetime:
    return datetime.combine(d, time(0), tzinfo=tz)


def _month_start(d: date, back: int = 0) -> date:
    month = d.year * 12 + d.month - 1 - back
    return date(month // 12, month % 12 + 1, 1)


_SPAN_RE = re.compile(r"^(?:last|past|previous)\s+(\d{1,4})\s+(hour|day|week|month)s?$")
_DATE = r"(\d{4}-\d{2}-\d{2})"


def parse_time_range(text: str, now: datetime | None = None) -> TimeRange:
    """A range from words: see ``FORMS``. Raises InvalidArgument listing the accepted forms."""
    now = _now(now)
    phrase = re.sub(r"\s+", " ", str(text).strip().lower())
    found = _calendar(phrase, now) or _span(phrase, now) or _dates(phrase, now)
    if found is None:
        raise InvalidArgument(f"cannot read a time range from {text!r}; use one of: {', '.join(FORMS)}")
    return found


def _calendar(phrase: str, now: datetime) -> TimeRange | None:
    today, tz = now.date(), now.tzinfo
    monday = today - timedelta(days=today.weekday())
    table = {
        "today": (today, today + timedelta(days=1)),
        "yesterday": (today - timedelta(days=1), today),
        "this week": (monday, monday + timedelta(days=7)),
        "last week": (monday - timedelta(days=7), monday),
        "this month": (_month_start(today), _month_start(today, -1)),
        "last month": (_month_start(today, 1), _month_start(today)),
        "this year": (date(today.year, 1, 1), date(today.year + 1, 1, 1)),
        "last year": (date(today.year - 1, 1, 1), date(today.year, 1, 1)),
    }
    if phrase not in table:
        return None
    start, end = table[phrase]
    return TimeRange(_day(start, tz), _day(end, tz), phrase)


def _span(phrase: str, now: datetime) -> TimeRange | None:
    m = _SPAN_RE.match(phrase)
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2)
    delta = {"hour": timedelta(hours=n), "day": timedelta(days=n), "week": timedelta(weeks=n),
             "month": timedelta(days=30 * n)}[unit]
    return TimeRange(now - delta, None, phrase)


def _dates(phrase: str, now: datetime) -> TimeRange | None:
    tz = now.tzinfo
    if m := re.fullmatch(rf"since {_DATE}", phrase):
        return TimeRange(_day(_date(m.group(1)), tz), None, phrase)
    if m := re.fullmatch(rf"{_DATE}\s*\.\.\s*{_DATE}", phrase):
        start, end = _date(m.group(1)), _date(m.group(2))
        if end < start:
            raise InvalidArgument(f"the range {phrase!r} ends before it starts")
        return TimeRange(_day(start, tz), _day(end + timedelta(days=1), tz), phrase)
    if m := re.fullmatch(_DATE, phrase):
        day = _date(m.group(1))
        return TimeRange(_day(day, tz), _day(day + timedelta(days=1), tz), phrase)
    return None


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(f"{text!r} is not a valid date (YYYY-MM-DD)") from None


# -- questions ("what was I working on last week?") ------------------------------------------------
_PHRASES = re.compile(r"\b(today|yesterday|this week|last week|this month|last month|this year|last year|"
                      r"(?:last|past|previous) \d{1,4} (?:hour|day|week|month)s?|since \d{4}-\d{2}-\d{2})\b")
_PREDICATE_CUES = (("works_on", r"\bwork(?:ing|ed)?\b|\bbuil(?:d|t|ding)\b|\bdevelop"),
                   ("uses", r"\bus(?:e|ed|ing)\b"), ("prefers", r"\bprefer|\blike|\benjoy"),
                   ("decided", r"\bdecid|\bchose|\bchoos"))


def parse_question(question: str, now: datetime | None = None) -> tuple[TimeRange, str | None]:
    """The time range and predicate a question asks about: "what was I working on last week?" ->
    (last week, "works_on"). The predicate is None when the question names none."""
    text = re.sub(r"\s+", " ", question.lower())
    m = _PHRASES.search(text)
    if m is None:
        raise InvalidArgument(f"no time phrase in {question!r}; use one of: {', '.join(FORMS)}")
    predicate = next((p for p, cue in _PREDICATE_CUES if re.search(cue, text)), None)
    return parse_time_range(m.group(1), now), predicate


# -- confidence decay ------------------------------------------------------------------------------
def decayed_weight(weight: float, last_seen: str | datetime | None, half_life_days: float,
                   now: datetime | None = None) -> float:
    """``weight * 0.5 ** (age / half_life)``, the age counted from the newest evidence. Future or
    missing timestamps do not decay (an edge without evidence keeps its weight)."""
    if last_seen is None:
        return weight
    if half_life_days <= 0:
        raise InvalidArgument("the decay half-life must be a positive number of days")
    seen = parse_iso(last_seen) if isinstance(last_seen, str) else last_seen
    age_days = max(0.0, (_now(now) - seen).total_seconds() / 86400.0)
    return weight * math.pow(0.5, age_days / half_life_days)


def last_evidence(properties: dict[str, Any]) -> str | None:
    """The newest evidence timestamp of an edge's properties (evidence is a dict or a list of them)."""
    evidence = properties.get("evidence")
    items = evidence if isinstance(evidence, list) else [evidence]
    stamps = [e["timestamp"] for e in items if isinstance(e, dict) and isinstance(e.get("timestamp"), str)]
    return max(stamps, default=None)
