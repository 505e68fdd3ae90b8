"""Median time to append one entry to a session log, with each fsync policy (SPEC §2).

The default policy ("turn") writes each entry with one ``write`` and fsyncs at the end of a
turn; "entry" fsyncs after every entry. Appends a realistic assistant message (~600 bytes) to a
session that already holds 1,000 entries, and also reports what the end-of-turn fsync costs.

    .venv/bin/python benchmarks/bench_append.py [--count N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agentsh.session.entries import Role, StopReason, ToolCall, Usage
from agentsh.session.session import Session


def prepared(folder: Path, *, fsync_each: bool) -> Session:
    session = Session.create(folder, Path("/home/user/project"), fsync_each=fsync_each)
    for index in range(1000):
        session.append_message(Role.USER if index % 2 else Role.ASSISTANT, f"warm-up {index}")
    session.sync()
    return session


def append_one(session: Session, index: int) -> None:
    session.append_message(
        Role.ASSISTANT,
        f"Step {index}: the parser drops the last token, so I will read the file. " * 4,
        tool_calls=(ToolCall(id=f"call_{index}", name="read", arguments='{"path": "src/p.py"}'),),
        model="anthropic/claude-sonnet-4",
        usage=Usage(input_tokens=12_000, output_tokens=150, cost=0.04),
        stop_reason=StopReason.TOOL_CALLS,
    )


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentsh-bench-append-") as tmp:
        folder = Path(tmp)
        per_entry = prepared(folder, fsync_each=True)
        samples = []
        for index in range(max(50, args.count // 10)):
            start = time.perf_counter()
            append_one(per_entry, index)
            samples.append(time.perf_counter() - start)
        per_entry.close()
        print(f"append_entry_fsync_each: {median_us(samples):.0f} us")

        per_turn = prepared(folder, fsync_each=False)
        syncs = []
        samples = []
        for index in range(args.count):
            start = time.perf_counter()
            append_one(per_turn, index)
            samples.append(time.perf_counter() - start)
            if index % 10 == 9:  # a turn of ten entries ends: fsync
                start = time.perf_counter()
                per_turn.sync()
                syncs.append(time.perf_counter() - start)
        per_turn.close()
        print(f"end_of_turn_fsync: {median_us(syncs):.0f} us")
        print(f"append_entry_turn_policy: {median_us(samples):.1f} us")


if __name__ == "__main__":
    main()
