"""Curated memory on disk: read, locked and written beneath the project, never through a link.

MEMORY.md lives in a project folder someone else may have written, so it is read, locked and
written beneath the project root without following a link out of it (a ``MEMORY.md`` symlink
to ``~/.ssh/authorized_keys`` is refused, existing or dangling, and so is a hard-linked one);
USER.md, in the user's own data dir, may stay a link and is written through it. A change holds
an exclusive lock on a hidden sidecar file and is written atomically (temporary file, fsync,
``os.replace``, fsync of the folder). :mod:`agentsh.memory.curated` decides what to change;
this module only moves the bytes, and its errors are the root of curated memory's errors.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from agentsh.errors import AgentshError
from agentsh.fsutil import LinkRefused, atomic_write, open_beneath, read_beneath

# Between two entries of MEMORY.md / USER.md (the file format; the chunker cuts there too, and
# imports it from here rather than from :mod:`.curated`, which loads the injection guard).
ENTRY_SEPARATOR = "§"
_LOCK_POLL_S = 0.01


class CuratedMemoryError(AgentshError):
    """A memory change that cannot be made; the message says why and what to do instead."""


class MemoryFileError(CuratedMemoryError):
    """The file on disk cannot be read or written safely."""


class MemoryLockError(CuratedMemoryError):
    """Another process holds the file's lock for too long."""


def check_memory_folder(name: str, path: Path, root: Path, folder: Path) -> None:
    """The memory tool never asks, so through a (committed) link it must not change another
    project file, a script, a hook or the settings, that ``write``/``edit`` would have asked
    about: a project memory file is written only inside ``.agentsh/memory/``, itself no link."""
    real_folder = Path(os.path.realpath(root)) / folder.relative_to(root)
    if path.is_relative_to(real_folder) and path != real_folder:
        return
    raise MemoryFileError(
        f"{name} was left alone: it is a link to {path}, and project memory is "
        "written only inside .agentsh/memory/; replace the link with a plain file to use it."
    )


def link_message(name: str, exc: LinkRefused) -> str:
    """Why a memory file behind a link out of the project was left alone."""
    return (
        f"{name} was left alone: {exc}. Project memory is only read and written "
        "inside the project; replace the link with a plain file to use it."
    )


# MEMORY.md and USER.md hold a few KB (memory_char_limit); a bigger file is not memory agentsh
# wrote, and a cloned repository's 600 MB one was read whole (twice: snapshot and trust).
MAX_MEMORY_FILE_BYTES = 1024 * 1024


def _read_bytes(path: Path, root: Path | None) -> bytes | None:
    """The file's bytes (None if missing); beneath ``root`` when given, never through a link
    out of it. A file over :data:`MAX_MEMORY_FILE_BYTES` is an OSError (EFBIG), not read."""
    limit = MAX_MEMORY_FILE_BYTES + 1
    if root is not None:
        data = read_beneath(root, path, max_bytes=limit)
    else:
        try:
            with path.open("rb") as handle:
                data = handle.read(limit)
        except FileNotFoundError:
            return None
    if data is not None and len(data) >= limit:
        raise OSError(errno.EFBIG, f"it is larger than {MAX_MEMORY_FILE_BYTES // 1024} KiB")
    return data


def read_lenient(path: Path, root: Path | None = None) -> tuple[str, str | None]:
    """The file's text for display; problems are reported, never raised."""
    try:
        data = _read_bytes(path, root)
    except LinkRefused as exc:
        return "", f"{path.name} not loaded: it {exc.reason}"
    except OSError as exc:
        return "", f"{path.name} could not be read: {exc.strerror or exc}"
    if data is None:
        return "", None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return (
            data.decode("utf-8", errors="replace"),
            f"{path.name} is not valid UTF-8 (byte {exc.start:,}); shown with replacement "
            "characters, and the memory tool will not change it until it is fixed by hand",
        )


def read_strict(path: Path, name: str, root: Path | None = None) -> str:
    """The file's text for a change; anything that could lose the user's bytes raises."""
    try:
        data = _read_bytes(path, root)
    except LinkRefused as exc:
        raise MemoryFileError(link_message(name, exc)) from None
    except OSError as exc:
        raise MemoryFileError(f"{name} could not be read ({exc.strerror or exc}): {path}") from exc
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFileError(
            f"{name} is not valid UTF-8 (byte {exc.start:,}), so it was left alone "
            f"rather than rewritten; fix it by hand: {path}"
        ) from exc


def real_path(path: Path) -> Path:
    """Write through a symlink (a USER.md kept in a dotfiles repo stays a link); only ever
    for the user's own data dir."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def locked(path: Path, timeout_s: float, root: Path | None = None) -> Iterator[None]:
    """An exclusive ``flock`` on the hidden sidecar ``.<name>.lock``, waiting up to the timeout.

    Beneath ``root`` the sidecar is opened without following links: a lock file planted as a
    symlink would otherwise create (empty) whatever file it names."""
    lock_path = _lock_path(path)
    try:
        if root is not None:
            flags = os.O_RDWR | os.O_CREAT
            fd = open_beneath(root, lock_path, flags, 0o600, create_dirs=True)
        else:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise MemoryFileError(
            f"cannot create the lock file {lock_path}: {exc.strerror or exc}"
        ) from exc
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise MemoryFileError(
                        f"cannot lock {lock_path}: {exc.strerror or exc}"
                    ) from exc
                if time.monotonic() >= deadline:
                    raise MemoryLockError(
                        f"{path.name} is being changed by another agentsh process (lock held "
                        f"for over {timeout_s:g} s: {lock_path}); try again in a moment"
                    ) from exc
                time.sleep(_LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def write_memory_file(path: Path, text: str, *, private: bool, root: Path | None = None) -> None:
    """Durable replace (temp file, fsync, rename, folder fsync); a new USER.md is private.
    Beneath ``root`` nothing on the way may be a link (LinkRefused)."""
    try:
        if root is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        mode = None if path.exists() or not private else 0o600
        atomic_write(path, text.encode("utf-8"), mode=mode, root=root)
    except OSError as exc:
        raise MemoryFileError(f"cannot write {path}: {exc.strerror or exc}") from exc
