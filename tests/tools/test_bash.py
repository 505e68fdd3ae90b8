"""The bash tool: exit codes, streaming, the kept tail and spooled output, timeouts, cancel."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agentsh.events import Event, ToolOutput
from agentsh.tools.base import ToolContext
from agentsh.tools.shell import BashTool
from tests.tools.conftest import MakeCtx, Recorder, call


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "State:\tZ" not in status


async def wait_gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def text_of(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def read_pid(path: Path, within: float = 5.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = text_of(path)
        if text:
            return int(text)
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was never written")


@pytest.mark.asyncio
async def test_output_and_exit_code(project: Path, ctx: ToolContext) -> None:
    result = await call(BashTool(), ctx, command="echo out; echo err >&2; pwd")
    assert not result.is_error
    assert result.content == f"out\nerr\n{project}"
    assert result.details["exit_code"] == 0


@pytest.mark.asyncio
async def test_a_bash_in_the_project_never_runs_the_command(
    project: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user with "." (or an empty entry) in PATH: the repository's own ./bash would get
    # every command the user approved ("echo out") and run whatever it likes instead.
    marker = project.parent / "ran"
    fake = project / "bash"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "", os.environ.get("PATH", "")]))
    result = await call(BashTool(), ctx, command="echo out")
    assert not marker.exists()
    assert result.content == "out"


@pytest.mark.asyncio
async def test_non_zero_exit_is_an_error_that_ends_with_the_code(ctx: ToolContext) -> None:
    result = await call(BashTool(), ctx, command="echo failing; exit 3")
    assert result.is_error
    assert result.content == "failing\n\nCommand exited with code 3"
    assert result.details["exit_code"] == 3
    silent = await call(BashTool(), ctx, command="false")
    assert silent.content == "Command exited with code 1"


@pytest.mark.asyncio
async def test_no_output_is_said_so(ctx: ToolContext) -> None:
    result = await call(BashTool(), ctx, command="true")
    assert result.content == "(no output)" and not result.is_error


@pytest.mark.asyncio
async def test_stdin_is_dev_null(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await call(BashTool(), ctx, command="cat; read line || echo eof", timeout=60)
    assert result.content == "eof"  # a terminal or pipe on stdin: cat waits for the timeout
    assert time.monotonic() - started < 30


@pytest.mark.asyncio
async def test_killed_by_a_signal(ctx: ToolContext) -> None:
    result = await call(BashTool(), ctx, command="kill -TERM $$")
    assert result.is_error and result.content == "Command was killed by signal SIGTERM"


@pytest.mark.asyncio
async def test_colour_codes_are_stripped(ctx: ToolContext) -> None:
    result = await call(BashTool(), ctx, command=r"printf '\033[1;31mred\033[0m plain\n'")
    assert result.content == "red plain"


@pytest.mark.asyncio
async def test_output_streams_as_events_while_the_command_runs(
    ctx: ToolContext, recorder: Recorder, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The command prints "second" only once the test has seen "first" (no race with a
    # loaded machine: output held until the end would leave it waiting for its timeout).
    seen: list[str] = []
    go = tmp_path_factory.mktemp("signal") / "go"  # outside the project: no file changed

    def emit(event: Event) -> None:
        if isinstance(event, ToolOutput):
            seen.append(event.text)
            if "first" in event.text:
                go.touch()
        recorder(event)

    ctx.emit = emit
    command = f"echo first; until [ -e '{go}' ]; do sleep 0.02; done; echo second"
    result = await call(BashTool(), ctx, command=command, timeout=60)
    assert result.content == "first\nsecond" and not result.is_error
    assert "".join(seen) == "first\nsecond\n"
    assert all(e.call_id == "call-1" for e in recorder.of(ToolOutput))


@pytest.mark.asyncio
async def test_streaming_comes_in_pieces_not_bytes(ctx: ToolContext, recorder: Recorder) -> None:
    # 20,000 short lines written one at a time.
    await call(BashTool(), ctx, command="for i in $(seq 20000); do echo $i; done")
    pieces = recorder.of(ToolOutput)
    assert "".join(p.text for p in pieces).split() == [str(i) for i in range(1, 20001)]
    assert len(pieces) < 2000


@pytest.mark.asyncio
async def test_long_output_keeps_the_tail_and_saves_everything(
    make_ctx: MakeCtx, recorder: Recorder
) -> None:
    ctx = make_ctx(bash_max_bytes=4096)
    result = await call(BashTool(), ctx, command="seq 1 100000")
    assert result.truncated and not result.is_error
    body, note = result.content.split("\n\n")
    assert len(body.encode()) <= 4096
    assert body.endswith("\n99999\n100000")
    assert body.split("\n")[0].isdigit()  # starts on a whole line
    saved = Path(result.details["full_output_path"])
    assert saved.parent == ctx.user.project_tool_output_dir(ctx.project.root)
    assert text_of(saved) == "\n".join(str(i) for i in range(1, 100001))
    assert f"Full output saved to {saved}; read it with read(path='{saved}')" in note
    assert "offset=1 for the start" in note
    first = 100000 - len(body.split("\n")) + 1
    assert f"(lines {first}-100000)" in note
    assert "".join(e.text for e in recorder.of(ToolOutput)).endswith("100000\n")


@pytest.mark.asyncio
async def test_output_under_the_limit_is_not_spooled(ctx: ToolContext) -> None:
    result = await call(BashTool(), ctx, command="seq 1 100")
    assert not result.truncated
    assert "full_output_path" not in result.details
    assert not ctx.user.tool_output_dir.exists()


@pytest.mark.asyncio
async def test_timeout_kills_the_whole_process_group(project: Path, ctx: ToolContext) -> None:
    pidfile = project / "child.pid"
    started = time.monotonic()
    result = await call(
        BashTool(), ctx, command=f"sleep 60 & echo $! > {pidfile}; echo waiting; wait", timeout=1
    )
    child = await read_pid(pidfile)
    try:
        assert time.monotonic() - started < 30  # the 1 s timeout, not the 60 s child
        assert result.is_error and result.details["timed_out"] is True
        assert result.content.startswith("waiting\n\nCommand timed out after 1 s")
        assert await wait_gone(child), "the child sleep survived the timeout"
    finally:
        kill_quietly(child)


@pytest.mark.asyncio
async def test_default_timeout_comes_from_settings(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(bash_timeout_s=1.0)
    result = await call(BashTool(), ctx, command="sleep 30")
    assert result.is_error and "timed out after 1 s" in result.content


@pytest.mark.asyncio
async def test_a_command_that_ignores_sigterm_is_killed(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await call(BashTool(), ctx, command="trap '' TERM; sleep 30", timeout=1)
    assert result.details["timed_out"] is True
    assert time.monotonic() - started < 20  # killed after the 1 s timeout, not the 30 s sleep


@pytest.mark.asyncio
async def test_cancel_stops_the_group_and_keeps_what_was_printed(
    project: Path, ctx: ToolContext
) -> None:
    pidfile = project / "child.pid"
    tool = BashTool()
    task = asyncio.create_task(
        call(tool, ctx, command=f"echo started; sleep 60 & echo $! > {pidfile}; wait")
    )
    child = await read_pid(pidfile)
    try:
        await asyncio.sleep(0.1)
        ctx.cancelled.set()
        result = await asyncio.wait_for(task, 3)
        assert result.is_error and result.details["aborted"] is True
        assert result.content.startswith("started\n")
        assert result.content.endswith(
            "Command aborted by the user; the output above is what it printed.\n"
            "[Files changed by this command: child.pid]"  # the command wrote it
        )
        assert await wait_gone(child), "the child sleep survived the cancel"
    finally:
        kill_quietly(child)


@pytest.mark.asyncio
async def test_cancelling_the_task_kills_the_group(project: Path, ctx: ToolContext) -> None:
    pidfile = project / "child.pid"
    task = asyncio.create_task(
        call(BashTool(), ctx, command=f"sleep 60 & echo $! > {pidfile}; wait")
    )
    child = await read_pid(pidfile)
    try:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await wait_gone(child)
    finally:
        kill_quietly(child)


@pytest.mark.asyncio
async def test_a_cancel_while_bash_is_starting_still_kills_the_group(
    project: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shell (and a child it starts) runs before the spawn returns; a cancel landing in
    # that window must still take the whole group down, not only the shell.
    loop = asyncio.get_running_loop()
    original = loop.subprocess_exec

    async def slow_to_return(*args: Any, **kwargs: Any) -> Any:
        started = await original(*args, **kwargs)
        await asyncio.sleep(1.0)
        return started

    monkeypatch.setattr(loop, "subprocess_exec", slow_to_return)
    pidfile = project / "child.pid"
    task = asyncio.create_task(
        call(BashTool(), ctx, command=f"sleep 60 & echo $! > {pidfile}; wait")
    )
    child = await read_pid(pidfile)
    try:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await wait_gone(child)
    finally:
        kill_quietly(child)


@pytest.mark.asyncio
async def test_a_background_job_does_not_hold_the_tool(project: Path, ctx: ToolContext) -> None:
    pidfile = project / "bg.pid"
    started = time.monotonic()
    result = await call(BashTool(), ctx, command=f"sleep 60 & echo $! > {pidfile}; echo back")
    child = await read_pid(pidfile)
    try:
        assert time.monotonic() - started < 30  # not the 60 s of the background job
        assert result.content.startswith("back")
        assert "background process still holds the output open" in result.content
        assert not result.is_error
    finally:
        kill_quietly(child)


@pytest.mark.asyncio
async def test_a_missing_working_folder_is_reported(make_ctx: MakeCtx, tmp_path: Path) -> None:
    ctx = make_ctx(cwd=tmp_path / "gone")
    result = await call(BashTool(), ctx, command="ls")
    assert result.is_error and "does not exist" in result.content


@pytest.mark.asyncio
async def test_approval_detail_is_the_command(ctx: ToolContext) -> None:
    tool = BashTool()
    assert await tool.approval_detail(tool.parse({"command": "rm -rf build"}), ctx) == (
        "rm -rf build"
    )
