"""Fixtures for the tool tests: a ToolContext over the temp project that records its events."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentsh.config import Settings
from agentsh.events import Event
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.tools.base import Tool, ToolContext, ToolResult
from tests.fakes.git_repo import git


@dataclasses.dataclass
class Recorder:
    """Collects what a tool emits, in order."""

    events: list[Event] = dataclasses.field(default_factory=list)

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


MakeCtx = Callable[..., ToolContext]


@pytest.fixture
def make_ctx(project: Path, recorder: Recorder) -> MakeCtx:
    """``make_ctx(read_max_lines=10, cwd=...)``: a context with some tool settings changed."""

    def make(cwd: Path | None = None, **tool_settings: Any) -> ToolContext:
        settings = Settings()
        if tool_settings:
            settings = dataclasses.replace(
                settings, tools=dataclasses.replace(settings.tools, **tool_settings)
            )
        return ToolContext(
            project=ProjectPaths(project),
            user=UserPaths.from_env(),
            settings=settings,
            cwd=cwd or project,
            call_id="call-1",
            emit=recorder,
        )

    return make


@pytest.fixture
def ctx(make_ctx: MakeCtx) -> ToolContext:
    return make_ctx()


@pytest.fixture
def repo(project: Path) -> Path:
    """The project folder as a git repository (its own hooks planted by the test)."""
    git(project, "init", "-q")
    return project


async def call(tool: Tool, ctx: ToolContext, **arguments: Any) -> ToolResult:
    """Parse the arguments as the agent loop does, then run the tool."""
    return await tool.run(tool.parse(arguments), ctx)
