"""What a turn needs loads while the user writes, but not under their fingers (issue 16).

The model worker starts at the first key (a process of its own). The tokenizer waits for a
pause in typing: building it holds the interpreter for 0.4-0.8 s, and loaded at the first key
it made the keys after it echo that late.
"""

from __future__ import annotations

import gc
import threading
import warnings
from typing import Any

import pytest

from agentsh.tui.app import AgentshApp
from agentsh.tui.lifecycle import AgentFactory
from tests.tui.conftest import MakeApp, fake_factory, fake_of, ready, wait_for

pytestmark = pytest.mark.asyncio


def _pause_never_ends(app: AgentshApp) -> None:
    app.controller.sessions.warm_pause_s = 3600.0


async def test_the_first_key_starts_the_model_worker_and_the_tokenizer_waits_for_a_pause(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        agent = fake_of(app)
        _pause_never_ends(app)
        await pilot.press("h", "e", "l")
        await wait_for(pilot, lambda: agent.warmed == 1)
        assert agent.tokenizer_warmed == 0, "loaded under the user's fingers"
        # The pause comes: the tokenizer loads, once.
        app.controller.sessions.warm_pause_s = 0.05
        app.controller.sessions._pause = None  # the long timer is left behind
        await pilot.press("l")
        await wait_for(pilot, lambda: agent.tokenizer_warmed == 1)
        await pilot.press("o")
        await pilot.pause(0.2)
        assert (agent.warmed, agent.tokenizer_warmed) == (2, 1)


async def test_keys_typed_while_the_agent_loads_warm_it_when_it_is_ready(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        app.controller.sessions.warm_pause_s = 0.05
        await pilot.press("h", "i")
        await ready(pilot, app)
        agent = fake_of(app)
        await wait_for(pilot, lambda: agent.tokenizer_warmed == 1)
        assert agent.warmed == 2  # the worker at once, then the tokenizer after the pause


async def test_a_warm_up_cancelled_before_it_starts_leaves_no_coroutine_unawaited(
    make_app: MakeApp,
) -> None:
    """A key and a quit in the same moment (or a session switch) cancelled the warm-up worker
    before its task ran: the coroutine handed to it was never awaited, and Python said so on
    stderr ("coroutine ... was never awaited") as agentsh exited. The worker now makes the
    coroutine itself, when it runs."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        agent = fake_of(app)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            app.controller.sessions._warm_up(agent)
            app.workers.cancel_group(app, "warm-up")
            await pilot.pause()
            gc.collect()
        never = [w for w in caught if "never awaited" in str(w.message)]
        assert not never, [str(w.message) for w in never]
        assert agent.warmed == 0


def _held(release: threading.Event) -> AgentFactory:
    """A fake agent whose load waits for ``release`` (the real one takes seconds)."""
    build = fake_factory()

    def held(*args: Any) -> Any:
        release.wait(30)
        return build(*args)

    return held


async def test_the_first_key_while_the_agent_loads_starts_the_model_worker_beside_the_load(
    make_app: MakeApp,
) -> None:
    """Enter at the first frame waited for the load, then for the worker's litellm import:
    the first key now starts the worker at once (the launcher's hook, in a thread), once."""
    release = threading.Event()
    app = make_app(factory=_held(release))
    started: list[str] = []
    app.controller.sessions.start_worker = lambda: started.append(threading.current_thread().name)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            _pause_never_ends(app)
            await pilot.press("h", "i")
            await wait_for(pilot, lambda: bool(started))
            assert not app.controller.ready  # still loading
            release.set()
            await ready(pilot, app)
            agent = fake_of(app)
            await wait_for(pilot, lambda: agent.warmed == 1)  # the agent's own, as before
            await pilot.press("!")
            await pilot.pause()
            assert started == ["agentsh-start-worker"]  # off the UI thread, and only once
    finally:
        release.set()


async def test_a_key_once_the_agent_is_ready_leaves_the_start_to_the_agent(
    make_app: MakeApp,
) -> None:
    app = make_app()
    started: list[bool] = []
    app.controller.sessions.start_worker = lambda: started.append(True)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        agent = fake_of(app)
        _pause_never_ends(app)
        await pilot.press("h")
        await wait_for(pilot, lambda: agent.warmed == 1)
        assert started == []
