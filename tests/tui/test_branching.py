"""Branching with the REAL agent against the scripted server: three branches made with the
keys and switched among (chat, ``branch i/n``, the question on leaving), a resume that lands on
the active branch, a label that survives a reload, Esc Esc, a branch summary that reaches the
model, and ``/fork`` from a selected message."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from agentsh.context.convert import BRANCH_NOTE
from agentsh.session.entries import BranchSummaryEntry, MessageEntry
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.file_restore import FileRestorer
from agentsh.tui.options import LaunchOptions
from agentsh.tui.panes.panel import SidePanel
from agentsh.tui.panes.tree_pane import TreePane, TreeView
from agentsh.tui.screens.leave_branch import LeaveBranchScreen
from agentsh.tui.widgets.chat import BranchMarker, ChatView
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.messages import AssistantMessage, UserMessage
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text
from tests.tui.conftest import MakeApp, esc_esc, ready, session_of, wait_for

if TYPE_CHECKING:
    from textual.pilot import Pilot

pytestmark = pytest.mark.asyncio


@pytest.fixture
def real(
    make_app: MakeApp, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> MakeApp:
    """``real(session=...)``: the App with the real agent factory and the scripted server."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)

    def make(session: str | None = None) -> AgentshApp:
        from agentsh.tui.lifecycle import build_real_agent

        options = LaunchOptions(model=TEST_MODEL, api_base=scripted_server.base_url,
                                session=session)  # fmt: skip
        return make_app(factory=build_real_agent, options=options)

    return make


def _users(app: AgentshApp) -> list[str]:
    return [m.text for m in app.query(UserMessage)]


def _replies(app: AgentshApp) -> list[str]:
    return [m.text for m in app.query(AssistantMessage) if m.text]


def _branch(app: AgentshApp) -> str:
    status = app.controller.status_bar.status
    return f"{status.branch_index}/{status.branch_count}"


async def _send(pilot: Pilot[None], app: AgentshApp, server: ScriptedServer, message: str) -> None:
    before = len(server.requests)
    await pilot.press(*message, "enter")
    await wait_for(pilot, lambda: len(server.requests) > before, limit_s=30)
    await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=30)


async def _edit_newest_into(
    pilot: Pilot[None], app: AgentshApp, server: ScriptedServer, new: str
) -> None:
    """Alt+Up selects the newest user message, Enter puts it in the editor (its parent is the
    leaf now), the user rewrites it and sends: a sibling branch."""
    chat = app.query_one(ChatView)
    await pilot.press("alt+up")
    await wait_for(pilot, lambda: chat.selected_id is not None and chat.has_focus)
    selected = chat.selected_item
    assert selected is not None
    old = selected.text
    await pilot.press("enter")
    prompt = app.query_one(PromptInput)
    await wait_for(pilot, lambda: prompt.text == old and prompt.has_focus)
    await pilot.press(*["backspace"] * len(old))
    await _send(pilot, app, server, new)


async def _switch(pilot: Pilot[None], app: AgentshApp, key: str, answer: str = "n") -> None:
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, LeaveBranchScreen))
    # The question is docked at the bottom: the branch being left stays in view above it.
    shown = _replies(app)[-1]
    assert shown and shown in app.export_screenshot()
    await pilot.press(answer)
    await wait_for(pilot, lambda: not isinstance(app.screen, LeaveBranchScreen))
    # The move ends with the files' check (the restore offer), which holds the leaf as a turn
    # does: a switch pressed before it ends is refused (seen once in CI at load ~4).
    await wait_for(pilot, lambda: not app.controller.turn_running)


async def _three_branches(pilot: Pilot[None], app: AgentshApp, server: ScriptedServer) -> Session:
    await _send(pilot, app, server, "start")
    await _send(pilot, app, server, "one")
    await _edit_newest_into(pilot, app, server, "two")
    await _edit_newest_into(pilot, app, server, "three")
    return session_of(app)


async def test_three_branches_made_with_the_keys_and_switched_among(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("A0"), text("A-one"), text("A-two"), text("A-three"))
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        session = await _three_branches(pilot, app, scripted_server)
        fork = session.tree.nodes[session.tree.roots[0]]
        assert len(session.tree.children_of(session.tree.children_of(fork.id)[0])) == 3
        assert _users(app) == ["start", "three"] and _replies(app) == ["A0", "A-three"]
        await wait_for(pilot, lambda: _branch(app) == "3/3")
        # The chat mounts its rows in batches of their own: on a loaded machine the status bar
        # could say 3/3 a frame before the marker was mounted.
        await wait_for(pilot, lambda: bool(app.query(BranchMarker)))
        marker = app.query_one(BranchMarker)
        assert str(marker.render()).startswith("↪ branch 3/3")

        await _switch(pilot, app, "alt+left")
        await wait_for(pilot, lambda: _users(app) == ["start", "two"])
        assert _replies(app) == ["A0", "A-two"] and _branch(app) == "2/3"
        await _switch(pilot, app, "alt+left")
        await wait_for(pilot, lambda: _users(app) == ["start", "one"])
        assert _branch(app) == "1/3"
        await pilot.press("alt+left")  # the first branch: nothing to the left, nothing asked
        await pilot.pause(0.1)
        assert not isinstance(app.screen, LeaveBranchScreen) and _branch(app) == "1/3"
        await _switch(pilot, app, "alt+right")
        await wait_for(pilot, lambda: _users(app) == ["start", "two"])
        # Esc at the question stays where you are.
        leaf = session.leaf_id
        await _switch(pilot, app, "alt+right", answer="escape")
        assert session.leaf_id == leaf and _users(app) == ["start", "two"]
        assert len(scripted_server.requests) == 4  # switching never called the model
        path = session.path

    # Resume lands on the branch that was active.
    assert path is not None
    app = real(session=str(path))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: _users(app) == ["start", "two"])
        assert _replies(app) == ["A0", "A-two"]
        await wait_for(pilot, lambda: _branch(app) == "2/3")


async def test_a_switch_during_the_last_moves_files_check_is_refused_for_what_it_is(
    real: MakeApp, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A move ends with the files check (the restore offer), which holds the leaf as a turn
    does. A switch pressed meanwhile said "Wait for the turn to end", with no turn running."""
    scripted_server.script(text("A0"), text("A-one"), text("A-two"), text("A-three"))
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await _three_branches(pilot, app, scripted_server)
        checked = asyncio.Event()
        offer = FileRestorer.offer

        async def held_offer(self: FileRestorer, *args: Any, **kwargs: Any) -> None:
            await checked.wait()
            await offer(self, *args, **kwargs)

        monkeypatch.setattr(FileRestorer, "offer", held_offer)
        await pilot.press("alt+left")
        await wait_for(pilot, lambda: isinstance(app.screen, LeaveBranchScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: _users(app) == ["start", "two"])
        await pilot.press("alt+left")
        said = "Wait for the files check of the last move to end."
        await wait_for(pilot, lambda: any(n.message == said for n in app._notifications))
        assert not isinstance(app.screen, LeaveBranchScreen) and _branch(app) == "2/3"
        assert not any("turn" in str(n.message) for n in app._notifications)
        checked.set()
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await _switch(pilot, app, "alt+left")
        await wait_for(pilot, lambda: _users(app) == ["start", "one"])


async def test_esc_esc_opens_the_tree_a_label_survives_a_reload_and_filters_find_it(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("first reply"))
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await _send(pilot, app, scripted_server, "hello")
        await esc_esc(pilot, app)
        await wait_for(
            pilot, lambda: bool(app.query(TreeView)) and app.query_one(TreeView).has_focus
        )
        assert app.query_one(SidePanel).transient  # opened for one visit
        await pilot.press("l", *"good start", "enter")
        session = app.controller.current_session()
        assert session is not None and session.path is not None
        leaf = session.leaf_id
        await wait_for(pilot, lambda: session.tree.labels.get(leaf or "") == "good start")
        await pilot.press("escape")
        assert not app.query_one(SidePanel).is_open
        path = session.path

    app = real(session=str(path))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press("f4")
        await wait_for(pilot, lambda: bool(app.query(TreePane)))
        pane = app.query_one(TreePane)
        await wait_for(pilot, lambda: pane.model.label(leaf or "") == "good start")
        # Filters and search over the reloaded tree.
        await wait_for(pilot, lambda: app.query_one(TreeView).has_focus)
        await pilot.press("ctrl+u")
        assert [pane.model.text(r.entry_id).text for r in pane.model.rows] == ["hello"]
        await pilot.press("ctrl+l")
        assert [r.entry_id for r in pane.model.rows] == [leaf]
        await pilot.press("ctrl+a", *"first")
        assert [r.entry_id for r in pane.model.rows] == [leaf]  # "first reply"
        await pilot.press(*"zz")
        assert pane.model.rows == [] and "(0/0) [all]" in str(
            app.query_one("#tree-footer").render()
        )


async def test_a_branch_summary_is_attached_and_sent_to_the_model(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(
        text("A0"),
        text("A-one"),
        text("A-two"),
        text("- tried two: it worked"),  # the summary of the branch left
        text("Noted."),
    )
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await _send(pilot, app, scripted_server, "start")
        await _send(pilot, app, scripted_server, "one")
        await _edit_newest_into(pilot, app, scripted_server, "two")
        session = app.controller.current_session()
        assert session is not None
        left = session.leaf_id
        await pilot.press("alt+left")
        await wait_for(pilot, lambda: isinstance(app.screen, LeaveBranchScreen))
        await pilot.press("i", *"what worked", "enter")
        await wait_for(pilot, lambda: isinstance(session.tree.nodes.get(session.leaf_id or ""),
                                                 BranchSummaryEntry))  # fmt: skip
        await wait_for(pilot, lambda: not app.controller.turn_running)
        entry = session.tree.nodes[session.leaf_id or ""]
        assert isinstance(entry, BranchSummaryEntry)
        assert entry.from_id == left and entry.summary == "- tried two: it worked"
        parent = session.tree.nodes[entry.parent_id or ""]
        assert isinstance(parent, MessageEntry) and parent.content == "A-one"
        request = scripted_server.requests[3].messages[-1]["content"]
        assert "[User]: two" in request and "what worked" in request
        assert "[User]: one" not in request  # only the branch that was left
        await wait_for(pilot, lambda: _users(app) == ["start", "one"])
        await _send(pilot, app, scripted_server, "go on")
        sent = scripted_server.requests[4].messages
        notes = [m for m in sent if BRANCH_NOTE in str(m.get("content"))]
        assert notes and "tried two: it worked" in str(notes[0]["content"])
        assert sent[-1]["content"] == "go on"


async def test_fork_from_a_selected_message_writes_a_new_file_naming_its_parent(
    real: MakeApp, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("A0"), text("A-one"))
    app = real()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await _send(pilot, app, scripted_server, "start")
        await _send(pilot, app, scripted_server, "one")
        original = app.controller.current_session()
        assert original is not None and original.path is not None
        await pilot.press("alt+up")
        await wait_for(pilot, lambda: app.query_one(ChatView).selected_id is not None)
        await pilot.press("ctrl+l")  # back to the editor; the selection stays
        await pilot.press(*"/fork", "enter")
        await wait_for(pilot, lambda: app.controller.current_session() is not original)
        forked = app.controller.current_session()
        assert forked is not None and forked.path is not None and forked.path.exists()
        assert app.query_one(PromptInput).text == "one"
        assert _users(app) == ["start"] and _replies(app) == ["A0"]
        lines = [json.loads(line) for line in forked.path.read_text().splitlines()]
        assert lines[0]["parentSession"] == original.id
        # (checkpoint records of the copied entries come along: they are not messages)
        assert [e.get("content") for e in lines[1:] if e["type"] != "checkpoint"] == [
            "start",
            "A0",
        ]
        # The original is unchanged: its leaf still ends the "one" branch.
        reopened = Session.open(original.path, lock=False)
        assert [getattr(e, "content", "") for e in reopened.current_path()][-1] == "A-one"
