"""Which files a checkpoint covers, and reading them without following a link anywhere.

The files are the project's tracked and untracked, not-ignored ones: ``git ls-files`` where
the project is a git repository (through :mod:`agentsh.gitutil`, so the repository's config
runs nothing), otherwise a walk that honours ``.gitignore`` files. Dependency, cache and
version-control folders (:data:`SKIP_DIRS`) are never covered, nor ``.agentsh/`` (agentsh's own
state is not part of a conversation's files). Paths are relative POSIX strings; a name that is
not UTF-8 is counted and left alone (never captured, never restored).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from agentsh.errors import AgentshError
from agentsh.fsutil import read_regular
from agentsh.git_listing import run_listing
from agentsh.gitutil import GitError, run_git
from agentsh.tools.walk import Walker

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".agentsh",
        ".venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
#: the temporary files a restore writes next to their targets (never covered; a kill can
#: leave one behind, and the next restore removes it)
TEMP_PREFIX = ".agentsh-restore-"
#: exactly the names those temporary files get (8 or 12 hex digits): a project's own file that
#: merely starts with the prefix is the project's, never swept
_TEMP_NAME = re.compile(r"\.agentsh-restore-[0-9a-f]{8}(?:[0-9a-f]{4})?\.tmp")


def is_temp_name(name: str) -> bool:
    """Whether ``name`` (a file name, no folder) is a restore's temporary file."""
    return _TEMP_NAME.fullmatch(name) is not None


GIT_TIMEOUT_S = 30.0


class ScanError(AgentshError):
    """The project's files cannot be listed (too many, or unreadable)."""


class TooManyFiles(ScanError):
    """The project has more files than a checkpoint covers (listing them costs seconds)."""


@dataclass(frozen=True, slots=True)
class Listing:
    paths: list[str]
    source: str  # "git" or "walk"
    undecodable: int = 0  # names that are not UTF-8, left alone
    strays: tuple[str, ...] = ()  # temporary files a killed restore left behind
    tracked: frozenset[str] = frozenset()  # git only: the paths the index holds


def covered(path: str) -> bool:
    """False for a path inside a skipped folder, or a restore's temporary file."""
    parts = path.split("/")
    if is_temp_name(parts[-1]):
        return False
    return not any(part in SKIP_DIRS for part in parts[:-1])


def is_git_project(root: Path) -> bool:
    return (root / ".git").exists()


def list_files(root: Path, *, max_files: int) -> Listing:
    """Every covered file of the project (paths only; nothing is opened)."""
    listing: Listing | None = None
    if is_git_project(root):
        with contextlib.suppress(GitError):
            listing = _git_listing(root)
    if listing is None:
        listing = _walk_listing(root, max_files)
    if len(listing.paths) > max_files:
        raise TooManyFiles(
            f"the project has more than {max_files:,} files; checkpoints cover at most that many"
        )
    return listing


def _git_listing(root: Path) -> Listing:
    return _ls_files(root, ["--cached", "--others"])


def git_changes(root: Path) -> Listing | None:
    """Only what differs from the git index: tracked files modified or deleted in the work
    tree (``git status``, which stats them in C on several threads), and the untracked ones
    (``ls-files``, in parallel). ``tracked`` holds the former. None when git cannot say.

    ``status`` rather than ``ls-files --modified``: comparing a file whose stat changed may
    run an attribute filter, and gitutil blanks those for ``status`` only."""
    untracked: list[Listing | BaseException] = []

    def list_untracked() -> None:
        try:
            untracked.append(_ls_files(root, ["--others"]))
        except BaseException as exc:  # noqa: BLE001 - reported in the caller's thread
            untracked.append(exc)

    worker = threading.Thread(target=list_untracked, name="checkpoint-untracked", daemon=True)
    worker.start()
    try:
        done = run_git(
            [
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=no",
                "--no-renames",
                "--ignore-submodules=all",
            ],
            cwd=root,
            timeout=GIT_TIMEOUT_S,
        )
    except GitError:
        return None
    finally:
        worker.join()
    others = untracked[0]
    if isinstance(others, BaseException):
        return None
    changed: list[str] = []
    undecodable = others.undecodable
    for raw in done.stdout.split(b"\0"):
        if len(raw) < 4 or raw[1:2] == b" ":
            continue  # worktree side unchanged (a staged-only change: the index's stamp says)
        try:
            name = raw[3:].decode("utf-8")
        except UnicodeDecodeError:
            undecodable += 1
            continue
        if covered(name):
            changed.append(name)
    return Listing([*changed, *others.paths], "git", undecodable, others.strays, frozenset(changed))


def _ls_files(root: Path, which: list[str]) -> Listing:
    args = ["ls-files", "-z", "-t", *which, "--exclude-standard"]
    args += [f"--exclude={name}/" for name in sorted(SKIP_DIRS)]
    done = run_listing(args, root=root)  # reads the ignore patterns: bounded, may refuse
    paths: dict[str, None] = {}  # ordered and de-duplicated (a conflict lists a path 3 times)
    tracked: set[str] = set()
    strays: list[str] = []
    undecodable = 0
    for raw in done.stdout.split(b"\0"):
        if len(raw) < 3:
            continue
        try:
            name = raw[2:].decode("utf-8")
        except UnicodeDecodeError:
            undecodable += 1
            continue
        if covered(name):
            paths[name] = None
            if raw[:1] != b"?":
                tracked.add(name)
        elif raw[:1] == b"?" and _is_stray(name):  # never a file git tracks
            strays.append(name)
    return Listing(list(paths), "git", undecodable, tuple(strays), frozenset(tracked))


def not_ignored(root: Path, paths: list[str]) -> set[str] | None:
    """Which of these untracked ``paths`` git would list (not ignored); None if git cannot
    say. The pathspecs are literal, so a name with ``*`` is not a pattern."""
    if not paths:
        return set()
    args = ["ls-files", "-z", "--others", "--exclude-standard", "--", *paths]
    try:
        done = run_listing(args, root=root, env={"GIT_LITERAL_PATHSPECS": "1"})
    except GitError:
        return None
    return {raw.decode("utf-8", "replace") for raw in done.stdout.split(b"\0") if raw}


def index_stamp(root: Path) -> tuple[int, int, int, int] | None:
    """What the git index file looks like (inode, size, mtime, ctime); None outside git.
    While it stays the same, no file was added to or removed from the index or restaged."""
    dot_git = root / ".git"
    try:
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            line = (read_regular(dot_git, 4096) or b"").decode("utf-8", "replace").strip()
            if not line.startswith("gitdir:"):
                return None
            folder = Path(line[len("gitdir:") :].strip())
            dot_git = folder if folder.is_absolute() else root / folder
        st = (dot_git / "index").stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _walk_listing(root: Path, max_files: int) -> Listing:
    paths: list[str] = []
    strays: list[str] = []
    undecodable = 0
    for entry in Walker(root, skip_dirs=SKIP_DIRS):
        if entry.is_dir:
            continue
        try:
            entry.rel.encode("utf-8")
        except UnicodeEncodeError:
            undecodable += 1
            continue
        if covered(entry.rel):
            paths.append(entry.rel)
            if len(paths) > max_files:
                break
        elif _is_stray(entry.rel):
            strays.append(entry.rel)
    return Listing(paths, "walk", undecodable, tuple(strays))


def _is_stray(path: str) -> bool:
    parts = path.split("/")
    return is_temp_name(parts[-1]) and not any(p in SKIP_DIRS for p in parts[:-1])


def index_oids(root: Path) -> dict[str, tuple[str, bool]]:
    """path -> (object id, executable) of its entry in the git index (merged regular files
    only); {} outside git."""
    if not is_git_project(root):
        return {}
    try:
        done = run_git(["ls-files", "-z", "--stage"], cwd=root, timeout=GIT_TIMEOUT_S)
    except GitError:
        return {}
    oids: dict[str, tuple[str, bool]] = {}
    for raw in done.stdout.split(b"\0"):
        head, tab, name = raw.partition(b"\t")
        if not tab:
            continue
        fields = head.split()
        if len(fields) != 3 or fields[2] != b"0" or fields[0] not in _REGULAR_MODES:
            continue
        with contextlib.suppress(UnicodeDecodeError):
            oids[name.decode("utf-8")] = (fields[1].decode("ascii"), fields[0] == b"100755")
    return oids


_REGULAR_MODES = (b"100644", b"100755")


def git_blob_id(data: bytes, oid: str) -> str:
    """The id git gives ``data`` as a blob, in the hash family of ``oid`` (SHA-1 or SHA-256)."""
    digest = hashlib.sha256() if len(oid) == 64 else hashlib.sha1()  # git's own ids
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def git_blobs(root: Path, oids: list[str]) -> dict[str, bytes]:
    """The contents of the given blob ids from the project's object database (missing ones
    are left out)."""
    if not oids:
        return {}
    request = "".join(f"{oid}\n" for oid in oids).encode("ascii")
    try:
        done = run_git(["cat-file", "--batch"], cwd=root, input=request, timeout=GIT_TIMEOUT_S)
    except GitError:
        return {}
    out: dict[str, bytes] = {}
    data = done.stdout
    pos = 0
    for oid in oids:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        header = data[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue  # "<oid> missing", or not a blob
        size = int(header[2])
        out[oid] = data[pos : pos + size]
        pos += size + 1  # the content and its trailing newline
    return out


def read_content(
    root: Path, rel: str, st: os.stat_result, max_bytes: int, folders: OpenFolders | None = None
) -> bytes | None:
    """The bytes a file holds (a symlink: its target text), or None when over ``max_bytes``,
    not a regular file or a link, hard-linked, or not the file ``st`` describes (replaced, or
    reached through a folder swapped for a link since it was looked at).

    The file is opened from the root down, one folder at a time, each with ``O_NOFOLLOW``
    (:func:`_folder_of`), so what is read is reached through real folders at the moment it is
    opened, never through a link; and it must be the inode ``st`` describes. Checking the
    folders apart from the open was not enough: a folder swapped for a link to ``~/.ssh``, back,
    and to the link again (between the scan's ``lstat``, its folder check and the read) let the
    scan see the key's inode and the read open that same inode through the link.

    A file with other hard links is treated as outside the project, as a restore treats it:
    its other name may be anywhere (``ln ~/.ssh/id_ed25519 notes.txt``), and its content is
    not copied into the store (it is recorded as not captured).

    ``folders`` keeps the folders' descriptors open across the reads of one capture (walking
    from the root for every file made reading 2.6 times slower)."""
    if not stat.S_ISLNK(st.st_mode) and (
        not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes or st.st_nlink > 1
    ):
        return None
    if folders is not None:
        folder, _, name = rel.rpartition("/")
        dir_fd = folders.open(folder) if name not in ("", ".", "..") else None
        if dir_fd is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            return _read_link_at(dir_fd, name, st)
        return _read_file_at(dir_fd, name, st, max_bytes)
    walked = _folder_of(root, rel)
    if walked is None:
        return None
    dir_fd, name = walked
    try:
        if stat.S_ISLNK(st.st_mode):
            return _read_link_at(dir_fd, name, st)
        return _read_file_at(dir_fd, name, st, max_bytes)
    finally:
        os.close(dir_fd)


class OpenFolders:
    """Descriptors of the project's folders for one capture, each opened from its parent's
    descriptor with ``O_NOFOLLOW`` (the root's from its path): every one was a real folder of
    the project when opened, and keeps naming that folder if it is swapped for a link later.
    At most :attr:`KEEP` stay open (least recently used closed first); close when done."""

    KEEP = 64

    def __init__(self, root: Path) -> None:
        self._root = str(root)
        self._fds: dict[str, int] = {}  # insertion order is the use order

    def open(self, folder: str) -> int | None:
        """The descriptor of ``folder`` (relative, "" for the root), or None when it is not a
        real folder reached through real folders now. Do not close it.

        A loop, not a recursion, from the nearest folder already open down: a repository
        can nest folders deeper than Python's recursion limit (1,200 levels of ``d/`` fit in
        a path git accepts)."""
        missing: list[str] = []
        nearest = folder
        while nearest not in self._fds and nearest:
            missing.append(nearest)
            nearest = nearest.rpartition("/")[0]
        fd = self._fds.pop(nearest, None)
        if fd is None:  # not even the root is open yet
            missing.append("")
        else:
            self._fds[nearest] = fd  # the most recently used: kept while its children open
        for name in reversed(missing):
            fd = self._open_in(name, fd)
            if fd is None:
                return None
            while len(self._fds) >= self.KEEP:
                os.close(self._fds.pop(next(iter(self._fds))))
            self._fds[name] = fd
        return fd

    def _open_in(self, folder: str, parent_fd: int | None) -> int | None:
        """Open ``folder`` in its parent's descriptor (the root: from its path)."""
        if not folder:
            with contextlib.suppress(OSError):
                return os.open(self._root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
            return None
        name = folder.rpartition("/")[2]
        if name in ("", ".", "..") or parent_fd is None:
            return None
        with contextlib.suppress(OSError):
            return os.open(name, _FOLDER_FLAGS, dir_fd=parent_fd)
        return None

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def __enter__(self) -> OpenFolders:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


def _folder_of(root: Path, rel: str) -> tuple[int, str] | None:
    """A descriptor of ``rel``'s folder reached from ``root`` without following a link (a
    folder that is a link, or is swapped for one while walking, fails the walk), and the
    file's name in it; None when the walk fails. The caller closes the descriptor."""
    *folders, name = rel.split("/")
    if not name or any(part in ("", ".", "..") for part in folders) or name in (".", ".."):
        return None
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except OSError:
        return None
    for part in folders:
        try:
            inner = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = inner
    return fd, name


def _read_link_at(dir_fd: int, name: str, st: os.stat_result) -> bytes | None:
    try:
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISLNK(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None
        return os.fsencode(os.readlink(name, dir_fd=dir_fd))
    except OSError:
        return None


def _read_file_at(dir_fd: int, name: str, st: os.stat_result, max_bytes: int) -> bytes | None:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or opened.st_nlink > 1:
            return None  # swapped for a pipe, a device or a hard link since the lstat
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            return None  # not the file the scan saw: replaced since
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                return None  # grew past the cap while being read
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


class RealFolders:
    """Which folders of the project are real folders from the root down (no symbolic link on
    the way), each looked at once: git's own rule for what a path in its index names."""

    def __init__(self, root: Path) -> None:
        self._root = str(root)
        self._known: dict[str, bool] = {"": True}

    def holds(self, rel: str) -> bool:
        """Whether every folder of ``rel`` is a real folder (the file itself may be a link)."""
        missing: list[str] = []
        folder = rel.rpartition("/")[0]
        while folder not in self._known:  # a loop: folders may nest past the recursion limit
            missing.append(folder)
            folder = folder.rpartition("/")[0]
        known = self._known[folder]
        for folder in reversed(missing):
            known = known and _is_folder(f"{self._root}{os.sep}{folder}")
            self._known[folder] = known
        return known


def _is_folder(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def lstat(root: Path, rel: str) -> os.stat_result | None:
    """``lstat`` of a covered file: None when it is gone or is not a file or a link."""
    try:
        st = os.lstat(f"{root}{os.sep}{rel}")
    except OSError:
        return None
    mode = st.st_mode
    return st if stat.S_ISREG(mode) or stat.S_ISLNK(mode) else None
