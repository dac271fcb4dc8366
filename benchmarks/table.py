"""One row of the benchmark table (benchmarks/run.py) and the table as Markdown.

Every row holds a figure, its budget (DESIGN.md section 7), the same-run anchor it is compared
with and the ratio figure / anchor (so > 1 means kgos costs more than the anchor), with wall and
CPU time side by side: on a shared machine CPU time and ratios are what compare across runs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    section: str  # e.g. "import", "methods": rows are grouped by it
    what: str  # what was measured, with its size: "trace max 5, 1,000,000 / 10,000,000"
    figure: float  # the measured value, in ``unit``
    unit: str  # "ms", "s", "nodes/s", ...
    budget: float | None = None  # in ``unit``; None: no budget
    higher_is_better: bool = False  # True for rates (nodes/s): the budget is a minimum
    anchor: float | None = None  # the same-run anchor, in ``unit``
    anchor_name: str = ""  # "bm25s + numpy scan", "parse + insert floor", "scipy BFS", ...
    cpu: float | None = None  # the figure's CPU time, in ``unit`` (time units only)
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """Cost relative to the anchor (time / anchor time, or anchor rate / rate): > 1 is slower."""
        if self.anchor is None or not self.anchor or not self.figure:
            return None
        return self.anchor / self.figure if self.higher_is_better else self.figure / self.anchor

    @property
    def verdict(self) -> str:
        if self.budget is None or math.isnan(self.figure):
            return "-"
        met = self.figure >= self.budget if self.higher_is_better else self.figure <= self.budget
        return "ok" if met else "OVER"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "verdict": self.verdict}


def _num(value: float | None, unit: str = "") -> str:
    if value is None or math.isnan(value):
        return "-"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"
    return f"{text} {unit}".strip()


def markdown(rows: list[Row]) -> str:
    head = ["section", "what", "budget", "figure", "CPU", "anchor", "anchor figure", "x anchor", "verdict", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        budget = "-" if r.budget is None else ("≥ " if r.higher_is_better else "≤ ") + _num(r.budget, r.unit)
        cells = [r.section, r.what, budget, _num(r.figure, r.unit), _num(r.cpu, r.unit), r.anchor_name or "-",
                 _num(r.anchor, r.unit), "-" if r.ratio is None else f"{r.ratio:.2f}", r.verdict, r.note]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
