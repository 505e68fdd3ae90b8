"""What an interactive front end calls (agent.files()): plan, diff, restore, marks, listing;
the slow halves in a worker thread, the log appended only on the caller's thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agentsh.checkpoints.restore import RestoreError
from agentsh.checkpoints.session_files import SessionFiles
from agentsh.session.entries import AnyEntry, CheckpointEntry
from tests.checkpoints.conftest import INITIAL, AgentFactory, Driver, files_of


def files_of_driver(driver: Driver) -> SessionFiles:
    return SessionFiles(driver.checkpointer, lambda: driver.session)


@pytest.mark.asyncio
async def test_a_restore_appends_to_the_log_only_on_the_callers_thread(
    driver: Driver, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = driver.user("go")
    end = driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    threads: list[int] = []
    append = driver.session.append

    def watched(entry: AnyEntry) -> None:
        threads.append(threading.get_ident())
        append(entry)

    monkeypatch.setattr(driver.session, "append", watched)
    files = files_of_driver(driver)
    driver.session.move_leaf(start.id)
    plan = await files.plan(start.id)
    assert [(i.path, i.added, i.removed) for i in plan.items] == [("app.py", 2, 1)]
    diff = await files.diff(plan)
    assert "-v2" in diff and "+    return 1" in diff
    result = await files.restore(plan, leaving=end.id)
    assert files_of(repo) == INITIAL
    assert result.written == ["app.py"] and result.undo is not None
    assert result.undo.target_id == end.id  # the files left behind stand at the entry left
    assert threads and set(threads) == {threading.get_ident()}

    # The restore is undone by going back.
    driver.session.move_leaf(end.id)
    back = await files.plan(end.id)
    await files.restore(back, leaving=start.id)
    assert (repo / "app.py").read_text() == "v2\n"


@pytest.mark.asyncio
async def test_marks_and_listing_follow_the_records(driver: Driver, repo: Path) -> None:
    start = driver.user("go")
    end = driver.tool("write", lambda: (repo / "new.txt").write_text("x\n"))
    files = files_of_driver(driver)
    marks = files.marks()
    assert marks[end.id].changed == 1 and marks[end.id].files == ("new.txt",)
    assert start.id not in marks
    # Files restored to an entry were not changed by it: no mark there.
    driver.session.move_leaf(start.id)
    await files.restore(await files.plan(start.id), leaving=end.id)
    assert not (repo / "new.txt").exists()
    marks = files.marks()
    assert start.id not in marks and marks[end.id].changed == 1
    rows = await files.listing()
    assert rows and all(isinstance(r.record, CheckpointEntry) for r in rows)
    assert not any(r.problem for r in rows)
    assert {r.record.target_id for r in rows if not r.on_path} == {end.id}


@pytest.mark.asyncio
async def test_an_entry_before_any_checkpoint_and_a_plan_with_a_problem(
    driver: Driver, repo: Path
) -> None:
    files = files_of_driver(driver)
    first = driver.reply("before any checkpoint")
    plan = await files.plan(first.id)
    assert not plan.problem and not plan.items  # nothing known there: nothing to offer
    driver.user("go")
    driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    end = driver.reply("done")
    assert driver.checkpointer.target(driver.session, end.id) is not None
    # A store reset (another store id): the plan says why, and a restore refuses.
    driver.checkpointer.recorder.store.store_id = "another"
    gone = await files.plan(end.id)
    assert "store is gone" in gone.problem
    with pytest.raises(RestoreError):
        await files.restore(gone)
    assert files_of(repo) == {**INITIAL, "app.py": "v2\n"}


def test_the_agent_offers_the_files_only_when_checkpoints_are_on(
    make_agent: AgentFactory, agentsh_home: Path
) -> None:
    agent = make_agent(None)
    files = agent.files()
    assert files is not None and files is agent.files()
    config = agentsh_home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[checkpoints]\nenabled = false\n")
    assert make_agent(None).files() is None


@pytest.mark.asyncio
async def test_the_diff_of_a_big_file_is_not_computed(driver: Driver, repo: Path) -> None:
    """difflib is quadratic at worst: a file over a megabyte is named, not diffed."""
    big = "".join(f"line {n}\n" for n in range(200_000))  # ~2 MB, under max_file_bytes
    (repo / "big.txt").write_text(big)
    driver.checkpointer.checkpoint(driver.session, "tool")
    start = driver.user("go")
    driver.tool("write", lambda: (repo / "big.txt").write_text(big.replace("line 7\n", "")))
    files = files_of_driver(driver)
    plan = await files.plan(start.id)
    assert [i.path for i in plan.items] == ["big.txt"]
    assert "too large to show a diff" in await files.diff(plan)
