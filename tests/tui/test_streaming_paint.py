"""A streamed reply is painted in frames, and ends up exactly as the log's text renders.

A reply that arrives faster than it can be painted (one burst, or a screen that fell behind) is
painted over several frames, each a bounded share of the backlog, so the keyboard gets its turns
between them; the finished body is the same blocks a resume composes from the logged text.
"""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets._markdown import MarkdownBlock

from agentsh.tui.widgets.messages import FRAME_CHARS, AssistantMessage, _markdown
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.asyncio

FENCE = "```python\n" + "\n".join(f"x_{i} = {i}  # a line of code" for i in range(80)) + "\n```"
REPLY = "\n\n".join(
    [
        *(f"Paragraph {i}: " + "some **bold** words " * 12 for i in range(40)),
        FENCE,
        "\n".join(f"- item {i} with `code`" for i in range(30)),
        "| a | b |\n|--:|:-:|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(20)),
        "The end.",
    ]
)


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield AssistantMessage(live=True)


def _blocks(widget: object) -> list[tuple[str, str | None]]:
    assert isinstance(widget, AssistantMessage)
    return [
        (type(block).__name__, block.source)
        for block in widget.body.children
        if isinstance(block, MarkdownBlock)
    ]


async def test_a_reply_that_arrives_in_one_burst_is_painted_over_several_frames() -> None:
    assert len(REPLY) > 4 * FRAME_CHARS
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        reply = app.query_one(AssistantMessage)
        await reply.append(REPLY)
        await wait_for(pilot, lambda: reply.body.source != "")
        first = reply.body.source
        # The first frame paints a share of it at once, not the whole reply after a long stall.
        assert 0 < len(first) < len(REPLY) and REPLY.startswith(first)
        await reply.finish(text=REPLY)
        assert reply.body.source == REPLY
        painted = _blocks(reply)
        # The same blocks as the reply composed from the log (a resume, a branch switch).
        logged = AssistantMessage(REPLY)
        await app.screen.mount(logged)
        await pilot.pause()
        assert painted == _blocks(logged)
        assert [name for name, _ in painted].count("MarkdownFence") == 1


async def test_a_reply_streamed_in_small_pieces_ends_as_its_text_renders() -> None:
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        reply = app.query_one(AssistantMessage)
        for start in range(0, len(REPLY), 37):
            await reply.append(REPLY[start : start + 37])
            if start % 370 == 0:
                await pilot.pause(0.02)
        await reply.finish(text=REPLY)
        whole = _markdown(REPLY, "message-body")
        await app.screen.mount(whole)
        await pilot.pause()
        assert reply.body.source == REPLY
        assert [type(b).__name__ for b in reply.body.children] == [
            type(b).__name__ for b in whole.children
        ]
