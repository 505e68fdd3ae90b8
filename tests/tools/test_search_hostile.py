"""The search tools in a project shaped to break them: folders nested past Python's recursion
limit, FIFOs where files are expected, a read that never returns."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh.tools import search
from agentsh.tools.base import ToolContext, ToolResult
from agentsh.tools.search import FindTool, GrepTool
from agentsh.tools.walk import Walker
from tests.fakes.deep_tree import DEEP, DEPTH, make_deep, remove_deep_trees
from tests.tools.conftest import call


@pytest.fixture(autouse=True)
def _deep_trees_removed(tmp_path: Path) -> Iterator[None]:
    yield
    remove_deep_trees(tmp_path)


# -- folders nested past the recursion limit -------------------------------------------------


def test_the_walk_lists_folders_nested_past_the_recursion_limit(project: Path) -> None:
    """The walk recursed once per folder level: a cloned project 1,200 folders deep ended
    grep and find with a RecursionError."""
    (project / "top.txt").write_text("")
    make_deep(project, b"needle\n")
    walked = [e.rel for e in Walker(project)]
    chain = ["/".join(["d"] * n) for n in range(1, DEPTH + 1)]
    assert walked == [*chain, f"{DEEP}/f.txt", "top.txt"]


@pytest.mark.asyncio
async def test_grep_and_find_search_folders_nested_past_the_recursion_limit(
    project: Path, ctx: ToolContext
) -> None:
    make_deep(project, b"needle\n")
    grep = await call(GrepTool(use_ripgrep=False), ctx, pattern="needle")
    assert not grep.is_error, grep.content
    assert grep.content == f"{DEEP}/f.txt:1: needle"
    found = await call(FindTool(), ctx, pattern="*.txt")
    assert not found.is_error, found.content
    assert found.content == f"{DEEP}/f.txt"


# -- FIFOs and reads that never return -------------------------------------------------------


def _release(fifo: Path, seconds: float = 5.0) -> None:
    """Open ``fifo``'s write end and close it: a reader blocked in its open() or read() gets
    end of file. ENXIO: no reader (yet, or any more)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            time.sleep(0.02)
        else:
            return


@pytest.fixture
def blocking_fifo(tmp_path: Path) -> Path:
    """A FIFO outside the project for a thread to block on; the test releases it."""
    fifo = tmp_path / "blocks"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.asyncio
async def test_grep_does_not_open_a_fifo_that_was_a_file_when_checked(
    project: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """grep checked a name with stat() and then opened it: a file made a FIFO in between was
    opened, blocking until a writer came (forever). The check is now made on the descriptor,
    opened without blocking. The stat() below sees a regular file where the FIFO is, as it
    would have a moment before the swap; a FIFO that always was one is skipped too."""
    (project / "a.txt").write_text("needle\n")
    os.mkfifo(project / "swapped")
    os.mkfifo(project / "z-fifo")
    regular = project / "a.txt"
    real_stat = Path.stat

    def stat_before_the_swap(self: Path, *, follow_symlinks: bool = True) -> os.stat_result:
        if self == project / "swapped":
            return real_stat(regular, follow_symlinks=follow_symlinks)
        return real_stat(self, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(Path, "stat", stat_before_the_swap)
    try:
        result = await asyncio.wait_for(call(GrepTool(use_ripgrep=False), ctx, pattern="needle"), 5)
        named = await asyncio.wait_for(
            call(GrepTool(use_ripgrep=False), ctx, pattern="needle", path="z-fifo"), 5
        )
    finally:
        monkeypatch.undo()
        _release(project / "swapped", 1.0)  # a grep blocked on it (before the fix) ends
    assert (result.is_error, result.content) == (False, "a.txt:1: needle")
    assert not named.is_error
    assert named.content.startswith("No matches")


@pytest.mark.asyncio
async def test_grep_blocked_in_a_read_is_cancelled_at_once(
    project: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, blocking_fifo: Path
) -> None:
    """A grep whose thread was blocked (a read of a hung mount, a FIFO) could not be stopped:
    Esc set the cancel flag and the tool then waited for the thread. The thread is now left
    to finish on its own; here it blocks in the open() of a FIFO until teardown."""
    (project / "a.txt").write_text("needle\n")

    def blocked_read(*_args: object) -> None:
        blocking_fifo.read_bytes()

    monkeypatch.setattr(search, "_grep_file", blocked_read)
    running = call(GrepTool(use_ripgrep=False), ctx, pattern="needle")
    result = await _cancelled_while_blocked(running, ctx, blocking_fifo)
    assert (result.is_error, result.content) == (True, "grep was cancelled.")


async def _cancelled_while_blocked(
    running: Coroutine[Any, Any, ToolResult], ctx: ToolContext, blocking_fifo: Path
) -> ToolResult:
    """Start the call, cancel it while its thread is blocked: it must end within 2 s."""
    task = asyncio.create_task(running)
    try:
        await asyncio.sleep(0.3)
        assert not task.done()
        started = time.monotonic()
        ctx.cancelled.set()
        result = await asyncio.wait_for(task, 5)
        assert time.monotonic() - started < 2
    finally:
        _release(blocking_fifo, 1.0)  # before the loop closes (it waits for its threads)
    return result


@pytest.mark.asyncio
async def test_find_blocked_in_its_walk_is_cancelled_at_once(
    project: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, blocking_fifo: Path
) -> None:
    def blocked_walk(*_args: object) -> tuple[list[str], int]:
        blocking_fifo.read_bytes()
        return [], 0

    monkeypatch.setattr(search, "_find", blocked_walk)
    result = await _cancelled_while_blocked(call(FindTool(), ctx, pattern="*"), ctx, blocking_fifo)
    assert (result.is_error, result.content) == (True, "find was cancelled.")


@pytest.mark.asyncio
async def test_a_worker_failing_after_its_grep_was_cancelled_is_not_reported(
    project: Path,
    ctx: ToolContext,
    monkeypatch: pytest.MonkeyPatch,
    blocking_fifo: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The tool's task cancelled (the turn ended) while its thread was stuck: what the thread
    raises once it comes back goes nowhere, not to asyncio's 'exception never retrieved'."""
    import gc

    def blocked_then_failing(*_args: object) -> None:
        blocking_fifo.read_bytes()
        raise OSError("the mount came back broken")

    monkeypatch.setattr(search, "_grep_python", blocked_then_failing)
    task = asyncio.create_task(call(GrepTool(use_ripgrep=False), ctx, pattern="needle"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _release(blocking_fifo, 1.0)
    await asyncio.sleep(0.3)  # the thread hands its error to the loop
    del task
    gc.collect()
    await asyncio.sleep(0)
    assert "never retrieved" not in caplog.text
