"""A repository's ignore patterns cannot make agentsh's own git listings spin.

git's matcher backtracks on lines with several ``**``: ``**/**/…/x`` (twelve) over a folder 40
deep kept ``git ls-files --others --exclude-standard`` busy for more than a minute, so every
checkpoint, every ``bash`` call's before/after snapshot and ``@`` completion waited out its
timeout (30 s, 5 s twice, 10 s) in such a repository. Now a line git will surely read is
looked at first (an untracked folder's .gitignore too) and keeps git out; one that appears
later costs one shorter timeout, after which the repository is listed without git at once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentsh import git_listing
from agentsh.checkpoints import scan
from agentsh.git_listing import listing_refusal, run_listing, spinning_pattern
from agentsh.gitutil import GitError
from agentsh.tools import changes
from agentsh.tui.file_list import list_project_files

SPIN = "/".join(["**"] * 12) + "/x"
DEEP = "/".join(["a"] * 40)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _deep_repo(root: Path) -> Path:
    """A repository with one file 40 folders deep (and a plain one at the top)."""
    _git(root, "init", "-q")
    (root / "top.txt").write_text("top\n")
    folder = root / DEEP
    folder.mkdir(parents=True)
    (folder / "f.txt").write_text("deep\n")
    return root


@pytest.mark.parametrize(
    ("line", "spins"),
    [
        ("*.py", False),
        ("/build/", False),
        ("**/node_modules/**", False),
        ("a/**/b/**", False),
        ("**/x", False),
        ("# **/**/**/x", False),
        ("**/**/x", True),
        ("***/**/x", True),
        ("a/**/b/**/c/**", True),
        ("!**/**/keep", True),
        (SPIN, True),
    ],
)
def test_lines_that_can_make_git_spin_are_told_from_ordinary_ones(line: str, spins: bool) -> None:
    assert spinning_pattern(line) is spins


def test_a_spinning_line_in_the_top_gitignore_keeps_git_from_listing(tmp_path: Path) -> None:
    root = _deep_repo(tmp_path)
    (root / ".gitignore").write_text(f"*.log\n{SPIN}\n")
    started = time.monotonic()
    listing = scan.list_files(root, max_files=1000)
    assert time.monotonic() - started < 5  # was the 30 s timeout, then the walk
    assert listing.source == "walk"
    assert f"{DEEP}/f.txt" in listing.paths and "top.txt" in listing.paths
    reason = listing_refusal(root)
    assert reason is not None and reason.startswith(".gitignore line 2 (")
    assert "\n" not in reason


def test_the_config_can_name_an_excludes_file_and_it_is_read_too(tmp_path: Path) -> None:
    root = _deep_repo(tmp_path)
    (root / "ignores").write_text(f"{SPIN}\n")
    _git(root, "config", "core.excludesFile", "ignores")
    reason = listing_refusal(root)
    assert reason is not None and reason.startswith("ignores line 1")


def test_a_tracked_gitignore_in_a_folder_is_read_too(tmp_path: Path) -> None:
    root = _deep_repo(tmp_path)
    (root / "a" / ".gitignore").write_text(f"{SPIN}\n")
    _git(root, "add", "a/.gitignore")
    reason = listing_refusal(root)
    assert reason is not None and reason.startswith("a/.gitignore line 1")


def test_an_untracked_folders_gitignore_is_read_too(tmp_path: Path) -> None:
    # git reads it on its way through the untracked folder: each new process waited out one
    # 10 s timeout before. Now it is found by a listing that reads only the top-level ignore
    # files (checked first), which cannot spin.
    root = _deep_repo(tmp_path)
    (root / "a" / "a" / ".gitignore").write_text(f"*.tmp\n{SPIN}\n")
    reason = listing_refusal(root)
    assert reason is not None and reason.startswith("a/a/.gitignore line 2")


def test_an_untracked_gitignore_in_an_ignored_folder_is_not_read(tmp_path: Path) -> None:
    # git never enters a folder the top .gitignore ignores, so its files do not count.
    root = _deep_repo(tmp_path)
    (root / ".gitignore").write_text("/a/\n")
    (root / "a" / ".gitignore").write_text(f"{SPIN}\n")
    assert listing_refusal(root) is None
    listing = scan.list_files(root, max_files=1000)
    assert listing.source == "git" and sorted(listing.paths) == [".gitignore", "top.txt"]


def test_a_folder_a_tracked_nested_gitignore_ignores_is_not_walked(tmp_path: Path) -> None:
    # web/.gitignore (tracked) ignores node_modules: git never enters web/node_modules, so
    # neither does the check (nor reads a .gitignore a package ships there).
    root = _deep_repo(tmp_path)
    (root / "web" / "node_modules" / "pkg").mkdir(parents=True)
    (root / "web" / ".gitignore").write_text("node_modules/\n")
    (root / "web" / "node_modules" / "pkg" / ".gitignore").write_text(f"{SPIN}\n")
    _git(root, "add", "web/.gitignore")
    assert listing_refusal(root) is None
    # Anchored and nested patterns are rewritten from the top; negations and ** are left out.
    assert git_listing._from_top("web", "/dist/") == "web/dist/"
    assert git_listing._from_top("web", "a/b") == "web/a/b"
    assert git_listing._from_top("web", "*.log") == "web/**/*.log"
    assert git_listing._from_top("web", "!keep") == ""
    assert git_listing._from_top("web", "**/x") == ""


def test_a_line_that_appears_later_costs_one_timeout_then_git_is_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Checked once per state of the top-level files: a file written in an untracked folder
    # afterwards is caught by the (shorter) listing timeout, then git is not asked again.
    root = _deep_repo(tmp_path)
    assert listing_refusal(root) is None
    (root / "a" / ".gitignore").write_text(f"{SPIN}\n")
    args = ["ls-files", "-z", "--others", "--exclude-standard"]
    with pytest.raises(GitError, match="took over 1 s to apply the ignore patterns"):
        run_listing(args, root=root, timeout=1)
    # Git is not asked again (counted, not timed: a loaded machine took 0.5 s to say no).
    asked: list[Sequence[str]] = []
    monkeypatch.setattr(git_listing, "run_git", lambda args, **_kw: asked.append(args))
    with pytest.raises(GitError, match="listed without git"):
        run_listing(args, root=root, timeout=1)
    assert asked == []
    assert git_listing.known_listing_refusal(root) == listing_refusal(root)


def test_the_bash_snapshot_walks_a_repository_git_may_not_list(tmp_path: Path) -> None:
    root = _deep_repo(tmp_path)
    (root / ".gitignore").write_text(f"{SPIN}\n")
    started = time.monotonic()
    before = asyncio.run(changes.snapshot(root))
    assert time.monotonic() - started < 4  # was the 5 s timeout, and no snapshot at all
    assert before is not None and not before.git
    (root / "new.txt").write_text("new\n")
    after = asyncio.run(changes.snapshot(root))
    assert changes.changed_files(before, after) == ["new.txt"]


def test_at_completion_walks_a_repository_git_may_not_list(tmp_path: Path) -> None:
    root = _deep_repo(tmp_path)
    (root / ".gitignore").write_text(f"{SPIN}\n")
    started = time.monotonic()
    files = list_project_files(root)
    assert time.monotonic() - started < 4  # was the 10 s timeout
    assert f"{DEEP}/f.txt" in files


def test_an_ordinary_repository_is_still_listed_by_git(tmp_path: Path) -> None:
    root = _deep_repo(tmp_path)
    (root / ".gitignore").write_text("**/node_modules/**\n*.log\n")
    (root / "x.log").write_text("log\n")
    assert listing_refusal(root) is None
    listing = scan.list_files(root, max_files=1000)
    assert listing.source == "git"
    assert "x.log" not in listing.paths and "top.txt" in listing.paths


def test_a_fifo_named_as_the_excludes_file_does_not_block(tmp_path: Path) -> None:
    """git's own open() of a FIFO ignore file waits forever (each listing waited out its
    10 s timeout, blamed on a spinning line): it is refused up front, named."""
    root = _deep_repo(tmp_path)
    os.mkfifo(root / "pipe")
    _git(root, "config", "core.excludesFile", "pipe")
    refusal = listing_refusal(root)
    assert refusal is not None and refusal.startswith("pipe is not a regular file")


def test_a_fifo_gitignore_keeps_git_from_listing_and_the_walk_lists(tmp_path: Path) -> None:
    root = _deep_repo(tmp_path)
    os.mkfifo(root / ".gitignore")
    refusal = listing_refusal(root)
    assert refusal is not None and refusal.startswith(".gitignore is not a regular file")
    started = time.monotonic()
    files = list_project_files(root)
    assert time.monotonic() - started < 8  # git waited out its 10 s timeout on the FIFO
    assert f"{DEEP}/f.txt" in files
