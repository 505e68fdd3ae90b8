"""Durable file writes: the one implementation every module that must not half-write uses.

A file is written to a temporary name in its own folder, fsynced, renamed over the target and
the folder fsynced, so a crash leaves either the old file or the new one, never a mix, and the
rename itself survives a power cut. The temporary file never outlives a failure.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


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
    0o644). ``exclusive`` refuses to replace a file that already exists (``FileExistsError``).
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
        if exclusive and path.exists():
            raise FileExistsError(17, f"{path.name} already exists")
        temp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    fsync_dir(folder)
