"""Fixtures for the context tests: sessions, a fake summary model, a manager factory."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh.config import ContextSettings, Settings
from agentsh.context.manager import ContextManager
from agentsh.context.workspace import Workspace
from agentsh.events import Event
from agentsh.paths import UserPaths
from agentsh.session.session import Session

GOOD_SUMMARY = """## Goal
- Make the test suite pass.

## Constraints & Preferences
- Keep the public API.

## Completed Actions
- Fixed things ({n}).

## Active State
- Tests run.

## In Progress
- (none)

## Blocked
- (none)

## Key Decisions
- Use the simple fix.

## Resolved Questions
- (none)

## Pending User Asks
- (none)

## Remaining Work
- Keep going.

## Critical Context
- marker-{n}
"""


class FakeSummarizer:
    """Plays the summary model: records each request; answers, fails or talks nonsense."""

    def __init__(self, mode: str = "good") -> None:
        self.mode = mode
        self.calls: list[tuple[list[dict[str, Any]], int]] = []

    async def __call__(self, messages: list[dict[str, Any]], max_tokens: int) -> str:
        self.calls.append((messages, max_tokens))
        match self.mode:
            case "fail":
                raise ConnectionError("the summary model is unreachable")
            case "garbage":
                return "Sure! I'll continue fixing the tests now."
            case "empty":
                return ""
        return GOOD_SUMMARY.format(n=len(self.calls))

    @property
    def last_prompt(self) -> str:
        return str(self.calls[-1][0][-1]["content"])


@pytest.fixture
def user_paths(agentsh_home: Path) -> UserPaths:
    return UserPaths.from_env()


@pytest.fixture
def memory_session(tmp_path: Path) -> Session:
    return Session.create(None, tmp_path)


@pytest.fixture
def disk_session(user_paths: UserPaths, tmp_path: Path) -> Iterator[Session]:
    folder = user_paths.sessions_dir / "proj"
    folder.mkdir(parents=True)
    session = Session.create(folder, tmp_path)
    yield session
    session.close()


def settings_with(**context: Any) -> Settings:
    return dataclasses.replace(
        Settings(), context=dataclasses.replace(ContextSettings(), **context)
    )


ManagerFactory = Callable[..., ContextManager]


@pytest.fixture
def make_manager(user_paths: UserPaths) -> ManagerFactory:
    def factory(
        session: Session,
        *,
        window: int = 40_000,
        summarize: Callable[..., Any] | None = None,
        settings: Settings | None = None,
        events: list[Event] | None = None,
        workspace: Workspace | None = None,
        count: Callable[[str], int] | None = None,
        emit: Callable[[Event], None] | None = None,
        **context: Any,
    ) -> ContextManager:
        return ContextManager(
            session,
            settings or settings_with(**context),
            user_paths,
            model="test/model",
            window=window,
            summarize=summarize or FakeSummarizer(),
            count_tokens=count,
            emit=emit or (events.append if events is not None else lambda _e: None),
            workspace=workspace,
        )

    return factory
