"""The anti-thrashing pause in the real TUI with the real agent: a session whose last two
automatic compactions freed under 10 % opens with "auto-compaction paused" in the status bar,
and a turn in a tier neither compacts nor lifts it (the pause had only unit tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.config import Environment, load_environment
from agentsh.session.session import Session
from agentsh.tui.lifecycle import build_real_agent
from agentsh.tui.options import LaunchOptions
from agentsh.tui.widgets.status_bar import StatusBar
from tests.agent.test_pause_e2e import WINDOW, _thrashed_session
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text
from tests.tui.conftest import MakeApp, idle, ready, submit, wait_for


@pytest.mark.asyncio
async def test_the_status_bar_shows_the_pause_and_a_turn_keeps_it(
    make_app: MakeApp,
    project: Path,
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text(
        f'[model]\nwindow = {WINDOW}\n\n[search]\nembedding = "none"\n'
    )
    session = _thrashed_session(project)
    assert session.path is not None
    scripted_server.script(text("one", usage={"prompt_tokens": 3_250, "completion_tokens": 5}))
    env: Environment = load_environment(project, trust_project=True)
    options = LaunchOptions(model=TEST_MODEL, api_base=scripted_server.base_url)
    app = make_app(factory=build_real_agent, options=options, environment=env)

    def bar() -> str:
        return str(app.query_one(StatusBar).render())

    async with app.run_test(size=(140, 30)) as pilot:
        await ready(pilot, app)
        await app.controller.switch_session(Session.open(session.path))
        await wait_for(pilot, lambda: "auto-compaction paused" in bar(), limit_s=30)
        await submit(pilot, app, "first request")
        await wait_for(pilot, lambda: len(scripted_server.requests) == 1, 30)
        await idle(pilot, app)
        assert "auto-compaction paused" in bar() and "81%" in bar(), bar()
    assert len(scripted_server.requests) == 1  # no summary call
