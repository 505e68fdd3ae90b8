"""The store budget: oldest history goes first, current files never, and every eviction is
told to the user."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from agentsh.checkpoints import budget
from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.session.session import Session
from tests.checkpoints.conftest import Driver


def test_over_budget_the_oldest_history_is_dropped_and_reported(driver: Driver, repo: Path) -> None:
    first = driver.user("go")
    for round_ in range(6):
        data = os.urandom(60_000) + bytes([round_])
        driver.tool("write", partial((repo / "data.bin").write_bytes, data))
    last = driver.tool("write", lambda: (repo / "notes.md").write_text("last\n"))
    store = driver.checkpointer.recorder.store
    size = budget.total_bytes(driver.checkpointer.user)
    report = budget.enforce_budget(driver.checkpointer.user, size // 3, store)
    first_eviction = report.evictions[0]
    assert "dropped the" in first_eviction and "no longer restore files" in first_eviction
    assert store.horizon() > 0
    assert budget.total_bytes(driver.checkpointer.user) < size
    old = driver.checkpointer.plan(driver.session, first.id)
    assert "dropped" in old.problem
    recent = driver.checkpointer.plan(driver.session, last.id)
    assert not recent.problem
    # The files as they are now are never evicted: a capture still knows them all.
    cache = store.cache()
    assert all(store.get_blob(row.ref) is not None for row in cache.values() if len(row.ref) == 64)


def test_an_impossible_budget_is_reported_through_the_agents_notices(
    repo: Path, make_checkpointer: Callable[..., Checkpointer], user_paths: object
) -> None:
    checkpointer = make_checkpointer(repo, store_max_mb=0)
    session = Session.create(None, repo)
    driver = Driver(session, checkpointer)
    driver.user("go")
    driver.tool("write", lambda: (repo / "a.txt").write_text("a\n"))
    notices = checkpointer.take_notices()
    assert any("budget, dropped the" in n for n in notices)
    assert sum("no file history left" in n for n in notices) == 1  # told once, not per capture


def test_every_store_is_reported_in_one_sentence_however_many_passes_it_took(
    driver: Driver, repo: Path
) -> None:
    driver.user("go")
    for round_ in range(12):
        data = os.urandom(60_000) + bytes([round_])
        driver.tool("write", partial((repo / "data.bin").write_bytes, data))
    store = driver.checkpointer.recorder.store
    records = store.journal_size()
    size = budget.total_bytes(driver.checkpointer.user)
    report = budget.enforce_budget(driver.checkpointer.user, size // 4, store)
    (sentence,) = report.evictions  # a quarter of the records per pass: several passes
    dropped = records - store.journal_size()
    assert dropped > records // 4
    assert f"dropped the {dropped} oldest file changes of {repo}" in sentence


def test_an_idle_projects_copies_go_before_the_history_of_the_project_in_use(
    driver: Driver, repo: Path, tmp_path: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    """Another project, last used before, with no history left but big untracked files: its
    copies kept every capture here from keeping any history (each one was dropped at once)."""
    idle_root = tmp_path / "data-folder"
    idle_root.mkdir()
    for i in range(4):
        (idle_root / f"table{i}.bin").write_bytes(os.urandom(200_000))
    idle = make_checkpointer(idle_root)
    assert idle.capture() is not None  # the first capture copies every file: no history
    idle.close()
    start = driver.user("go")
    driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    store = driver.checkpointer.recorder.store
    ours = store.disk_bytes()
    report = budget.enforce_budget(driver.checkpointer.user, ours + 300_000, store)
    assert store.horizon() == 0  # our history is all there
    assert not driver.checkpointer.plan(driver.session, start.id).problem
    (sentence,) = report.evictions
    assert f"dropped the copies of the files of {idle_root}" in sentence
    assert budget.total_bytes(driver.checkpointer.user) <= ours + 300_000
    # The idle project's next capture starts afresh.
    again = make_checkpointer(idle_root).capture()
    assert again is not None and again.baseline


def test_the_budget_drops_only_what_it_needs_as_the_freed_pages_go_back_to_the_disk(
    driver: Driver, repo: Path
) -> None:
    """The freed pages were never handed back (``PRAGMA incremental_vacuum`` through
    ``execute`` frees one page), so the size never fell and every pass dropped more: a store
    over budget lost all its history at once, and then each new change at its capture."""
    driver.user("go")
    for round_ in range(8):
        data = os.urandom(60_000) + bytes([round_])
        driver.tool("write", partial((repo / "data.bin").write_bytes, data))
    store = driver.checkpointer.recorder.store
    records = store.journal_size()
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the size is the database's alone
    size = budget.total_bytes(driver.checkpointer.user)
    report = budget.enforce_budget(driver.checkpointer.user, size - 150_000, store)
    assert report.shortfall == ""
    assert budget.total_bytes(driver.checkpointer.user) <= size - 150_000
    assert 0 < store.journal_size() < records  # some history dropped, not all of it
