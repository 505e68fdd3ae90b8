"""The chat's message selection (Alt+Up / Alt+Down, Up / Down while selected, Esc, Enter) and
the branch markers, with the scripted stand-in agent. Branching against the real agent is in
test_branching.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.session.entries import Role, StopReason
from agentsh.session.session import Session
from agentsh.tui import projection
from agentsh.tui.app import AgentshApp
from agentsh.tui.projection import BranchItem, UserItem, project_session
from agentsh.tui.widgets.chat import BranchMarker, ChatView
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.messages import UserMessage
from tests.tui.conftest import MakeApp, wait_for


def _three_turns(project_dir: Path) -> Session:
    s = Session.create(None, project_dir)
    for word in ("first", "second", "third"):
        s.append_message(Role.USER, word)
        s.append_message(Role.ASSISTANT, f"re: {word}", stop_reason=StopReason.STOP)
    return s


def _selected(app: AgentshApp) -> str | None:
    item = app.query_one(ChatView).selected_item
    return item.text if item is not None else None


def _highlighted(app: AgentshApp) -> list[str]:
    return [m.text for m in app.query(UserMessage) if m.has_class("-selected")]


@pytest.mark.asyncio
async def test_alt_up_and_down_walk_the_user_messages_and_esc_clears(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.switch_session(_three_turns(project))
        await pilot.press("alt+up")
        await wait_for(pilot, lambda: _selected(app) == "third")
        assert isinstance(app.focused, ChatView) and _highlighted(app) == ["third"]
        await pilot.press("alt+up", "alt+up", "alt+up")  # stops at the first
        await wait_for(pilot, lambda: _selected(app) == "first")
        await pilot.press("down")  # Up/Down move a selection once there is one
        await wait_for(pilot, lambda: _selected(app) == "second")
        assert _highlighted(app) == ["second"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: _selected(app) is None)
        assert _highlighted(app) == [] and isinstance(app.focused, PromptInput)
        # Escape with no selection is the App's again: it does not reach the chat.
        assert app.query_one(ChatView).check_action("clear_selection", ()) is False


@pytest.mark.asyncio
async def test_stepping_past_the_newest_message_gives_the_editor_back(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.switch_session(_three_turns(project))
        await pilot.press("alt+down")  # nothing selected, nothing below: nothing happens
        assert _selected(app) is None and isinstance(app.focused, PromptInput)
        await pilot.press("alt+up")
        await wait_for(pilot, lambda: _selected(app) == "third")
        await pilot.press("alt+down")
        await wait_for(pilot, lambda: _selected(app) is None)
        assert isinstance(app.focused, PromptInput)


@pytest.mark.asyncio
async def test_enter_on_a_selection_edits_it_as_a_new_branch_and_the_marker_follows(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        session = _three_turns(project)
        await app.controller.switch_session(session)
        second = session.current_path()[2]
        await pilot.press("alt+up", "alt+up")
        await wait_for(pilot, lambda: _selected(app) == "second")
        await pilot.press("enter")
        prompt = app.query_one(PromptInput)
        await wait_for(pilot, lambda: prompt.text == "second" and prompt.has_focus)
        # Nothing moves until the edited message is sent (issue 14, item 7).
        newest = session.leaf_id
        assert newest == session.current_path()[-1].id != second.parent_id
        assert [m.text for m in app.query(UserMessage)] == ["first", "second", "third"]
        await pilot.press(*[" ", "2"], "enter")  # the stand-in agent echoes and logs it
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(BranchMarker))
        )
        assert [m.text for m in app.query(UserMessage)] == ["first", "second 2"]
        assert str(app.query_one(BranchMarker).render()).startswith("↪ branch 2/2")
        # The old branch stays in the log, complete.
        kids = session.tree.children_of(second.parent_id)
        assert len(kids) == 2 and kids[0] == second.id


def test_markers_stand_before_the_first_entry_of_each_branch_on_the_path(project: Path) -> None:
    s = _three_turns(project)
    path = s.current_path()
    s.move_leaf(path[1].id)  # fork after "re: first"
    s.append_message(Role.USER, "other")
    s.move_leaf(path[3].id)  # fork after "re: second" (on the first branch)
    s.append_message(Role.USER, "late")
    s.move_leaf(s.tree.children_of(path[3].id)[0])
    s.move_leaf(s.tree.deepest_leaf(path[4].id))
    items = project_session(s)
    marks = [i for i in items if isinstance(i, BranchItem)]
    assert [(m.index, m.count, m.nearest) for m in marks] == [(1, 2, False), (1, 2, True)]
    # Each marker stands right before the entry that starts its branch.
    for index, item in enumerate(items):
        if isinstance(item, BranchItem):
            following = items[index + 1]
            assert isinstance(following, UserItem) and following.entry_id == item.entry_id
    assert not any(isinstance(i, BranchItem) for i in projection.project(s.current_path()))


@pytest.mark.asyncio
async def test_an_edit_left_unsent_moves_nothing(make_app: MakeApp, project: Path) -> None:
    """Alt+Up → Enter, then Esc, or the editor emptied and another message typed: the leaf,
    the chat and ``-c`` keep the newest turn; the other message continues the conversation."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        session = _three_turns(project)
        await app.controller.switch_session(session)
        newest = session.leaf_id
        prompt = app.query_one(PromptInput)
        await pilot.press("alt+up", "enter")
        await wait_for(pilot, lambda: prompt.text == "third" and prompt.has_focus)
        await pilot.press("escape")
        await wait_for(pilot, lambda: prompt.text == "")
        assert session.leaf_id == newest and app.controller.branching.editing is None
        assert [m.text for m in app.query(UserMessage)] == ["first", "second", "third"]
        await pilot.press("alt+up", "alt+up", "enter")
        await wait_for(pilot, lambda: prompt.text == "second" and prompt.has_focus)
        await pilot.press("ctrl+c")  # clears the editor
        await wait_for(pilot, lambda: prompt.text == "")
        await pilot.press(*"fourth", "enter")
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await wait_for(pilot, lambda: session.leaf_id != newest)
        path = [e.content for e in session.current_path() if hasattr(e, "content")]
        assert path[:7] == ["first", "re: first", "second", "re: second", "third", "re: third",
                            "fourth"]  # fmt: skip
        assert len(session.tree.children_of(session.current_path()[2].parent_id)) == 1


@pytest.mark.asyncio
async def test_a_new_selection_says_what_enter_and_esc_do(make_app: MakeApp, project: Path) -> None:
    """Alt+Up marked a message and said nothing: a newcomer saw a bar change colour and had
    to guess that Enter edits it as a new branch. The first step says so, once."""
    app = make_app()
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.switch_session(_three_turns(project))
        await pilot.press("alt+up")
        await wait_for(pilot, lambda: _selected(app) == "third")
        await pilot.press("alt+up")
        await wait_for(pilot, lambda: _selected(app) == "second")
        said = [str(n.message) for n in app._notifications]
        assert said == [
            "Enter: edit it and send as a new branch (the old one stays) · "
            "Up/Down: another message · Esc: back to the editor"
        ]
