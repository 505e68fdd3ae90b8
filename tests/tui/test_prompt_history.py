"""Up/Down history kept per project across restarts (issue 14, item 11): in the data dir, never
the project folder; bounded; written atomically and privately."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from agentsh.config import Environment
from agentsh.tui import prompt_history as history
from agentsh.tui.options import LaunchOptions
from agentsh.tui.prompt_history import append_history, load_history
from agentsh.tui.widgets.composer import PromptInput
from tests.tui.conftest import MakeApp, wait_for


@pytest.mark.asyncio
async def test_history_survives_a_restart_and_stays_out_of_the_project(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    first = make_app()
    async with first.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: first.controller.ready)
        await pilot.press(*"run the tests", "enter")
        await wait_for(pilot, lambda: not first.controller.turn_running)
        path = env.user.prompt_history_file(project)
        await wait_for(pilot, path.exists)
    assert not path.is_relative_to(project)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    second = make_app()
    async with second.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: second.controller.ready)
        prompt = second.query_one(PromptInput)
        await wait_for(pilot, lambda: bool(prompt.sent_history))
        await pilot.press("up")
        assert prompt.text == "run the tests"


@pytest.mark.asyncio
async def test_no_session_keeps_no_history_on_disk(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    app = make_app(options=LaunchOptions(no_session=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press(*"secret", "enter")
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await pilot.pause(0.2)
        await pilot.press("up")
        assert app.query_one(PromptInput).text == "secret"  # this run still recalls it
    assert not env.user.prompt_history_file(project).exists()


def test_history_is_bounded_and_keeps_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "MAX_ENTRIES", 5)
    monkeypatch.setattr(history, "MAX_BYTES", 40)
    path = tmp_path / "h.json"
    for i in range(8):
        append_history(path, f"message {i}")  # 9 bytes each
    assert load_history(path) == ["message 4", "message 5", "message 6", "message 7"]
    append_history(path, "message 7")  # a repeat of the newest is not stored twice
    append_history(path, "x" * 41)  # larger than the whole budget: this run only
    assert load_history(path)[-1] == "message 7"


def test_two_windows_keep_both_their_messages_and_odd_files_read_as_empty(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.json"
    append_history(path, "from window one")
    append_history(path, "from window two")
    assert load_history(path) == ["from window one", "from window two"]
    for odd in ("not json", "[1, 2]", json.dumps({"entries": "x"}), ""):
        path.write_text(odd)
        assert load_history(path) == []
    path.write_text(json.dumps({"version": 1, "entries": ["ok", 3, "", "fine\nlines"]}))
    assert load_history(path) == ["ok", "fine\nlines"]
