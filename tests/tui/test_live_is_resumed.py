"""What the chat shows live is what it shows for the same log after ``-c`` or a branch switch
(issue 15: the chat is a projection of the log)."""

from __future__ import annotations

import pytest

from agentsh.config import ApprovalMode
from agentsh.llm import models
from agentsh.tui.projection import TURN_CANCELLED, NoteItem, project_session
from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.tui.conftest import (
    MakeApp,
    agent_of,
    idle,
    ready,
    screen_text,
    session_of,
    submit,
    wait_for,
)
from tests.tui.test_app_real_agent import real  # noqa: F401 - the fixture

pytestmark = pytest.mark.asyncio


def _notes(items: object) -> list[str]:
    assert isinstance(items, list)
    return [i.text for i in items if isinstance(i, NoteItem)]


async def test_a_model_switch_reads_the_same_live_and_reloaded(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The switch reads the model's facts first (litellm's map): not what is tested here.
    monkeypatch.setattr(models, "model_info", lambda *_a, **_k: None)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "hello")
        await idle(pilot, app)
        await pilot.press(*"/model openai/other", "enter")
        await wait_for(pilot, lambda: agent_of(app).model == "openai/other")
        chat = app.controller.view.chat
        await wait_for(pilot, lambda: any("openai/other" in t for t in _notes(
            [r.item for r in chat.rows])))  # fmt: skip
        live = [t for t in _notes([r.item for r in chat.rows]) if "openai/other" in t]
        reloaded = _notes(project_session(session_of(app)))
        assert live == reloaded == ["model changed to openai/other"]


@pytest.mark.parametrize("when", ["at its approval", "while its command runs"])
async def test_a_turn_cancelled_with_tool_calls_reads_the_same_live_and_reloaded(
    real: MakeApp,  # noqa: F811
    scripted_server: ScriptedServer,
    answer_at_once: None,
    when: str,
) -> None:
    """Esc at an approval (or while the approved command runs) showed "turn cancelled" in
    the live chat, and the same chat after ``-c`` had no such line: the log keeps no reply
    for such a turn, only its tool results. The line now comes from those results."""
    scripted_server.script(tool_call("bash", {"command": "sleep 30"}), text("never sent"))
    app = real(approval=ApprovalMode.ASK)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "sleep a while")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        if when == "while its command runs":
            await pilot.press("y")
            await wait_for(pilot, lambda: "waiting for your answer" not in screen_text(app)
                           and "running" in screen_text(app))  # fmt: skip
        await pilot.press("escape")
        await idle(pilot, app)
        chat = app.controller.view.chat
        live = _notes([r.item for r in chat.rows])
        reloaded = _notes(project_session(session_of(app)))
        assert live == reloaded == [TURN_CANCELLED]
