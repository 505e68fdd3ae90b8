"""Shift+Tab in the editor cycles the approval mode, as in Claude Code: ask, accept edits,
plan (read only), and back; the status bar says which mode holds while it is not "ask"
(issue 14, the newcomer's hour: the mode could only be chosen on the command line)."""

from __future__ import annotations

import pytest

from agentsh.config import ApprovalMode
from agentsh.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import MakeApp, fake_factory, fake_of, ready, wait_for

pytestmark = pytest.mark.asyncio


def _bar(app: object) -> str:
    from agentsh.tui.app import AgentshApp

    assert isinstance(app, AgentshApp)
    return str(app.query_one(StatusBar).render())


async def test_shift_tab_cycles_ask_accept_edits_plan_and_the_bar_says_which(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        agent = fake_of(app)
        assert "accept edits" not in _bar(app) and "plan" not in _bar(app)
        seen = []
        for _ in range(3):
            await pilot.press("shift+tab")
            await pilot.pause()
            seen.append((agent.approval_mode, agent.plan_mode, _bar(app)))
        assert seen[0][:2] == (ApprovalMode.EDITS, False) and "accept edits" in seen[0][2]
        assert seen[1][:2] == (ApprovalMode.ASK, True) and "plan mode" in seen[1][2]
        assert seen[2][:2] == (ApprovalMode.ASK, False)
        assert "accept edits" not in seen[2][2] and "plan mode" not in seen[2][2]


async def test_a_mode_chosen_on_the_command_line_shows_and_stays_in_the_cycle(
    make_app: MakeApp,
) -> None:
    """Started with `--approve all`: the bar says so from the start, and Shift+Tab can come
    back to it (Claude Code's cycle keeps bypassPermissions only when started with it)."""
    app = make_app(factory=fake_factory(approval=ApprovalMode.ALL))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        agent = fake_of(app)
        await wait_for(pilot, lambda: "allow all" in _bar(app))
        modes = []
        for _ in range(4):
            await pilot.press("shift+tab")
            await pilot.pause()
            modes.append((agent.approval_mode, agent.plan_mode))
        assert modes == [
            (ApprovalMode.ASK, False),
            (ApprovalMode.EDITS, False),
            (ApprovalMode.ASK, True),
            (ApprovalMode.ALL, False),
        ]


async def test_shift_tab_while_the_agent_loads_is_not_stored_up(make_app: MakeApp) -> None:
    """Pressed before the agent is ready it does nothing (the command line's mode holds);
    the first press once it is ready goes to the next mode, not the one after."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("shift+tab")
        await ready(pilot, app)
        agent = fake_of(app)
        assert (agent.approval_mode, agent.plan_mode) == (ApprovalMode.ASK, False)
        await pilot.press("shift+tab")
        await wait_for(pilot, lambda: agent.approval_mode is ApprovalMode.EDITS)
        assert not agent.plan_mode
