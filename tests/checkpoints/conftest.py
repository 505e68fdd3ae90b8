"""Fixtures for checkpoint tests: a committed git project, a checkpointer on it, and helpers
that drive a session the way the agent does (a record at each user message, and before and
after each file-changing call)."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh.agent import Agent
from agentsh.agent_assembly import build_agent
from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.config import ApprovalMode, CheckpointSettings, load_environment
from agentsh.paths import UserPaths
from agentsh.session.entries import MessageEntry, Role, ToolCall, ToolResultEntry
from agentsh.session.session import Session
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer

INITIAL = {
    "app.py": "def main():\n    return 1\n",
    "notes.md": "notes\nmore notes\n",
    "old.txt": "keep me\n",
    "src/lib.py": "VALUE = 1\n",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def files_of(root: Path) -> dict[str, str]:
    """Every file under ``root`` but .git/, as text."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or path.is_dir():
            continue
        out[rel.as_posix()] = path.read_text() if not path.is_symlink() else f"-> {path.readlink()}"
    return out


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def repo(project: Path) -> Path:
    """The test's project folder with :data:`INITIAL` committed."""
    write_files(project, INITIAL)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "initial")
    return project


@pytest.fixture
def user_paths(agentsh_home: Path) -> UserPaths:
    return UserPaths.from_env()


@pytest.fixture
def make_checkpointer(user_paths: UserPaths) -> Iterator[Callable[..., Checkpointer]]:
    made: list[Checkpointer] = []

    def make(root: Path, **settings: Any) -> Checkpointer:
        config = dataclasses.replace(CheckpointSettings(), **settings)
        checkpointer = Checkpointer(user_paths, root, config)
        made.append(checkpointer)
        return checkpointer

    yield make
    for checkpointer in made:
        checkpointer.close()


class Driver:
    """Plays the agent's part on a session: messages, tool calls and their checkpoints."""

    def __init__(self, session: Session, checkpointer: Checkpointer) -> None:
        self.session = session
        self.checkpointer = checkpointer
        self.calls = 0

    def user(self, text: str) -> MessageEntry:
        entry = self.session.append_message(Role.USER, text)
        self.checkpointer.checkpoint(self.session, "user")
        return entry

    def tool(self, name: str, effect: Callable[[], object]) -> ToolResultEntry:
        self.calls += 1
        call = ToolCall(id=f"call_{self.calls}", name=name, arguments="{}")
        self.session.append_message(Role.ASSISTANT, "", tool_calls=(call,))
        self.checkpointer.checkpoint(self.session, "tool")
        effect()
        result = self.session.append_tool_result(call.id, name, "ok")
        self.checkpointer.checkpoint(self.session, "tool")
        return result

    def reply(self, text: str) -> MessageEntry:
        return self.session.append_message(Role.ASSISTANT, text)


@pytest.fixture
def driver(
    repo: Path, user_paths: UserPaths, make_checkpointer: Callable[..., Checkpointer]
) -> Iterator[Driver]:
    session = Session.create(user_paths.project_sessions_dir(repo), repo)
    yield Driver(session, make_checkpointer(repo))
    session.close()


AgentFactory = Callable[[Session | None], Agent]


@pytest.fixture
def make_agent(
    scripted_server: ScriptedServer, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AgentFactory]:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    made: list[Agent] = []

    def factory(session: Session | None = None) -> Agent:
        env = load_environment(repo)
        fast = dataclasses.replace(env.settings.model, retry_base_delay_s=0.01)
        env = dataclasses.replace(
            env,
            config=dataclasses.replace(
                env.config, settings=dataclasses.replace(env.settings, model=fast)
            ),
        )
        session = session or Session.create(env.user.project_sessions_dir(repo), repo)
        agent = build_agent(
            env,
            session,
            model=TEST_MODEL,
            api_base=scripted_server.base_url,
            approval=ApprovalMode.ALL,
            cwd=repo,
        )
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        agent.close()
