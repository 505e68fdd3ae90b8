"""Projects shaped to break a capture or a restore: folders nested past Python's recursion
limit, temporary-file names placed where a sweep would follow a link."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsh.checkpoints.restore as restore_module
from agentsh.checkpoints import scan
from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.paths import UserPaths
from agentsh.session.session import Session
from tests.checkpoints.conftest import Driver, git
from tests.fakes.deep_tree import DEEP, make_deep, read_deep, remove_deep_trees


@pytest.fixture(autouse=True)
def _deep_trees_removed(tmp_path: Path) -> Iterator[None]:
    yield
    remove_deep_trees(tmp_path)


@pytest.mark.slow
def test_folders_nested_past_the_recursion_limit_are_captured_and_restored(
    driver: Driver, repo: Path
) -> None:
    make_deep(repo, b"v1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "deep")
    start = driver.user("change the deep file")
    driver.tool("bash", lambda: make_deep(repo, b"v2\n"))
    assert driver.checkpointer.take_notices() == []
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [(i.path, i.action, i.problem) for i in plan.items] == [(f"{DEEP}/f.txt", "modify", "")]
    driver.checkpointer.restore(driver.session, plan)
    assert read_deep(repo) == b"v1\n"


@pytest.mark.slow
def test_folders_nested_past_the_recursion_limit_outside_git_are_captured_and_restored(
    tmp_path: Path, user_paths: UserPaths, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    """Outside git the files are listed by agentsh's own walk, which recursed once per folder
    level: such a tree failed every checkpoint with a notice."""
    root = tmp_path / "plain"
    root.mkdir()
    make_deep(root, b"v1\n")
    session = Session.create(user_paths.project_sessions_dir(root), root)
    try:
        driver = Driver(session, make_checkpointer(root))
        start = driver.user("change the deep file")
        driver.tool("bash", lambda: make_deep(root, b"v2\n"))
        assert driver.checkpointer.take_notices() == []
        plan = driver.checkpointer.plan(driver.session, start.id)
        items = [(i.path, i.action, i.problem) for i in plan.items]
        assert items == [(f"{DEEP}/f.txt", "modify", "")]
        driver.checkpointer.restore(driver.session, plan)
        assert read_deep(root) == b"v1\n"
    finally:
        session.close()


def test_an_unexpected_error_in_a_capture_is_a_notice_not_the_end_of_the_turn(
    repo: Path, make_checkpointer: Callable[..., Checkpointer], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpointer = make_checkpointer(repo)

    def broken(*_args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(checkpointer.recorder, "capture", broken)
    assert checkpointer.capture() is None
    (notice,) = checkpointer.take_notices()
    assert notice.startswith("Checkpoint failed (unexpected RecursionError")


def test_the_sweep_of_a_killed_restores_files_never_goes_through_a_link(
    repo: Path,
    tmp_path: Path,
    make_checkpointer: Callable[..., Checkpointer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A folder listed as holding a restore's leftover, then swapped for a link to a folder
    elsewhere before the sweep: the file of that name elsewhere stays."""
    outside = tmp_path / "outside"
    outside.mkdir()
    leftover = f"{scan.TEMP_PREFIX}0123456789ab.tmp"
    (outside / leftover).write_text("not agentsh's")
    (repo / "cache").symlink_to(outside, target_is_directory=True)
    (repo / leftover).write_text("a killed restore's")
    assert make_checkpointer(repo).capture() is not None  # the baseline
    checkpointer = make_checkpointer(repo)  # a new process: it lists everything
    listed = scan.list_files

    def listing_then_swap(root: Path, *, max_files: int) -> scan.Listing:
        done = listed(root, max_files=max_files)
        return dataclasses.replace(done, strays=(*done.strays, f"cache/{leftover}"))

    monkeypatch.setattr(scan, "list_files", listing_then_swap)
    assert checkpointer.capture() is not None
    assert (outside / leftover).read_text() == "not agentsh's"
    assert not (repo / leftover).exists()  # the project's own leftover is swept


def test_a_write_outside_the_project_is_named_as_not_covered(
    repo: Path, tmp_path: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    added = tmp_path / "added"  # an --add-dir folder
    added.mkdir()
    checkpointer = make_checkpointer(repo)
    assert checkpointer.capture() is not None
    (added / "x.txt").write_text("x\n")
    assert checkpointer.capture([added / "x.txt", repo / "app.py"]) is not None
    assert checkpointer.capture([added / "y.txt"]) is not None
    (notice,) = checkpointer.take_notices()
    assert notice.startswith(f"{added} is outside the project: file checkpoints do not cover")


def test_a_folder_swapped_for_a_link_after_the_last_check_is_not_written_through(
    driver: Driver, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restore's own check passes; then, before the writes, ``src`` becomes a link to a
    folder elsewhere. The writes walk from the root without following links: nothing lands
    there (the file is reported as not restored)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    start = driver.user("go")
    driver.tool("bash", lambda: (repo / "src" / "lib.py").write_text("VALUE = 2\n"))
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [(i.path, i.problem) for i in plan.items] == [("src/lib.py", "")]
    checked = restore_module._moved_since_plan

    def check_then_swap(*args: Any) -> str:
        moved = checked(*args)
        (repo / "src").rename(tmp_path / "src-moved")
        (repo / "src").symlink_to(outside, target_is_directory=True)
        return moved

    monkeypatch.setattr(restore_module, "_moved_since_plan", check_then_swap)
    result = restore_module.apply(driver.checkpointer.recorder, plan)
    assert [path for path, _why in result.failed] == ["src/lib.py"]
    assert list(outside.iterdir()) == []
    assert (tmp_path / "src-moved" / "lib.py").read_text() == "VALUE = 2\n"


def test_a_project_with_too_many_files_is_listed_once_per_run(
    repo: Path, make_checkpointer: Callable[..., Checkpointer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing 150,000 files to learn there are too many took 2-3 s: twice per tool call."""
    listings: list[Path] = []
    listed = scan.list_files

    def counted(root: Path, *, max_files: int) -> scan.Listing:
        listings.append(root)
        return listed(root, max_files=max_files)

    monkeypatch.setattr(scan, "list_files", counted)
    checkpointer = make_checkpointer(repo)
    checkpointer.recorder.max_files = 3  # the repository has 4
    assert checkpointer.capture() is None
    assert checkpointer.capture() is None
    assert len(listings) == 1
    (notice,) = checkpointer.take_notices()
    assert notice.startswith("Checkpoints are off for this run: the project has more than 3 files")


def test_a_projects_own_file_named_like_a_restores_temporary_file_is_kept(
    driver: Driver, repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    """Only the exact names a restore gives its temporary files are swept: a committed
    ``.agentsh-restore-notes.txt`` was deleted by every capture, and never checkpointed."""
    own = repo / f"{scan.TEMP_PREFIX}notes.txt"
    own.write_text("mine\n")
    (repo / "src" / f"{scan.TEMP_PREFIX}0123abcd.tmp").write_text("a killed restore's\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "own file")
    untracked = repo / f"{scan.TEMP_PREFIX}89abcdef.tmp"
    untracked.write_text("a killed restore's\n")
    start = driver.user("go")
    driver.tool("bash", lambda: own.write_text("changed\n"))
    assert own.read_text() == "changed\n"
    assert not untracked.exists()  # swept
    assert (repo / "src" / f"{scan.TEMP_PREFIX}0123abcd.tmp").exists()  # tracked: git's
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [i.path for i in plan.items] == [own.name]
    driver.checkpointer.restore(driver.session, plan)
    assert own.read_text() == "mine\n"
    # A new process lists every file (the tracked ones too) at its first capture.
    assert make_checkpointer(repo).capture() is not None
    assert own.read_text() == "mine\n"
