"""CPU of one streamed frame as a 2,000-token Markdown reply grows, beside one plain Static.

In-process (Textual's headless driver, 120x40): the reply of ``bench_stream_keys`` is appended
to a live agentsh reply 400 characters a frame, each frame painted (laid out and rendered)
before the next; the UI thread's CPU per frame is taken with ``time.thread_time``. The
reference, in the same run: the same text put into one ``Static`` frame by frame (no Markdown
blocks at all). A Markdown reply mounts a widget per block and every frame lays out every
block of the body it grows (issue 16: ~160 widgets a reply), so its late frames cost more than
its early ones; the Static's stay flat.

    .venv/bin/python benchmarks/bench_stream_frames.py [--runs 3]

The last line is ``stream_frame_cpu_late: <median CPU of the last third of the frames> ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from bench_stream_keys import reply_text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from agentsh.tui.widgets.messages import AssistantMessage

FRAME = 400


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="chat")


async def frames(text: str, *, markdown: bool) -> list[float]:
    app = Host()
    costs: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        chat = app.query_one("#chat")
        reply = AssistantMessage(live=True)
        plain = Static("")
        await chat.mount(reply if markdown else plain)
        await pilot.pause()
        for start in range(0, len(text), FRAME):
            began = time.thread_time()
            if markdown:
                await reply.append(text[start : start + FRAME])
                await reply._flush()
            else:
                plain.update(text[: start + FRAME])
            await pilot.pause()
            costs.append(time.thread_time() - began)
    return costs


def thirds(costs: list[float]) -> tuple[float, float]:
    third = max(1, len(costs) // 3)
    return statistics.median(costs[:third]), statistics.median(costs[-third:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    text = reply_text(2000)
    early: list[float] = []
    late: list[float] = []
    static_late: list[float] = []
    for _ in range(args.runs):
        first, last = thirds(asyncio.run(frames(text, markdown=True)))
        early.append(first)
        late.append(last)
        static_late.append(thirds(asyncio.run(frames(text, markdown=False)))[1])
    ms = 1000
    print(f"{len(text)} characters, {FRAME} a frame, {args.runs} runs (medians)")
    print(f"one Static, last third of the frames: {statistics.median(static_late) * ms:.1f} ms")
    print(f"agentsh reply, first third: {statistics.median(early) * ms:.1f} ms")
    print(f"stream_frame_cpu_late: {statistics.median(late) * ms:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
