"""Durable file writes, and reads and writes confined beneath a folder.

A file is written to a temporary name in its own folder, fsynced, renamed over the target and
the folder fsynced, so a crash leaves either the old file or the new one, never a mix, and the
rename itself survives a power cut. The temporary file never outlives a failure.

Files agentsh opens on its own inside a project (its config, AGENTS.md, memory, lock files)
are untrusted: any of them, or any folder on the way, may be a symlink to ``~/.ssh`` or a hard
link to a file elsewhere. The ``*_beneath`` functions open them one path component at a time
from the project root with ``O_NOFOLLOW`` (a symlink swapped in between a check and the open
fails instead of being followed), refuse non-regular files without blocking on a FIFO, and
report a file with more than one hard link; a write given ``root=`` works the same way, on
folder descriptors, so nothing it creates or renames can land outside ``root``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from agentsh.errors import AgentshError

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
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    root: Path | None = None,
    temp_prefix: str = "",
) -> None:
    """Replace ``path`` with ``data`` atomically and durably; raises ``OSError`` on failure.

    ``temp_prefix`` (with ``root``) names the temporary file ``<prefix><random>.tmp``, so a
    caller can find and remove what a kill left behind (a restore of checkpoints does).

    ``mode`` sets the permission bits (default: an existing file keeps its own, a new one gets
    0o644). ``exclusive`` refuses to replace a file that already exists (``FileExistsError``),
    even one that appears while this call runs: the file is put in place with a hard link,
    which fails atomically when the name is taken. With ``root``, ``path`` must lie beneath it
    and no symlink is followed on the way (:class:`LinkRefused`), missing folders are created
    beneath it, and an existing symlink at ``path`` is refused rather than replaced.
    """
    if root is not None:
        _atomic_write_beneath(
            root, path, data, mode=mode, exclusive=exclusive, temp_prefix=temp_prefix
        )
        return
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


# -- confined beneath a root -------------------------------------------------------------------


class LinkRefused(AgentshError, OSError):
    """A path beneath a root leads out of it: a symlink on the way, ``..``, a non-regular file,
    or (where asked) a file with more than one hard link. The message says which."""

    def __init__(self, path: Path, reason: str, where: str = "") -> None:
        super().__init__(errno.ELOOP, f"{path}: {reason}")
        self.path = path
        self.reason = reason  # names no path: safe to show the model
        self.where = where  # e.g. "(to /home/me/.ssh/id_ed25519)", for the user

    def __str__(self) -> str:
        return f"{self.path} {self.explained}"

    @property
    def explained(self) -> str:
        """The reason and, if known, where the link leads: "leads outside ... (to ...)"."""
        return f"{self.reason} {self.where}" if self.where else self.reason


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts_beneath(root: Path, path: Path) -> tuple[str, ...]:
    """``path``'s components below ``root`` (lexically); LinkRefused for ``..`` or outside."""
    try:
        rel = path.relative_to(root) if path.is_absolute() else path
    except ValueError:
        raise LinkRefused(path, "is not inside the folder", f"({root})") from None
    parts = tuple(p for p in rel.parts if p not in ("", "."))
    if ".." in parts:
        raise LinkRefused(path, "has '..' in it")
    return parts


def _open_dir_at(dir_fd: int, name: str, shown: Path, *, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        return _open_dir_at(dir_fd, name, shown, create=False)
    except (NotADirectoryError, OSError) as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link_at(dir_fd, name):
            raise LinkRefused(shown, "goes through a symbolic link") from None
        raise


def _is_link_at(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_dir_beneath(root: Path, folder: Path, *, create: bool = False) -> int:
    """A descriptor of ``folder`` (beneath ``root``), reached without following any symlink;
    ``create`` makes missing folders. The caller closes it."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        walked = root
        for part in _parts_beneath(root, folder):
            walked = walked / part
            next_fd = _open_dir_at(fd, part, walked, create=create)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_beneath(
    root: Path,
    path: Path,
    flags: int = os.O_RDONLY,
    mode: int = 0o644,
    *,
    create_dirs: bool = False,
) -> int:
    """Open the file ``path`` beneath ``root`` with ``flags``, following no symlink anywhere
    on the way (LinkRefused). The caller closes the descriptor."""
    parts = _parts_beneath(root, path)
    if not parts:
        raise LinkRefused(path, "is the folder itself, not a file in it")
    dir_fd = open_dir_beneath(root, root.joinpath(*parts[:-1]), create=create_dirs)
    try:
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(path, "is a symbolic link") from None
        raise
    finally:
        os.close(dir_fd)


def resolve_beneath(root: Path, path: Path) -> Path:
    """``path`` with its symlinks resolved, if that stays beneath ``root`` (a link from one
    project file to another is fine); LinkRefused naming where it leads otherwise."""
    real_root = Path(os.path.realpath(root))
    absolute = path if path.is_absolute() else real_root / path
    target = Path(os.path.realpath(absolute))
    if target == real_root or not target.is_relative_to(real_root):
        raise LinkRefused(path, "leads outside the project", f"(to {target})")
    return target


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """Up to ``max_bytes`` of ``path`` if it is a regular file (links followed), else None:
    for a file a repository may have made a FIFO (open() would block forever), a device
    (``/dev/zero`` never ends) or a folder. The check is made on the opened descriptor."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        while max_bytes > 0 and (chunk := os.read(fd, min(max_bytes, 1 << 20))):
            chunks.append(chunk)
            max_bytes -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def open_regular(path: Path, *, follow_links: bool = True) -> BinaryIO | None:
    """``path`` opened for reading if it is a regular file, else None: what :func:`read_regular`
    reads, for a caller that streams it. A FIFO is opened without blocking and closed, a device
    or folder refused; without ``follow_links`` a link is refused too. The check is made on the
    opened descriptor, so a name swapped after the caller's own check cannot slip through."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return os.fdopen(fd, "rb")
    except OSError:
        pass
    os.close(fd)
    return None


def read_beneath(
    root: Path, path: Path, *, max_bytes: int | None = None, single_link: bool = True
) -> bytes | None:
    """The bytes of the regular file ``path`` beneath ``root``, or None when it does not exist.

    A symlink that stays beneath ``root`` is followed; one that leads out, a FIFO, device or
    folder, and (with ``single_link``) a file with more than one hard link raise LinkRefused.
    ``max_bytes`` caps what is read. The checks are made on the opened descriptor.
    """
    try:
        target = resolve_beneath(root, path)
        real_root = Path(os.path.realpath(root))
        fd = open_beneath(real_root, target, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except LinkRefused as exc:
        if not os.path.lexists(path):
            return None  # a dangling name, or a folder missing on the way
        if exc.path != path:
            raise LinkRefused(path, exc.reason, exc.where) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LinkRefused(path, "is not a regular file")
        if single_link and info.st_nlink > 1:
            raise LinkRefused(
                path, f"has {info.st_nlink} hard links (its other names may be outside)"
            )
        chunks: list[bytes] = []
        left = max_bytes if max_bytes is not None else -1
        while left != 0:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if left > 0:
                left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _atomic_write_beneath(
    root: Path, path: Path, data: bytes, *, mode: int | None, exclusive: bool, temp_prefix: str
) -> None:
    parts = _parts_beneath(root, path)
    if not parts:
        raise LinkRefused(path, "is the folder itself, not a file in it")
    name = parts[-1]
    dir_fd = open_dir_beneath(root, root.joinpath(*parts[:-1]), create=True)
    try:
        try:
            existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            raise LinkRefused(path, "is a symbolic link")
        if mode is None:
            mode = stat.S_IMODE(existing.st_mode) & 0o777 if existing is not None else 0o644
        temp, fd = _temp_at(dir_fd, temp_prefix or f".{name}.")
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            if exclusive:
                _link_new_at(dir_fd, temp, name, path)
            else:
                os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _temp_at(dir_fd: int, prefix: str) -> tuple[str, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        temp = f"{prefix}{secrets.token_hex(4)}.tmp"
        try:
            return temp, os.open(temp, flags, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue


def _link_new_at(dir_fd: int, temp: str, name: str, shown: Path) -> None:
    try:
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        try:
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return
        raise FileExistsError(errno.EEXIST, f"{shown.name} already exists") from None
    os.unlink(temp, dir_fd=dir_fd)
