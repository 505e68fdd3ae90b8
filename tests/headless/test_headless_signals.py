"""``-p`` on SIGTERM and SIGHUP: the running turn is cancelled through the agent (as Ctrl+C
and Esc do), so the session log is finished and the MCP servers are stopped on the way out."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from agentsh.headless.ending import Stopping


class BusyAgent:
    busy = True

    def __init__(self) -> None:
        self.cancels = 0

    def cancel(self) -> None:
        self.cancels += 1


@pytest.fixture
def kept_handlers() -> Iterator[list[int]]:
    """A signal the code under test does not take is recorded here instead of ending the
    test process; the previous handlers come back afterwards."""
    fallen_through: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda number, _frame: fallen_through.append(number))
        for signum in (signal.SIGTERM, signal.SIGHUP)
    }
    try:
        yield fallen_through
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@pytest.mark.asyncio
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_the_signal_cancels_the_running_turn(
    signum: signal.Signals, kept_handlers: list[int]
) -> None:
    # A closed terminal (SIGHUP) ended -p at once: no log ending, servers left to watchdogs.
    agent: Any = BusyAgent()
    stopping = Stopping(agent)
    stopping.install()
    try:
        os.kill(os.getpid(), signum)
        for _ in range(200):
            if agent.cancels or kept_handlers:
                break
            await asyncio.sleep(0.01)
    finally:
        stopping.done()  # no escalation of the stop after the test
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(number)
    assert (agent.cancels, kept_handlers) == (1, [])
