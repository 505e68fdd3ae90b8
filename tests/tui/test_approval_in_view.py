"""Approvals stay in view (issue 14, item 2): after a long reply, the short ``? Allow bash``
prompt, its answer and the turn's end (a result, or "turn cancelled" after Esc) are all on
screen, at both sizes a new user tries."""

from __future__ import annotations

import pytest

from agentsh.config import ApprovalMode
from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
from agentsh.tui.widgets.chat import ChatView
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.tui.conftest import MakeApp, idle, ready, screen_text, wait_for
from tests.tui.test_app_real_agent import real  # noqa: F401 - the fixture

pytestmark = pytest.mark.asyncio

LONG = "\n\n".join(f"Paragraph {i}: " + "words " * 12 for i in range(12))


@pytest.mark.parametrize(("size", "answer"), [((80, 24), "y"), ((120, 36), "escape")])
async def test_a_short_approval_its_answer_and_the_end_of_the_turn_stay_in_view(
    real: MakeApp,  # noqa: F811
    scripted_server: ScriptedServer,
    size: tuple[int, int],
    answer: str,
) -> None:
    scripted_server.script(
        text(LONG), tool_call("bash", {"command": "echo approved-run"}), text("Ran it.")
    )
    app = real(approval=ApprovalMode.ASK)
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await idle(pilot, app)
        await pilot.press(*"run echo", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        await pilot.pause(ApprovalPrompt.GRACE_S + 0.2)
        screen = screen_text(app)
        assert "? Allow bash: echo approved-run" in screen and "[n] deny" in screen
        await pilot.press(answer)
        await idle(pilot, app)
        await pilot.pause(0.3)
        screen = screen_text(app)
        expected = "Ran it." if answer == "y" else "turn cancelled"
        assert expected in screen, screen
        chat = app.query_one(ChatView)
        assert chat.scroll_y >= chat.max_scroll_y - 1
