"""CPU of one streamed frame with many finished rows mounted above the reply, beside another
checkout in the same run.

In-process (Textual's headless driver, 120x40), as ``bench_stream_frames``: the 2,000-token
reply of ``bench_stream_keys`` streams into agentsh's chat 400 characters at a time, each
painted by the reply's own frames before the next, below ``--above`` exchanges of a two-line
question and a finished tool block (what a resumed session has mounted: the window keeps up to
200 rows). The figure is the median UI-thread CPU of the last third of the frames, and the
widgets the last frame laid out. ``--baseline DIR`` measures the checkout in DIR (e.g. ``git
archive main`` unpacked in /tmp) in child processes, alternating with this one.

    .venv/bin/python benchmarks/bench_stream_rows.py [--runs 4] [--above 40] [--baseline DIR]

The last line is ``stream_rows_frame_cpu: <median> ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

from benchlib import ROOT, json_lines_from


async def frames(above: int) -> tuple[float, int]:
    import bench_stream_frames as b
    from bench_stream_keys import reply_text

    from agentsh.tui.projection import AssistantItem, ToolItem, UserItem
    from agentsh.tui.widgets.chat import ChatView
    from agentsh.tui.widgets.messages import AssistantMessage

    text = reply_text(2000)
    app = b.Host(True)
    costs: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        chat = app.query_one(ChatView)
        for i in range(above):
            await chat.append(UserItem(f"u{i}", f"question {i}\nits second line"))
            await chat.append(ToolItem(f"c{i}", "bash", f"ls {i}", output="a\nb", finished=True))
        reply = AssistantMessage(live=True)
        await chat.append(AssistantItem("", ""), reply)
        done = b._watch_frames(reply)
        await pilot.pause()
        for start in range(0, len(text), b.FRAME):
            began = time.thread_time()
            await reply.append(text[start : start + b.FRAME])
            await b._painted(reply, done)
            await app.screen.wait_for_refresh()
            await app.screen.wait_for_refresh()
            costs.append(time.thread_time() - began)
        laid_out = len(app.screen._compositor.full_map)
    return b.thirds(costs)[1], laid_out


def measure(root: Path, above: int) -> tuple[float, int]:
    script = str(Path(__file__).resolve())
    cpu, laid_out = json_lines_from(root, script, "--child", "--above", str(above))[-1]
    return float(cpu), int(laid_out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--above", type=int, default=40, help="exchanges above the reply")
    parser.add_argument("--baseline", type=Path, help="a checkout to measure alongside")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(frames(args.above))))
        return 0
    mine: list[tuple[float, int]] = []
    base: list[tuple[float, int]] = []
    for _ in range(args.runs):  # alternating, so both see the same load
        if args.baseline is not None:
            base.append(measure(args.baseline, args.above))
        mine.append(measure(ROOT, args.above))
    print(f"{args.runs} runs each, {args.above} exchanges above; load {os.getloadavg()[0]:.1f}")
    for name, results in (("baseline", base), ("this checkout", mine)):
        if results:
            cpu = statistics.median(c for c, _ in results) * 1000
            print(f"{name}: late frame {cpu:.1f} ms, {results[-1][1]} widgets laid out")
    print(f"stream_rows_frame_cpu: {statistics.median(c for c, _ in mine) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
