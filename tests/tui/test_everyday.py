"""The everyday loop's small habits (issue 14): the setup help at 80 columns, a click in the
chat, the first F3."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from textual.widgets import Static

from agentsh.config import Environment
from agentsh.events import ErrorKind, ErrorOccurred, Event, TurnEnded, TurnOutcome
from agentsh.llm.models import HELP_COLUMNS, no_model_help
from agentsh.tui.widgets.messages import NoteMarkdown
from tests.tui.conftest import MakeApp, fake_factory, wait_for
from tests.tui.fake_agent import FakeAgent

pytestmark = pytest.mark.asyncio


async def test_the_setup_help_fits_an_80_column_chat_and_names_the_user_config(
    make_app: MakeApp, env: Environment
) -> None:
    async def no_model(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        yield ErrorOccurred(ErrorKind.NO_MODEL, no_model_help(env.user.config_file))
        yield TurnEnded(TurnOutcome.ERROR, error="no model")

    app = make_app(factory=fake_factory(model=None, script=no_model))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press(*"hi", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        await pilot.pause()
        note = app.query_one(NoteMarkdown)
        assert str(env.user.config_file) in note.text  # AGENTSH_HOME=DIR: DIR/config/config.toml
        body = note.query_one(Static)
        assert body.content_region.width >= HELP_COLUMNS  # no line of the help wraps
