"""What the TUI does while its agent loads, and what it leaves for after (issue 16: ready to
chat). The load thread imports the agent's modules; importing watchfiles for the theme watcher
on the UI loop meanwhile, and the Markdown modules a new session does not render yet, held that
load up. Orders are asserted, not times."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import agentsh.tui.lifecycle as lifecycle
from agentsh.config import Environment
from agentsh.frontend import InteractiveAPI
from agentsh.session.entries import Role, StopReason
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.options import LaunchOptions
from tests.tui.conftest import MakeApp, fake_factory, ready, wait_for
from tests.tui.fake_agent import FakeAgent


def _recording(monkeypatch: pytest.MonkeyPatch, steps: list[str]) -> lifecycle.AgentFactory:
    monkeypatch.setattr(lifecycle, "_preload_markdown", lambda: steps.append("markdown"))
    build = fake_factory()

    def factory(env: Environment, session: Session, options: LaunchOptions) -> InteractiveAPI:
        steps.append("agent")
        return build(env, session, options)

    return factory


@pytest.mark.asyncio
async def test_a_new_session_builds_its_agent_before_loading_markdown(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []
    app = make_app(factory=_recording(monkeypatch, steps))
    async with app.run_test(size=(100, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: "markdown" in steps)
    assert steps == ["agent", "markdown"]


@pytest.mark.asyncio
async def test_a_resumed_transcript_has_its_markdown_loaded_before_it_is_shown(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, project: Path
) -> None:
    session = Session.create(tmp_path / "sessions", project)
    session.append_message(Role.USER, "question")
    session.append_message(Role.ASSISTANT, "**answer**", stop_reason=StopReason.STOP)
    session.close()
    assert session.path is not None
    steps: list[str] = []
    app = make_app(
        factory=_recording(monkeypatch, steps), options=LaunchOptions(session=str(session.path))
    )
    async with app.run_test(size=(100, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: steps.count("markdown") == 2)
    assert steps == ["markdown", "agent", "markdown"]  # the second is a no-op import


@pytest.mark.asyncio
async def test_the_theme_watcher_waits_for_the_agent(env: Environment, project: Path) -> None:
    building = threading.Event()
    release = threading.Event()

    def slow_factory(_e: Environment, session: Session, _o: LaunchOptions) -> InteractiveAPI:
        building.set()  # the session has been shown (the load thread waited for that)
        release.wait(30)
        return FakeAgent(session)

    app = AgentshApp(env, LaunchOptions(), agent_factory=slow_factory, cwd=project)

    def watching() -> bool:
        return any(w.group == "theme-watch" for w in app.workers)

    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, building.is_set)
        await pilot.pause()
        assert not watching()
        release.set()
        await ready(pilot, app)
        await wait_for(pilot, watching)
