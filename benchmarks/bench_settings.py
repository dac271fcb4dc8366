"""Cost of ``kgos.settings.current()``, the call that replaced the scattered ``os.environ`` reads.

    python benchmarks/bench_settings.py       # medians of 7 rounds of 20,000 calls each

Rows, in microseconds per call, against anchors measured in the same run: one ``os.environ.get`` of a
set variable and of an unset one (what one scattered read cost), ``current()`` while nothing changed
(the cached path: one dict lookup per variable), and ``Settings.from_env()`` (a full parse, what
``current()`` pays once after a ``KGOS_*`` variable changes).
"""

from __future__ import annotations

import os
import statistics
import timeit

from kgos import settings

ROUNDS, CALLS = 7, 20_000


def micros(fn: object, calls: int = CALLS) -> float:
    return statistics.median(timeit.repeat(fn, number=calls, repeat=ROUNDS)) / calls * 1e6  # type: ignore[arg-type]


def main() -> None:
    os.environ.setdefault("KGOS_MAX_STREAMS", "64")
    os.environ.pop("KGOS_PUSHDOWN_EF", None)
    settings.current()
    rows = {
        "os.environ.get, set variable (anchor)": micros(lambda: os.environ.get("KGOS_MAX_STREAMS")),
        "os.environ.get, unset variable (anchor)": micros(lambda: os.environ.get("KGOS_PUSHDOWN_EF")),
        f"settings.current(), cached ({len(settings.variables())} variables)": micros(settings.current),
        "Settings.from_env(), full parse": micros(settings.Settings.from_env, 2_000),
    }
    anchor = rows["os.environ.get, unset variable (anchor)"]
    for label, us in rows.items():
        print(f"{label:55s} {us:8.2f} us  x{us / anchor:5.1f}")


if __name__ == "__main__":
    main()
