"""Ctrl+C as terminal tools have it (issue 14, item 5): cancel the turn, else clear the editor,
else "Ctrl+C again to quit", and quit on the second press."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentsh.events import Event, TurnEnded, TurnOutcome
from agentsh.tui.app import AgentshApp
from agentsh.tui.interrupt import QUIT_HINT, DoublePress
from agentsh.tui.widgets.composer import PromptInput
from tests.tui.conftest import MakeApp, fake_of, screen_text, wait_for
from tests.tui.fake_agent import FakeAgent


def _hints(app: AgentshApp) -> list[str]:
    """The quit hint where the eye is: on the status bar right under the editor (a toast
    showed it at the screen's top right, over the transcript)."""
    return [QUIT_HINT] if QUIT_HINT in screen_text(app).splitlines()[-1] else []


@pytest.mark.asyncio
async def test_ctrl_c_cancels_a_running_turn(make_app: MakeApp) -> None:
    gate = asyncio.Event()

    class GatedAgent(FakeAgent):
        def cancel(self) -> None:
            super().cancel()
            gate.set()

    async def gated(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        await gate.wait()
        yield TurnEnded(TurnOutcome.ABORTED)

    app = make_app(factory=lambda _e, s, _o: GatedAgent(s, script=gated))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press(*"work", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press(*"draft", "ctrl+c")
        await wait_for(pilot, lambda: not app.controller.turn_running)
        assert fake_of(app).cancelled == 1
        assert app.query_one(PromptInput).text == "draft"  # cancelling kept the draft
        assert not _hints(app) and app.is_running


@pytest.mark.asyncio
async def test_ctrl_c_clears_the_editor_then_asks_before_quitting(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        # The quit window's clock stands still: Pilot's presses, not a person's, are what a
        # loaded machine spreads apart (the window itself is tested below).
        app._ctrl_c.clock = lambda: 0.0
        prompt = app.query_one(PromptInput)
        await pilot.press(*"half a thought", "ctrl+c")
        assert prompt.text == "" and not _hints(app)
        await pilot.press("ctrl+z")  # the text is not lost
        assert prompt.text == "half a thought"
        await pilot.press("ctrl+c", "ctrl+c")
        assert prompt.text == "" and _hints(app) == [QUIT_HINT]
        assert app.is_running
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_code == 0


def test_the_second_press_counts_only_inside_the_window() -> None:
    now = [0.0]
    presses = DoublePress(window_s=2.0, clock=lambda: now[0])
    assert not presses.press()
    now[0] = 2.5
    assert not presses.press()  # too late: this is a new first press
    now[0] = 3.0
    assert presses.press()
    now[0] = 3.1
    assert not presses.press()  # the window started over
    presses.reset()
    now[0] = 3.2
    assert not presses.press()


@pytest.mark.asyncio
async def test_esc_says_cancelling_until_the_turn_has_stopped(make_app: MakeApp) -> None:
    """Esc while the model client was still starting left "starting the model client · 6s ·
    Esc to cancel" up for seconds after the key, as if it had not been heard."""
    gate, stop = asyncio.Event(), asyncio.Event()

    class SlowToStop(FakeAgent):
        def cancel(self) -> None:
            super().cancel()
            gate.set()

    async def gated(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        await gate.wait()
        await stop.wait()  # the stop itself takes a while
        yield TurnEnded(TurnOutcome.ABORTED)

    app = make_app(factory=lambda _e, s, _o: SlowToStop(s, script=gated))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press(*"work", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "cancelling…" in screen_text(app))
        assert "Esc to cancel" not in screen_text(app)
        stop.set()
        await wait_for(pilot, lambda: not app.controller.turn_running)
        gate.clear()
        stop.clear()
        await pilot.press(*"again", "enter")  # the next turn's line is its own again
        await wait_for(pilot, lambda: "Esc to cancel" in screen_text(app))
        assert "cancelling…" not in screen_text(app)
        gate.set()
        stop.set()
