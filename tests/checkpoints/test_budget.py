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
