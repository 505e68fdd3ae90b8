"""Median wall time of ``agentsh --help`` over 20 runs. Goal: under 150 ms.

Runs the venv's own interpreter (a pyenv shim would add ~90 ms that is not agentsh's) as
``python -m agentsh --help``, after one warm-up run, and prints the median; ``python -c pass``
is timed the same way for scale. Also lists the slowest imports of one run, so a regression
names its culprit.

    .venv/bin/python benchmarks/bench_cli_help.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def median_ms(command: list[str], runs: int) -> float:
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def slowest_imports(count: int = 5) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agentsh", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in result.stderr.splitlines():
        # "import time:  self_us | cumulative_us | name", after one header line
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    rows.sort(reverse=True)
    return [f"{us / 1000:6.1f} ms  {name}" for us, name in rows[:count]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    floor = median_ms([sys.executable, "-c", "pass"], args.runs)
    print(f"python_startup: {floor:.0f} ms")
    print("slowest imports (cumulative):")
    for row in slowest_imports():
        print(f"  {row}")
    help_ms = median_ms([sys.executable, "-m", "agentsh", "--help"], args.runs)
    print(f"cli_help: {help_ms:.0f} ms")


if __name__ == "__main__":
    main()
