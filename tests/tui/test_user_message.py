"""What the user typed is shown as typed: never reflowed or read as markdown (issue 14, item 3).

The text goes to the model unchanged either way; these tests pin what the screen shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from agentsh.config import Environment
from agentsh.session.entries import Role, StopReason
from agentsh.session.session import Session
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.messages import (
    FOLD_OVER,
    FOLD_SHOWN,
    TextPart,
    UserMessage,
    user_text_parts,
)
from tests.tui.conftest import MakeApp, screen_text, wait_for

CODE = "def __init__(self, *args, **kwargs):\n    return <Foo>  # a_b_c *x* **y**"


@pytest.mark.asyncio
async def test_a_multi_line_message_shows_every_character_and_line_as_typed(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        prompt = app.query_one(PromptInput)
        prompt.put_text(CODE)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.query(UserMessage)))
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await pilot.pause()
        screen = screen_text(app)
        assert "def __init__(self, *args, **kwargs):" in screen
        assert "    return <Foo>  # a_b_c *x* **y**" in screen


@pytest.mark.asyncio
async def test_a_long_paste_keeps_its_lines_folded_until_clicked(make_app: MakeApp) -> None:
    pasted = "\n".join(f"line {i}: value_{i} = *{i}*" for i in range(200))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        app.query_one(PromptInput).put_text(pasted)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.query(UserMessage)))
        await wait_for(pilot, lambda: not app.controller.turn_running)
        message = app.query_one(UserMessage)
        # Folded: its first lines, one row each and as typed, then how many more there are.
        assert message.folded and FOLD_SHOWN < message.region.height < FOLD_OVER
        fold = message.query_one(".user-fold", Static)
        more = 200 - FOLD_SHOWN
        assert str(fold.render()) == f"… {more} more lines  [enter or click: show all]"
        text = "\n".join(str(s.render()) for s in message.query(".user-text").results(Static))
        assert text.splitlines() == pasted.splitlines()[:FOLD_SHOWN]
        fold.scroll_visible(animate=False, immediate=True)
        await pilot.pause()
        await pilot.click(fold)
        await wait_for(pilot, lambda: not message.folded and message.region.height >= 200)
        assert not message.query(".user-fold")


@pytest.mark.asyncio
async def test_a_folded_message_opens_and_folds_from_the_keyboard(make_app: MakeApp) -> None:
    """Issue 14: a folded paste could only be opened with the mouse. It is one of the chat's
    keyboard stops, as a tool block is (Ctrl+Up, Up/Down): Enter shows all, Enter folds it."""
    pasted = "\n".join(f"row {i}" for i in range(200))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        app.query_one(PromptInput).put_text(pasted)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.query(UserMessage)))
        await wait_for(pilot, lambda: not app.controller.turn_running)
        message = app.query_one(UserMessage)
        assert message.folded
        await pilot.press("ctrl+up")  # the chat's last stop: the message (the echo has no tool)
        await wait_for(pilot, lambda: app.focused is message)
        await pilot.press("enter")
        await wait_for(pilot, lambda: not message.folded and message.region.height >= 200)
        assert app.focused is message and len(app.query(UserMessage)) == 1  # nothing sent
        await pilot.press("space")
        await wait_for(pilot, lambda: message.folded and message.region.height < FOLD_OVER)
        # A short message is no stop: nothing to show or fold.
        app.query_one(PromptInput).focus()
        app.query_one(PromptInput).put_text("short")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.query(UserMessage)) == 2)
        assert not app.query(UserMessage).last().can_focus


@pytest.mark.asyncio
async def test_a_message_under_the_fold_limit_is_shown_whole(make_app: MakeApp) -> None:
    typed = "\n".join(f"step {i}" for i in range(FOLD_OVER))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        app.query_one(PromptInput).put_text(typed)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.query(UserMessage)))
        await wait_for(pilot, lambda: not app.controller.turn_running)
        message = app.query_one(UserMessage)
        assert not message.folded and message.region.height >= FOLD_OVER


@pytest.mark.asyncio
async def test_only_a_fence_the_user_wrote_is_highlighted(make_app: MakeApp) -> None:
    from textual.widgets import Markdown

    text = "see `x` and __y__:\n```python\nprint(1)\n```\nafter *it*"
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        app.query_one(PromptInput).put_text(text)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.query(UserMessage)))
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await pilot.pause()
        message = app.query_one(UserMessage)
        assert len(message.query(Markdown)) == 1  # the fence, and only it
        screen = screen_text(app)
        assert "see `x` and __y__:" in screen
        assert "after *it*" in screen
        assert "print(1)" in screen and "```" not in screen


def test_fences_are_split_by_commonmark_rules() -> None:
    assert user_text_parts("a\n```\nb\n```\nc") == [
        TextPart("a"),
        TextPart("```\nb\n```", fence=True),
        TextPart("c"),
    ]
    # Unclosed, or closed by a shorter run or the other character: plain text, as typed.
    for text in ("```\nb", "````\nb\n```", "~~~\nb\n```", "``` a`b\nc\n```"):
        assert user_text_parts(text) == [TextPart(text)]
    assert user_text_parts("~~~~ sh\nls\n~~~~~") == [TextPart("~~~~ sh\nls\n~~~~~", fence=True)]
    assert user_text_parts("") == [TextPart("")]


@pytest.mark.asyncio
async def test_an_unfolded_message_stays_unfolded_after_a_far_scroll(
    make_app: MakeApp, project: Path, windowed_env: Environment
) -> None:
    """The row is built again when scrolled back to, far away: it remembered nothing and the
    message the reader had opened came back folded. Its entry keeps it open now."""
    pasted = "\n".join(f"pasted {i}" for i in range(200))
    session = Session.create(None, project)
    session.append_message(Role.USER, pasted)
    session.append_message(Role.ASSISTANT, "ok", stop_reason=StopReason.STOP)
    for i in range(60):  # two windows of rows below it (the window keeps 30)
        session.append_message(Role.USER, f"question {i}")
        session.append_message(Role.ASSISTANT, f"answer {i}", stop_reason=StopReason.STOP)
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.switch_session(session)
        chat = app.query_one(ChatView)
        await chat.reveal_start()
        message = app.query(UserMessage).first()
        assert message.text == pasted and message.folded
        await message.unfold()
        await chat.reveal_end()  # far down: the message's row is unmounted
        await wait_for(pilot, lambda: not message.is_attached)
        await chat.reveal_start()
        again = app.query(UserMessage).first()
        assert again is not message and again.text == pasted
        assert not again.folded and not again.query(".user-fold")
        await again.action_toggle_expand()  # folded again by the reader: remembered too
        await chat.reveal_end()
        await wait_for(pilot, lambda: not again.is_attached)
        await chat.reveal_start()
        assert app.query(UserMessage).first().folded
