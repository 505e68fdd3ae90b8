"""The trust question: shows what the folder wants (as plain text) and returns the answer."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from textual.widgets import Static

from agentsh.config import Environment
from agentsh.paths import UserPaths
from agentsh.trust import TrustCheck, TrustState, check_project
from agentsh.tui import launch
from agentsh.tui.options import LaunchOptions
from agentsh.tui.screens.trust_screen import TrustApp, TrustScreen
from tests.tui.conftest import MakeApp, ready, screen_text, wait_for


def _folder(project: Path) -> None:
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text('[tui]\ntheme = "nord"\n')
    (project / "AGENTS.md").write_text("rules\n")
    (project / "docs").mkdir()


@pytest.mark.asyncio
@pytest.mark.parametrize(("key", "answer"), [("y", True), ("n", False), ("escape", False)])
async def test_the_screen_lists_the_files_and_returns_the_answer(
    project: Path, key: str, answer: bool
) -> None:
    _folder(project)
    check = check_project(UserPaths.from_env(), project)
    app = TrustApp(check)
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TrustScreen)
        shown = " ".join(str(w.render()) for w in screen.query(Static))
        assert ".agentsh/config.toml: changes 1 setting: tui.theme" in shown
        assert "AGENTS.md: instructions for the model" in shown
        await pilot.press(key)
        await pilot.pause()
    assert app.return_value is answer


@pytest.mark.asyncio
async def test_control_sequences_in_names_are_shown_not_sent(project: Path) -> None:
    evil = project / "sub\x1b]52;c;cHduZWQ=\x07"
    evil.mkdir()
    (evil / "AGENTS.md").write_text("x\n")
    check = check_project(UserPaths.from_env(), project, evil)
    app = TrustApp(check)
    async with app.run_test() as pilot:
        await pilot.pause()
        shown = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "\x1b" not in shown and "\\x1b]52;c;cHduZWQ=\\a" in shown
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_value is None


def test_the_launcher_asks_first_and_stores_a_yes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(project)
    asked: list[TrustState] = []
    started: list[bool] = []

    def fake_ask(check: TrustCheck, _typed: list[str] | None = None) -> bool:
        asked.append(check.state)
        return True

    class FakeApp:
        return_code = 0

        def __init__(self, env: Environment, _options: object, **_given: object) -> None:
            started.append(env.trusted)

        def run(self) -> None:
            return None

    monkeypatch.setattr("agentsh.tui.screens.trust_screen.ask_trust", fake_ask)
    monkeypatch.setattr("agentsh.tui.app.AgentshApp", FakeApp)
    assert launch.main(argparse.Namespace()) == 0
    assert asked == [TrustState.NEW] and started == [True]
    assert launch.main(argparse.Namespace()) == 0
    assert asked == [TrustState.NEW] and started == [True, True]  # stored: not asked again


class StoppedClock:
    """The key grace's clock: it moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def stopped_clock(monkeypatch: pytest.MonkeyPatch) -> StoppedClock:
    from agentsh.tui import key_grace

    clock = StoppedClock()
    monkeypatch.setattr(key_grace, "clock", clock)
    monkeypatch.setattr(key_grace, "GRACE_S", 0.5)
    return clock


@pytest.mark.asyncio
async def test_a_sentence_typed_ahead_is_no_answer_and_is_kept_for_the_editor(
    project: Path, stopped_clock: StoppedClock
) -> None:
    """ "say hi to you" typed at once after `agentsh` trusted the folder by its y (and the
    sentence was lost): keys before the typing pauses after the question appeared are text."""
    _folder(project)
    typed: list[str] = []
    app = TrustApp(check_project(UserPaths.from_env(), project), typed)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TrustScreen)
        await pilot.press(*"say hi to yoy", "backspace", "u", "enter", "escape")
        await pilot.pause()
        assert isinstance(app.screen, TrustScreen)  # not answered
        assert "".join(typed) == "say hi to you"
        kept = "kept for your first message: “say hi to you”"
        await wait_for(pilot, lambda: kept in screen_text(app))  # type: ignore[arg-type]
        stopped_clock.now += 0.4  # still typing: each key moved the pause on
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, TrustScreen)
        stopped_clock.now += 0.6  # the user stopped, read the question, answered
        await pilot.press("n")
        await pilot.pause()
    assert app.return_value is False
    assert "".join(typed) == "say hi to youy"


@pytest.mark.asyncio
async def test_keys_the_app_took_before_the_question_are_named_on_it(project: Path) -> None:
    """Typed before agentsh started, keys reach the app before the question is pushed."""
    _folder(project)
    app = TrustApp(check_project(UserPaths.from_env(), project), list("fix [it]"))
    async with app.run_test(size=(80, 24)) as pilot:
        # Drawn whole: at load the first frames have the frame but not its lines yet.
        await wait_for(pilot, lambda: "Ctrl+Q" in screen_text(app))  # type: ignore[arg-type]
        shown = screen_text(app)  # type: ignore[arg-type]
        assert "kept for your first message: “fix [it]”" in shown  # the keys' line fits too


@pytest.mark.asyncio
async def test_quitting_needs_no_pause(project: Path, stopped_clock: StoppedClock) -> None:
    _folder(project)
    app = TrustApp(check_project(UserPaths.from_env(), project))
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_value is None


def test_the_launcher_puts_what_was_typed_ahead_in_the_editor(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(project)
    given: list[str] = []

    def fake_ask(_check: TrustCheck, typed: list[str] | None = None) -> bool:
        assert typed is not None
        typed.extend("fix the parser")
        return True

    class FakeApp:
        return_code = 0

        def __init__(self, _env: Environment, options: LaunchOptions, **_given: object) -> None:
            given.append(options.typed_ahead)

        def run(self) -> None:
            return None

    monkeypatch.setattr("agentsh.tui.screens.trust_screen.ask_trust", fake_ask)
    monkeypatch.setattr("agentsh.tui.app.AgentshApp", FakeApp)
    assert launch.main(argparse.Namespace()) == 0
    assert given == ["fix the parser"]


@pytest.mark.asyncio
async def test_the_app_opens_with_the_text_typed_ahead_in_the_editor(make_app: MakeApp) -> None:
    app = make_app(options=LaunchOptions(typed_ahead="fix the parser"))
    async with app.run_test() as pilot:
        await ready(pilot, app)
        prompt = app.controller.prompt
        assert prompt.text == "fix the parser"
        await pilot.press("s")  # typing goes on at its end
        assert prompt.text == "fix the parsers"
