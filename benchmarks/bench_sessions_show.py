"""``agentsh sessions show ID --json`` of a 100,000-entry session. Goal: under 3 s.

Builds the same realistic session as bench_session_load.py, then runs the real CLI in fresh
processes, stdout to /dev/null: the text form (the baseline, measured in the same run on the
same machine) and the JSON form, alternately, and prints the medians: wall time, and the CPU
time of the process (user + system), which a loaded machine stretches far less.

    .venv/bin/python benchmarks/bench_sessions_show.py [--entries N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_session_load import build

from agentsh.paths import UserPaths


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with Path(os.devnull).open("wb") as sink:
        subprocess.run(args, stdout=sink, stderr=subprocess.PIPE, env=env, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentsh-bench-show-") as tmp:
        env = dict(os.environ, AGENTSH_HOME=str(Path(tmp) / "home"))
        user = UserPaths.from_env(env)
        folder = user.sessions_dir / "bench-project"
        path = build(folder, args.entries)
        session_id = path.stem.split("_", 1)[1]
        print(f"file: {args.entries} entries, {path.stat().st_size / 1e6:.1f} MB")
        base = [sys.executable, "-m", "agentsh", "sessions", "show", session_id]
        timed(base, env)  # warm the page cache and the catalog
        text_times: list[tuple[float, float]] = []
        json_times: list[tuple[float, float]] = []
        for run in range(1, args.runs + 1):
            text_times.append(timed(base, env))
            json_times.append(timed([*base, "--json"], env))
            (text_wall, text_cpu), (json_wall, json_cpu) = text_times[-1], json_times[-1]
            print(
                f"run {run}: text {text_wall:.3f} s (CPU {text_cpu:.3f} s), "
                f"json {json_wall:.3f} s (CPU {json_cpu:.3f} s)"
            )
        for name, times in (("text_100k (baseline)", text_times), ("json_100k", json_times)):
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            print(f"sessions_show_{name}: {wall:.3f} s (CPU {cpu:.3f} s)")


if __name__ == "__main__":
    main()
