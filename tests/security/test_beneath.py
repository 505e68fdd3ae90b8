"""Reads and writes confined beneath a root: no symlink, '..', FIFO or hard link leads out."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from agentsh.fsutil import LinkRefused, atomic_write, read_beneath, resolve_beneath


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".agentsh" / "memory").mkdir(parents=True)
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "secret").write_text("KEY\n")
    return folder


def test_a_plain_file_and_an_inside_link_are_read(root: Path) -> None:
    (root / "AGENTS.md").write_text("hello")
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    assert read_beneath(root, root / "AGENTS.md") == b"hello"
    assert read_beneath(root, root / "CLAUDE.md") == b"hello"
    assert read_beneath(root, root / "missing.md") is None
    assert read_beneath(root, root / "AGENTS.md", max_bytes=3) == b"hel"


def test_links_out_are_refused_existing_or_dangling(root: Path, outside: Path) -> None:
    (root / "AGENTS.md").symlink_to(outside / "secret")
    (root / "CLAUDE.md").symlink_to(outside / "not-yet")
    with pytest.raises(LinkRefused, match="leads outside"):
        read_beneath(root, root / "AGENTS.md")
    with pytest.raises(LinkRefused, match="leads outside"):
        read_beneath(root, root / "CLAUDE.md")


def test_a_linked_folder_on_the_way_is_refused(root: Path, outside: Path) -> None:
    (root / ".agentsh" / "memory").rmdir()
    (root / ".agentsh" / "memory").symlink_to(outside)
    (outside / "MEMORY.md").write_text("x")
    with pytest.raises(LinkRefused):
        read_beneath(root, root / ".agentsh" / "memory" / "MEMORY.md")
    with pytest.raises(LinkRefused):
        atomic_write(root / ".agentsh" / "memory" / "MEMORY.md", b"pwn", root=root)
    assert (outside / "MEMORY.md").read_text() == "x"


def test_hard_links_fifos_and_dotdot_are_refused(root: Path, outside: Path) -> None:
    os.link(outside / "secret", root / "AGENTS.md")
    with pytest.raises(LinkRefused, match="2 hard links"):
        read_beneath(root, root / "AGENTS.md")
    os.mkfifo(root / "CLAUDE.md")
    with pytest.raises(LinkRefused, match="not a regular file"):
        read_beneath(root, root / "CLAUDE.md")  # and does not block
    with pytest.raises(LinkRefused):
        atomic_write(root / ".." / "home" / "x", b"x", root=root)
    with pytest.raises(LinkRefused):
        atomic_write(outside / "x", b"x", root=root)


def test_a_confined_write_never_writes_through_a_link(root: Path, outside: Path) -> None:
    memory = root / ".agentsh" / "memory" / "MEMORY.md"
    memory.symlink_to(outside / "authorized_keys")  # dangling
    with pytest.raises(LinkRefused, match="symbolic link"):
        atomic_write(memory, b"ssh-ed25519 AAAA attacker", root=root)
    assert not (outside / "authorized_keys").exists()
    assert memory.is_symlink()


def test_a_confined_write_keeps_mode_creates_folders_and_leaves_no_temp(root: Path) -> None:
    target = root / "src" / "deep" / "run.sh"
    atomic_write(target, b"#!/bin/sh\n", root=root)
    target.chmod(0o751)
    atomic_write(target, b"#!/bin/sh\necho\n", root=root)
    assert target.read_bytes() == b"#!/bin/sh\necho\n"
    assert target.stat().st_mode & 0o777 == 0o751
    assert sorted(p.name for p in target.parent.iterdir()) == ["run.sh"]


def test_a_full_disk_leaves_the_old_file_whole(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = root / "big.py"
    old = b"".join(b"line %d\n" % i for i in range(4000))
    target.write_bytes(old)
    real_write = os.write
    calls = 0

    def short_then_full(fd: int, data: bytes | memoryview) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data)[:100])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", short_then_full)  # the os module fsutil calls
    for confined in (root, None):
        calls = 0
        with pytest.raises(OSError, match="No space"):
            atomic_write(target, old + b"more\n", root=confined)
        assert target.read_bytes() == old
        assert sorted(p.name for p in root.iterdir()) == [".agentsh", "big.py"]


def test_resolve_beneath_names_where_a_link_leads(root: Path, outside: Path) -> None:
    (root / "link").symlink_to(outside / "secret")
    with pytest.raises(LinkRefused, match=str(outside / "secret")):
        resolve_beneath(root, root / "link")
    (root / "inner").symlink_to(".agentsh")
    assert resolve_beneath(root, root / "inner") == (root / ".agentsh").resolve()
