"""The Unix sockets of the user's warm background processes: where they live, who may talk on
them, and when the code behind one has changed.

Two processes use them: the warm memory search (:mod:`agentsh.commands.search_server`) and the
warm model worker (:mod:`agentsh.llm.warm_worker`). Their sockets are in the user's runtime
folder (``$XDG_RUNTIME_DIR/agentsh``, else ``run/`` in the user's cache folder): mode 0700,
checked to be the user's own and not a link, never a path a project chooses. A socket is bound
0600 under an exclusive lock beside it, and each side checks that the other runs as the same
user (``SO_PEERCRED``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentsh.paths import UserPaths

MAX_MESSAGE = 16 * 1024 * 1024
PACKAGE = Path(__file__).resolve().parent  # agentsh itself


def runtime_folder(user: UserPaths | None = None) -> Path | None:
    """``$XDG_RUNTIME_DIR/agentsh`` when that runtime folder is the user's alone (a tmpfs the
    login manager empties at log-out, on this machine only), else ``run/`` in the cache folder;
    None when neither is safely the user's own."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_absolute() and users_alone(Path(runtime)):
        folder = _made(Path(runtime) / "agentsh")
        if folder is not None:
            return folder
    if user is None:
        from agentsh.paths import UserPaths

        user = UserPaths.from_env()
    return _made(user.cache_dir / "run")


def socket_in(folder: Path | None, name: str) -> Path | None:
    """``folder/name``, or None when there is no folder or the path is too long for a socket."""
    if folder is None:
        return None
    path = folder / name
    return path if len(os.fsencode(path)) < 100 else None


def _made(folder: Path) -> Path | None:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if users_alone(folder) else None


def users_alone(folder: Path) -> bool:
    """A real folder (not a link), owned by this user, that no one else may enter or write."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_MESSAGE:
            raise ValueError("message too long")
    return data


def listening(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(1.0)
            conn.connect(str(path))
    except OSError:
        return False
    return True


@contextlib.contextmanager
def bound(path: Path, backlog: int = 8) -> Iterator[socket.socket | None]:
    """A listening socket at ``path`` (0600), or None when another process holds its lock; the
    socket file is removed again on the way out. A socket left by a killed server is replaced."""
    import fcntl

    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield None  # another server has this socket
            return
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            old = os.umask(0o177)
            try:
                listener.bind(str(path))  # created 0600
            finally:
                os.umask(old)
            listener.listen(backlog)
            try:
                yield listener
            finally:
                with contextlib.suppress(OSError):
                    path.unlink()
    finally:
        os.close(lock)


class CodeWatch:
    """The modules a server has loaded from ``roots`` (agentsh's folder, by default), as their
    files were when it first saw them: once one changes (an upgrade, an edit), its answers could
    differ from the new code's, so it ends. A module it never loaded plays no part in its
    answers, whatever it is now."""

    def __init__(self, roots: Sequence[Path] = (PACKAGE,)) -> None:
        self._inside = tuple(str(root) + os.sep for root in roots)
        self._seen: dict[str, tuple[int, int, int] | None] = {}

    def changed(self) -> bool:
        return any(_code_stamp(path) != stamp for path, stamp in self._seen.items())

    def note(self) -> None:
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path.startswith(self._inside) and path not in self._seen:
                self._seen[path] = _code_stamp(path)


def _code_stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)  # noqa: PTH116 - a str from sys.modules, ~100 of them a search
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
