"""A reader far up a long chat (its newest rows unmounted by the window) gets back to the end
with any key or the wheel, keeps their place while output arrives, and is told when it does
(issue 14, session 5 leftovers).

The setup: a 60-question session (``open_long_session``) in a 30-row window (``windowed_env``),
scrolled to its top (:func:`scroll_far_up`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.await_remove import AwaitRemove
from textual.pilot import Pilot

from agentsh.config import Environment
from agentsh.events import (
    AssistantMessage,
    Event,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.session.entries import Role, StopReason, ToolCall
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.widgets.approval_prompt import ApprovalNotice, ApprovalPrompt
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.output_notice import OutputNotice
from agentsh.tui.widgets.tool_block import ToolBlock
from tests.tui.conftest import (
    Asks,
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

QUESTIONS = 60


async def long_chat(pilot: Pilot[None], app: AgentshApp, project: Path) -> ChatView:
    """Open a session of :data:`QUESTIONS` questions (shown from its end)."""
    await ready(pilot, app)
    await open_long_session(app, project, QUESTIONS)
    return app.query_one(ChatView)


async def far_up_chat(pilot: Pilot[None], app: AgentshApp, project: Path) -> ChatView:
    """Open a session of :data:`QUESTIONS` questions and scroll to its top."""
    return await scroll_far_up(pilot, await long_chat(pilot, app, project))


async def scroll_far_up(pilot: Pilot[None], chat: ChatView) -> ChatView:
    """Scroll to the top, until the window has unmounted the newest rows (more than a
    window of them: the reader is too far up for new rows to join the window cheaply)."""
    # Each scroll to the top mounts one batch above (when the watcher sees it; a scroll that
    # lands during a window change may need another pass). 13 batches here, a second or
    # more each on a loaded machine: the bound is on a batch that does not come, not on all
    # of them together (a 30 s total ran out 1 run in 3-5 of tests/tui under load).
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not far_up(chat):
        first = chat.first
        chat.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        if chat.first < first:
            deadline = loop.time() + 30  # a batch came: the next one has its own time
        assert loop.time() < deadline, f"no batch mounted above row {chat.first} in 30 s"
    assert not chat.following
    await chat.wait_for_refresh()  # rows mounted above shift the view back after a frame
    return chat


def far_up(chat: ChatView) -> bool:
    return chat.first == 0 and len(chat.rows) - chat.last > chat.window


async def far_up_in_a_turn(
    pilot: Pilot[None], app: AgentshApp, project: Path, message: str
) -> ChatView:
    """Open the long session, send ``message``, and scroll to the top once its turn runs."""
    chat = await long_chat(pilot, app, project)
    await pilot.press(*message, "enter")
    await wait_for(pilot, lambda: app.controller.turn_running)
    return await scroll_far_up(pilot, chat)


def at_the_end(app: AgentshApp, chat: ChatView) -> bool:
    return f"answer {QUESTIONS - 1}" in screen_text(app) and chat.following


async def test_end_from_far_up_goes_to_the_chats_end_at_once(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """End scrolled to the end of the rows mounted, where Textual anchored the chat again:
    a second End was needed, and output then followed a reader who was not at the end."""
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await far_up_chat(pilot, app, project)
        chat.focus()
        await pilot.press("end")
        await wait_for(pilot, lambda: at_the_end(app, chat))


async def test_the_wheel_from_far_up_scrolls_on_to_the_chats_end(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """The wheel stopped for good at the end of the rows mounted: Textual anchored the chat
    there, each batch mounted below pinned the view to the new bottom, and the next notch
    had nowhere to go."""
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await far_up_chat(pilot, app, project)
        app.scroll_sensitivity_y = 8.0  # lines a notch: fewer notches, the same mounting
        lines = QUESTIONS * 2 * 4  # far more notches than the chat has lines
        for _ in range(lines):
            if at_the_end(app, chat):
                break
            chat.post_message(events.MouseScrollDown(chat, 5, 5, 0, 1, 0, False, False, False))
            await pilot.pause()
        assert at_the_end(app, chat)
        assert chat.last == len(chat.rows)


LONG = "\n\n".join(f"Paragraph {i}: " + "words " * 12 for i in range(12))


def growing_reply(go: asyncio.Event) -> Script:
    """A reply that streams LONG, waits for ``go``, then streams more into the same reply."""

    async def script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        yield TextDelta(LONG)
        await go.wait()
        rest = "\n\nThe rest of the reply, written while the reader was up."
        yield TextDelta(rest)
        agent.session.append_message(Role.ASSISTANT, LONG + rest, stop_reason=StopReason.STOP)
        yield TurnEnded(TurnOutcome.DONE)

    return script


async def test_a_reply_growing_below_a_reader_scrolled_up_shows_the_notice(
    make_app: MakeApp,
) -> None:
    """The notice came only for new rows: more text streaming into the reply already shown
    (the usual case: the reader scrolls up while the answer is written) said nothing."""
    go = asyncio.Event()
    app = make_app(factory=fake_factory(script=growing_reply(go)))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"long one", "enter")
        await wait_for(pilot, lambda: "Paragraph 11" in screen_text(app))
        chat = app.query_one(ChatView)
        await pilot.press("pageup")
        await wait_for(pilot, lambda: not chat.following)
        reading = chat.scroll_y
        notice = app.query_one(OutputNotice)
        assert not notice.display
        go.set()
        await wait_for(pilot, lambda: notice.display)
        assert chat.scroll_y == reading  # the reader is not moved
        assert "▼ new output below" in screen_text(app)
        await pilot.press("pagedown", "pagedown")
        await wait_for(pilot, lambda: not notice.display and chat.following)
        assert "written while the reader was up" in screen_text(app)
        await idle(pilot, app)


def chat_top(app: AgentshApp) -> list[str]:
    """The chat's first lines on screen, without the scrollbar (its thumb moves as rows come)."""
    return [line[:76].rstrip() for line in screen_text(app).splitlines()[:8]]


async def test_a_turn_under_a_reader_far_up_leaves_them_where_they_are(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """More than a window of rows below the reader: a new row (a queued turn starting, its
    reply) rebuilt the chat at its end, and the reader was yanked there. Now its rows wait,
    held below, and the notice says so; the notice (or End) goes there."""
    go = asyncio.Event()

    async def script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        if text == "second":
            await go.wait()
        async for event in echo_script(agent, text):
            yield event

    app = make_app(factory=fake_factory(script=script), environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await long_chat(pilot, app, project)
        await pilot.press(*"second", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press(*"queued", "enter")
        await wait_for(pilot, lambda: bool(app.controller.turns.queue))
        await scroll_far_up(pilot, chat)
        await pilot.pause()
        top = chat_top(app)
        notice = app.query_one(OutputNotice)
        go.set()  # "second" is answered; "queued" starts its turn and is answered
        await wait_for(pilot, lambda: "queued" in fake_of(app).runs)
        await idle(pilot, app)
        await wait_for(pilot, lambda: notice.display)
        await pilot.pause()
        assert chat_top(app) == top  # the reader is where they were
        assert chat.holding and not chat.following
        await pilot.click(OutputNotice)
        await wait_for(pilot, lambda: "echo: queued" in screen_text(app) and chat.following)
        assert not chat.holding and not notice.display


@pytest.mark.parametrize("answer", ["ctrl+up", "click"])
async def test_an_approval_under_a_reader_far_up_waits_held_until_asked_for(
    make_app: MakeApp,
    project: Path,
    windowed_env: Environment,
    answer_at_once: None,
    answer: str,
) -> None:
    """An approval is held below a reader far up like any row (the reader stays, the notice
    names it); Ctrl+Up or a click on the notice brings the chat's end, and the prompt takes
    the keys."""
    asks = Asks(wait=True)
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks), environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await far_up_in_a_turn(pilot, app, project, "build it")
        await pilot.pause()
        top = chat_top(app)
        asks.go.set()
        notice = app.query_one(ApprovalNotice)
        await wait_for(pilot, lambda: notice.display)
        await pilot.pause()
        assert chat_top(app) == top and chat.holding
        assert "approval waiting below: bash: make" in screen_text(app)
        prompt = app.query_one(ApprovalPrompt)
        if answer == "click":
            await pilot.click(ApprovalNotice)
        else:
            await pilot.press(answer)
        await wait_for(pilot, lambda: app.focused is prompt and prompt.in_view())
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])
        await idle(pilot, app)
        assert not notice.display


async def test_pgup_from_the_end_of_a_long_chat_reaches_its_top_a_page_a_press(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """PgUp stopped at the top of the rows mounted; the rows then mounted above moved the
    view back down by their height, so each press at that edge was lost: it crawled."""

    def at_the_top() -> bool:
        return any(line.endswith("question 0") for line in screen_text(app).splitlines())

    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await long_chat(pilot, app, project)
        await wait_for(pilot, lambda: at_the_end(app, chat))
        presses = 0
        while not at_the_top() and presses < 4 * QUESTIONS:
            await pilot.press("pageup")
            await pilot.pause()
            presses += 1
        assert chat.first == 0
        shown = [w.outer_size.height for w in chat.children if w.display]
        lines = sum(shown) * len(chat.rows) // len(shown)  # the rows are alike
        # A page a press, and a little slack: under load (4 runs at once) about one run in 8
        # took one press more (15 for 12 pages), whether or not the rows settled between
        # presses; the crawl this guards against lost every press at the mounted rows' top.
        assert presses <= lines // chat.scrollable_content_region.height + 3, (presses, lines)


async def test_down_walks_the_tool_blocks_from_far_up_to_the_last(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """Down (the next tool block) stopped at the last block mounted, far short of the
    chat's last one: the rows below were never mounted."""
    turns = 30
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        session = Session.create(None, project)
        for i in range(turns):
            session.append_message(Role.USER, f"question {i}")
            call = ToolCall(f"c{i}", "bash", json.dumps({"command": f"echo {i}"}))
            session.append_message(
                Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
            )
            session.append_tool_result(f"c{i}", "bash", f"{i}")
            session.append_message(Role.ASSISTANT, f"answer {i}", stop_reason=StopReason.STOP)
        await app.controller.switch_session(session)
        chat = await scroll_far_up(pilot, app.query_one(ChatView))
        blocks = [w for w in chat.children if isinstance(w, ToolBlock)]
        blocks[0].focus()
        for _ in range(2 * turns):
            focused = app.focused
            if isinstance(focused, ToolBlock) and focused.call_id == f"c{turns - 1}":
                break
            await pilot.press("down")
            await pilot.pause()
        focused = app.focused
        assert isinstance(focused, ToolBlock) and focused.call_id == f"c{turns - 1}"


async def test_ctrl_o_shows_the_newest_tool_block_held_below_a_reader_far_up(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """Ctrl+O expanded the newest tool block while it was held, hidden, below a reader far
    up: nothing happened on screen. It now goes to the chat's end and expands it there."""
    go = asyncio.Event()

    async def script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        await go.wait()
        call = ToolCall("t1", "bash", json.dumps({"command": "make"}))
        reply = agent.session.append_message(
            Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
        )
        yield AssistantMessage(reply.id, "", (("t1", "bash", call.arguments),), "tool_calls")
        yield ToolStarted("t1", "bash", {"command": "make"}, "bash: make")
        yield ToolOutput("t1", "built the target\n")
        result = agent.session.append_tool_result("t1", "bash", "built the target\n")
        yield ToolFinished("t1", "bash", result.id, "built the target\n", False)
        yield TurnEnded(TurnOutcome.DONE)

    app = make_app(factory=fake_factory(script=script), environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await far_up_in_a_turn(pilot, app, project, "build")
        go.set()
        await idle(pilot, app)
        block = app.query_one(ToolBlock)
        await wait_for(pilot, lambda: chat.holding and block.finished and not block.display)
        chat.focus()
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: block.display and block.expanded and chat.following)
        await wait_for(pilot, lambda: "bash: make" in screen_text(app))


async def test_a_scroll_during_a_window_change_is_acted_on_after_it(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """The scroll watcher skipped a scroll made while the window was changing, and at the top
    edge nothing scrolls again: the reader stayed at the top of the rows mounted for good (CI:
    the window stuck at row 83 while the test pressed Home for 30 s)."""
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await long_chat(pilot, app, project)
        # The load's own follow-up first (its first frame, then the adjustment it asks for,
        # which may mount a batch above if that frame came before the rows were laid out: a
        # Markdown body's batch update lets call_after_refresh run without a layout). Begun
        # while it ran, the window moved under the test: "first" changed with no scroll.
        await wait_for(pilot, lambda: chat.ready_to_adjust and not chat.window_busy)
        await pilot.pause()
        await wait_for(pilot, lambda: not chat.window_busy)
        first = chat.first
        assert first > 0
        change_done = asyncio.Event()

        async def slow_change() -> None:
            async with chat.window_change():
                await change_done.wait()

        change = asyncio.create_task(slow_change())
        await pilot.pause()
        chat.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await chat.wait_for_refresh()  # the watcher ran and skipped: the change is under way
        assert chat.first == first
        change_done.set()
        await change
        await wait_for(pilot, lambda: chat.first < first)


def window_is_whole(chat: ChatView) -> bool:
    """The chat's children are exactly its window's rows, in order (then the held ones), and
    no row outside the window keeps a widget."""
    shown = [r.widget for r in chat.rows[chat.first : chat.last]]
    held = [r.widget for r in chat.rows[chat.last :] if r.held]
    outside = chat.rows[: chat.first] + [r for r in chat.rows[chat.last :] if not r.held]
    return list(chat.children) == shown + held and all(r.widget is None for r in outside)


async def test_home_from_the_end_of_a_long_chat_goes_to_its_first_row(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """Home went to the top of the rows mounted: a long chat's first question stayed out of
    reach (a batch more each press)."""
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await long_chat(pilot, app, project)
        assert chat.first > 0  # the chat opened at its end: its first rows are not mounted
        chat.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: chat.first == 0 and chat.scroll_y == 0)
        await wait_for(pilot, lambda: "question 0" in screen_text(app) and not chat.window_busy)
        assert not chat.following and window_is_whole(chat)
        await pilot.press("end")
        await wait_for(pilot, lambda: at_the_end(app, chat))


async def test_the_scroll_watcher_firing_while_home_changes_the_window_waits_its_turn(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """Home's window change and the scroll watcher's ran interleaved: one mounted rows
    ``before=`` a row the other had just unmounted (a MountError in fresh-clone CI), or left
    rows mounted the window no longer knew. Here the watcher fires every time at the moment
    Home unmounts the rows at the end, and every task gets to run as far as it can."""
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await long_chat(pilot, app, project)
        await wait_for(pilot, lambda: at_the_end(app, chat))
        remove_children = chat.remove_children
        fired: list[int] = []

        def unmount_while_scrolled(*args: Any, **kwargs: Any) -> AwaitRemove:
            if not fired:
                fired.append(chat.first)
                chat.scroll_to(y=0, animate=False, immediate=True)  # rows above, please
            return remove_children(*args, **kwargs)

        async def let_everyone_run() -> None:
            for _ in range(200):
                await asyncio.sleep(0)

        chat.remove_children = unmount_while_scrolled  # type: ignore[method-assign]
        real_rewindow = chat._rewindow

        async def rewindow(center: int) -> None:
            await real_rewindow(center)
            await let_everyone_run()  # the watcher's change, had it started, goes on here

        chat._rewindow = rewindow  # type: ignore[method-assign]
        chat.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: chat.first == 0 and chat.scroll_y == 0 and bool(fired))
        await let_everyone_run()
        await wait_for(pilot, lambda: chat.ready_to_adjust and not chat.window_busy)
        assert fired == [len(chat.rows) - chat.initial]  # it fired at the end of the chat
        assert window_is_whole(chat)
        await wait_for(pilot, lambda: "question 0" in screen_text(app))


async def test_pgup_in_a_burst_and_home_while_a_reply_streams_under_a_long_chat(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """Five PgUp pressed at once while a reply streams move five pages (each press mounts rows
    above while the stream writes below; a burst once lost presses). Home then mounts a
    window at the chat's start, the streaming reply held below: it mounted every row in
    between (a long session's thousands) to keep the live reply's window contiguous."""
    from agentsh.tui.widgets.messages import AssistantMessage as ReplyWidget

    done = asyncio.Event()
    sent: list[int] = []

    async def streams(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        yield TextDelta(LONG)
        while not done.is_set():
            sent.append(len(sent))
            yield TextDelta(f"\n\nmore {len(sent)}")
            await asyncio.sleep(0.01)
        agent.session.append_message(Role.ASSISTANT, LONG, stop_reason=StopReason.STOP)
        yield TurnEnded(TurnOutcome.DONE)

    app = make_app(factory=fake_factory(script=streams), environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await long_chat(pilot, app, project)
        await pilot.press(*"long one", "enter")
        await wait_for(pilot, lambda: len(sent) > 10 and chat.following)
        pages: list[None] = []
        page_up = chat.page_up

        async def counted() -> None:
            await page_up()
            pages.append(None)

        chat.page_up = counted  # type: ignore[method-assign]
        await pilot.press("pageup")  # the reader leaves the end: the stream grows below now
        await wait_for(pilot, lambda: len(pages) == 1 and not chat.following)
        reply = app.query(ReplyWidget).last()
        before = reply.virtual_region.y - chat.scroll_y  # rows mounted above move both
        height = chat.scrollable_content_region.height
        for _ in range(5):
            app.post_message(events.Key("pageup", None))
        await wait_for(pilot, lambda: len(pages) == 6)
        moved = reply.virtual_region.y - chat.scroll_y - before
        assert moved >= 5 * height - 1, (moved, height)
        chat.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: chat.first == 0 and chat.scroll_y == 0)
        await wait_for(pilot, lambda: "question 0" in screen_text(app) and not chat.window_busy)
        assert chat.mounted_rows <= chat.window and chat.holding and window_is_whole(chat)
        await pilot.press("end")
        await wait_for(pilot, lambda: chat.following and reply.display and not chat.holding)
        done.set()
        await idle(pilot, app)


async def test_output_below_arriving_as_the_screen_closes_is_ignored(make_app: MakeApp) -> None:
    """Seen in runs that ended while a reply streamed under a reader scrolled up: the chat's
    "output below" reached the App after the notice was gone, and the App died of NoMatches."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await app.query_one(OutputNotice).remove()
        chat = app.query_one(ChatView)
        chat.post_message(ChatView.OutputBelow(True))
        await pilot.pause()
        assert app.is_running


@pytest.mark.parametrize("move", ["reveal_start", "reveal_end"])
async def test_a_fresh_window_is_laid_out_before_the_change_ends(
    make_app: MakeApp, project: Path, windowed_env: Environment, move: str
) -> None:
    """Home (or End) far from the rows mounted unmounts them all and mounts a fresh window.
    The change ended before the screen had laid that window out, so the scroll adjustment
    that runs next could read the old geometry (or none: no rows between the unmount and the
    mount) and mount a batch the view did not need: 37 rows in a window of 30 after Home
    while a reply streamed, 1 run in ~20 under load. The change now waits for the frame."""
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await (long_chat if move == "reveal_start" else far_up_chat)(pilot, app, project)
        await wait_for(pilot, lambda: not chat.window_busy)
        await getattr(chat, move)()
        seen = (chat.virtual_size.height, [c.virtual_region.y for c in chat.children])
        for _ in range(3):
            await chat.wait_for_refresh()
        settled = (chat.virtual_size.height, [c.virtual_region.y for c in chat.children])
        assert seen == settled
