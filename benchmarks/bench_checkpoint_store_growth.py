"""How much the checkpoint store grows over a 200-turn session that edits 30 files.

The real agent, its tools and the scripted server play 200 user messages on a 500-file git
repository: each turn edits one line of one of 30 files (round robin), every 10th turn also
runs ``sed -i`` over five of them, every 25th writes a new file. Every user message and every
write/edit/bash is checkpointed as in normal use. Reported: the store's size on disk, against
the baselines of the same run: the 30 files' own size, and the bytes every version written
would take as plain copies (what a copy-per-checkpoint scheme stores at least).

    .venv/bin/python benchmarks/bench_checkpoint_store_growth.py [--turns N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from checkpoint_bench import Timings, environment, make_repo, median, run_agent, temp_dir

HOT = 30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    from tests.fakes.server import text, tool_call

    tmp = temp_dir("agentsh-bench-growth-")
    environment(tmp)
    root = tmp / "repo"
    root.mkdir()
    names = make_repo(root, 500, lines=(150, 250))
    hot = list(range(0, 500, 500 // HOT))[:HOT]
    value = dict.fromkeys(hot, "3")  # the current right-hand side of each hot file's line 3
    hot_bytes = sum((root / names[i]).stat().st_size for i in hot)
    written = 0
    replies: list[Any] = []
    for turn in range(args.turns):
        index = hot[turn % HOT]
        old, new = value[index], f"{turn}_{index}"
        replies.append(
            tool_call(
                "edit",
                {
                    "path": names[index],
                    "old_text": f"value_{index}_3 = {old}",
                    "new_text": f"value_{index}_3 = {new}",
                },
            )
        )
        value[index] = new
        written += (root / names[index]).stat().st_size
        if turn % 10 == 9:
            five = [names[hot[(turn + k) % HOT]] for k in range(5)]
            command = "sed -i 's/# line 7$/# line 7 (seen)/; t; s/# line 7 (seen)$/# line 7/' "
            replies.append(tool_call("bash", {"command": command + " ".join(five)}))
            written += sum((root / name).stat().st_size for name in five)
        if turn % 25 == 24:
            body = "".join(f"generated {turn} {n}\n" for n in range(100))
            replies.append(tool_call("write", {"path": f"notes/turn{turn}.md", "content": body}))
            written += len(body)
        replies.append(text(f"turn {turn} done"))
    timings = Timings()
    session, wall = run_agent(root, replies, [f"turn {n}" for n in range(args.turns)], timings)
    from agentsh.checkpoints.budget import total_bytes
    from agentsh.paths import UserPaths
    from agentsh.session.entries import CheckpointEntry

    records = sum(isinstance(r, CheckpointEntry) for r in session.tree.records)
    size_mb = total_bytes(UserPaths.from_env()) / 1e6
    log_kb = session.path.stat().st_size / 1e3 if session.path else 0.0
    print(f"turns: {args.turns}, checkpoint records: {records}, wall {wall:.1f} s", file=sys.stderr)
    print(f"checkpoint p50 in this run: {median([ms for _r, ms in timings.calls]):.1f} ms")
    print(f"session log: {log_kb:.0f} kB")
    print(f"baseline: the {HOT} files themselves: {hot_bytes / 1e6:.2f} MB")
    print(f"baseline: every version as a plain copy: {written / 1e6:.2f} MB")
    print(f"checkpoint_store_growth: {size_mb:.2f} MB")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
