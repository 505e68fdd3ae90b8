"""Captures: what is covered, what is stored, and that only changed files are read."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentsh.checkpoints import scan
from agentsh.checkpoints.capture import COARSE_CLOCK_NS
from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.checkpoints.store import (
    ABSENT,
    GIT_PREFIX,
    NOT_CAPTURED,
    CheckpointStore,
    blob_hash,
)
from agentsh.config import CheckpointSettings
from agentsh.paths import UserPaths
from tests.checkpoints.conftest import git, write_files


def journal(store: CheckpointStore) -> list[tuple[str, str, str]]:
    """(path, before, after) of every record, with refs reduced to a kind."""
    rows = store._db.execute(
        "SELECT path, before_ref, after_ref FROM journal ORDER BY seq"
    ).fetchall()

    def kind(ref: str) -> str:
        return {ABSENT: "absent", NOT_CAPTURED: "?"}.get(
            ref, "git" if ref.startswith(GIT_PREFIX) else "blob"
        )

    return [(p, kind(b), kind(a)) for p, b, a in rows]


def blob_count(store: CheckpointStore) -> int:
    return int(store._db.execute("SELECT count(*) FROM blobs").fetchone()[0])


def test_the_first_capture_of_a_git_project_stores_only_what_git_does_not_hold(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    (repo / "untracked.txt").write_text("new\n")
    (repo / "app.py").write_text("changed but not committed\n")
    (repo / ".gitignore").write_text("build/\n")
    write_files(
        repo, {"build/out.bin": "ignored", ".venv/lib/x.py": "venv", "node_modules/m.js": "m"}
    )
    checkpointer = make_checkpointer(repo)
    capture = checkpointer.capture()
    assert capture is not None and capture.baseline
    store = checkpointer.recorder.store
    cache = store.cache()
    assert set(cache) == {
        "app.py",
        "notes.md",
        "old.txt",
        "src/lib.py",
        "untracked.txt",
        ".gitignore",
    }
    assert cache["notes.md"].ref.startswith(GIT_PREFIX)  # byte-identical to the index: not copied
    assert not cache["app.py"].ref.startswith(GIT_PREFIX)  # differs from the index: stored
    assert blob_count(store) == 3  # app.py, untracked.txt, .gitignore


def test_changes_are_journaled_with_the_old_content_copied_out_of_git(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    (repo / "notes.md").write_text("edited\n")
    (repo / "old.txt").unlink()
    (repo / "new.txt").write_text("created\n")
    (repo / "src" / "lib.py").chmod(0o755)
    capture = checkpointer.capture()
    assert capture is not None
    store = checkpointer.recorder.store
    assert sorted(journal(store)) == [
        ("new.txt", "absent", "blob"),
        ("notes.md", "blob", "blob"),
        ("old.txt", "blob", "absent"),
        # Only the mode changed, but no longer as git has it: copied, so looked at each time
        # (git status says nothing of it once its mode is back as in the index).
        ("src/lib.py", "blob", "blob"),
    ]
    before = store.first_after(0)["notes.md"][0]
    assert store.get_blob(before) == b"notes\nmore notes\n"
    # Nothing changed: the next capture writes nothing and keeps the position.
    again = checkpointer.capture()
    assert again is not None and again.seq == capture.seq and again.changed == ()


def test_a_second_write_within_the_timestamp_granularity_is_still_seen(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    path = repo / "notes.md"
    path.write_text("first\n")
    first = checkpointer.capture()
    stat = path.stat()
    # Same size, and the mtime and ctime put back: only the content differs.
    path.write_text("secnd\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    second = checkpointer.capture()
    assert first is not None and second is not None
    assert second.changed == ("notes.md",)


def test_symlinks_are_captured_as_links_and_big_files_are_not_read(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    checkpointer = make_checkpointer(repo, max_file_bytes=1024)
    checkpointer.capture()
    (repo / "link").symlink_to("/etc/passwd")
    (repo / "big.bin").write_bytes(b"x" * 5000)
    capture = checkpointer.capture()
    assert capture is not None
    store = checkpointer.recorder.store
    cache = store.cache()
    assert store.get_blob(cache["link"].ref) == b"/etc/passwd"  # the target text, not the file
    assert cache["big.bin"].ref == NOT_CAPTURED
    (repo / "big.bin").write_bytes(b"y" * 6000)
    checkpointer.capture()
    assert ("big.bin", "?", "?") in journal(store)


def test_nothing_is_read_through_a_folder_that_became_a_symlink(
    repo: Path, make_checkpointer: Callable[..., Checkpointer], tmp_path: Path
) -> None:
    # src/lib.py is tracked; src/ is then swapped for a link to the user's ~/.ssh, where a
    # file of the same name exists. git calls src/lib.py deleted; the store must not take in
    # the key, now or in a first capture of a project already in that state.
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    (ssh / "lib.py").write_text("PRIVATE KEY\n")
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    shutil.rmtree(repo / "src")
    (repo / "src").symlink_to(ssh, target_is_directory=True)
    other = tmp_path / "other-home"
    first = Checkpointer(
        UserPaths(other / "config", other / "data", other / "cache"), repo, CheckpointSettings()
    )
    try:
        for each in (checkpointer, first):
            assert each.capture() is not None
            store = each.recorder.store
            assert "src/lib.py" not in store.cache()
            assert not any(b"PRIVATE KEY" in p.read_bytes() for p in store.path.parent.iterdir())
    finally:
        first.close()
    assert ("src/lib.py", "blob", "absent") in journal(checkpointer.recorder.store)


def test_a_hard_linked_file_is_not_read_into_the_store(
    repo: Path, make_checkpointer: Callable[..., Checkpointer], tmp_path: Path
) -> None:
    # A name in the project for a file outside it (ln ~/.ssh/id_ed25519 notes.txt, by a
    # command or an unpacked archive): restore treats it as outside the project, so a capture
    # must not copy the key into the store either, in a first capture or a later one.
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    key = ssh / "id_ed25519"
    key.write_text("PRIVATE KEY\n")
    os.link(key, repo / "notes.txt")
    other = tmp_path / "other-home"
    first = Checkpointer(
        UserPaths(other / "config", other / "data", other / "cache"), repo, CheckpointSettings()
    )
    checkpointer = make_checkpointer(repo)
    try:
        assert first.capture() is not None  # the baseline
        checkpointer.capture()
        assert first.recorder.store.cache()["notes.txt"].ref == NOT_CAPTURED
        os.link(key, repo / "app.txt")  # appears later
        (repo / "notes.txt").unlink()
        (repo / "notes.txt").write_text("my own notes\n")  # and then a file of its own
        for each in (checkpointer, first):
            assert each.capture() is not None
            store = each.recorder.store
            assert store.cache()["app.txt"].ref == NOT_CAPTURED
            assert store.get_blob(store.cache()["notes.txt"].ref) == b"my own notes\n"
            assert not any(b"PRIVATE KEY" in p.read_bytes() for p in store.path.parent.iterdir())
    finally:
        first.close()


def test_a_folder_swapped_for_a_link_after_the_scan_is_not_read_through(
    repo: Path, tmp_path: Path
) -> None:
    # The scan saw src/lib.py (and that src/ is a real folder); a process then swaps src/ for a
    # link to ~/.ssh, where a file of the same name exists, before the content is read.
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    (ssh / "lib.py").write_text("PRIVATE KEY\n")
    st = os.lstat(repo / "src" / "lib.py")
    shutil.rmtree(repo / "src")
    (repo / "src").symlink_to(ssh, target_is_directory=True)
    assert scan.read_content(repo, "src/lib.py", st, 1 << 20) is None


def test_a_file_that_becomes_ignored_is_forgotten_not_deleted(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    (repo / "scratch.log").write_text("log\n")
    checkpointer.capture()
    # Older than the coarse-clock margin by the next capture, so known to predate it.
    time.sleep(COARSE_CLOCK_NS / 1e9 + 0.01)
    (repo / ".gitignore").write_text("*.log\n")
    checkpointer.capture()
    store = checkpointer.recorder.store
    assert "scratch.log" not in store.cache()
    assert ("scratch.log", "blob", "absent") not in journal(store)
    # Un-ignored again, its inode predates the last capture: its past is unknown, so no
    # restore will ever delete it.
    time.sleep(0.01)
    (repo / ".gitignore").write_text("")
    checkpointer.capture()
    assert ("scratch.log", "?", "blob") in journal(store)


def test_a_project_without_git_is_walked_honouring_gitignore(
    tmp_path: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    root = tmp_path / "plain"
    write_files(
        root,
        {
            "a.txt": "a",
            "sub/b.txt": "b",
            ".gitignore": "*.tmp\n",
            "x.tmp": "ignored",
            "node_modules/dep/i.js": "dep",
            ".agentsh/memory/MEMORY.md": "own state",
        },
    )
    checkpointer = make_checkpointer(root)
    capture = checkpointer.capture()
    assert capture is not None and capture.files == 3
    assert set(checkpointer.recorder.store.cache()) == {"a.txt", "sub/b.txt", ".gitignore"}


def test_a_damaged_store_is_moved_aside_and_replaced(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    path = checkpointer.recorder.store.path
    checkpointer.close()
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        extra.unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    fresh = make_checkpointer(repo)
    capture = fresh.capture()
    assert capture is not None and capture.baseline
    assert [p.name for p in path.parent.iterdir() if ".damaged-" in p.name]
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(next(path.parent.glob("*.damaged-*"))).execute("SELECT 1 FROM meta")


def test_the_repository_config_runs_nothing(
    repo: Path, make_checkpointer: Callable[..., Checkpointer], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    # A clean filter runs when git compares a file whose stat changed with the index.
    (repo / ".gitattributes").write_text("* filter=evil\n")
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    checkpointer.capture()
    os.utime(repo / "old.txt", (1, 1))  # stat-dirty, same content
    (repo / "notes.md").write_text("x\n")
    checkpointer.capture()
    assert not marker.exists()


def cache_matches_disk(checkpointer: Checkpointer, root: Path) -> list[str]:
    """Paths where the stat cache disagrees with the covered files on disk."""
    listed = set(git(root, "ls-files", "-z", "-c", "-o", "--exclude-standard").split("\0")) - {""}
    on_disk = {p for p in listed if (root / p).is_file() or (root / p).is_symlink()}
    cache = checkpointer.recorder.store.cache()
    wrong = sorted(on_disk ^ set(cache))
    for path in on_disk & set(cache):
        data = (root / path).read_bytes()
        ref = cache[path].ref
        if ref.startswith(GIT_PREFIX):
            same = scan.git_blob_id(data, ref[len(GIT_PREFIX) :]) == ref[len(GIT_PREFIX) :]
        else:
            same = ref == blob_hash(data)
        if not same:
            wrong.append(path)
    return wrong


def test_the_quick_paths_see_what_a_full_listing_sees(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    lib = repo / "src" / "lib.py"
    steps: list[tuple[str, Callable[[], object]]] = [
        ("edit a tracked file", lambda: lib.write_text("VALUE = 2\n")),
        ("delete a tracked file", lambda: (repo / "old.txt").unlink()),
        ("put it back as committed", lambda: (repo / "old.txt").write_text("keep me\n")),
        (
            "stage an edit",
            lambda: ((repo / "notes.md").write_text("staged\n"), git(repo, "add", "-A")),
        ),
        ("commit", lambda: git(repo, "commit", "-qm", "two")),
        ("new untracked file", lambda: (repo / "new.txt").write_text("n\n")),
        ("revert the edit", lambda: lib.write_text("VALUE = 1\n")),
        ("touch without change", lambda: os.utime(repo / "app.py")),
        ("git checkout of a file", lambda: git(repo, "checkout", "HEAD~1", "--", "notes.md")),
        ("ignore a file", lambda: (repo / ".gitignore").write_text("new.txt\n")),
    ]
    for name, step in steps:
        step()
        checkpointer.capture()
        assert cache_matches_disk(checkpointer, repo) == [], name


def test_a_targeted_capture_takes_a_new_file_unless_it_is_ignored(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    (repo / ".gitignore").write_text("build/\n")
    checkpointer = make_checkpointer(repo)
    checkpointer.capture()
    checkpointer.capture()  # a full listing: the git state is now known to this process
    write_files(repo, {"build/out.txt": "built\n", "made.txt": "made\n"})
    capture = checkpointer.capture([repo / "build" / "out.txt", repo / "made.txt"])
    assert capture is not None and capture.changed == ("made.txt",)
    assert cache_matches_disk(checkpointer, repo) == []


def test_a_gitignore_line_that_makes_git_spin_is_told_once_and_the_walk_lists(
    repo: Path, make_checkpointer: Callable[..., Checkpointer]
) -> None:
    # git's matcher spins on it (tests/security/test_git_ignore_spin.py): agentsh's walk lists
    # the files instead, and the user learns why in one line, once.
    (repo / ".gitignore").write_text("/".join(["**"] * 12) + "/x\n")
    checkpointer = make_checkpointer(repo)
    capture = checkpointer.capture()
    assert capture is not None and capture.files > 1
    (notice,) = checkpointer.take_notices()
    assert notice.startswith(".gitignore line 1 (") and notice.endswith("listed without git")
    assert checkpointer.capture() is not None
    assert checkpointer.take_notices() == []
