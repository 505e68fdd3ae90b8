"""The TUI's approval prompt offers "allow for this session" only where agentsh keeps it: a
write to .git/, to agentsh's settings or outside the project is allowed once whatever the key."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentsh.events import ApprovalRequest, Event, TurnEnded, TurnOutcome
from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
from tests.tui.conftest import MakeApp, fake_factory, ready, wait_for
from tests.tui.fake_agent import FakeAgent

pytestmark = pytest.mark.asyncio


async def test_allow_for_this_session_is_not_offered_where_nothing_is_kept(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    decisions: list[str] = []

    async def script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        request = ApprovalRequest(
            "c1", "write", "write: .git/config", "[core]", "it changes .git/", session_scope=""
        )
        yield request
        decisions.append((await request.decision).value)
        yield TurnEnded(TurnOutcome.DONE)

    app = make_app(factory=fake_factory(script=script))
    monkeypatch.setattr(ApprovalPrompt, "GRACE_S", 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        prompt = app.query_one(ApprovalPrompt)
        keys = "".join(str(w.render()) for w in prompt.query(".approval-keys"))
        assert "allow once" in keys and "for this session" not in keys
        await pilot.press("a")  # not offered: nothing happens
        await pilot.pause()
        assert decisions == []
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])


async def test_a_read_outside_offers_its_folder_for_the_session(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    decisions: list[str] = []

    async def script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        request = ApprovalRequest(
            "c1",
            "read",
            "read: /home/u/notes/a.md",
            "read: /home/u/notes/a.md",
            "it reads outside the project root",
            session_scope="folder",
            scope_path="/home/u/notes",
        )
        yield request
        decisions.append((await request.decision).value)
        yield TurnEnded(TurnOutcome.DONE)

    app = make_app(factory=fake_factory(script=script))
    monkeypatch.setattr(ApprovalPrompt, "GRACE_S", 0.0)
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        prompt = app.query_one(ApprovalPrompt)
        keys = "".join(str(w.render()) for w in prompt.query(".approval-keys"))
        assert "allow reads in /home/u/notes for this session" in keys
        await pilot.press("a")
        await wait_for(pilot, lambda: decisions == ["allow_session"])
