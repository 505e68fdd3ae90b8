"""Durable file writes: the one implementation every module that must not half-write uses.

A file is written to a temporary name in its own folder, fsynced, renamed over the target and
the folder fsynced, so a crash leaves either the old file or the new one, never a mix, and the
rename itself survives a power cut. The temporary file never outlives a failure.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

# errno values of a file system that cannot make hard links (FAT, some FUSE and SMB mounts).
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV})


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable; some file systems refuse, harmlessly."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(
    path: Path, data: bytes, *, mode: int | None = None, exclusive: bool = False
) -> None:
    """Replace ``path`` with ``data`` atomically and durably; raises ``OSError`` on failure.

    ``mode`` sets the permission bits (default: an existing file keeps its own, a new one gets
    0o644). ``exclusive`` refuses to replace a file that already exists (``FileExistsError``),
    even one that appears while this call runs: the file is put in place with a hard link,
    which fails atomically when the name is taken.
    """
    folder = path.parent
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    temp = Path(temp_name)
    try:
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked (a signal, a nearly full disk)
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        temp.chmod(mode)
        if exclusive:
            _link_new(temp, path)
        else:
            temp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    fsync_dir(folder)


def _link_new(temp: Path, path: Path) -> None:
    """Give ``temp`` the name ``path`` only if nothing has it; ``FileExistsError`` otherwise."""
    try:
        os.link(temp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        # No hard links here: check, then rename (a race only with another writer of the
        # very same name, which the callers' own locks already rule out).
        if path.exists():
            raise FileExistsError(errno.EEXIST, f"{path.name} already exists") from None
        temp.replace(path)
        return
    temp.unlink()
