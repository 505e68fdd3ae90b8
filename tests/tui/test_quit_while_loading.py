"""Quitting never waits for the agent's load, and loses nothing: what the load builds after
the quit is closed by the load itself; the process ends without the interpreter's teardown
once everything is saved (issue 16: a quit while the agent loaded took 8-20 s)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from agentsh.config import Environment
from agentsh.frontend import InteractiveAPI
from agentsh.session.session import Session
from agentsh.tui.options import LaunchOptions
from tests.tui.conftest import MakeApp, wait_for
from tests.tui.fake_agent import FakeAgent


@pytest.mark.asyncio
async def test_a_quit_while_the_agent_loads_leaves_the_load_behind_and_it_closes_its_agent(
    make_app: MakeApp,
) -> None:
    release = threading.Event()
    closed = threading.Event()

    class ClosingAgent(FakeAgent):
        def close(self) -> None:
            super().close()
            closed.set()

    def slow_factory(_e: Environment, s: Session, _o: LaunchOptions) -> InteractiveAPI:
        release.wait(30)  # a model worker still importing litellm, say
        return ClosingAgent(s)

    earlier = set(threading.enumerate())  # another test's load may still be finishing
    app = make_app(factory=slow_factory)
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.current_session() is not None)
        (loader,) = [
            t for t in threading.enumerate() if t.name == "agentsh-load-agent" and t not in earlier
        ]
        # Not in the event loop's executor, which the App's exit (asyncio.run) joins.
        assert loader.daemon and loader.is_alive()
        await pilot.press("ctrl+q")
    assert app.controller.agent is None and loader.is_alive()
    release.set()
    assert closed.wait(10)  # the agent built after the quit was closed, never shown
    loader.join(10)
    assert not loader.is_alive()


def test_leaving_runs_the_exit_handlers_and_does_not_wait_for_threads() -> None:
    program = (
        "import atexit, sys, threading, time\n"
        "from agentsh.tui.launch import leave\n"
        "threading.Thread(target=time.sleep, args=(120,)).start()\n"  # not a daemon
        "atexit.register(lambda: print('handler ran'))\n"
        "print('saved', end=' ')\n"
        "leave(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3
    assert done.stdout == "saved handler ran\n"
