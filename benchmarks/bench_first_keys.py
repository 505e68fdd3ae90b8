"""Keystroke echo when the user starts typing, beside the same keys once all is loaded.

The real ``agentsh`` in a 120x40 tmux pane (a private tmux server), with an OpenAI model (the
o200k tokenizer: the slowest to build). Once the agent is ready, a word is typed at a human
pace (a key every ``GAP_S`` after the previous one showed), each key polled (capture-pane)
until the editor shows it; then, after a pause in which whatever the first keys started has
loaded, a second word the same way: the reference, in the same process and run. Building the
tokenizer holds the interpreter for 0.4-0.8 s: loaded at the first key, the keys after it
echoed that late (issue 16). Medians over rounds of each word's slowest key.

    .venv/bin/python benchmarks/bench_first_keys.py [--rounds 3]

The last line is ``first_keys_max: <median of the first word's slowest key> ms``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchlib import agentsh_command, bench_env, git_project, type_keys, wait_agentsh_ready

from tests.e2e.tmux import TmuxPane, tmux_available

FIRST = "zqxjzqxjzqxjzqxj"  # letters the screen shows nowhere else
SETTLED = "jxqzjxqzjxqzjxqz"
GAP_S = 0.12  # a typist's pace
PAUSE_S = 4.0  # between the words: what the first keys started has loaded


def one_round(tmp: Path, project: Path, n: int) -> tuple[float, float]:
    home = tmp / f"home-{n}"
    command = agentsh_command("-m", "openai/gpt-4o")
    with TmuxPane(command, cwd=project, env=bench_env(home), width=120, height=40) as pane:
        wait_agentsh_ready(pane, timeout=90)
        time.sleep(1.0)
        first, typed = type_keys(pane, FIRST, gap_s=GAP_S, timeout=10)
        time.sleep(PAUSE_S)
        settled, _ = type_keys(pane, SETTLED, typed, gap_s=GAP_S, timeout=10)
    return max(first), max(settled)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    firsts: list[float] = []
    settled: list[float] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        project = git_project(tmp / "project")
        for n in range(args.rounds):
            first, later = one_round(tmp, project, n)
            firsts.append(first)
            settled.append(later)
            print(f"round {n + 1}: slowest key {first * 1000:.0f} ms typing the first word, "
                  f"{later * 1000:.0f} ms once loaded")  # fmt: skip
    print(f"settled_keys_max: {statistics.median(settled) * 1000:.0f} ms")
    print(f"first_keys_max: {statistics.median(firsts) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
