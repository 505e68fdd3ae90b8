"""A side pane open beside the chat when the terminal narrows past WIDE_COLUMNS takes the chat's
place, editor included. The focus must follow: left in the hidden editor, Esc did nothing and
every key typed went into a text box nobody could see (seen in tmux, 120x40 -> 80x24 with the
summaries pane open)."""

from __future__ import annotations

import pytest

from agentsh.tui.panes.panel import SidePanel
from agentsh.tui.widgets.composer import PromptInput
from tests.tui.conftest import MakeApp, ready, wait_for

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("key", ["f2", "f3", "f4"])
async def test_narrowing_with_a_pane_open_hands_the_focus_to_the_pane(
    make_app: MakeApp, key: str
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        panel = app.query_one(SidePanel)
        prompt = app.query_one(PromptInput)
        await pilot.press(key)
        await wait_for(pilot, lambda: panel.is_open)
        await pilot.click(PromptInput)  # back to the editor, the pane still open beside the chat
        await wait_for(pilot, lambda: prompt.has_focus)
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: not app.query_one("#chat-column").display)
        await wait_for(pilot, lambda: app.focused is not None and panel in app.focused.ancestors)
        await pilot.press("escape")  # from the pane over the narrow chat: closes it
        await wait_for(pilot, lambda: not panel.is_open)
        assert app.query_one("#chat-column").display
        await wait_for(pilot, lambda: prompt.has_focus)
        await pilot.press(*"typed")
        assert prompt.text == "typed"
