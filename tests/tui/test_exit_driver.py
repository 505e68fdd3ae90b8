"""A quit does not wait for Textual's input thread (0.1-0.2 s of every quit: it polls the
terminal every 0.1 s, then once more); a suspend still does (the thread must not read what is
typed into the program that has the terminal meanwhile)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator

import pytest

from agentsh.tui.app import AgentshApp
from agentsh.tui.exit_driver import ExitDriver
from tests.tui.conftest import MakeApp, wait_for

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="the Linux driver"),
    pytest.mark.asyncio,  # a driver is made in a running loop
]


@pytest.fixture
def terminal_input(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A pipe for the driver's "terminal" input; the signal handlers the driver installs are
    put back afterwards."""
    saved = {
        sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT, signal.SIGWINCH)
    }
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb", buffering=0) as stdin:
        monkeypatch.setattr(sys, "__stdin__", stdin)
        try:
            yield
        finally:
            os.close(write_end)
            for sig, handler in saved.items():
                signal.signal(sig, handler)


def _reading(app: AgentshApp) -> tuple[ExitDriver, threading.Thread]:
    driver = app.driver_class(app, mouse=False)
    assert isinstance(driver, ExitDriver)
    thread = threading.Thread(target=driver.run_input_thread, name="test-input", daemon=True)
    driver._key_thread = thread
    thread.start()
    return driver, thread


@pytest.mark.usefixtures("terminal_input")
async def test_an_exiting_app_leaves_the_input_thread_to_end_by_itself(make_app: MakeApp) -> None:
    app = make_app()
    assert app.driver_class is ExitDriver
    driver, thread = _reading(app)
    app._exit = True  # as App.exit() sets it (Ctrl+Q, /quit, SIGTERM)

    driver.disable_input()

    # Returned at once: Textual's join left the thread only after its last 0.1 s poll.
    assert thread.is_alive()
    thread.join(2)  # and the thread does end (the flag is not reset behind it)
    assert not thread.is_alive()


@pytest.mark.usefixtures("terminal_input")
async def test_a_suspended_app_still_waits_for_the_input_thread(make_app: MakeApp) -> None:
    app = make_app()
    driver, thread = _reading(app)

    driver.disable_input()  # not exiting: suspending, another program takes the terminal

    assert not thread.is_alive()
    assert not driver.exit_event.is_set()  # ready for the thread that resuming starts


async def test_the_quit_lets_the_model_worker_go_before_the_window_closes(
    make_app: MakeApp,
) -> None:
    """The worker's exit (its stdin closed) runs beside the App's own shutdown; the exit
    handler only waits for what is left of it."""
    order: list[str] = []
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        controller = app.controller
        shutdown = controller.shutdown
        controller.leaving = lambda: order.append("worker stopping")

        def closing() -> None:
            order.append("session closed")
            shutdown()

        controller.shutdown = closing  # type: ignore[method-assign]
        await pilot.press("ctrl+q")
    assert order == ["worker stopping", "session closed"]
