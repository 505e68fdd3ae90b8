from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentsh.events import IndexUpdated
from agentsh.memory.index import MemoryIndex, SearchIndexError
from agentsh.memory.watch import MemoryWatcher
from agentsh.paths import ProjectPaths, UserPaths
from tests.memory.conftest import IndexFactory, add_session, write

Paths = tuple[UserPaths, ProjectPaths]


async def _until(predicate: Callable[[], object], within: float) -> float:
    """Seconds until ``predicate()`` is true; fails past ``within`` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        if predicate():
            return time.monotonic() - started
        await asyncio.sleep(0.02)
    raise AssertionError(f"not true within {within} s")


def _found(index: MemoryIndex, query: str) -> bool:
    return bool(index.search(query).results)


@pytest.mark.asyncio
async def test_a_file_edited_while_the_watcher_runs_is_reindexed_within_seconds(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    note = write(memory_dir / "MEMORY.md", "The staging cluster is in Frankfurt.")
    index = make_index()
    updates: list[IndexUpdated] = []
    watcher = MemoryWatcher(index, on_update=updates.append)
    await watcher.start()
    try:
        assert updates and str(note.resolve()) in updates[0].paths  # reconciled at start
        updates.clear()
        write(note, "The staging cluster moved to Helsinki in May.")
        # Only the announcement is awaited: a search would reconcile by itself.
        # The goal is ~1 s (the debounce); 5 s leaves a loaded 2-core machine room and still
        # fails a watcher that waits for a search or polls seldom.
        await _until(lambda: bool(updates), 5.0)
        assert updates[-1].paths == (str(note.resolve()),)
        assert [r.path for r in index.search("helsinki").results] == [".agentsh/memory/MEMORY.md"]
        assert not index.search("frankfurt").results
    finally:
        await watcher.stop()
    assert not watcher.running and watcher.last_error == ""


@pytest.mark.asyncio
async def test_a_deleted_file_is_announced_as_removed(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    note = write(memory_dir / "old.md", "The legacy cron host is cron-01.")
    index = make_index()
    updates: list[IndexUpdated] = []
    watcher = MemoryWatcher(index, on_update=updates.append)
    await watcher.start()
    try:
        updates.clear()
        note.unlink()
        await _until(lambda: bool(updates), 2.0)
        assert updates[-1].removed == (str(note.resolve()),)
        assert index.status().chunks == 0
    finally:
        await watcher.stop()


@pytest.mark.asyncio
async def test_a_memory_folder_created_after_start_is_watched(
    paths: Paths, make_index: IndexFactory
) -> None:
    _user, project = paths
    index = make_index()
    updates: list[IndexUpdated] = []
    watcher = MemoryWatcher(index, on_update=updates.append, root_poll_s=0.2)
    await watcher.start()
    try:
        assert not project.memory_dir.exists()
        write(project.memory_dir / "MEMORY.md", "First memory: use uv.")
        await _until(lambda: bool(updates), 3.0)
        # Once the folder exists it is watched like the others.
        updates.clear()
        write(project.memory_dir / "docs" / "second.md", "Second memory: use ruff.")
        await _until(lambda: bool(updates), 2.0)
        assert _found(index, "ruff")
    finally:
        await watcher.stop()


@pytest.mark.asyncio
async def test_a_new_compaction_summary_is_indexed(paths: Paths, make_index: IndexFactory) -> None:
    user, project = paths
    workspace = add_session(user, project, "ffff-6666")
    index = make_index()
    updates: list[IndexUpdated] = []
    watcher = MemoryWatcher(index, on_update=updates.append)
    await watcher.start()
    try:
        write(
            workspace / "001-summary.md", "## Key Decisions\nKeep the CSV separator as a semicolon."
        )
        await _until(lambda: bool(updates), 2.0)
        [hit] = index.search("csv separator").results
        assert hit.path == "workspace:ffff-6666/001-summary.md"
    finally:
        await watcher.stop()


@pytest.mark.asyncio
async def test_the_watcher_survives_a_failing_reindex_and_a_failing_subscriber(
    memory_dir: Path, make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = make_index()
    real_sync = index.sync
    failures = {"left": 1}

    def flaky_sync(**kwargs: Any) -> object:
        if failures["left"]:
            failures["left"] -= 1
            raise SearchIndexError("disk is full")
        return real_sync(**kwargs)

    def bad_subscriber(_event: IndexUpdated) -> None:
        raise RuntimeError("pane is gone")

    monkeypatch.setattr(index, "sync", flaky_sync)
    watcher = MemoryWatcher(index, on_update=bad_subscriber)
    await watcher.start()
    try:
        assert "disk is full" in watcher.last_error and watcher.errors == 1
        write(memory_dir / "MEMORY.md", "Backups are encrypted with age.")
        await _until(lambda: watcher.reindexes >= 1, 2.0)
        assert watcher.running and watcher.last_error == ""
        assert real_sync().unchanged == 1
    finally:
        await watcher.stop()


@pytest.mark.asyncio
async def test_stop_ends_the_watch_promptly_and_start_is_idempotent(
    memory_dir: Path, make_index: IndexFactory
) -> None:
    watcher = MemoryWatcher(make_index())
    await watcher.start()
    await watcher.start()
    assert watcher.running
    started = time.monotonic()
    await watcher.stop()
    assert time.monotonic() - started < 3.0
    assert not watcher.running
    await watcher.stop()  # stopping twice is harmless


@pytest.mark.asyncio
async def test_the_watcher_survives_a_database_error_while_reconciling(
    memory_dir: Path, make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = make_index()
    real_sync = index.sync
    failures = {"left": 1}

    def locked_sync(**kwargs: Any) -> object:
        if failures["left"]:
            failures["left"] -= 1
            raise sqlite3.OperationalError("database is locked")
        return real_sync(**kwargs)

    monkeypatch.setattr(index, "sync", locked_sync)
    watcher = MemoryWatcher(index)
    await watcher.start()
    try:
        assert watcher.running and "database is locked" in watcher.last_error
        write(memory_dir / "MEMORY.md", "The release branch is cut on Thursdays.")
        await _until(lambda: watcher.reindexes >= 1, 3.0)
        assert watcher.running and watcher.last_error == ""
    finally:
        await watcher.stop()
