"""A full MoveToWorkspace compaction of a 150,000-token context, no model call (goal: < 100 ms).

Each run builds a fresh on-disk session of about 150,000 tokens of tool-heavy turns, then times
one manual MoveToWorkspace compaction through the ContextManager: phase 1 (pruning), the cut,
rendering the removed turns to markdown, writing the archive durably (temp file, fsync, rename,
folder fsync), appending and syncing the compaction entry, and the next status. The median of
the runs is reported.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_TOKENS = 150_000
RUNS = 7


def one_run(home: Path, run: int) -> tuple[float, int, int]:
    from agentsh.config import Settings
    from agentsh.context.manager import ContextManager
    from agentsh.events import Tier
    from agentsh.paths import UserPaths
    from agentsh.session.session import Session
    from tests.context.builders import Step, add_turn, unique_output

    user = UserPaths(home / "config", home / "data", home / "cache")
    folder = user.sessions_dir / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    session = Session.create(folder, home)

    async def summarize(messages: list[dict[str, object]], max_tokens: int) -> str:
        raise RuntimeError("no model in this benchmark")

    manager = ContextManager(
        session, Settings(), user, model="bench/model", window=200_000, summarize=summarize
    )
    n = 0
    while manager.status().used < TARGET_TOKENS:
        n += 1
        add_turn(
            session,
            f"request {n}",
            [
                Step("read", {"path": f"src/m{n}.py"}, unique_output(2_000, f"r{run}.{n}")),
                Step("bash", {"command": "pytest -q"}, unique_output(400, f"t{run}.{n}")),
            ],
            f"answer {n}",
        )
    session.sync()
    before = manager.status().used
    t0 = time.perf_counter()
    entry = asyncio.run(manager.compact(Tier.MOVE_TO_WORKSPACE))
    after = manager.status().used
    elapsed = (time.perf_counter() - t0) * 1000
    assert entry is not None and Path(entry.workspace_file).exists()
    session.close()
    return elapsed, before, after


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-"))
    os.environ["AGENTSH_HOME"] = str(home)
    times = []
    for run in range(RUNS):
        elapsed, before, after = one_run(home, run)
        times.append(elapsed)
    print(
        f"context {before:,} -> {after:,} tokens; runs (ms): {', '.join(f'{t:.1f}' for t in times)}"
    )
    print(f"move_to_workspace_150k: {statistics.median(times):.1f} ms")


if __name__ == "__main__":
    main()
