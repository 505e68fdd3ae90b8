"""/name names the session; /resume finds a session by name, id, or words of its transcript."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from agentsh.config import Environment
from agentsh.session.catalog import Catalog
from agentsh.session.entries import Role, StopReason
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.options import LaunchOptions
from agentsh.tui.screens.picker import PickerScreen
from agentsh.tui.widgets.messages import NoteLine, UserMessage
from tests.tui.conftest import MakeApp, agent_of, ready, wait_for

pytestmark = pytest.mark.asyncio


def _saved(env: Environment, project: Path, first: str, reply: str) -> Session:
    session = Session.create(env.user.project_sessions_dir(project), project)
    session.append_message(Role.USER, first)
    session.append_message(Role.ASSISTANT, reply, stop_reason=StopReason.STOP)
    session.close()
    return session


async def _note_after(pilot: Pilot[None], app: AgentshApp, command: str) -> NoteLine:
    before = len(app.query(NoteLine))
    await pilot.press(*command, "enter")
    await wait_for(pilot, lambda: len(app.query(NoteLine)) > before)
    return list(app.query(NoteLine))[-1]


async def test_name_names_the_session_and_says_its_name(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        note = await _note_after(pilot, app, "/name")
        assert "no name yet" in note.text
        note = await _note_after(pilot, app, "/name parser rewrite")
        assert "'parser rewrite'" in note.text
        session = agent_of(app).session
        assert session.name == "parser rewrite"
        note = await _note_after(pilot, app, "/name")
        assert "named 'parser rewrite'" in note.text
    [info] = [i for i in Catalog(env.user).list(project) if i.id == session.id]
    assert info.name == "parser rewrite"


async def test_resume_opens_a_session_by_words_of_its_transcript(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    _saved(env, project, "fix the parser", "the tokenizer drops a quote")
    _saved(env, project, "write the changelog", "added the release notes")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        # Neither a name nor an id: the words of a reply (not of the first message).
        await pilot.press(*"/resume tokenizer drops", "enter")
        await wait_for(
            pilot, lambda: [m.text for m in app.query(UserMessage)] == ["fix the parser"]
        )


async def test_resume_offers_a_picker_when_several_transcripts_hold_the_words(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    _saved(env, project, "fix the parser", "looked at the release branch")
    _saved(env, project, "write the changelog", "added the release notes")
    _saved(env, project, "unrelated", "nothing here")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/resume release", "enter")
        # Mounted (its rows filled in) before anything is typed into it.
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, PickerScreen) and len(app.screen.shown) == 2,
        )
        await pilot.pause()
        await pilot.press(*"changelog", "enter")
        await wait_for(
            pilot, lambda: [m.text for m in app.query(UserMessage)] == ["write the changelog"]
        )
        note = await _note_after(pilot, app, "/resume no such words anywhere")
        assert note.kind == "warning" and "holds it" in note.text


async def test_name_flag_names_the_session_picked_at_start(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    """``agentsh -r --name NAME``: the session chosen in the picker is the one named, as
    ``-r ID --name NAME`` names the one it resumes."""
    saved = _saved(env, project, "earlier work", "done")
    app = make_app(options=LaunchOptions(resume="", name="earlier, named"))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("enter")
        await ready(pilot, app)
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["earlier work"])
        assert agent_of(app).session.id == saved.id
        assert agent_of(app).session.name == "earlier, named"
