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
