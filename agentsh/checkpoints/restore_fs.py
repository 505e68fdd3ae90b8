"""Writing a restore's files: each beneath the project root, never through a link.

Every folder on the way is opened without following links (:func:`agentsh.fsutil.
open_dir_beneath`); a file is written atomically (temporary file, fsync, rename), a link put
in place by one rename, a deletion prunes the folders it emptied. Version-control data and
files with other hard links are refused; a set-user-ID or set-group-ID bit is never written.
:mod:`agentsh.checkpoints.restore` plans what to write and calls these.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import agentsh.checkpoints.scan as scan
from agentsh.errors import AgentshError
from agentsh.fsutil import atomic_write, open_dir_beneath

#: version-control data: never written or deleted, as a folder or as a file (a worktree's or
#: a submodule's ``.git`` is a file), whatever a plan says
VCS_NAMES = frozenset({".git", ".hg", ".svn"})
VCS_REFUSED = "it is version-control data (.git); never restored"


class RestoreError(AgentshError):
    """The restore was not done; nothing was written. The message says why."""


def is_vcs(path: str) -> bool:
    return any(part in VCS_NAMES for part in path.split("/"))


@contextlib.contextmanager
def _folder(root: Path, parts: list[str], *, create: bool) -> Iterator[int]:
    """An open descriptor of the folder ``parts`` beneath ``root``, reached without following
    any link (:class:`~agentsh.fsutil.LinkRefused` otherwise)."""
    fd = open_dir_beneath(root, root.joinpath(*parts), create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def write_file(root: Path, path: str, data: bytes, mode: int) -> None:
    """``data`` at ``path`` with ``mode`` (a link when it says so): never as set-user-ID or
    set-group-ID, whatever the mode holds."""
    if is_vcs(path):
        raise RestoreError(VCS_REFUSED)
    parts = path.split("/")
    with _folder(root, parts[:-1], create=True) as fd:
        name = parts[-1]
        _sweep_temps(fd)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                raise RestoreError("a folder is in the way")
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise RestoreError("it has other hard links (treated as outside the project)")
        if stat.S_ISLNK(mode):
            _link_at(fd, name, data)
            return
    # The one durable atomic write, confined beneath the root (no link followed on the way).
    # Its temporary file is named like the links' (scan.TEMP_PREFIX): never checkpointed, and
    # swept from the folder by the next restore or capture if a kill leaves it behind.
    atomic_write(
        root / path, data, mode=mode & 0o1777 or 0o644, root=root, temp_prefix=scan.TEMP_PREFIX
    )


def _link_at(fd: int, name: str, target: bytes) -> None:
    """Put a symbolic link to ``target`` at ``name`` in one rename (the link is never
    followed: only the name is replaced)."""
    temp = f"{scan.TEMP_PREFIX}{secrets.token_hex(6)}.tmp"
    os.symlink(os.fsdecode(target), temp, dir_fd=fd)
    try:
        os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(fd)


def delete_file(root: Path, path: str) -> None:
    if is_vcs(path):
        raise RestoreError(VCS_REFUSED)
    parts = path.split("/")
    try:
        with _folder(root, parts[:-1], create=False) as fd:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                raise RestoreError("a folder is in the way")
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise RestoreError("it has other hard links (treated as outside the project)")
            os.unlink(parts[-1], dir_fd=fd)
            with contextlib.suppress(OSError):
                os.fsync(fd)
    except FileNotFoundError:
        return  # already gone
    _prune_empty(root, parts[:-1])


def _prune_empty(root: Path, folders: list[str]) -> None:
    """Remove the folders a deletion left empty (as git does when switching branches)."""
    while folders:
        try:
            with _folder(root, folders[:-1], create=False) as fd:
                os.rmdir(folders[-1], dir_fd=fd)
        except (OSError, RestoreError):
            return
        folders = folders[:-1]


def _sweep_temps(fd: int) -> None:
    """Remove what a killed restore left in this folder (the caller holds the store's write
    lock, so no other restore of this project is running)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(fd):
            if scan.is_temp_name(name):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
