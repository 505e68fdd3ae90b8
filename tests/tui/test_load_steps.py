"""The load thread's UI steps (show the session, show the agent) never end in a thread's
traceback: one that fails because the App is closing means quitting, one that fails while the
App runs is told to the user in one line."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest
from textual.css.query import NoMatches
from textual.widget import Widget

from tests.tui.conftest import MakeApp, ready, wait_for


def _in_a_thread(call: Callable[[], object]) -> tuple[list[object], list[BaseException]]:
    """Run ``call()`` in a thread as the load does; what it returned and what escaped it."""
    returned: list[object] = []
    escaped: list[BaseException] = []

    def run() -> None:
        try:
            returned.append(call())
        except BaseException as exc:  # noqa: BLE001 - what a thread would not catch
            escaped.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    return returned, escaped


@pytest.mark.asyncio
async def test_a_step_failing_while_the_app_closes_stops_the_load_silently(
    make_app: MakeApp,
) -> None:
    app = make_app()
    outcome: list[tuple[list[object], list[BaseException]]] = []
    running_then: list[bool] = []

    async def show_session() -> None:  # the chat is gone: the App is taking its screen down
        raise NoMatches("No nodes match 'ChatView' on Screen(id='_default')")

    class Probe(Widget):
        async def on_unmount(self) -> None:
            running_then.append(app.is_running)
            lifecycle = app.controller.sessions

            def call() -> bool:
                return lifecycle._call_ui(show_session, what="Showing the session")

            outcome.append(await asyncio.to_thread(_in_a_thread, call))

    async with app.run_test(size=(100, 24)) as pilot:
        await ready(pilot, app)
        await app.screen.mount(Probe())
    assert running_then == [False]  # the step ran while the App was closing
    ((returned, escaped),) = outcome
    assert escaped == [] and returned == [False]  # quitting: the load stops, no traceback


@pytest.mark.asyncio
async def test_a_step_failing_while_the_app_runs_is_one_line_for_the_user(
    make_app: MakeApp,
) -> None:
    app = make_app()

    async def show_agent() -> None:
        raise ValueError("the status bar is gone\nsecond line of a long message")

    async with app.run_test(size=(100, 24)) as pilot:
        await ready(pilot, app)
        lifecycle = app.controller.sessions
        returned, escaped = await asyncio.to_thread(
            _in_a_thread, lambda: lifecycle._call_ui(show_agent, what="Showing the agent")
        )
        assert escaped == [] and returned == [True]  # the load goes on
        line = "Showing the agent failed (ValueError: the status bar is gone)."
        await wait_for(pilot, lambda: any(n.message == line for n in app._notifications))
        (told,) = [n for n in app._notifications if "failed" in n.message]
        assert told.severity == "error"
