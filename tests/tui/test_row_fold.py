"""The rows far above a following chat leave the layout while a reply streams, and nothing on
screen moves (agentsh/tui/widgets/row_fold.py).

The folded rows stay mounted, hidden, with the first row shown standing in their place (its top
margin); every row still shown keeps its place (the chat's height and its scroll position with
it), and they all come back as soon as the reader scrolls away from the end.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widget import Widget

from agentsh.tui.app import AgentshApp
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.messages import AssistantMessage
from tests.tui.conftest import (
    MakeApp,
    fake_factory,
    fake_of,
    idle,
    open_long_session,
    ready,
    screen_text,
    submit,
    wait_for,
)
from tests.tui.fake_agent import streaming

pytestmark = pytest.mark.asyncio

REPLY = "\n\n".join(
    [
        "FIRSTLINE of the reply.",
        *(
            block
            for part in range(15)
            for block in (
                f"## Part {part}",
                f"Paragraph {part}: " + "some **bold** words and `code` " * 6,
                "\n".join(f"- item {i} of part {part}" for i in range(3)),
                "```python\n" + "\n".join(f"x_{i} = {i}" for i in range(4)) + "\n```",
            )
        ),
        "LASTLINE of the reply.",
    ]
)


streamed = streaming(REPLY)


async def _settled(pilot: Pilot[None], app: AgentshApp) -> None:
    """Pump until two frames in a row draw the same screen (bounded: 5 s)."""
    before = screen_text(app)
    for _ in range(250):
        await pilot.pause(0.02)
        now = screen_text(app)
        if now == before:
            return
        before = now


def _laid_out(chat: ChatView) -> int:
    """The widgets a frame lays out in the chat (displayed ones), not all those mounted."""
    return sum(1 for w in chat.walk_children(Widget) if w.display and w.region)


def _places(chat: ChatView) -> dict[int, tuple[int, int]]:
    """Each row shown: its screen row and height, by its widget."""
    return {id(w): (w.region.y, w.region.height) for w in chat.children if w.display}


async def test_rows_far_above_a_streaming_reply_leave_the_layout_and_come_back(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app(factory=fake_factory(script=streamed))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await open_long_session(app, project, 20)  # 40 rows above the reply, all mounted
        chat = app.query_one(ChatView)
        await submit(pilot, app, "a long one")
        await wait_for(pilot, lambda: bool(fake_of(app).runs))
        await idle(pilot, app)
        await wait_for(pilot, lambda: "LASTLINE" in screen_text(app))
        await _settled(pilot, app)
        chat._fold_far_rows()  # as the scroll of the next frame does (if the last one came
        # while the window was changing, it skipped: benchmarks/bench_stream_screen.py
        # measures what the folds spare while a reply streams)
        assert chat.row_fold.folded
        hidden = list(chat.row_fold.widgets)
        rows = [w for w in chat.children if w.display or w in hidden]
        assert len(hidden) > 30 and rows[: len(hidden)] == hidden  # a leading run
        assert not any(w.display for w in hidden)
        replies = [w for w in chat.children if isinstance(w, AssistantMessage)]
        assert replies[0] in hidden and replies[-1].display  # the newest row stays
        await _settled(pilot, app)
        laid_out = _laid_out(chat)
        screen, height, places = screen_text(app), chat.virtual_size.height, _places(chat)

        chat.unfold_rows()  # as if folding had never happened: the same cells, the same places
        await pilot.pause()
        await _settled(pilot, app)
        assert all(w.display for w in hidden)
        assert _laid_out(chat) >= laid_out + len(hidden)  # what the fold spared each frame
        assert chat.virtual_size.height == height
        assert screen_text(app) == screen
        unfolded = _places(chat)
        assert {k: unfolded[k] for k in places} == places

        chat._fold_far_rows()  # folded again (as the next frame does), then the reader leaves
        await pilot.pause()
        assert chat.row_fold.folded
        chat.scroll_home(animate=False, immediate=True)  # as Home or the wheel does
        await wait_for(pilot, lambda: "question 0" in screen_text(app))
        assert not chat.row_fold.folded and all(w.display for w in hidden)


async def test_a_taller_terminal_never_shows_where_folded_rows_were(
    make_app: MakeApp, project: Path
) -> None:
    """Rows are folded a screen above the view: a view grown to twice its height could reach
    the place they left. A resize (of the height alone too) unfolds them, and what folds again
    is measured at the new size: the screen is the one an unfolded chat shows."""
    app = make_app(factory=fake_factory(script=streamed))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await open_long_session(app, project, 20)
        chat = app.query_one(ChatView)
        await submit(pilot, app, "a long one")
        await wait_for(pilot, lambda: bool(fake_of(app).runs))
        await idle(pilot, app)
        await _settled(pilot, app)
        chat._fold_far_rows()
        assert chat.row_fold.folded
        folded_at = chat.row_fold.size
        await pilot.resize_terminal(100, 70)
        await wait_for(pilot, lambda: chat.size != folded_at)
        await wait_for(pilot, lambda: not chat.row_fold.folded or chat.row_fold.size == chat.size)
        await _settled(pilot, app)
        screen, height = screen_text(app), chat.virtual_size.height
        chat.unfold_rows()
        await pilot.pause()
        await _settled(pilot, app)
        assert chat.virtual_size.height == height
        assert screen_text(app) == screen
