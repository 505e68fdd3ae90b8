"""A server's progress notices during a call are shown as the call's live output, as a
command's output is (the TUI's tool block, the editor's tool call), never to the model: the
SDK's own server (``Context.report_progress``) over stdio. They were dropped: a long call said
nothing until it ended."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from agentsh.config import Settings
from agentsh.events import Event, ToolOutput
from agentsh.mcp.mcp_manager import McpManager
from agentsh.mcp.servers_config import Scope, ServerSpec, Transport
from agentsh.mcp.tools import make_tool
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.tools.base import ToolContext
from tests.fakes import mcp_changing_server
from tests.mcp.conftest import make_manager

pytestmark = pytest.mark.asyncio


def _manager(tmp_path: Path, env: tuple[tuple[str, str], ...] = ()) -> McpManager:
    spec = ServerSpec(
        "changing",
        Transport.STDIO,
        Scope.USER,
        Path("test"),
        command=sys.executable,
        args=(mcp_changing_server.__file__,),
        env=env,
    )
    return make_manager([spec], tmp_path)


async def _run_chatty(manager: McpManager, tmp_path: Path, **arguments: object) -> list[str]:
    """Run ``chatty`` as the agent runs an MCP tool; the text of each live output event."""
    manager.start()
    await manager.wait_until_started()
    remote = manager.find("mcp__changing__chatty")
    assert remote is not None
    events: list[Event] = []
    ctx = ToolContext(
        project=ProjectPaths(tmp_path),
        user=UserPaths(tmp_path / "c", tmp_path / "d", tmp_path / "k"),
        settings=Settings(),
        cwd=tmp_path,
        call_id="call-1",
        emit=events.append,
    )
    result = await make_tool(manager, remote).run(dict(arguments), ctx)
    assert not result.is_error and result.content == "chatty done"
    await asyncio.sleep(0)  # a line handed over from the MCP thread just before the result
    assert all(isinstance(e, ToolOutput) and e.call_id == "call-1" for e in events), events
    return [e.text for e in events if isinstance(e, ToolOutput)]


async def test_progress_notices_are_the_calls_live_output(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    try:
        lines = await _run_chatty(manager, tmp_path, steps=3, pause=0.3)
    finally:
        manager.close()
    text = "".join(lines)
    for step in (1, 2, 3):
        assert f"step {step} of 3" in text, text
    assert "3/3" in text and text.endswith("\n")


async def test_a_servers_progress_text_cannot_drive_the_terminal_or_flood_it(
    tmp_path: Path,
) -> None:
    manager = _manager(tmp_path)
    try:
        lines = await _run_chatty(
            manager, tmp_path, steps=400, label="\x1b[2J\x1b]0;pwn\x07" + "x" * 500
        )
    finally:
        manager.close()
    text = "".join(lines)
    assert lines and "\x1b" not in text and "\x07" not in text
    assert all(len(line) <= 240 for line in lines)
    assert len(lines) < 50  # 400 notices at once are not 400 redraws


async def test_no_progress_line_comes_after_the_calls_result(tmp_path: Path) -> None:
    """A notice sent just before the result may be handled after it: shown then, it would be
    the call's output after its end (in an editor, it replaced the result on screen)."""
    manager = _manager(tmp_path)
    manager.start()
    try:
        await manager.wait_until_started()
        remote = manager.find("mcp__changing__chatty")
        assert remote is not None
        late = 0
        for _ in range(30):
            lines: list[str] = []
            result = await manager.call(remote, {"steps": 1}, asyncio.Event(), lines.append)
            assert result.content == "chatty done"
            shown = len(lines)
            await asyncio.sleep(0.05)
            late += len(lines) - shown
        assert late == 0, f"{late} lines came after their call's result"
    finally:
        manager.close()


async def test_a_secret_the_line_is_cut_through_is_not_shown_in_part(tmp_path: Path) -> None:
    """The line was cut to 200 characters before the server's secrets were scrubbed from it:
    a token across the cut no longer matched, and its first half was shown."""
    token = "tok-" + "Q7" * 20
    manager = _manager(tmp_path, env=(("API_TOKEN", token),))
    try:
        lines = await _run_chatty(manager, tmp_path, steps=1, label="x" * 180 + token)
    finally:
        manager.close()
    text = "".join(lines)
    assert lines and "x" * 150 in text
    assert token[:8] not in text, text
