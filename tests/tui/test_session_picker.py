"""Rows of the session picker (/resume, -r)."""

from __future__ import annotations

from pathlib import Path

from agentsh.config import load_environment
from agentsh.session.entries import Role, StopReason
from agentsh.session.session import Session
from agentsh.tui.screens.session_picker import session_items


def test_a_fork_is_marked_with_its_parent_so_it_does_not_read_like_its_parent(
    project: Path,
) -> None:
    env = load_environment(project)
    folder = env.user.project_sessions_dir(project)
    parent = Session.create(folder, project)
    parent.append_message(Role.USER, "fix the parser")
    reply = parent.append_message(Role.ASSISTANT, "done", stop_reason=StopReason.STOP)
    child = parent.fork(folder, reply.id)
    for s in (parent, child):
        s.sync()
        s.close()
    rows = {item.value: str(item.label) for item in session_items(env)}
    assert rows[str(child.path)].startswith(f"↳ fork of {parent.id[:8]}: fix the parser")
    assert rows[str(parent.path)].startswith("fix the parser")
