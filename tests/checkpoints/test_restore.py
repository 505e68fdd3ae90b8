"""Restore plans and writes: undoable, never through a link, never into .git, never losing a
file it could not save first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import agentsh.checkpoints.restore as restore_module
from agentsh.checkpoints.restore import RestoreError
from agentsh.session.entries import Role
from tests.checkpoints.conftest import INITIAL, Driver, files_of, git


def test_a_restore_is_undone_by_restoring_the_record_it_made_first(
    driver: Driver, repo: Path
) -> None:
    start = driver.user("go")
    driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    changed = files_of(repo)
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [(i.path, i.action, i.added, i.removed) for i in plan.items] == [
        ("app.py", "modify", 2, 1)
    ]
    result = driver.checkpointer.restore(driver.session, plan)
    assert files_of(repo) == INITIAL
    assert result.undo is not None
    undo = driver.checkpointer.plan_record(result.undo)
    driver.checkpointer.restore(driver.session, undo)
    assert files_of(repo) == changed


def test_the_plan_counts_lines_and_spots_binary_files(driver: Driver, repo: Path) -> None:
    start = driver.user("go")
    driver.tool("write", lambda: (repo / "blob.bin").write_bytes(b"\0\1\2" * 100))
    driver.tool("write", lambda: (repo / "notes.md").write_text("one\ntwo\nthree\n"))
    items = {i.path: i for i in driver.checkpointer.plan(driver.session, start.id).items}
    assert items["blob.bin"].action == "delete" and items["blob.bin"].binary
    assert (items["notes.md"].added, items["notes.md"].removed) == (2, 3)


def test_nothing_is_written_through_a_symlinked_folder(
    driver: Driver, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    start = driver.user("go")
    driver.tool("bash", lambda: (repo / "src" / "lib.py").write_text("VALUE = 2\n"))
    # Someone swaps the folder for a link to a folder outside the project.
    (repo / "src" / "lib.py").rename(tmp_path / "lib.py")
    (repo / "src").rmdir()
    (repo / "src").symlink_to(outside)
    plan = driver.checkpointer.plan(driver.session, start.id)
    (item,) = [i for i in plan.items if i.path == "src/lib.py"]
    assert "symbolic link" in item.problem
    driver.checkpointer.restore(driver.session, plan, include_outside=True)
    assert list(outside.iterdir()) == []


def test_a_hard_linked_file_is_treated_as_outside_the_project(
    driver: Driver, repo: Path, tmp_path: Path
) -> None:
    start = driver.user("go")
    driver.tool("edit", lambda: (repo / "notes.md").write_text("edited\n"))
    elsewhere = tmp_path / "elsewhere.md"
    os.link(repo / "notes.md", elsewhere)
    driver.checkpointer.checkpoint(driver.session, "tool")
    plan = driver.checkpointer.plan(driver.session, start.id)
    (item,) = [i for i in plan.items if i.path == "notes.md"]
    assert "hard links" in item.problem
    driver.checkpointer.restore(driver.session, plan, include_outside=True)
    assert elsewhere.read_text() == "edited\n" and (repo / "notes.md").read_text() == "edited\n"


def test_git_internals_and_the_index_are_never_touched(driver: Driver, repo: Path) -> None:
    (repo / "notes.md").write_text("staged change\n")
    git(repo, "add", "notes.md")
    start = driver.user("go")
    driver.tool("bash", lambda: git(repo, "checkout", "-q", "-b", "other"))
    driver.tool("write", lambda: (repo / "x.txt").write_text("x\n"))
    index = (repo / ".git" / "index").read_bytes()
    head = (repo / ".git" / "HEAD").read_text()
    driver.checkpointer.restore(driver.session, driver.checkpointer.plan(driver.session, start.id))
    assert not (repo / "x.txt").exists()
    assert (repo / ".git" / "index").read_bytes() == index
    assert (repo / ".git" / "HEAD").read_text() == head  # git's own state is git's
    assert git(repo, "diff", "--cached", "--name-only") == "notes.md\n"


def test_a_forged_plan_cannot_reach_git_data_or_leave_the_project(
    driver: Driver, repo: Path
) -> None:
    """Belt and braces: even a plan naming .git (a folder, or a submodule's .git file) or a
    path out of the project writes and deletes nothing there."""
    from agentsh.checkpoints.restore import PlanItem, RestorePlan, apply
    from agentsh.checkpoints.store import ABSENT

    driver.user("go")
    (repo / "sub").mkdir()
    (repo / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    config = (repo / ".git" / "config").read_bytes()
    blob = driver.checkpointer.recorder.store
    with blob.writing():
        ref = blob.put_blob(b"owned\n")
    items = tuple(
        PlanItem(path, action, (ref, 0o100644) if action != "delete" else (ABSENT, 0), current)
        for path, action, current in [
            (".git/config", "modify", (ABSENT, 0)),
            ("sub/.git", "delete", (ABSENT, 0)),
            (".git/hooks/pre-commit", "create", (ABSENT, 0)),
        ]
    )
    result = apply(driver.checkpointer.recorder, RestorePlan(1, items))
    assert not result.written and not result.deleted
    assert sorted((p, "version-control" in why) for p, why in result.failed) == [
        (".git/config", True),
        (".git/hooks/pre-commit", True),
        ("sub/.git", True),
    ]
    assert (repo / ".git" / "config").read_bytes() == config
    assert (repo / "sub" / ".git").exists() and not (repo / ".git/hooks/pre-commit").exists()
    recorder = driver.checkpointer.recorder
    for path in (".git/config", "sub/.git", "../outside.txt", "/etc/passwd"):
        assert restore_module._unsafe(recorder, path)  # a plan marks them: left alone


def test_a_file_over_the_cap_is_never_overwritten_or_deleted(driver: Driver, repo: Path) -> None:
    big = b"x" * (5 * 1024 * 1024)
    start = driver.user("go")
    written = driver.tool("bash", lambda: (repo / "dump.bin").write_bytes(big))
    plan = driver.checkpointer.plan(driver.session, start.id)
    (item,) = plan.items
    assert item.path == "dump.bin" and "max_file_bytes" in item.problem
    driver.checkpointer.restore(driver.session, plan, include_outside=True)
    assert (repo / "dump.bin").read_bytes() == big
    # Gone later, the point where it was too big to keep says why it cannot come back (the
    # list read "kept: its content at that point was not kept").
    driver.tool("bash", (repo / "dump.bin").unlink)
    (item,) = driver.checkpointer.plan(driver.session, written.id).items
    assert item.problem.startswith("agentsh has no copy of it from that point")


def test_a_change_after_the_plan_stops_the_restore_before_any_write(
    driver: Driver, repo: Path
) -> None:
    start = driver.user("go")
    driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    driver.tool("write", lambda: (repo / "notes.md").write_text("v2\n"))
    plan = driver.checkpointer.plan(driver.session, start.id)
    (repo / "notes.md").write_text("typed while the prompt was open\n")
    with pytest.raises(RestoreError, match=r"notes\.md changed after"):
        driver.checkpointer.restore(driver.session, plan)
    assert (repo / "app.py").read_text() == "v2\n"
    # The refused restore took nothing in: planned again, the edit still counts as made
    # outside agentsh, so it is not overwritten without the second confirmation.
    again = driver.checkpointer.plan(driver.session, start.id)
    assert [i.path for i in again.outside] == ["notes.md"]
    driver.checkpointer.restore(driver.session, again)
    assert (repo / "notes.md").read_text() == "typed while the prompt was open\n"
    assert (repo / "app.py").read_text() == INITIAL["app.py"]


def test_a_killed_restore_leaves_no_temporary_file_behind_after_the_next_capture(
    driver: Driver, repo: Path
) -> None:
    driver.user("go")
    stray = repo / "src" / ".agentsh-restore-0123abcd.tmp"
    stray.write_text("half")
    driver.checkpointer.checkpoint(driver.session, "user")
    assert not stray.exists()
    assert "src/.agentsh-restore-0123abcd.tmp" not in driver.checkpointer.recorder.store.cache()


def test_the_temporary_files_a_restore_writes_are_the_ones_swept(
    driver: Driver, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill between a temporary file and its rename leaves it behind: it must carry the
    name the next capture sweeps (the kill -9 test sees this only when the kill lands there)."""
    import agentsh.fsutil as fsutil
    from agentsh.checkpoints.scan import TEMP_PREFIX

    made: list[str] = []
    temp_at = fsutil._temp_at

    def watched(dir_fd: int, prefix: str) -> tuple[str, int]:
        temp, fd = temp_at(dir_fd, prefix)
        made.append(temp)
        return temp, fd

    monkeypatch.setattr(fsutil, "_temp_at", watched)
    start = driver.user("go")
    driver.tool("write", lambda: (repo / "src" / "lib.py").write_text("VALUE = 2\n"))
    driver.checkpointer.restore(driver.session, driver.checkpointer.plan(driver.session, start.id))
    assert (repo / "src" / "lib.py").read_text() == INITIAL["src/lib.py"]
    assert made and all(name.startswith(TEMP_PREFIX) for name in made)


def test_an_entry_from_before_any_checkpoint_has_nothing_to_restore(driver: Driver) -> None:
    entry = driver.session.append_message(Role.USER, "written before checkpoints existed")
    plan = driver.checkpointer.plan(driver.session, entry.id)
    assert plan.problem.startswith("no checkpoint")
    with pytest.raises(RestoreError):
        driver.checkpointer.restore(driver.session, plan)


def test_links_and_modes_come_back_as_they_were(driver: Driver, repo: Path) -> None:
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "current").symlink_to("src")
    start = driver.user("go")

    def change() -> None:
        (repo / "run.sh").chmod(0o755)
        (repo / "current").unlink()
        (repo / "latest").symlink_to("app.py")

    driver.tool("bash", change)
    plan = driver.checkpointer.plan(driver.session, start.id)
    actions = {item.path: item.action for item in plan.items}
    assert actions == {"run.sh": "mode", "current": "create", "latest": "delete"}
    driver.checkpointer.restore(driver.session, plan)
    assert (repo / "run.sh").stat().st_mode & 0o777 == 0o644
    assert (repo / "current").is_symlink() and (repo / "current").readlink() == Path("src")
    assert not (repo / "latest").exists() and not (repo / "latest").is_symlink()


def test_a_front_end_that_moved_the_leaf_first_names_the_entry_it_left(
    driver: Driver, repo: Path
) -> None:
    start = driver.user("go")
    end = driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    (repo / "notes.md").write_text("typed by hand before leaving\n")
    branch_a = files_of(repo)
    driver.session.move_leaf(start.id)
    plan = driver.checkpointer.plan(driver.session, start.id)
    driver.checkpointer.restore(driver.session, plan, include_outside=True, leaving=end.id)
    assert files_of(repo) == INITIAL
    # The entry left behind stands for the files as they were when it was left.
    driver.session.move_leaf(end.id)
    back = driver.checkpointer.plan(driver.session, end.id)
    driver.checkpointer.restore(driver.session, back, leaving=start.id)
    assert files_of(repo) == branch_a
