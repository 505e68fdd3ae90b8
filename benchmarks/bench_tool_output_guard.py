"""What the injection guard adds to a ``read``: the same reads with and without it, same run.

Every ``.py`` file of agentsh/ is read with the real ``read`` tool (a page of up to 2,000
lines / 50 KiB, as the model gets it), then the call loop's guard step
(:func:`agentsh.tools.untrusted.guarded` in the ``TOOL_OUTPUT`` scope) runs over that output.
Rounds alternate, so load on a shared machine falls on both alike. Printed: the median read
alone, the median guard step, the largest page's guard step (the cap: 50 KiB), and the
guard's median share of a read; the last line is the median extra time per read.

Run: ``.venv/bin/python benchmarks/bench_tool_output_guard.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from benchlib import ROOT

from agentsh.config import Settings
from agentsh.memory.guard import Scope
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.tools.base import ToolContext
from agentsh.tools.file_read import ReadTool
from agentsh.tools.untrusted import guarded


async def _one_round(
    tool: ReadTool, ctx: ToolContext, files: list[Path]
) -> tuple[list[float], list[float], int]:
    reads: list[float] = []
    guards: list[float] = []
    largest = 0
    for path in files:
        start = time.perf_counter()
        result = await tool.run(tool.parse({"path": str(path)}), ctx)
        middle = time.perf_counter()
        shown = guarded(
            result.content,
            tool="read",
            origin=tool.output_origin,
            source="read",
            scope=Scope.TOOL_OUTPUT,
            max_bytes=len(result.content.encode()),
        )
        end = time.perf_counter()
        reads.append(middle - start)
        guards.append(end - middle)
        largest = max(largest, len(result.content))
        assert shown.text  # the work is not optimised away
    return reads, guards, largest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    files = sorted((ROOT / "agentsh").rglob("*.py"))
    ctx = ToolContext(
        project=ProjectPaths(ROOT),
        user=UserPaths.from_env(),
        settings=Settings(),
        cwd=ROOT,
        call_id="bench",
        emit=lambda event: None,
    )
    tool = ReadTool()
    guarded("warm up the guard", tool="read", origin="x", source="x", scope=Scope.TOOL_OUTPUT)
    reads: list[float] = []
    guards: list[float] = []
    largest_guard: list[float] = []
    for _ in range(args.rounds):
        r, g, _largest = asyncio.run(_one_round(tool, ctx, files))
        reads += r
        guards += g
        largest_guard.append(max(g))
    read_ms = statistics.median(reads) * 1000
    guard_ms = statistics.median(guards) * 1000
    share = statistics.median(g / r for r, g in zip(reads, guards, strict=True)) * 100
    print(f"files: {len(files)} x {args.rounds} rounds")
    print(f"read alone (baseline): {read_ms:.2f} ms median per read")
    print(f"guard step, largest page: {statistics.median(largest_guard) * 1000:.2f} ms")
    print(f"guard share of a read: {share:.0f} % median")
    print(f"tool_output_guard: {guard_ms:.2f} ms")


if __name__ == "__main__":
    main()
