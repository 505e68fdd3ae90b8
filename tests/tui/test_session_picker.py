"""Rows of the session picker (/resume, -r)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.config import load_environment
from agentsh.session.entries import Role, StopReason
from agentsh.session.session import Session
from agentsh.text import attach_piped
from agentsh.tui.options import LaunchOptions
from agentsh.tui.screens.session_picker import SessionPicker, session_items
from agentsh.tui.widgets.messages import NoteLine
from tests.tui.conftest import MakeApp, ready, screen_text, wait_for


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


@pytest.mark.asyncio
async def test_a_run_with_text_piped_in_shows_its_prompt_not_the_text(
    project: Path, make_app: MakeApp
) -> None:
    """`git diff | agentsh -p "review this"` was listed as "review this <stdin> diff --git
    ... </stdin>" in the picker (agentsh sessions showed "review this")."""
    env = load_environment(project)
    session = Session.create(env.user.project_sessions_dir(project), project)
    piped = attach_piped("review this", "diff --git a/x b/x\n+noise line\n")
    session.append_message(Role.USER, piped)
    session.append_message(Role.ASSISTANT, "looks fine", stop_reason=StopReason.STOP)
    session.sync()
    session.close()
    app = make_app(options=LaunchOptions(resume=""))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker))
        await wait_for(pilot, lambda: "review this" in screen_text(app))
        shown = screen_text(app)
        assert "<stdin>" not in shown and "noise line" not in shown


@pytest.mark.asyncio
async def test_continue_with_nothing_to_continue_says_so_once(make_app: MakeApp) -> None:
    """`agentsh -c` in a folder with no session opened a new one without a word."""
    app = make_app(options=LaunchOptions(continue_session=True))
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(pilot, app)
        said = "no earlier session in this folder to continue; starting a new one."
        await wait_for(pilot, lambda: said in " ".join(screen_text(app).split()))
        notes = [n.text for n in app.query(NoteLine) if "-c:" in n.text]
        assert len(notes) == 1
