"""A long reply's blocks far above a following view leave the layout, and nothing on screen moves.

The folded blocks stay mounted, hidden, with the body's top padding in their place; every
block still shown keeps its place (the reply, the chat's height and its scroll position with
it), and they all come back as soon as the reader scrolls away from the end.
"""

from __future__ import annotations

import pytest
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets._markdown import MarkdownBlock

from agentsh.tui.app import AgentshApp
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.messages import AssistantMessage
from tests.tui.conftest import (
    MakeApp,
    fake_factory,
    fake_of,
    idle,
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


def _shown(reply: AssistantMessage) -> dict[int, tuple[int, int]]:
    """Each block still laid out: its screen row and height, by its place in the body."""
    blocks = [b for b in reply.body.children if isinstance(b, MarkdownBlock)]
    return {i: (b.region.y, b.region.height) for i, b in enumerate(blocks) if b.display}


async def _settled(pilot: Pilot[None], app: AgentshApp) -> None:
    """Pump until two frames in a row draw the same screen (bounded: 5 s)."""
    before = screen_text(app)
    for _ in range(250):
        await pilot.pause(0.02)
        now = screen_text(app)
        if now == before:
            return
        before = now


async def test_blocks_far_above_leave_the_layout_and_come_back_when_the_reader_scrolls_up(
    make_app: MakeApp,
) -> None:
    app = make_app(factory=fake_factory(script=streamed))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "a long one")
        await wait_for(pilot, lambda: bool(fake_of(app).runs))  # (it may end before a poll)
        await idle(pilot, app)
        chat = app.query_one(ChatView)
        reply = app.query(AssistantMessage).last()
        await wait_for(pilot, lambda: reply.fold.folded and "LASTLINE" in screen_text(app))
        blocks = [b for b in reply.body.children if isinstance(b, MarkdownBlock)]
        hidden = len(reply.fold.blocks)
        assert 0 < hidden < len(blocks)
        assert not any(b.display for b in blocks[:hidden])
        # What a frame lays out: the widgets displayed, none of the folded blocks' widgets,
        # which stay mounted (how many folded depends on where the view ended; not counted).
        laid_out = {w for w in chat.walk_children(Widget) if w.display and w.region}
        folded = {w for b in blocks[:hidden] for w in (b, *b.walk_children(Widget))}
        assert folded and not laid_out & folded
        assert len(laid_out) + len(folded) <= len(list(chat.walk_children()))
        await _settled(pilot, app)  # the view's last follow to the end is drawn (under load
        # it could land a frame after the fold, one line off what the unfold then showed)
        screen, height, shown = screen_text(app), chat.virtual_size.height, _shown(reply)

        reply.unfold()  # as if folding had never happened: the same cells, the same places
        await pilot.pause()
        await wait_for(pilot, lambda: all(b.display for b in blocks))
        await _settled(pilot, app)
        assert chat.virtual_size.height == height
        assert screen_text(app) == screen
        unfolded = _shown(reply)
        assert {i: unfolded[i] for i in shown} == shown

        chat.fold_far_replies()  # folded again, then the reader leaves the end
        await pilot.pause()
        assert reply.fold.folded
        chat.scroll_home(animate=False, immediate=True)  # as Home or the wheel does
        await wait_for(pilot, lambda: "FIRSTLINE" in screen_text(app))
        assert not reply.fold.folded and all(b.display for b in blocks)
        assert chat.virtual_size.height == height


async def test_a_reply_whose_logged_text_differs_is_unfolded_before_it_is_replaced(
    make_app: MakeApp,
) -> None:
    """The body's blocks are rebuilt from the logged text: what was folded (and the padding
    that stood for it) must not outlive the blocks it was measured on."""
    app = make_app(factory=fake_factory(script=streamed))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "a long one")
        await wait_for(pilot, lambda: bool(fake_of(app).runs))  # (it may end before a poll)
        await idle(pilot, app)
        reply = app.query(AssistantMessage).last()
        await wait_for(pilot, lambda: reply.fold.folded)
        stale = list(reply.fold.blocks)
        await reply.finish(text=REPLY.replace("LASTLINE", "LOGGEDLINE"))
        await wait_for(pilot, lambda: "LOGGEDLINE" in screen_text(app))
        await pilot.pause()
        blocks = [b for b in reply.body.children if isinstance(b, MarkdownBlock)]
        assert not set(stale) & set(blocks)  # rebuilt
        assert set(reply.fold.blocks) <= set(blocks)
        screen = screen_text(app)
        reply.unfold()
        await pilot.pause()
        assert reply.body.styles.padding.top == 0 and all(b.display for b in blocks)
        assert screen_text(app) == screen
