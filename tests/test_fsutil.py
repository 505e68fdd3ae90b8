"""fsutil.atomic_write: whole files or none, and an exclusive write never replaces a file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from agentsh.fsutil import atomic_write


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "files"
    path.mkdir()
    return path


def test_atomic_write_replaces_and_leaves_no_temporary_file(folder: Path) -> None:
    target = folder / "a.md"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in folder.iterdir()] == ["a.md"]


def test_exclusive_write_never_replaces_a_file_that_appears_meanwhile(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = folder / "001-summary.md"
    target.write_bytes(b"written by someone else")
    # The file is taken between any look before the write and the write itself.
    monkeypatch.setattr(Path, "exists", lambda self: False)
    with pytest.raises(FileExistsError):
        atomic_write(target, b"mine", exclusive=True)
    assert target.read_bytes() == b"written by someone else"
    assert sorted(p.name for p in folder.iterdir()) == ["001-summary.md"]


def test_exclusive_write_works_where_hard_links_are_not_supported(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(_src: object, _dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)  # the os module fsutil calls
    target = folder / "doc.md"
    atomic_write(target, b"new", exclusive=True)
    assert target.read_bytes() == b"new"
    with pytest.raises(FileExistsError):
        atomic_write(target, b"again", exclusive=True)
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in folder.iterdir()) == ["doc.md"]
    assert target.stat().st_mode & 0o777 == 0o644
