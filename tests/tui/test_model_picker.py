"""``/model``'s picker: the quick choices can be picked while litellm's list loads in a thread."""

from __future__ import annotations

import threading

import pytest
from textual.widgets import LoadingIndicator, OptionList

from agentsh.config import Environment
from agentsh.frontend import InteractiveAPI
from agentsh.session.session import Session
from agentsh.tui.options import LaunchOptions
from agentsh.tui.screens import model_picker
from agentsh.tui.screens.picker import PickerItem, PickerScreen
from tests.tui.conftest import MakeApp, agent_of, ready, wait_for
from tests.tui.fake_agent import FakeAgent

pytestmark = pytest.mark.asyncio


async def test_quick_choices_show_and_work_while_the_list_loads(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch, litellm_loaded: None
) -> None:
    release = threading.Event()

    def slow_list(_env: object, _current: str | None) -> list[PickerItem]:
        release.wait(30)  # litellm's first import: seconds
        return [PickerItem("openai/listed-model", "openai/listed-model")]

    monkeypatch.setattr(model_picker, "listed_models", slow_list)
    monkeypatch.setenv("AGENTSH_MODEL", "openai/from-env")
    app = make_app()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(pilot, app)
            await pilot.press(*"/model", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
            picker = app.screen
            assert isinstance(picker, PickerScreen)
            await pilot.pause()
            # Nothing covers the picker while it loads (Textual's own `loading` would hide
            # the whole screen behind a spinner): the quick items and a "loading" row show.
            options = picker.query_one(OptionList)
            at = options.region.offset
            covering, _ = picker.get_widget_at(at.x + 1, at.y + 1)
            assert not isinstance(covering, LoadingIndicator)
            assert covering is options or covering in options.ancestors_with_self
            count = options.option_count
            shown = [str(options.get_option_at_index(i).prompt) for i in range(count)]
            assert any("openai/from-env" in row for row in shown)
            assert model_picker.LOADING in shown[-1]
            release.set()
            await wait_for(pilot, lambda: "openai/listed-model" in [i.value for i in picker.shown])
            await pilot.press(*"listed", "enter")
            # The switch reads the model's facts first, off the UI thread, from litellm in
            # this process: imported before the test (``litellm_loaded``), as it took well
            # over 10 s on a loaded machine (this failed 1 in 3 under load, when it was here).
            await wait_for(pilot, lambda: agent_of(app).model == "openai/listed-model")
    finally:
        release.set()


async def test_a_model_picked_while_the_agent_loads_is_switched_to(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch, litellm_loaded: None
) -> None:
    monkeypatch.setattr(model_picker, "listed_models", lambda _env, _current: [])
    gate = threading.Event()

    def slow_agent(env: Environment, session: Session, options: LaunchOptions) -> InteractiveAPI:
        gate.wait(30)  # litellm and the index load in the agent factory
        return FakeAgent(session)

    app = make_app(factory=slow_agent)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.controller.current_session() is not None)
            await pilot.press(*"/model", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
            gate.set()
            await ready(pilot, app)
            await pilot.press(*"openai/picked-model", "enter")
            # As above: the switch reads litellm's facts in this process first.
            await wait_for(pilot, lambda: agent_of(app).model == "openai/picked-model")
    finally:
        gate.set()


async def test_while_the_agent_loads_the_named_model_is_marked_current(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/model opened before the agent had loaded marked nothing as current: the model the
    status bar named read "(AGENTSH_MODEL)" or "(config)" like any other choice."""
    monkeypatch.setattr(model_picker, "listed_models", lambda _env, _current: [])
    monkeypatch.setenv("AGENTSH_MODEL", "openai/from-env")
    gate = threading.Event()

    def slow_agent(env: Environment, session: Session, options: LaunchOptions) -> InteractiveAPI:
        gate.wait(30)
        return FakeAgent(session)

    app = make_app(factory=slow_agent)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.controller.current_session() is not None)
            await pilot.press(*"/model", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
            picker = app.screen
            assert isinstance(picker, PickerScreen)
            options = picker.query_one(OptionList)
            first = str(options.get_option_at_index(0).prompt)
            assert first == "openai/from-env  (current)"
    finally:
        gate.set()
