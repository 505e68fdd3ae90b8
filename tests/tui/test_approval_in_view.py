"""Approvals stay in view (issue 14, item 2): after a long reply, the short ``? Allow bash``
prompt, its answer and the turn's end (a result, or "turn cancelled" after Esc) are all on
screen, at both sizes a new user tries; a user who scrolled up is not moved, but told."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.config import ApprovalMode, Environment
from agentsh.tui.widgets.approval_prompt import ApprovalNotice, ApprovalPrompt
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import PromptInput
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.tui.conftest import (
    Asks,
    MakeApp,
    fake_factory,
    idle,
    open_long_session,
    ready,
    screen_text,
    wait_for,
)
from tests.tui.test_app_real_agent import real  # noqa: F401 - the fixture

pytestmark = pytest.mark.asyncio

LONG = "\n\n".join(f"Paragraph {i}: " + "words " * 12 for i in range(12))


@pytest.mark.parametrize(("size", "answer"), [((80, 24), "y"), ((120, 36), "escape")])
async def test_a_short_approval_its_answer_and_the_end_of_the_turn_stay_in_view(
    real: MakeApp,  # noqa: F811
    scripted_server: ScriptedServer,
    size: tuple[int, int],
    answer: str,
) -> None:
    scripted_server.script(
        text(LONG), tool_call("bash", {"command": "echo approved-run"}), text("Ran it.")
    )
    app = real(approval=ApprovalMode.ASK)
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await idle(pilot, app)
        await pilot.press(*"run echo", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        # Scrolled to after its first layout: waited for (a fixed 0.6 s failed under load).
        asked = ("? Allow bash: echo approved-run", "[n] deny")
        await wait_for(pilot, lambda: all(line in screen_text(app) for line in asked))
        await pilot.pause(ApprovalPrompt.GRACE_S + 0.1)  # keys sooner are not answers
        await pilot.press(answer)
        await idle(pilot, app)
        await pilot.pause(0.3)
        screen = screen_text(app)
        expected = "Ran it." if answer == "y" else "turn cancelled"
        assert expected in screen, screen
        chat = app.query_one(ChatView)
        assert chat.scroll_y >= chat.max_scroll_y - 1


async def test_an_approval_never_moves_a_chat_scrolled_up_and_a_notice_says_it_waits(
    make_app: MakeApp, answer_at_once: None
) -> None:
    """The user scrolled up to read: the approval arrives below without moving the chat or
    taking the keys (a `y` typed for the editor answers nothing unseen); a line at the bottom
    says it waits, and Ctrl+Up brings it into view to be answered."""
    asks = Asks(wait=True, first=LONG, log_user=True)
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await idle(pilot, app)
        await pilot.press(*"build it", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.pause()
        chat = app.query_one(ChatView)
        await pilot.press("pageup", "pageup")
        await wait_for(pilot, lambda: chat.scroll_y < chat.max_scroll_y - 10)
        notice = app.query_one(ApprovalNotice)
        assert not notice.display
        reading = chat.scroll_y
        asks.go.set()
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        await pilot.pause(0.2)
        prompt = app.query_one(ApprovalPrompt)
        assert chat.scroll_y == reading  # not yanked to the prompt
        assert not prompt.in_view() and app.focused is not prompt
        assert notice.display
        assert "approval waiting below: bash: make" in screen_text(app)
        assert "Ctrl+Up to answer" in screen_text(app)
        await pilot.press("y")  # typed: it goes to the editor, it answers nothing
        assert decisions == [] and app.query_one(PromptInput).text == "y"
        await pilot.press("ctrl+u", "ctrl+up")
        await wait_for(pilot, lambda: app.focused is prompt and prompt.in_view())
        await wait_for(pilot, lambda: not notice.display)
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])
        await idle(pilot, app)


async def test_scrolling_down_to_a_waiting_approval_hands_it_the_keys(
    make_app: MakeApp, answer_at_once: None
) -> None:
    asks = Asks(wait=True, first=LONG)
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await idle(pilot, app)
        await pilot.press(*"build it", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.pause()
        chat = app.query_one(ChatView)
        await pilot.press("pageup", "pageup")
        await wait_for(pilot, lambda: chat.scroll_y < chat.max_scroll_y - 10)
        asks.go.set()
        await wait_for(pilot, lambda: app.query_one(ApprovalNotice).display)
        prompt = app.query_one(ApprovalPrompt)
        for _ in range(6):
            await pilot.press("pagedown")
        await wait_for(pilot, lambda: app.focused is prompt)
        assert prompt.in_view() and not app.query_one(ApprovalNotice).display
        await pilot.press("n")
        await wait_for(pilot, lambda: decisions == ["deny"])


async def test_an_approval_closes_a_pane_that_covers_the_narrow_chat(
    make_app: MakeApp, answer_at_once: None
) -> None:
    """Seen at 80x24: the tree pane (which takes the chat's place there) hid the question,
    and Esc pressed to close the pane cancelled the turn."""
    from agentsh.tui.panes.panel import SidePanel

    asks = Asks(wait=True)
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"build it", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press("f4")
        panel = app.query_one(SidePanel)
        await wait_for(pilot, lambda: panel.is_open and not app.query_one(ChatView).is_on_screen)
        asks.go.set()
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: app.focused is prompt)
        assert not panel.is_open
        assert "? Allow bash: make" in screen_text(app)
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])


async def test_a_waiting_approval_is_never_dropped_by_the_chat_window(
    make_app: MakeApp, answer_at_once: None, project: Path, windowed_env: Environment
) -> None:
    """In a long chat the rows far from the viewport are unmounted; a waiting approval is
    live (its row rebuilds as a plain line): scrolled far up, it must stay mounted, or the
    question is gone and the turn waits for an answer nobody can give."""
    asks = Asks(wait=True)
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks), environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await open_long_session(app, project, 100)
        await pilot.press(*"build it", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        chat = app.query_one(ChatView)
        await pilot.press("pageup", "pageup")
        await wait_for(pilot, lambda: not chat.following)
        asks.go.set()
        await wait_for(pilot, lambda: app.query_one(ApprovalNotice).display)
        prompt = app.query_one(ApprovalPrompt)
        first = chat.first
        for _ in range(20):  # far up: older rows mount, rows far below are unmounted
            chat.scroll_home(animate=False, immediate=True)
            await pilot.pause()
        assert chat.first < first - 2 * chat.window  # the window moved well up
        assert prompt.is_attached and app.query_one(ApprovalNotice).display
        await pilot.press("ctrl+up")
        await wait_for(pilot, lambda: app.focused is prompt and prompt.in_view())
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])


async def test_a_path_with_a_line_break_is_one_line_in_the_title_header_and_answer(
    real: MakeApp,  # noqa: F811
    scripted_server: ScriptedServer,
    answer_at_once: None,
) -> None:
    """A path (or any argument) holding a line break put a raw break in the approval's title,
    the tool block's header and the answered line: "? Allow write: a" with "b.txt" on a line
    of its own, as if it were part of the question. Each is one line, the break shown as \\n."""
    scripted_server.script(
        tool_call("write", {"path": "a\nb.txt", "content": "x\n"}), text("Wrote it.")
    )
    app = real(approval=ApprovalMode.ASK)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"write it", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        await wait_for(pilot, lambda: "[n] deny" in screen_text(app))
        lines = screen_text(app).splitlines()
        assert any("? Allow write: a\\nb.txt" in line for line in lines), lines
        assert any("⋯ write: a\\nb.txt" in line for line in lines), lines
        title = next(i for i, line in enumerate(lines) if "? Allow" in line)
        assert "approval mode is 'ask'" in lines[title + 1]  # the title's one line is whole
        await pilot.press("n")
        await idle(pilot, app)
        await wait_for(pilot, lambda: "write: a\\nb.txt: denied" in screen_text(app))


@pytest.mark.parametrize("leave", ["escape", "alt+down"])
async def test_leaving_a_message_selection_gives_the_keys_back_to_a_waiting_approval(
    make_app: MakeApp, answer_at_once: None, leave: str
) -> None:
    """Seen in tmux: Alt+Up while an approval waited (to read the question asked), then Esc:
    the editor got the focus, and the `n` meant for the prompt was typed into it while the
    prompt kept waiting. The keys go back to the prompt, as they were before Alt+Up."""
    asks = Asks(log_user=True)
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"build it", "enter")
        await wait_for(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
        await pilot.press("alt+up")
        chat = app.query_one(ChatView)
        await wait_for(pilot, lambda: chat.selected_id is not None)
        await pilot.press(leave)
        await wait_for(pilot, lambda: chat.selected_id is None)
        await pilot.pause()
        await pilot.press("n")
        await wait_for(pilot, lambda: decisions == ["deny"])
        assert app.query_one(PromptInput).text == ""


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_long_diff_leaves_the_answer_keys_on_screen(
    make_app: MakeApp, size: tuple[int, int]
) -> None:
    """Seen at 80x24: a 40-line write's diff filled its 16-row box, the prompt was taller
    than the chat, and it showed its top: "[y] allow once ... [n] deny" was below the
    screen's edge. The diff's box now shrinks to leave the whole question in view."""
    from tests.tui.conftest import request

    diff = "\n".join(
        ["--- a/big.txt", "+++ b/big.txt", "@@ -1,40 +1,40 @@"]
        + [f"-line {i}" for i in range(40)]
        + [f"+LINE {i}" for i in range(40)]
    )
    asks = Asks(request(tool="write", summary="write: big.txt", detail=diff, reason="ask"))
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        await pilot.press(*"rewrite it", "enter")
        await wait_for(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
        await pilot.pause(0.2)
        screen = screen_text(app)
        assert "Allow write: big.txt" in screen
        assert "[y] allow once" in screen and "deny" in screen and "scroll all" in screen
        assert "-line 0" in screen  # the diff starts in view too
        # The terminal made smaller while the question waits: it fits again.
        await pilot.resize_terminal(size[0], 20)
        await pilot.pause(0.3)
        screen = screen_text(app)
        assert "Allow write: big.txt" in screen and "[y] allow once" in screen
