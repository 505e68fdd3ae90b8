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
from agentsh.tui.screens.trust_screen import TrustApp, TrustScreen


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

    def fake_ask(check: TrustCheck) -> bool:
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
