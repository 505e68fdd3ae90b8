"""CPU of one streamed frame as a 2,000-token Markdown reply grows, beside one plain Static.

In-process (Textual's headless driver, 120x40): the reply of ``bench_stream_keys`` streams
into agentsh's chat (``ChatView``, below ``--earlier`` finished replies of the same text, as
in a session), 400 characters at a time, each painted by the reply's own frames (laid out and
rendered) before the next; the UI thread's CPU per frame is taken with ``time.thread_time``.
The references, in the same run: the same text put into one ``Static`` frame by frame (no
Markdown blocks at all), once in a view that stays at its top (only the scrollbar changes
once the screen is full) and once in a view that follows its end as the chat does (every
frame scrolls, so the whole view is drawn again: the least any following view pays).
Textual lays out every displayed widget at every frame and a Markdown reply is a widget per
block, so unless the blocks far above the view leave the layout, late frames cost more than
early ones; the Static's stay flat. The reply's screen is the app's (``OnePassScreen``), and
how many times it laid itself out and painted every cell per frame is counted (a frame is one
of each at best), with the CPU of those paints.

    .venv/bin/python benchmarks/bench_stream_frames.py [--runs 3] [--earlier 2]

The last line is ``stream_frame_cpu_late: <median CPU of the last third of the frames> ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from bench_stream_keys import reply_text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

import agentsh.tui
from agentsh.tui.projection import AssistantItem
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.messages import AssistantMessage

try:
    from agentsh.tui.one_pass_layout import OnePassScreen as AppScreen  # the app's own screen
except ImportError:  # a checkout from before it (``bench_stream_rows``'s baseline): Textual's
    AppScreen = Screen  # type: ignore[assignment,misc]

FRAME = 400


class Host(App[None]):
    CSS_PATH = str(Path(agentsh.tui.__file__).with_name("agentsh.tcss"))  # the app's own styles

    def __init__(self, markdown: bool, *, follow: bool = False) -> None:
        super().__init__()
        self.markdown = markdown
        self.follow = follow  # the Static's view follows its end, as the chat's does

    def get_default_screen(self) -> Screen[None]:
        return AppScreen(id="_default") if self.markdown else Screen(id="_default")

    def compose(self) -> ComposeResult:
        yield ChatView(id="chat") if self.markdown else VerticalScroll(id="chat")


def _watch_frames(reply: AssistantMessage) -> asyncio.Event:
    """An event set each time one of the reply's frames is on screen. (Waiting for it by
    polling every millisecond, as this benchmark did, charged the reply's frames with the
    polling's own CPU: a hundred loop turns or more per frame.)"""
    done = asyncio.Event()
    frame_done = reply._frame_done

    def on_screen(started: float) -> None:
        frame_done(started)
        done.set()

    reply._frame_done = on_screen  # type: ignore[method-assign]
    return done


async def _painted(reply: AssistantMessage, done: asyncio.Event) -> None:
    """Until the reply's own frames have put all of it on screen."""
    while reply._unsent or reply._drawing or reply._flush_timer is not None:
        done.clear()
        await done.wait()


class Counted:
    """How many times the screen laid itself out and painted every cell, from :meth:`start`,
    and the CPU those paints took."""

    def __init__(self, screen: Screen[Any]) -> None:
        self.layouts = self.full_paints = 0
        self.paint_s = 0.0
        self.counting = False
        refresh_layout = screen._refresh_layout
        full_update = screen._compositor.render_full_update

        def layout(*args: Any, **kwargs: Any) -> None:
            self.layouts += self.counting
            refresh_layout(*args, **kwargs)

        def paint(*args: Any, **kwargs: Any) -> Any:
            self.full_paints += self.counting
            began = time.thread_time()
            try:
                return full_update(*args, **kwargs)
            finally:
                self.paint_s += (time.thread_time() - began) * self.counting

        screen._refresh_layout = layout  # type: ignore[method-assign]
        screen._compositor.render_full_update = paint  # type: ignore[method-assign]

    def start(self) -> None:
        self.counting = True


async def frames(
    text: str, *, markdown: bool, earlier: int, follow: bool = False, counted: list[Counted]
) -> list[float]:
    """Each frame's CPU; the screen's counts of layouts and full paints go in ``counted``."""
    app = Host(markdown, follow=follow)
    costs: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        counted.append(Counted(app.screen))
        if markdown:
            chat = app.query_one(ChatView)
            for _ in range(earlier):
                await chat.append(AssistantItem("", text))
            reply = AssistantMessage(live=True)
            await chat.append(AssistantItem("", ""), reply)
            frame_done = _watch_frames(reply)
        else:
            plain = Static("")
            view = app.query_one("#chat", VerticalScroll)
            await view.mount(plain)
            if follow:
                view.anchor()
        await pilot.pause()
        counted[-1].start()
        for start in range(0, len(text), FRAME):
            began = time.thread_time()
            if markdown:
                await reply.append(text[start : start + FRAME])
                await _painted(reply, frame_done)
            else:
                plain.update(text[: start + FRAME])
            # The frame and what it set off (a second layout of what changed size) on screen.
            # (Not ``pilot.pause()``: it sends a message to every widget and waits for each,
            # a cost of the test harness that grew with the chat's widgets, not the app's.)
            await app.screen.wait_for_refresh()
            await app.screen.wait_for_refresh()
            costs.append(time.thread_time() - began)
    return costs


def thirds(costs: list[float]) -> tuple[float, float]:
    third = max(1, len(costs) // 3)
    return statistics.median(costs[:third]), statistics.median(costs[-third:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--earlier", type=int, default=2, help="finished replies above it")
    args = parser.parse_args()
    text = reply_text(2000)
    early: list[float] = []
    late: list[float] = []
    static_late: list[float] = []
    following_late: list[float] = []
    counts: list[Counted] = []  # the agentsh reply's screens
    frame_count = 0
    for _ in range(args.runs):
        costs = asyncio.run(frames(text, markdown=True, earlier=args.earlier, counted=counts))
        frame_count += len(costs)
        first, last = thirds(costs)
        early.append(first)
        late.append(last)
        static = asyncio.run(frames(text, markdown=False, earlier=0, counted=[]))
        static_late.append(thirds(static)[1])
        following = asyncio.run(frames(text, markdown=False, earlier=0, follow=True, counted=[]))
        following_late.append(thirds(following)[1])
    ms = 1000
    print(f"{len(text)} characters, {FRAME} a frame, {args.earlier} replies above, "
          f"{args.runs} runs (medians)")  # fmt: skip
    print(f"one Static, last third of the frames: {statistics.median(static_late) * ms:.1f} ms")
    print(f"one Static following its end (as the chat does), last third: "
          f"{statistics.median(following_late) * ms:.1f} ms")  # fmt: skip
    print(f"agentsh reply, first third: {statistics.median(early) * ms:.1f} ms")
    layouts = sum(c.layouts for c in counts) / frame_count
    paints = sum(c.full_paints for c in counts) / frame_count
    paint_ms = sum(c.paint_s for c in counts) / frame_count * ms
    print(f"agentsh reply, per frame: {layouts:.2f} layouts, {paints:.2f} full paints "
          f"({paint_ms:.1f} ms of CPU)")  # fmt: skip
    print(f"stream_frame_cpu_late: {statistics.median(late) * ms:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
