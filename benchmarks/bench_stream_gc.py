"""Garbage-collection pauses of the UI process while replies stream, in a long session, with
main's code in the same run.

In-process (Textual's headless driver, 120x40): the real ``AgentshApp`` with the scripted fake
agent of ``tests/tui/test_stream_render_loop.py``, which streams its ~2,000-token Markdown
reply at about 1,000 tokens a second. ``--sessions`` sessions (``/new`` between them) of
``--replies`` replies each, sent back to back (each message's last key typed, then Enter, as
a user who writes fast: no quiet second between two turns). Every collection is timed through
``gc.callbacks`` (registered after the app's own collector, so a freeze it does after a
collection counts in that collection's pause):

- ``longest in a turn``: the longest collection (of any generation, wall clock; nearly all are
  full ones) while a turn ran, over the last session's turns (the long session's), and over all;
  and the most CPU one of the last session's took (a loaded machine stretches the wall clock);
- ``full``: how many full (generation 2) collections ran, and their CPU (``time.thread_time``
  of the thread that ran them; the collector's cost);
- ``rss``: the process's resident memory after the last reply and 2.5 s without input (the
  app's idle collection, if any, has run).

``--baseline DIR`` runs the same measurement on the checkout in DIR (``git worktree add
/tmp/x main``) in a child process, alternating with this one, so both see the same load.

    .venv/bin/python benchmarks/bench_stream_gc.py [--runs 2] [--sessions 5] [--replies 6]
        [--baseline DIR]

The last line is ``stream_gc_longest_pause: <median of the longest pause in a turn> ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import ROOT, json_lines_from, scratch_project


class PauseLog:
    """Every collection's wall and CPU time, and whether a turn was running."""

    def __init__(self, turn_running: Any) -> None:
        self.turn_running = turn_running
        self.session = 0
        self.pauses: list[tuple[int, int, bool, float, float]] = []  # gen, session, turn, s, cpu
        self._began = (0.0, 0.0)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = (time.perf_counter(), time.thread_time())
            return
        wall, cpu = time.perf_counter() - self._began[0], time.thread_time() - self._began[1]
        self.pauses.append((info["generation"], self.session, self.turn_running(), wall, cpu))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def one_run(project: Path, sessions: int, replies: int) -> dict[str, float]:
    from agentsh.config import load_environment
    from agentsh.tui.app import AgentshApp
    from agentsh.tui.options import LaunchOptions
    from tests.tui.conftest import fake_factory, idle, ready, submit
    from tests.tui.test_stream_render_loop import streamed

    env = load_environment(project, trust_project=True)
    app = AgentshApp(
        env,
        LaunchOptions(),
        agent_factory=fake_factory(script=streamed),
        cwd=project,
        watch_themes=False,
    )
    log = PauseLog(lambda: app.controller.turn_running)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        gc.callbacks.append(log)  # after the app's collector: its freeze is in the pause
        try:
            for session in range(sessions):
                log.session = session
                if session:
                    await submit(pilot, app, "/new")
                    await idle(pilot, app)
                for reply in range(replies):
                    # Its last key typed, as a user's (the collectors wait for quiet keys).
                    await pilot.press("ctrl+l")
                    app.controller.prompt.text = f"question {session}.{reply} "
                    await pilot.press("end", "x", "enter")
                    await pilot.pause()  # the turn has started
                    await idle(pilot, app, limit_s=300)
            await pilot.pause(2.5)  # quiet: whatever the app does when idle, it does now
            rss = _rss_mb()
            thaws = getattr(app._gc, "thaws", 0)
        finally:
            gc.callbacks.remove(log)
    last = sessions - 1
    in_turn = [p for p in log.pauses if p[2]]
    full = [p for p in log.pauses if p[0] == 2]
    return {
        "longest_last": max((p[3] for p in in_turn if p[1] == last), default=0.0),
        "longest_all": max((p[3] for p in in_turn), default=0.0),
        "longest_cpu": max((p[4] for p in in_turn if p[1] == last), default=0.0),
        "full": len(full),
        "full_cpu": sum(p[4] for p in full),
        "all_cpu": sum(p[4] for p in log.pauses),
        "rss": rss,
        "thaws": thaws,
    }


def child(runs: int, sessions: int, replies: int) -> None:
    """One process per measurement (``runs`` of them in a row); a JSON line each."""
    sys.path.insert(0, str(Path.cwd()))
    for _ in range(runs):
        with scratch_project() as project:
            result = asyncio.run(one_run(project, sessions, replies))
        print(json.dumps(result), flush=True)


def measure(root: Path, sessions: int, replies: int) -> dict[str, float]:
    script = str(Path(__file__).resolve())
    args = ("--child", "1", "--sessions", str(sessions), "--replies", str(replies))
    result: dict[str, float] = json_lines_from(root, script, *args)[0]
    return result


def summary(name: str, results: list[dict[str, float]]) -> str:
    def runs(key: str, scale: float, fmt: str = ".0f") -> str:
        values = [r[key] * scale for r in results]
        listed = ", ".join(f"{v:{fmt}}" for v in values)
        return f"{statistics.median(values):{fmt}} [{listed}]"

    return (
        f"{name}:\n  longest collection in a turn: last session {runs('longest_last', 1000)} ms"
        f" (CPU {runs('longest_cpu', 1000)} ms), all {runs('longest_all', 1000)} ms\n"
        f"  full collections {runs('full', 1)}, their CPU {runs('full_cpu', 1000)} ms "
        f"(all generations {runs('all_cpu', 1000)} ms), thaws {runs('thaws', 1)}\n"
        f"  rss after the last reply {runs('rss', 1)} MB"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--replies", type=int, default=6, help="replies per session")
    parser.add_argument("--baseline", type=Path, help="a checkout to measure alongside")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.sessions, args.replies)
        return 0
    mine: list[dict[str, float]] = []
    base: list[dict[str, float]] = []
    for _ in range(args.runs):  # alternating, one run each, so both see the same load
        if args.baseline is not None:
            base.append(measure(args.baseline, args.sessions, args.replies))
        mine.append(measure(ROOT, args.sessions, args.replies))
    print(f"{args.runs} runs each, {args.sessions} sessions x {args.replies} replies, medians "
          f"[runs]; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    if base:
        print(summary(f"baseline ({args.baseline})", base))
    print(summary("this checkout", mine))
    longest = statistics.median(r["longest_last"] for r in mine)
    print(f"stream_gc_longest_pause: {longest * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
