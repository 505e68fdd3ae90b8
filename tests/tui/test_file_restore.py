"""The restore offer in the real App with the real agent: a turn writes a file on branch A,
editing the message (a new branch) offers to remove it (d shows the diff, y restores), branch
B writes another file, Alt+Left back to A offers both changes; n keeps the files; a file
edited by hand is named and kept unless confirmed a second time; /checkpoints lists them."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from agentsh.config import ApprovalMode
from agentsh.tui.app import AgentshApp
from agentsh.tui.options import LaunchOptions
from agentsh.tui.screens.leave_branch import LeaveBranchScreen
from agentsh.tui.screens.restore_files import RestoreFilesScreen
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.tui.conftest import MakeApp, ready, screen_text, session_of, wait_for

pytestmark = pytest.mark.asyncio


@pytest.fixture
def real(
    make_app: MakeApp, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> MakeApp:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)

    def make() -> AgentshApp:
        from agentsh.tui.lifecycle import build_real_agent

        options = LaunchOptions(
            model=TEST_MODEL, api_base=scripted_server.base_url, approval=ApprovalMode.ALL
        )
        return make_app(factory=build_real_agent, options=options)

    return make


async def _send(pilot: Pilot[None], app: AgentshApp, words: str, reply: str) -> None:
    await pilot.press(*words, "enter")
    await wait_for(pilot, lambda: reply in screen_text(app), limit_s=30)
    await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=30)


def _moving(app: AgentshApp) -> bool:
    """A branch move (its projection, its file comparison, its questions) is still running."""
    return any(w.group == "branch" and not w.is_finished for w in app.workers)


async def _switch(pilot: Pilot[None], app: AgentshApp, key: str) -> None:
    """Alt+Left/Right, answering "no summary" to the question about the branch left."""
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, LeaveBranchScreen), limit_s=10)
    await pilot.press("n")


def _offer(app: AgentshApp) -> RestoreFilesScreen | None:
    screen = app.screen
    return screen if isinstance(screen, RestoreFilesScreen) else None


async def test_moving_the_leaf_offers_the_files_and_y_n_d_answer(
    real: MakeApp, scripted_server: ScriptedServer, project: Path
) -> None:
    (project / "keep.txt").write_text("kept\n")
    app = real()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        scripted_server.script(
            tool_call("write", {"path": "a.txt", "content": "from A\n"}), text("A written")
        )
        await _send(pilot, app, "branch A", "A written")
        assert (project / "a.txt").read_text() == "from A\n"

        # Edit the message and send it: the conversation goes back before it, and so can the
        # files; nothing moves before the edit is sent (issue 14, item 7).
        scripted_server.script(
            tool_call("write", {"path": "b.txt", "content": "from B\n"}), text("B written")
        )
        await pilot.press("alt+up", "enter")
        prompt = app.controller.prompt
        await wait_for(pilot, lambda: prompt.text == "branch A" and prompt.has_focus)
        assert _offer(app) is None and (project / "a.txt").exists()
        await pilot.press("ctrl+u")  # the editor holds the old text: replace it
        await pilot.press(*"branch B", "enter")
        await wait_for(pilot, lambda: _offer(app) is not None, limit_s=20)
        offer = _offer(app)
        assert offer is not None
        assert [(i.path, i.action) for i in offer.plan.items] == [("a.txt", "delete")]
        # Pushed is not yet drawn: its first frame comes later on a loaded machine.
        await wait_for(pilot, lambda: "D a.txt  +0 -1" in screen_text(app), limit_s=10)
        await pilot.press("d")
        await wait_for(pilot, lambda: "-from A" in screen_text(app), limit_s=10)
        await pilot.press("y")
        await wait_for(pilot, lambda: not (project / "a.txt").exists(), limit_s=20)

        # Branch B (the edited message) runs once the files are answered (the chat is then
        # projected again from the log, with its new branch marker).
        await wait_for(pilot, lambda: "B written" in screen_text(app), limit_s=30)
        await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=30)
        assert (project / "b.txt").exists()

        # Back to A: both files move; n first keeps them, then the tree pane shows ✎.
        await _switch(pilot, app, "alt+left")
        await wait_for(pilot, lambda: _offer(app) is not None, limit_s=20)
        offer = _offer(app)
        assert offer is not None
        assert sorted((i.path, i.action) for i in offer.plan.items) == [
            ("a.txt", "create"),
            ("b.txt", "delete"),
        ]
        await pilot.press("n")
        await wait_for(pilot, lambda: "Files kept as they are" in screen_text(app), limit_s=10)
        assert (project / "b.txt").exists() and not (project / "a.txt").exists()

        # To B: the files are B's already, so nothing is offered. Back to A, now restoring;
        # b.txt edited by hand meanwhile is kept unless the second question says yes.
        session = session_of(app)
        at_a = session.leaf_id
        await _switch(pilot, app, "alt+right")
        # The whole move, not only the leaf: the files are compared after the chat is projected
        # again, and b.txt written before that made them differ (flaky under load).
        await wait_for(pilot, lambda: session.leaf_id != at_a and not _moving(app))
        assert _offer(app) is None
        (project / "b.txt").write_text("typed by hand\n")
        await _switch(pilot, app, "alt+left")
        await wait_for(pilot, lambda: _offer(app) is not None, limit_s=20)
        offer = _offer(app)
        assert offer is not None and [i.path for i in offer.plan.outside] == ["b.txt"]
        await wait_for(pilot, lambda: "changed outside agentsh" in screen_text(app), limit_s=10)
        await pilot.press("y")
        await wait_for(pilot, lambda: "Overwrite it too?" in screen_text(app), limit_s=10)
        await pilot.press("n")  # restore the others only
        await wait_for(pilot, lambda: (project / "a.txt").exists(), limit_s=20)
        assert (project / "b.txt").read_text() == "typed by hand\n"
        assert (project / "keep.txt").read_text() == "kept\n"

        await pilot.press(*"/checkpoints", "enter")
        await wait_for(pilot, lambda: "File checkpoints" in screen_text(app), limit_s=10)
        assert "a.txt" in screen_text(app)


async def test_rewind_brings_back_the_conversation_and_the_files_or_only_the_files(
    real: MakeApp, scripted_server: ScriptedServer, project: Path
) -> None:
    from agentsh.tui.screens.picker import PickerScreen

    app = real()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        scripted_server.script(
            tool_call("write", {"path": "a.txt", "content": "one\n"}),
            text("first done"),
            tool_call("write", {"path": "a.txt", "content": "two\n"}),
            text("second done"),
        )
        await _send(pilot, app, "first", "first done")
        await _send(pilot, app, "second", "second done")
        session = session_of(app)
        leaf = session.leaf_id

        async def rewind(choice: str) -> None:
            await pilot.press(*"/rewind", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen), limit_s=10)
            await pilot.press("enter")  # the newest message: "second"
            await wait_for(pilot, lambda: "bring back" in screen_text(app), limit_s=10)
            await pilot.press(*choice, "enter")  # filter the choices, take the first

        # The files only: the conversation stays where it is. Chosen here, the files come
        # back without a "Bring them back?" after it (three questions after the message).
        await rewind("files only")
        await wait_for(pilot, lambda: (project / "a.txt").read_text() == "one\n", limit_s=20)
        await wait_for(pilot, lambda: "Restored 1 file: a.txt" in screen_text(app), limit_s=10)
        assert session.leaf_id == leaf and _offer(app) is None

        # Both: the conversation goes back before "second" (its text in the editor), asking
        # about a summary as any move does; the files are already as they were then, so
        # nothing more is asked.
        await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=10)
        await rewind("conversation and")
        await wait_for(pilot, lambda: isinstance(app.screen, LeaveBranchScreen), limit_s=10)
        await pilot.press("n")  # no summary of what is left behind
        await wait_for(pilot, lambda: app.controller.prompt.text == "second", limit_s=20)
        assert session.leaf_id != leaf and _offer(app) is None
        assert (project / "a.txt").read_text() == "one\n"

        # Both, to "first", with a.txt changed by hand since: only that is asked (overwrite a
        # file changed outside agentsh?), not whether to bring the files back at all.
        (project / "a.txt").write_text("by hand\n")
        await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=10)
        app.controller.prompt.text = ""
        await rewind("conversation and")  # the newest message on this path: "first"
        await wait_for(pilot, lambda: isinstance(app.screen, LeaveBranchScreen), limit_s=10)
        await pilot.press("n")
        await wait_for(pilot, lambda: _offer(app) is not None, limit_s=20)
        offer = _offer(app)
        assert offer is not None and offer.confirming
        await wait_for(pilot, lambda: "changed outside agentsh" in screen_text(app), limit_s=10)
        await pilot.press("y")
        await wait_for(pilot, lambda: not (project / "a.txt").exists(), limit_s=20)
