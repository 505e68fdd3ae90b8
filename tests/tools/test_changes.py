"""Files a command changed, seen from snapshots of the tree around it (git and plain folders)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentsh.tools.changes import changed_files, snapshot
from agentsh.tools.shell import BashTool
from tests.tools.conftest import MakeCtx, call


def _git(project: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=project,
        check=True,
        capture_output=True,
    )


@pytest.mark.asyncio
async def test_a_command_that_edits_creates_deletes_and_reverts_in_git_is_seen(
    project: Path, make_ctx: MakeCtx
) -> None:
    for name in ("edited.py", "reverted.py", "deleted.py", "untouched.py", "again.py"):
        (project / name).write_text(f"{name}\n")
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "start")
    (project / "reverted.py").write_text("dirty\n")
    (project / "again.py").write_text("dirty once\n")  # dirty before, edited again by the command
    result = await call(
        BashTool(),
        make_ctx(),
        command=(
            "sed -i s/edited/changed/ edited.py && git checkout -q reverted.py && rm deleted.py"
            " && mkdir -p gen && echo x > gen/new.py && echo more >> again.py"
        ),
    )
    assert result.details["files_changed"] == [
        "again.py",
        "deleted.py",
        "edited.py",
        "gen/new.py",
        "reverted.py",
    ]


@pytest.mark.asyncio
async def test_a_command_that_changes_nothing_reports_nothing(
    project: Path, make_ctx: MakeCtx
) -> None:
    (project / "a.py").write_text("a\n")
    result = await call(BashTool(), make_ctx(), command="cat a.py && ls")
    assert "files_changed" not in result.details


@pytest.mark.asyncio
async def test_outside_git_modification_times_tell(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "a.py").write_text("a\n")
    (folder / "node_modules").mkdir()
    before = await snapshot(folder)
    assert before is not None and not before.git
    (folder / "src" / "a.py").write_text("a longer line\n")
    (folder / "b.py").write_text("b\n")
    (folder / "node_modules" / "dep.js").write_text("skipped\n")
    assert changed_files(before, await snapshot(folder)) == ["b.py", "src/a.py"]
    assert changed_files(None, before) == []
