"""The TUI's approval prompt offers "allow for this session" only where agentsh keeps it: a
write to .git/, to agentsh's settings or outside the project is allowed once whatever the key."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from tests.tui.conftest import (
    Asks,
    MakeApp,
    asked,
    fake_factory,
    offered_keys,
    request,
    wait_for,
)

pytestmark = pytest.mark.asyncio


async def test_allow_for_this_session_is_not_offered_where_nothing_is_kept(
    make_app: MakeApp, answer_at_once: None
) -> None:
    asks = Asks(
        request(tool="write", summary="write: .git/config", detail="[core]",
                reason="it changes .git/", session_scope="")
    )  # fmt: skip
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(100, 30)) as pilot:
        keys = offered_keys(await asked(pilot, app))
        assert "allow once" in keys and "for this session" not in keys
        await pilot.press("a")  # not offered: nothing happens
        await pilot.pause()
        assert decisions == []
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])


async def test_a_read_outside_offers_its_folder_for_the_session(
    make_app: MakeApp, answer_at_once: None
) -> None:
    asks = Asks(
        request(tool="read", summary="read: /home/u/notes/a.md",
                detail="read: /home/u/notes/a.md", reason="it reads outside the project root",
                session_scope="folder", scope_path="/home/u/notes")
    )  # fmt: skip
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(120, 30)) as pilot:
        keys = offered_keys(await asked(pilot, app))
        assert "allow reads in /home/u/notes for this session" in keys
        await pilot.press("a")
        await wait_for(pilot, lambda: decisions == ["allow_session"])


async def test_a_command_is_shown_as_it_is_approved_with_its_control_characters_visible(
    make_app: MakeApp, answer_at_once: None
) -> None:
    """A right-to-left override reorders the command a reader sees ("Trojan Source") and the
    screen dropped an ESC without a trace: what is approved is shown with both as escapes."""
    command = "echo ok #\u202e; rm -rf ~ \u202c\x1b[2J"
    asks = Asks(request(summary=f"bash: {command}", detail=command))
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(120, 30)) as pilot:
        prompt = await asked(pilot, app)
        shown = " ".join(str(line.render()) for line in prompt.query(Static))
        assert "\u202e" not in shown and "\x1b" not in shown
        assert "\\u202e; rm -rf ~ \\u202c\\x1b[2J" in shown
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])


async def test_the_folder_the_model_named_and_the_reason_are_shown_with_escapes_too(
    make_app: MakeApp, answer_at_once: None
) -> None:
    """The folder offered for the session comes from the model's path argument (untrusted):
    an override or an ESC in it is shown as an escape, as in the command."""
    folder = "/home/u/\u202enotes\x1b[2J"
    asks = Asks(
        request(tool="read", summary="read: x", detail="read: x", reason="why\u202e\x1b[H",
                session_scope="folder", scope_path=folder, group="srv\x1b[2J")
    )  # fmt: skip
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(160, 30)) as pilot:
        prompt = await asked(pilot, app)
        shown = " ".join(str(line.render()) for line in prompt.query(Static))
        assert "\u202e" not in shown and "\x1b" not in shown
        assert "/home/u/\\u202enotes\\x1b[2J" in shown and "srv\\x1b[2J" in shown
        assert "why\\u202e\\x1b[H" in shown


@pytest.mark.parametrize(
    ("tool", "scope", "offered"),
    [("bash", "tool", "[a] allow every command for this session"),
     ("edit", "tool", "[a] allow every edit for this session"),
     ("write", "tool", "[a] allow every file write for this session"),
     ("mcp__db__query", "tool", "[a] allow every mcp__db__query call for this session"),
     ("bash", "repository", "[a] allow git with these hooks and settings for this session")],
)  # fmt: skip
async def test_the_session_answer_says_what_it_allows(
    make_app: MakeApp, answer_at_once: None, tool: str, scope: str, offered: str
) -> None:
    """ "[a] allow for this session" did not say that it allows every later command, not
    this one again."""
    asks = Asks(request(tool=tool, session_scope=scope))
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(120, 30)) as pilot:
        keys = offered_keys(await asked(pilot, app))
        assert offered in keys
        await pilot.press("a")
        await wait_for(pilot, lambda: decisions == ["allow_session"])
