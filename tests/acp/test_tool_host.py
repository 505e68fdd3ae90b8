"""The tools with a host (an editor's buffers): only files inside the session's folder travel
through it; everything else is read and written locally, after the same checks."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from agentsh.config import Settings
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.tools.base import ToolContext
from agentsh.tools.file_read import ReadTool
from agentsh.tools.files import EditTool, WriteTool
from agentsh.tools.host import CommandRun
from agentsh.tools.shell import BashTool


class Buffers:
    """An editor holding unsaved buffers; it records every path it is asked about."""

    reads_files = writes_files = True
    runs_commands = False

    def __init__(self, held: dict[Path, str]) -> None:
        self.held = held
        self.asked: list[Path] = []

    async def read_text(self, path: Path) -> str:
        self.asked.append(path)
        return self.held[path]

    async def write_text(self, path: Path, text: str) -> None:
        self.asked.append(path)
        self.held[path] = text

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit_s: float,
        cancelled: asyncio.Event,
        call_id: str,
        output_limit: int,
    ) -> CommandRun:
        raise AssertionError("not offered")


def _ctx(root: Path, cwd: Path, host: Buffers) -> ToolContext:
    return ToolContext(
        project=ProjectPaths(root),
        user=UserPaths.from_env(),
        settings=Settings(),
        cwd=cwd,
        call_id="call-1",
        emit=lambda _e: None,
        host=host,
    )


@pytest.mark.asyncio
async def test_only_the_session_folder_goes_through_the_editor(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    folder = root / "app"
    folder.mkdir(parents=True)
    inside, beside = folder / "a.txt", root / "b.txt"
    inside.write_text("disk a\n")
    beside.write_text("disk b\n")
    host = Buffers({inside: "unsaved a\n", beside: "unsaved b\n"})
    ctx = _ctx(root, folder, host)
    read, write, edit = ReadTool(), WriteTool(), EditTool()

    shown = await read.run(read.parse({"path": "a.txt"}), ctx)
    assert "unsaved a" in shown.content
    # In the project but outside the folder the editor opened: the disk, not the editor.
    shown = await read.run(read.parse({"path": "../b.txt"}), ctx)
    assert "disk b" in shown.content and "unsaved" not in shown.content
    assert host.asked == [inside]

    await edit.run(edit.parse({"path": "a.txt", "old_text": "unsaved", "new_text": "new"}), ctx)
    assert host.held[inside] == "new a\n" and inside.read_text() == "disk a\n"
    await write.run(write.parse({"path": "../b.txt", "content": "local b\n"}), ctx)
    assert beside.read_text() == "local b\n" and host.held[beside] == "unsaved b\n"
    assert host.asked == [inside, inside, inside]


class Terminal:
    """An editor whose terminal ran the command and reports how it ended."""

    reads_files = writes_files = False
    runs_commands = True

    def __init__(self, run: CommandRun) -> None:
        self.run = run

    async def read_text(self, path: Path) -> str:
        raise AssertionError("not offered")

    async def write_text(self, path: Path, text: str) -> None:
        raise AssertionError("not offered")

    async def run_command(self, command: str, **_kwargs: object) -> CommandRun:
        return self.run


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("reported", "shown"),
    [("SIGKILL", "SIGKILL"), ("KILL", "SIGKILL"), ("9", "SIGKILL"), ("SIGWHATEVER", "SIGWHATEVER")],
)
async def test_a_command_the_editor_says_a_signal_ended_is_no_success(
    tmp_path: Path, reported: str, shown: str
) -> None:
    # A name agentsh did not know ("KILL", an editor's own) read as a clean exit.
    host = Terminal(CommandRun(output="partial\n", exit_code=None, signal=reported))
    ctx = _ctx(tmp_path, tmp_path, host)  # type: ignore[arg-type]
    bash = BashTool()
    result = await bash.run(bash.parse({"command": "make"}), ctx)
    assert result.is_error
    assert result.content.startswith("partial\n\nCommand was killed by signal")
    assert shown in result.content
