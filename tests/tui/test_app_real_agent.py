"""Pilot tests of the App with the REAL agent against the scripted server: a streamed answer,
a tool block that expands and collapses, approval granted and denied, Esc mid-stream (the
session file marks the turn aborted), and input queued during a turn."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from typing import TYPE_CHECKING

import pytest

from agentsh.config import ApprovalMode
from agentsh.session.log import is_locked
from agentsh.tui.app import AgentshApp
from agentsh.tui.options import LaunchOptions
from agentsh.tui.projection import ApprovalItem, project_session
from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
from agentsh.tui.widgets.messages import AssistantMessage, QueuedMessage, UserMessage
from agentsh.tui.widgets.tool_block import ToolBlock
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.tui.conftest import (
    MakeApp,
    agent_of,
    idle,
    ready,
    screen_text,
    session_of,
    wait_for,
)

if TYPE_CHECKING:
    from rich.style import Style
    from textual.pilot import Pilot

pytestmark = pytest.mark.asyncio


@pytest.fixture
def real(
    make_app: MakeApp, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> MakeApp:
    """``real(approval=...)``: the App with the default (real) agent factory."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)

    def make(approval: ApprovalMode | None = None) -> AgentshApp:
        from agentsh.tui.lifecycle import build_real_agent

        options = LaunchOptions(model=TEST_MODEL, api_base=scripted_server.base_url,
                                approval=approval)  # fmt: skip
        return make_app(factory=build_real_agent, options=options)

    return make


def _log_entries(app: AgentshApp) -> list[dict[str, object]]:
    path = agent_of(app).session.path
    assert path is not None
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def _answers(app: AgentshApp) -> list[str]:
    """The logged approval lines of the live chat, checked equal to a reload's."""
    chat = app.controller.view.chat
    live = [r.item for r in chat.rows if isinstance(r.item, ApprovalItem) and r.item.entry_id]
    reloaded = [i for i in project_session(agent_of(app).session) if isinstance(i, ApprovalItem)]
    assert live == reloaded
    return [i.text for i in live]


Cells = list[tuple[str, "Style | None"]]


def _drawn(app: AgentshApp, text: str) -> list[Cells]:
    """The chat's screen rows that show ``text``, cell by cell with its style (the bar, the
    colours, the margin: what a user sees), across the chat's width."""
    chat = app.controller.view.chat
    left, right = chat.region.x, chat.region.right - chat.scrollbar_size_vertical
    rows: list[Cells] = []
    for strip in app.screen._compositor.render_strips():
        if text in strip.text:
            rows.append([(c, seg.style) for seg in strip.crop(left, right) for c in seg.text])
    return rows


async def _resumed_draws_it_alike(pilot: Pilot[None], app: AgentshApp, text: str) -> None:
    """The answered prompt's line looks the same after the session is opened again (-c, a
    branch switch: the chat built anew from the log) as it did live."""
    await pilot.pause()
    live = _drawn(app, text)
    assert len(live) == 1
    await app.controller.switch_session(session_of(app))
    await pilot.pause()
    assert not app.query(ApprovalPrompt)  # built from the log, not the live prompt kept
    assert _drawn(app, text) == live


async def test_a_streamed_answer_appears(real: MakeApp, scripted_server: ScriptedServer) -> None:
    scripted_server.script(text("Hello **world**, this answer was streamed in pieces."))
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"hi there", "enter")
        await wait_for(pilot, lambda: bool(app.query(AssistantMessage)))
        await idle(pilot, app)
        reply = app.query_one(AssistantMessage)
        assert reply.text == "Hello **world**, this answer was streamed in pieces."
        assert reply.entry_id  # the widget is a view of a logged entry
        assert [m.text for m in app.query(UserMessage)] == ["hi there"]
        assert app.controller.status_bar.status.model == TEST_MODEL
        assert app.controller.status_bar.status.used > 0


async def test_a_tool_call_block_expands_and_collapses(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(tool_call("bash", {"command": "seq 1 30"}), text("Counted."))
    app = real(approval=ApprovalMode.ALL)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"count to thirty", "enter")
        await idle(pilot, app)
        block = app.query_one(ToolBlock)
        assert block.finished and not block.is_error
        assert block.summary.startswith("bash") and "seq 1 30" in block.summary
        assert "(25 earlier lines, Ctrl+O to expand)" in block.body_text
        assert block.body_text.rstrip().endswith("30")
        await pilot.press("ctrl+o")
        assert block.expanded and block.body_text.startswith("1\n")
        await pilot.press("ctrl+o")
        assert not block.expanded and "earlier lines" in block.body_text


async def test_an_approval_is_granted(real: MakeApp, scripted_server: ScriptedServer) -> None:
    scripted_server.script(tool_call("bash", {"command": "echo approved-run"}), text("Ran it."))
    app = real()
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"run echo", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        await pilot.pause(ApprovalPrompt.GRACE_S + 0.1)
        prompt = app.query_one(ApprovalPrompt)
        assert app.focused is prompt  # it takes focus; the transcript stays visible
        await pilot.press("y")
        await idle(pilot, app)
        block = app.query_one(ToolBlock)
        assert not block.is_error and "approved-run" in block.output
        assert prompt.decision is not None and prompt.decision.value == "allow_once"
        assert [m.text for m in app.query(AssistantMessage) if m.text] == ["Ran it."]
        # The answer is in the log: the chat shows the same line live and reloaded (-c).
        summary = prompt.request.summary
        assert _answers(app) == [f"{summary}: allowed once"]
        await _resumed_draws_it_alike(pilot, app, f"{summary}: allowed once")


async def test_an_approval_is_denied(real: MakeApp, scripted_server: ScriptedServer) -> None:
    scripted_server.script(tool_call("bash", {"command": "rm -rf build"}), text("Understood."))
    app = real()
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"clean up", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        await pilot.pause(ApprovalPrompt.GRACE_S + 0.1)
        await pilot.press("n")
        await idle(pilot, app)
        block = app.query_one(ToolBlock)
        assert block.is_error
        # The model was told: the second request carries the denial as the tool result.
        tool_messages = [m for m in scripted_server.requests[1].messages if m["role"] == "tool"]
        assert "user declined" in str(tool_messages[-1]["content"])
        assert app.query_one(ApprovalPrompt).has_class("denied")
        summary = app.query_one(ApprovalPrompt).request.summary
        assert _answers(app) == [f"{summary}: denied"]
        await _resumed_draws_it_alike(pilot, app, f"{summary}: denied")


async def test_escape_cancels_mid_stream_and_the_log_marks_the_turn_aborted(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    long = " ".join(f"word{i}" for i in range(400))
    scripted_server.script({"text": long, "delay": 0.03})
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"talk a lot", "enter")
        await wait_for(pilot, lambda: any(m.text for m in app.query(AssistantMessage)))
        await pilot.press("escape")
        await idle(pilot, app)
        reply = app.query_one(AssistantMessage)
        assert 0 < len(reply.text) < len(long)
        assert "turn cancelled" in str(reply.query_one(".message-footer").render())
        assistant = [e for e in _log_entries(app) if e.get("role") == "assistant"]
        assert assistant[-1]["stopReason"] == "aborted"
        assert str(assistant[-1]["content"]).startswith("word0")


async def test_input_typed_during_a_turn_is_queued_and_sent_after_it(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    # The first reply waits until "second" is queued: on a loaded machine typing it took
    # longer (3.4 s) than a short stream, which ended first, so nothing was queued.
    gate = threading.Event()

    def held(_request: object) -> dict[str, object]:
        gate.wait(60)
        return {"text": " ".join(f"w{i}" for i in range(60)), "delay": 0.01}

    scripted_server.script(held, text("Second answer."))
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press(*"second", "enter")
        try:
            await wait_for(pilot, lambda: bool(app.query(QueuedMessage)))
            assert len(scripted_server.requests) == 1
        finally:
            gate.set()
        await wait_for(pilot, lambda: len(scripted_server.requests) == 2, limit_s=30)
        await idle(pilot, app)
        assert not app.query(QueuedMessage)
        assert [m.text for m in app.query(UserMessage)] == ["first", "second"]
        last_user = [m for m in scripted_server.requests[1].messages if m["role"] == "user"][-1]
        assert last_user["content"] == "second" or "second" in str(last_user["content"])


async def test_quitting_mid_stream_logs_the_partial_reply_as_aborted(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    scripted_server.script({"text": " ".join(f"word{i}" for i in range(400)), "delay": 0.03})
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"talk a lot", "enter")
        await wait_for(pilot, lambda: any(m.text for m in app.query(AssistantMessage)))
        path = agent_of(app).session.path
        assert path is not None
        await pilot.press("ctrl+q")
    text = await asyncio.to_thread(path.read_text)
    lines = [json.loads(line) for line in text.splitlines()[1:]]
    assistant = [e for e in lines if e.get("role") == "assistant"]
    assert assistant and assistant[-1]["stopReason"] == "aborted"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_a_kill_or_a_closed_terminal_quits_like_ctrl_q_and_logs_the_partial_reply(
    real: MakeApp, scripted_server: ScriptedServer, signum: signal.Signals
) -> None:
    # Should the App not take the signal, this stand-in does, so the test fails instead of
    # killing the test worker.
    stray: list[int] = []

    def stand_in(number: int, _frame: object) -> None:
        stray.append(number)

    previous = signal.signal(signum, stand_in)
    try:
        scripted_server.script({"text": " ".join(f"word{i}" for i in range(400)), "delay": 0.03})
        app = real()
        hard_exits: list[tuple[int, bool]] = []

        def hard_exit(code: int) -> None:  # SIGHUP ends the process: here, only the App
            assert path is not None  # read before the signal is sent
            hard_exits.append((code, not is_locked(path)))
            app.exit(return_code=code)

        app.controller.exit_process = hard_exit
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(pilot, app)
            await pilot.press(*"talk a lot", "enter")
            await wait_for(pilot, lambda: any(m.text for m in app.query(AssistantMessage)))
            path = agent_of(app).session.path
            assert path is not None
            os.kill(os.getpid(), signum)
            await wait_for(pilot, lambda: app.return_code is not None or bool(stray))
        assert not stray
        assert app.return_code == 128 + signum
        assert signal.getsignal(signum) is stand_in  # the App put the old handler back
        # A closed terminal skips Textual's teardown, but only once the log is closed.
        assert hard_exits == ([(128 + signum, True)] if signum == signal.SIGHUP else [])
    finally:
        signal.signal(signum, previous)
    text = await asyncio.to_thread(path.read_text)
    lines = [json.loads(line) for line in text.splitlines()[1:]]
    assistant = [e for e in lines if e.get("role") == "assistant"]
    assert assistant and assistant[-1]["stopReason"] == "aborted"
    assert str(assistant[-1]["content"]).startswith("word0")


def _cancel_lines(app: AgentshApp) -> list[str]:
    """The screen's lines that speak of the cancel."""
    return [line.strip() for line in screen_text(app).splitlines() if "cancel" in line]


async def test_esc_at_an_approval_says_so_in_one_line_live_and_resumed(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    """Esc while the prompt waits drew three lines for one cancel: the call's "not run: the
    user cancelled the turn", the prompt's "not answered: the turn was cancelled" and "turn
    cancelled". Now "turn cancelled" alone says it; the withdrawn prompt keeps its row (a
    remount draws nothing, not the question again) and its answer is logged with the call's
    result, so a resumed chat reads the same."""
    scripted_server.script(tool_call("bash", {"command": "echo never"}), text("unused"))
    app = real()
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"run echo", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        prompt = app.query_one(ApprovalPrompt)
        await pilot.press("escape")
        await idle(pilot, app)
        await pilot.pause()
        chat = app.controller.view.chat
        item = chat.item_of(prompt)
        assert isinstance(item, ApprovalItem) and item.withdrawn
        assert prompt.answered is not None and prompt.answered.withdrawn
        assert prompt.outer_size.height == 0
        assert item.entry_id  # logged with the call's result
        assert _answers(app) == [item.text]
        assert _cancel_lines(app) == ["! turn cancelled"]
        assert "bash: echo never" in screen_text(app)  # the call itself is still shown
        await app.controller.switch_session(session_of(app))
        await pilot.pause()
        assert not app.query(ApprovalPrompt)
        assert _cancel_lines(app) == ["! turn cancelled"]
