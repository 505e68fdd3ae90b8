"""Load the current path of a 100,000-entry (~50 MB) session. Goal: under 1 s (SPEC §2).

Writes a realistic session through the real Session API (user prompts, assistant replies with
tool calls and usage, tool results, a few edits that branch, leaf moves and labels), then times
``Session.open(path, lock=False).current_path()`` in fresh interpreters (a cold start is what a
resume costs) and prints the median.

    .venv/bin/python benchmarks/bench_session_load.py [--entries N] [--runs N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from agentsh.session.entries import Role, StopReason, ToolCall, Usage
from agentsh.session.session import Session

LOAD = """
import sys, time
from pathlib import Path
t0 = time.perf_counter()
from agentsh.session.session import Session
t1 = time.perf_counter()
c1 = time.process_time()
session = Session.open(Path(sys.argv[1]), lock=False)
path = session.current_path()
t2 = time.perf_counter()
c2 = time.process_time()
print(t2 - t1, len(path), len(session.tree.nodes), len(session.problems), t1 - t0, c2 - c1)
"""

WORDS = ("the", "parser", "reads", "tokens", "from", "a", "stream", "and", "builds", "a", "tree")


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def build(folder: Path, entries: int) -> Path:
    rng = random.Random(42)
    session = Session.create(folder, Path("/home/user/project"))
    n = 0
    turn = 0
    while n < entries:
        turn += 1
        user = session.append_message(Role.USER, sentence(rng, rng.randint(5, 40)))
        n += 1
        for step in range(rng.randint(1, 3)):
            if n >= entries:
                break
            call = ToolCall(
                id=f"call_{turn}_{step}",
                name=rng.choice(["read", "bash", "grep", "edit"]),
                arguments=f'{{"path": "src/module_{rng.randint(1, 99)}.py"}}',
            )
            session.append_message(
                Role.ASSISTANT,
                sentence(rng, rng.randint(0, 30)),
                tool_calls=(call,),
                model="anthropic/claude-sonnet-4",
                usage=Usage(rng.randint(1000, 90000), rng.randint(20, 400), cost=0.01),
                stop_reason=StopReason.TOOL_CALLS,
            )
            output = "\n".join(sentence(rng, 12) for _ in range(rng.randint(1, 12)))
            session.append_tool_result(call.id, call.name, output)
            n += 2
        if n < entries:
            session.append_message(
                Role.ASSISTANT,
                sentence(rng, rng.randint(20, 120)),
                model="anthropic/claude-sonnet-4",
                usage=Usage(rng.randint(1000, 90000), rng.randint(50, 800), cost=0.02),
                stop_reason=StopReason.STOP,
            )
            n += 1
        if turn % 500 == 0:  # now and then the user edits a prompt: a branch, a label
            session.set_label(user.id, f"turn {turn}")
            session.move_leaf(user.parent_id)
            session.append_message(Role.USER, sentence(rng, 20))
            n += 1
    session.close()
    assert session.path is not None
    return session.path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentsh-bench-load-") as tmp:
        path = build(Path(tmp), args.entries)
        size_mb = path.stat().st_size / 1e6
        print(f"file: {args.entries} entries, {size_mb:.1f} MB")
        times = []
        for run in range(args.runs + 1):
            out = subprocess.run(
                [sys.executable, "-c", LOAD, str(path)], capture_output=True, text=True, check=True
            ).stdout.split()
            seconds, path_len, nodes, problems, import_s, cpu = out
            if run == 0:
                print(f"path: {path_len} entries of {nodes}; problems: {problems}")
                continue  # warm the page cache; every later run reads the file from memory
            times.append(float(seconds))
            print(
                f"run {run}: {float(seconds):.3f} s wall, {float(cpu):.3f} s cpu "
                f"(import {float(import_s) * 1000:.0f} ms)"
            )
        print(f"session_load_100k: {statistics.median(times):.3f} s")


if __name__ == "__main__":
    main()
