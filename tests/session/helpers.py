"""Builders shared by the session tests and the sessions CLI tests: real files, real appends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentsh.paths import UserPaths
from agentsh.session.entries import Role, StopReason, ToolCall, Usage
from agentsh.session.session import Session


def user_paths() -> UserPaths:
    """The per-test AGENTSH_HOME folders (set by the autouse fixture in tests/conftest.py)."""
    return UserPaths.from_env()


def conversation(
    session: Session, turns: int = 2, *, cost: float = 0.01, title: str = "first question"
) -> list[str]:
    """Append ``turns`` user/assistant(+tool) turns; returns the ids in order."""
    ids: list[str] = []
    for turn in range(turns):
        text = title if turn == 0 else f"question {turn}"
        ids.append(session.append_message(Role.USER, text).id)
        call = ToolCall(id=f"call{turn}", name="read", arguments='{"path": "a.py"}')
        ids.append(
            session.append_message(
                Role.ASSISTANT,
                f"reading for {turn}",
                tool_calls=(call,),
                model="openai/test-model",
                usage=Usage(input_tokens=100, output_tokens=10, cost=cost),
                stop_reason=StopReason.TOOL_CALLS,
            ).id
        )
        ids.append(session.append_tool_result(call.id, "read", f"contents {turn}").id)
        ids.append(
            session.append_message(
                Role.ASSISTANT,
                f"answer {turn}",
                model="openai/test-model",
                usage=Usage(input_tokens=200, output_tokens=20, cost=cost),
                stop_reason=StopReason.STOP,
            ).id
        )
    session.sync()
    return ids


def new_project_session(
    project_root: Path, turns: int = 2, *, title: str = "first question", cost: float = 0.01
) -> Session:
    """A closed session file in ``project_root``'s sessions folder."""
    session = Session.create(user_paths().project_sessions_dir(project_root), project_root)
    conversation(session, turns, title=title, cost=cost)
    session.close()
    return session


def line(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, separators=(",", ":")) + "\n").encode()


def header(session_id: str = "hand-made-0000", version: int = 1, cwd: str = "/tmp") -> bytes:
    return line(
        {"type": "session", "version": version, "id": session_id, "timestamp": "t", "cwd": cwd}
    )


def message(entry_id: str, parent: str | None, content: str = "", role: str = "user") -> bytes:
    return line(
        {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "role": role,
            "content": content or f"text of {entry_id}",
        }
    )
