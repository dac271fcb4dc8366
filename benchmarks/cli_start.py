"""Start time of light ``kgos`` commands, against anchors measured in the same run.

    python benchmarks/cli_start.py            # 15 runs each, medians
    python benchmarks/cli_start.py --runs 5

Rows: ``python -c pass`` (the interpreter alone, the floor), ``kgos --help`` and ``kgos --version``
(lazy subcommands: no command module imported), and "eager" (``kgos --help`` after importing every
command module, as the CLI did before issue 32), ``kgos plugins`` (built-ins from their catalogue)
against ``kgos plugins --load`` (every family's registry imported, as it listed before). The ratio to the floor is what survives a loaded
machine; the budget is 0.3 s on an idle one.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

RUNS = 15
EAGER = "import sys; from kgos.cli import load_all, main; load_all(); sys.argv[1:] = ['--help']; main()"
CASES = {
    "python -c pass (floor)": [sys.executable, "-c", "pass"],
    "kgos --help": [sys.executable, "-m", "kgos", "--help"],
    "kgos --version": [sys.executable, "-m", "kgos", "--version"],
    "kgos kg --help": [sys.executable, "-m", "kgos", "kg", "--help"],
    "kgos search --help": [sys.executable, "-m", "kgos", "search", "--help"],
    "kgos --help, every command module imported (before)": [sys.executable, "-c", EAGER],
    "kgos plugins": [sys.executable, "-m", "kgos", "plugins"],
    "kgos plugins --load (every registry imported: before)": [sys.executable, "-m", "kgos", "plugins", "--load"],
}


def median_seconds(argv: list[str], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=RUNS)
    runs = ap.parse_args().runs
    results = {label: median_seconds(argv, runs) for label, argv in CASES.items()}
    floor = results["python -c pass (floor)"]
    print("| command | median s | x floor |")
    print("|---|---|---|")
    for label, seconds in results.items():
        print(f"| {label} | {seconds:.3f} | {seconds / floor:.1f} |")


if __name__ == "__main__":
    main()
