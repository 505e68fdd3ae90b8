"""Fixtures for TUI tests: an App wired to a fake or the real agent, in a temp project."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentsh.config import Environment, load_environment
from agentsh.frontend import AgentAPI
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.lifecycle import AgentFactory
from agentsh.tui.options import LaunchOptions
from tests.tui.fake_agent import FakeAgent

MakeApp = Callable[..., AgentshApp]


@pytest.fixture
def env(project: Path) -> Environment:
    return load_environment(project, trust_project=True)  # the user's own project


@pytest.fixture
def make_app(env: Environment, project: Path) -> MakeApp:
    """``make_app(factory=..., options=...)``: an App that does not watch theme files."""

    def make(
        factory: AgentFactory | None = None,
        options: LaunchOptions | None = None,
        environment: Environment | None = None,
    ) -> AgentshApp:
        return AgentshApp(
            environment or env,
            options or LaunchOptions(),
            agent_factory=factory or fake_factory(),
            cwd=project,
            watch_themes=False,
        )

    return make


def fake_factory(**kwargs: object) -> AgentFactory:
    def build(_env: Environment, session: Session, _options: LaunchOptions) -> AgentAPI:
        return FakeAgent(session, **kwargs)  # type: ignore[arg-type]

    return build


async def wait_for(pilot: object, predicate: Callable[[], bool], limit_s: float = 10.0) -> None:
    """Pump the app until ``predicate()`` holds (tests never sleep a fixed time)."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)  # type: ignore[attr-defined]


def screen_text(app: object) -> str:
    """What the terminal shows now, as plain text lines (what a user reads)."""
    strips = app.screen._compositor.render_strips()  # type: ignore[attr-defined]
    return "\n".join(strip.text.rstrip() for strip in strips)
