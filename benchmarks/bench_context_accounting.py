"""Context accounting cost per turn at 200,000 tokens of context (goal: under 5 ms).

Builds a session of about 200,000 tokens (tool-heavy turns), then plays 200 more turns: each
appends a user message, an assistant tool call, its result and an answer, and then asks the
ContextManager for its status, as the agent does after every reply. The status call is timed:
thanks to per-entry caching it costs O(new entries), not O(history). Also reported: the full
``prepare`` (accounting, pre-flight and assembling every message of the request), which is
O(history) by nature since the whole request is built.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_TOKENS = 200_000
TURNS = 200


def main() -> None:
    from agentsh.config import Settings
    from agentsh.context.manager import ContextManager
    from agentsh.paths import UserPaths
    from agentsh.session.session import Session
    from tests.context.builders import SYSTEM, Step, add_turn, unique_output

    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-"))
    session = Session.create(None, home)

    async def summarize(messages: list[dict[str, object]], max_tokens: int) -> str:
        raise RuntimeError("no model in this benchmark")

    manager = ContextManager(
        session,
        Settings(),
        UserPaths(home / "c", home / "d", home / "e"),
        model="bench/model",
        window=1_000_000,  # large, so no compaction interferes with the measurement
        summarize=summarize,
    )
    n = 0
    while manager.status().used < TARGET_TOKENS:
        n += 1
        add_turn(
            session,
            f"request {n}",
            [Step("read", {"path": f"src/m{n}.py"}, unique_output(1_500, f"m{n}"))],
            f"answer {n}",
        )
    start_used = manager.status().used
    status_ms: list[float] = []
    prepare_ms: list[float] = []
    for i in range(TURNS):
        add_turn(
            session,
            f"more {i}",
            [Step("bash", {"command": "pytest -q"}, unique_output(50, f"t{i}"))],
            "ok",
        )
        t0 = time.perf_counter()
        manager.status()
        status_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        asyncio.run(manager.prepare(SYSTEM, []))
        prepare_ms.append((time.perf_counter() - t0) * 1000)
    print(f"context at start: {start_used:,} tokens in {len(session.tree):,} entries")
    print(f"prepare (assembles the whole request), median: {statistics.median(prepare_ms):.2f} ms")
    print(f"status per turn, p95: {sorted(status_ms)[int(0.95 * len(status_ms))]:.3f} ms")
    print(f"accounting_per_turn_200k: {statistics.median(status_ms):.3f} ms")


if __name__ == "__main__":
    main()
