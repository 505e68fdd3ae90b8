"""What the chat shows live is what it shows for the same log after ``-c`` or a branch switch
(issue 15: the chat is a projection of the log)."""

from __future__ import annotations

import pytest

from agentsh.llm import models
from agentsh.tui.projection import NoteItem, project_session
from tests.tui.conftest import MakeApp, agent_of, idle, ready, session_of, submit, wait_for

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
