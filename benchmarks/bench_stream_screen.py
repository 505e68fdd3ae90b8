"""UI-thread CPU of a streamed Markdown reply in the whole app's screen, event by event and frame
by frame, with main's code in the same run.

In-process (Textual's headless driver, 120x40): the real ``AgentshApp`` (chat, activity line,
editor, status bar) with the scripted fake agent of ``tests/tui/test_stream_render_loop.py``,
which streams its ~2,000-token Markdown reply at about 1,000 tokens a second in 12-character
deltas, below an earlier reply (and ``--above`` short exchanges before it, as a resumed session
has). Taken while the second reply streams:

- ``cpu``: the UI thread's CPU from Enter to the turn's end (``time.thread_time``);
- ``frames``: the screen's layouts (one a streamed frame, and the frames it set off);
- ``per event``: the CPU the running turn's handler took per streamed event, the chat's, the
  activity line's and the status bar's share of it, apart from the reply's own ``append``;
- ``ticks over 50 ms``: a 10 ms Textual timer's ticks that came after more than 50 ms of the
  UI thread's CPU (as ``tests/tui/test_stream_render_loop.py`` counts them), and the worst.

``--baseline DIR`` runs the same measurement on the checkout in DIR (e.g. ``git archive main``
unpacked in /tmp) in a child process, alternating with this one, so both see the same load.

    .venv/bin/python benchmarks/bench_stream_screen.py [--runs 5] [--above 40] [--baseline DIR]

The last line is ``stream_screen_cpu: <median UI-thread CPU of the reply> ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchlib import ROOT, json_lines_from, scratch_project

from agentsh.events import Event


async def one_run(project: Path, above: int) -> dict[str, float]:
    from agentsh.config import load_environment
    from agentsh.tui.app import AgentshApp
    from agentsh.tui.options import LaunchOptions
    from agentsh.tui.turns import TurnRunner
    from tests.tui.conftest import fake_factory, open_long_session, ready, submit, wait_for
    from tests.tui.test_stream_render_loop import streamed
    from tests.tui.test_ui_loop_responsive import BLOCKED_S, LoopProbe

    env = load_environment(project, trust_project=True)
    app = AgentshApp(
        env,
        LaunchOptions(),
        agent_factory=fake_factory(script=streamed),
        cwd=project,
        watch_themes=False,
    )
    handled = [0, 0.0]  # events, CPU in the turn's handler
    consume = TurnRunner._consume

    async def timed_consume(
        self: TurnRunner, events: AsyncIterator[Event], user_text: str, reveal: bool
    ) -> None:
        async def counted() -> AsyncIterator[Event]:
            async for event in events:
                began = time.thread_time()
                yield event
                handled[0] += 1
                handled[1] += time.thread_time() - began

        await consume(self, counted(), user_text, reveal)

    TurnRunner._consume = timed_consume  # type: ignore[method-assign]
    layouts = [0]
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        if above:  # a session of that many short exchanges, all mounted above the reply
            await open_long_session(app, project, above)
        await submit(pilot, app, "an earlier question")
        await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=120)
        screen = app.screen
        refresh_layout = screen._refresh_layout

        def counted_layout(*args: Any, **kwargs: Any) -> None:
            layouts[0] += 1
            return refresh_layout(*args, **kwargs)

        screen._refresh_layout = counted_layout  # type: ignore[method-assign]
        probe = LoopProbe()
        await screen.mount(probe)
        await pilot.pause()
        handled[:] = [0, 0.0]
        began = time.thread_time()
        await submit(pilot, app, "and another")
        await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=120)
        cpu = time.thread_time() - began
        probe.remove()
        await pilot.pause()
    cpus = [c for _late, c in probe.samples]
    return {
        "cpu": cpu,
        "frames": layouts[0],
        "events": handled[0],
        "per_event": handled[1] / max(1, handled[0]),
        "blocked": sum(1 for c in cpus if c > BLOCKED_S),
        "ticks": len(cpus),
        "worst": max(cpus, default=0.0),
    }


def child(runs: int, above: int) -> None:
    """One process, ``runs`` measurements; a JSON line each."""
    sys.path.insert(0, str(Path.cwd()))
    for _ in range(runs):
        with scratch_project() as project:
            result = asyncio.run(one_run(project, above))
        print(json.dumps(result), flush=True)


def measure(root: Path, runs: int, above: int) -> list[dict[str, float]]:
    script = str(Path(__file__).resolve())
    return json_lines_from(root, script, "--child", str(runs), "--above", str(above))


def summary(name: str, results: list[dict[str, float]]) -> str:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in results)

    return (
        f"{name}: cpu {med('cpu') * 1000:.0f} ms, {med('frames'):.0f} layouts, "
        f"{med('per_event') * 1e6:.0f} us per streamed event, "
        f"ticks over 50 ms {med('blocked'):.0f} of {med('ticks'):.0f} "
        f"(worst {med('worst') * 1000:.0f} ms)"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout to measure alongside")
    parser.add_argument("--above", type=int, default=0, help="short exchanges above the reply")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.above)
        return 0
    mine: list[dict[str, float]] = []
    base: list[dict[str, float]] = []
    for _ in range(args.runs):  # alternating, one run each, so both see the same load
        if args.baseline is not None:
            base += measure(args.baseline, 1, args.above)
        mine += measure(ROOT, 1, args.above)
    print(f"{args.runs} runs each, {args.above} exchanges above, medians; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    if base:
        print(summary(f"baseline ({args.baseline})", base))
    print(summary("this checkout", mine))
    print(f"stream_screen_cpu: {statistics.median(r['cpu'] for r in mine) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
