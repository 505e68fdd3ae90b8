"""A running turn stays visible and keeps the reader's place (issue 14, follow-ups): a side
pane in the narrow chat's place shows the turn in the status bar; a queued message starting
its turn does not scroll a chat the user scrolled up in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentsh.config import Environment
from agentsh.events import Event, TurnEnded, TurnOutcome
from agentsh.session.entries import Role
from agentsh.tui.app import AgentshApp
from agentsh.tui.widgets.activity_line import ActivityLine
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.output_notice import OutputNotice
from agentsh.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import (
    MakeApp,
    fake_factory,
    fake_of,
    idle,
    open_long_session,
    ready,
    screen_text,
    wait_for,
)
from tests.tui.fake_agent import FakeAgent, Script, echo_script

pytestmark = pytest.mark.asyncio

LONG = "\n\n".join(f"Paragraph {i}: " + "words " * 12 for i in range(12))


def held_until(go: asyncio.Event, *, first_long: bool = False) -> Script:
    """A script whose turns wait for ``go`` (the first one, with ``first_long``, echoes LONG)."""

    async def script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        if first_long and text == "first":
            async for event in echo_script(agent, LONG):
                yield event
            return
        agent.session.append_message(Role.USER, text)
        await go.wait()
        yield TurnEnded(TurnOutcome.DONE)

    return script


def _chat_top(app: AgentshApp) -> list[str]:
    """The chat's first lines on screen, without the scrollbar (its thumb moves as rows come)."""
    return [line[:76].rstrip() for line in screen_text(app).splitlines()[:8]]


async def test_a_pane_over_the_narrow_chat_leaves_the_running_turn_in_the_status_bar(
    make_app: MakeApp,
) -> None:
    go = asyncio.Event()
    app = make_app(factory=fake_factory(script=held_until(go)))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"slow one", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        assert "Esc to cancel" in screen_text(app)  # the indicator above the editor
        await pilot.press("f4")  # the tree pane takes the narrow chat's place
        await wait_for(pilot, lambda: not app.query_one("#chat-column").display)
        await wait_for(pilot, lambda: "working" in app.query_one(StatusBar).working)
        bottom = screen_text(app).splitlines()[-1]
        assert "working" in bottom and "Esc to cancel" in bottom, bottom
        assert "s ·" in bottom  # the elapsed seconds
        await pilot.press("f4")  # the chat is back: its own indicator shows, the bar's goes
        await wait_for(pilot, lambda: app.query_one(StatusBar).working == "")
        assert app.query_one(ActivityLine).display
        await pilot.press("f4")
        await wait_for(pilot, lambda: app.query_one(StatusBar).working != "")
        go.set()
        await idle(pilot, app)
        await wait_for(pilot, lambda: app.query_one(StatusBar).working == "")
        assert "working" not in screen_text(app).splitlines()[-1]


async def test_a_queued_message_starting_its_turn_leaves_a_scrolled_up_chat_where_it_is(
    make_app: MakeApp,
) -> None:
    go = asyncio.Event()
    app = make_app(factory=fake_factory(script=held_until(go, first_long=True)))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await idle(pilot, app)
        await pilot.press(*"second", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press(*"queued", "enter")
        await wait_for(pilot, lambda: bool(app.controller.turns.queue))
        chat = app.query_one(ChatView)
        await pilot.press("pageup", "pageup")
        await wait_for(pilot, lambda: chat.scroll_y < chat.max_scroll_y - 10)
        reading = chat.scroll_y
        go.set()  # "second" ends; "queued" starts its turn
        await wait_for(pilot, lambda: not app.controller.turns.queue)
        await wait_for(pilot, lambda: "queued" in fake_of(app).runs)
        await pilot.pause(0.2)
        assert chat.scroll_y == reading  # the reader is not yanked to the end
        await idle(pilot, app)


async def test_a_queued_turn_under_a_reader_far_up_stays_put_and_says_output_waits_below(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """Issue 14 leftovers: the queued turn's rows reached a chat whose newest rows the window
    had unmounted (the reader far up), and ``append`` yanked the reader to the end; and
    nothing said that output was arriving below."""
    go = asyncio.Event()
    app = make_app(factory=fake_factory(script=held_until(go)), environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await open_long_session(app, project, 60)
        await pilot.press(*"second", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press(*"queued", "enter")
        await wait_for(pilot, lambda: bool(app.controller.turns.queue))
        chat = app.query_one(ChatView)
        for _ in range(12):  # far up, until the rows far below are unmounted
            chat.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            if chat.last < len(chat.rows):
                break
        assert chat.last < len(chat.rows) and not chat.following
        notice = app.query_one(OutputNotice)
        assert not notice.display
        await chat.wait_for_refresh()  # rows mounted above shift the view back after a frame
        await pilot.pause()
        top = _chat_top(app)
        go.set()  # "second" ends; "queued" starts its turn and logs its message
        await wait_for(pilot, lambda: "queued" in fake_of(app).runs)
        await wait_for(pilot, lambda: notice.display)
        await pilot.pause(0.1)
        assert _chat_top(app) == top  # the reader is where they were
        assert "▼ new output below" in screen_text(app)
        await pilot.click(OutputNotice)  # to the end, following it again
        await wait_for(pilot, lambda: not notice.display and chat.following)
        await wait_for(pilot, lambda: "▌ queued" in screen_text(app))
        go.set()
        await idle(pilot, app)


@pytest.mark.slow
async def test_back_down_from_far_up_a_long_chat_pgdn_reaches_its_end(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """Seen walking a long chat: back down from far up, PgDn stopped at the bottom of the
    rows mounted (Textual anchored the reader there, so no more were ever mounted), or
    crawled a few rows a press: how far depended on the frames its animation took."""
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 50)) as pilot:
        await ready(pilot, app)
        await open_long_session(app, project, 60)
        chat = app.query_one(ChatView)
        for _ in range(12):  # far up: the newest rows are unmounted
            await pilot.press("pageup")
            await pilot.pause()
            if chat.last < len(chat.rows) and chat.first < 30:
                break
        assert chat.last < len(chat.rows)
        for _ in range(8):  # a page at a time: some five presses (it crawled, or stalled)
            await pilot.press("pagedown")
            await pilot.pause()
            if "answer 59" in screen_text(app):
                break
        assert "answer 59" in screen_text(app)
        assert chat.following  # at the end again: new output follows
