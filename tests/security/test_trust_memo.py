"""The warm search process's memo of memory files (agentsh.trust._DigestMemo): a file is not
read again while its stamp is the one it had, and the memo never gives another answer than
reading would: a change of any kind, a link, a hard link or a moved folder is read afresh."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agentsh import trust
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.trust import Finding, TrustState, check_project, grant


@pytest.fixture
def user() -> UserPaths:
    return UserPaths.from_env()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The memo on (as in the warm process, files count as settled at once), and the files
    actually read."""
    monkeypatch.setattr(trust, "_memo", None)
    trust.remember_memory_digests()
    monkeypatch.setattr(trust._DigestMemo, "SETTLE_S", -60.0)
    read: list[Path] = []
    real = trust.hash_file

    def hash_file(root: Path, path: Path) -> tuple[str, bytes | None, str]:
        read.append(path)
        return real(root, path)

    monkeypatch.setattr(trust, "hash_file", hash_file)
    return read


def _memory(project: Path) -> Path:
    memory = ProjectPaths(project).memory_dir
    (memory / "docs").mkdir(parents=True)
    (memory / "MEMORY.md").write_text("Build: make\n")
    (memory / "docs" / "a.md").write_text("alpha\n")
    return memory


def _fresh(project: Path) -> list[Finding]:
    saved = trust._memo
    trust._memo = None
    try:
        return trust.memory_findings(project, project)
    finally:
        trust._memo = saved


def test_an_unchanged_file_is_not_read_again(project: Path, reads: list[Path]) -> None:
    _memory(project)
    first = trust.memory_findings(project, project)
    assert len(reads) == 2
    reads.clear()
    assert trust.memory_findings(project, project) == first
    assert reads == []
    assert first == _fresh(project)


def _same_size_same_mtime(path: Path) -> None:
    st = path.stat()
    path.write_text("omega\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize(
    "change",
    [
        _same_size_same_mtime,
        lambda p: p.chmod(0o600),
        lambda p: os.link(p, p.parent / "b.md"),  # a second name: refused, as without the memo
        lambda p: (p.unlink(), p.symlink_to("/etc/hostname")),  # a link out: refused
        lambda p: (p.rename(p.parent / "old"), (p.parent / "old").rename(p)),  # moved back
    ],
    ids=["rewritten", "chmod", "hard-link", "link-out", "renamed"],
)
def test_any_change_is_read_afresh(
    project: Path, user: UserPaths, reads: list[Path], change: Callable[[Path], object]
) -> None:
    memory = _memory(project)
    grant(user, check_project(user, project))
    trust.memory_findings(project, project)
    reads.clear()
    change(memory / "docs" / "a.md")
    found = trust.memory_findings(project, project)
    assert memory / "docs" / "a.md" in reads
    assert found == _fresh(project)


def test_a_rewrite_is_a_change_of_trust(project: Path, user: UserPaths, reads: list[Path]) -> None:
    memory = _memory(project)
    grant(user, check_project(user, project))
    assert check_project(user, project).state is TrustState.TRUSTED
    _same_size_same_mtime(memory / "docs" / "a.md")
    assert check_project(user, project).state is TrustState.CHANGED


def test_a_memory_folder_reached_through_a_link_is_read_afresh(
    project: Path, tmp_path: Path, reads: list[Path]
) -> None:
    memory = _memory(project)
    trust.memory_findings(project, project)
    outside = tmp_path / "outside"
    shutil.move(project / ".agentsh", outside)  # the very same files, moved out
    (project / ".agentsh").symlink_to(outside)
    reads.clear()
    found = trust.memory_findings(project, project)
    assert found == _fresh(project) and reads
    assert all(f.digest.startswith("refused:") for f in found), found
    assert memory.exists()


def test_a_file_changed_just_before_it_was_read_is_not_kept(
    project: Path, reads: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trust._DigestMemo, "SETTLE_S", 2.0)
    _memory(project)  # written now: its change time is within the clock's last ticks
    trust.memory_findings(project, project)
    reads.clear()
    trust.memory_findings(project, project)
    assert len(reads) == 2
