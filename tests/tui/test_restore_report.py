"""What the chat says after a restore: every file name on its one line (a name is the
project's to choose), and the set-user-ID / set-group-ID bits a file came back without."""

from __future__ import annotations

from typing import Any, cast

import pytest

from agentsh.checkpoints.restore import RestoreResult
from agentsh.tui.file_restore import FileRestorer


class _Notes:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    async def note(self, text: str, kind: str = "info") -> None:
        self.lines.append((text, kind))


@pytest.mark.asyncio
async def test_the_report_names_files_on_one_line_and_the_id_bits_left_behind() -> None:
    view = _Notes()
    restorer = FileRestorer(cast(Any, None), cast(Any, None), cast(Any, view))
    odd = "a\nRestored 0 files.\x1b[2J.sh"
    result = RestoreResult(
        written=["tool.sh", odd], failed=[(odd, "a folder is in the way")],
        id_bits_dropped=["tool.sh"],
    )  # fmt: skip
    await restorer._report(result, ())
    assert all("\n" not in text and "\x1b" not in text for text, _kind in view.lines)
    warning = (
        "tool.sh came back without its set-user-ID / set-group-ID bit (git keeps neither): "
        "set it again with chmod if you meant it."
    )
    assert (warning, "warning") in view.lines
    restored = view.lines[0][0]
    assert restored.startswith("Restored 2 files: a\\nRestored 0 files.\\x1b[2J.sh, tool.sh.")


@pytest.mark.asyncio
async def test_the_report_says_which_files_were_removed() -> None:
    """ "Restored 2 files: calc.py, x.txt" for a file that did not exist then and was deleted."""
    view = _Notes()
    restorer = FileRestorer(cast(Any, None), cast(Any, None), cast(Any, view))
    await restorer._report(RestoreResult(written=["calc.py"], deleted=["x.txt"]), ())
    said = view.lines[0][0]
    assert said.startswith(
        "Restored 2 files: calc.py, x.txt. x.txt did not exist then: it was removed."
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("count", "question"),
    [(1, "1 file differs from here. Bring it back as it was?"),
     (2, "2 files differ from here. Bring them back as they were?")],
)  # fmt: skip
async def test_the_restore_question_fits_one_file_or_several(count: int, question: str) -> None:
    """One file read "1 file differs ... Bring them back as they were?"."""
    from textual.app import App

    from agentsh.checkpoints.restore import PlanItem, RestorePlan
    from agentsh.tui.screens.restore_files import RestoreFilesScreen
    from tests.tui.conftest import screen_text

    items = tuple(
        PlanItem(f"f{i}.txt", "modify", ("a", 0o100644), ("b", 0o100644)) for i in range(count)
    )

    async def no_diff() -> str:
        return ""

    app: App[None] = App()
    async with app.run_test(size=(100, 24)) as pilot:
        app.push_screen(RestoreFilesScreen(RestorePlan(1, items), "here", no_diff))
        await pilot.pause()
        assert question in " ".join(screen_text(app).split())  # type: ignore[arg-type]


class _StubFiles:
    """``agent.files()`` with one modified file to offer; records whether it restored."""

    def __init__(self) -> None:
        self.restored = False

    async def plan(self, _files_at: str) -> Any:
        from agentsh.checkpoints.restore import PlanItem, RestorePlan

        item = PlanItem("notes.txt", "modify", ("a", 0o100644), ("b", 0o100644), 1, 1)
        return RestorePlan(1, (item,))

    async def diff(self, _plan: Any) -> str:
        return ""

    async def restore(self, _plan: Any, **_how: Any) -> RestoreResult:
        self.restored = True
        return RestoreResult(written=["notes.txt"])

    def take_notices(self) -> list[str]:
        return []


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The key-grace clock, held still until the test moves it (``now[0] += 1.0``: the typing
    paused); the grace is half a second."""
    from agentsh.tui import key_grace

    clock = [1000.0]
    monkeypatch.setattr(key_grace, "clock", lambda: clock[0])
    monkeypatch.setattr(key_grace, "GRACE_S", 0.5)
    return clock


@pytest.mark.asyncio
async def test_keys_typed_as_the_question_appears_go_to_the_editor_not_the_answer(
    make_app: Any, now: list[float]
) -> None:
    """A sentence typed while the question came up ("yes, and ...") answered it by its y:
    keys until the typing pauses after it appeared are text for the editor."""
    from agentsh.tui.screens.restore_files import RestoreFilesScreen
    from tests.tui.conftest import fake_of, ready, wait_for

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        files = _StubFiles()
        fake_of(app).session_files = cast(Any, files)
        prompt = app.controller.prompt
        prompt.put_text("draft ")
        restorer = app.controller.branching.files
        worker = app.run_worker(restorer.offer("x", leaving=None))
        await wait_for(pilot, lambda: isinstance(app.screen, RestoreFilesScreen))
        await pilot.press(*"yes", "enter", "escape", "d")
        await pilot.pause()
        assert isinstance(app.screen, RestoreFilesScreen)  # nothing answered, no diff shown
        assert not app.screen.query_one("#restore-diff").display
        now[0] += 1.0  # the typing paused: the next key answers
        await pilot.press("y")
        await wait_for(pilot, lambda: worker.is_finished)
        assert files.restored
        assert prompt.text == "draft yesd"


@pytest.mark.asyncio
async def test_keys_typed_as_the_branch_question_appears_are_no_answer(
    make_app: Any, now: list[float]
) -> None:
    """A "y" typed as the branch-summary question came up started a paid summary: keys until
    the typing pauses after it appeared go to the editor."""
    from agentsh.session.entries import Role, StopReason
    from agentsh.tui.screens.leave_branch import LeaveBranchScreen
    from tests.tui.conftest import ready, session_of, wait_for

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        session = session_of(app)
        session.append_message(Role.USER, "first")
        kept = session.append_message(Role.ASSISTANT, "one", stop_reason=StopReason.STOP)
        session.append_message(Role.USER, "second")
        session.append_message(Role.ASSISTANT, "two", stop_reason=StopReason.STOP)
        worker = app.run_worker(app.controller.branching.move(kept.id))
        await wait_for(pilot, lambda: isinstance(app.screen, LeaveBranchScreen))
        await pilot.press(*"yes", "enter", "i")
        await pilot.pause()
        assert isinstance(app.screen, LeaveBranchScreen)  # not answered
        now[0] += 1.0
        await pilot.press("n")
        await wait_for(pilot, lambda: worker.is_finished)
        assert session.leaf_id == kept.id
        assert app.controller.prompt.text == "yesi"
