"""Files that would make git wait forever, found before agentsh runs git on its own.

git reads its repository's files with a plain ``open()``: a ``commondir``, ``HEAD``, config,
index or ref that is a FIFO (an unpacked archive can carry one; a clone cannot) blocks it
until its timeout, on every one of agentsh's own git calls (20 of them before a one-reply
``-p`` run answered: two minutes), and a config ``include.path`` naming a FIFO the same way. A
link to a device never ends (``/dev/zero``) or reads the user's keystrokes (``/dev/tty``;
git runs without a controlling terminal too, see :mod:`agentsh.gitutil`).

:func:`stall_reason` looks, without running anything, at the files git opens on its way into
the repository: the top of the git folder (and of its common folder), ``info/``,
``objects/info/``, the branch ``HEAD`` names, the files the configs name by path
(``include.path``, ``core.excludesFile``, ``core.attributesFile``, followed through included
files) and the work tree's own ``.gitattributes``/``.gitmodules``/``.mailmap``. A few dozen
``stat`` calls, no process. What is found keeps agentsh's git out of that repository with a
one-line reason; the callers fall back as for any git failure.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from agentsh.fsutil import read_regular

_POINTER_BYTES = 4096  # a "gitdir:", "commondir" or "ref:" pointer is one path
_CONFIG_BYTES = 1 << 20  # of one config file, looked at for paths
_MAX_CONFIGS = 20  # config files followed through include.path
_MAX_ENTRIES = 400  # entries of one folder looked at
try:  # empty and never waits: some set a config or an excludes file to it
    _DEV_NULL: int | None = Path("/dev/null").stat().st_rdev
except OSError:
    _DEV_NULL = None
_FOLDERS = ("", "info", "objects/info")
_WORK_TREE_FILES = (".gitattributes", ".gitmodules", ".mailmap")
# Keys whose value is a file git reads: include(If).path, core.excludesFile, attributesFile.
_PATH_VALUE = re.compile(
    rb"^[ \t]*(?:path|excludesfile|attributesfile)[ \t]*=[ \t]*(.*?)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def stall_reason(
    cwd: Path, git_dir: Path | None = None, found: tuple[Path, Path] | None = None
) -> str | None:
    """Why git must not run for ``cwd`` (or the repository ``git_dir``), in one line: a file
    it would open is a FIFO or a device. None when nothing is found (or no repository).
    ``found``: what :func:`discover` said of ``cwd``, when the caller asked it already."""
    work_tree: Path | None = None
    if git_dir is None:
        found = found or discover(cwd)
        if found is None:
            return None
        work_tree, git_dir = found
    places = _git_files(git_dir)
    if work_tree is not None:
        places += [work_tree / name for name in _WORK_TREE_FILES]
    for place in places:
        kind = _blocking_kind(place)
        if kind is not None:
            shown = os.path.normpath(place)  # .git/../settings.inc: settings.inc
            return (
                f"{shown} is {kind}: git would wait on it forever, so agentsh runs no git "
                "command in this repository"
            )
    return None


def discover(cwd: Path) -> tuple[Path, Path] | None:
    """The work tree and git folder git would find from ``cwd``, as git looks for them: the
    nearest ``.git`` folder or ``gitdir:`` file above (one that is neither is passed over)."""
    try:
        start = Path(os.path.realpath(cwd))
    except (OSError, ValueError):
        return None
    for folder in (start, *start.parents):
        dot = folder / ".git"
        try:
            mode = dot.stat().st_mode
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(mode):
            return folder, dot
        pointer = _pointer(dot, b"gitdir:")
        if pointer is not None:
            return folder, folder / pointer
    return None


def _pointer(path: Path, prefix: bytes) -> str | None:
    text = (read_regular(path, _POINTER_BYTES) or b"").strip()
    if not text.startswith(prefix):
        return None
    return text[len(prefix) :].strip().decode("utf-8", "surrogateescape")


def _git_files(git_dir: Path) -> list[Path]:
    """What git opens in ``git_dir`` (and in its common folder) on its way in."""
    common = read_regular(git_dir / "commondir", _POINTER_BYTES)
    folders = [git_dir]
    if common is not None:
        folders.append(git_dir / common.strip().decode("utf-8", "surrogateescape"))
    places = [git_dir / "commondir"]
    for folder in folders:
        for sub in _FOLDERS:
            places += _entries(folder / sub if sub else folder)
    head = _pointer(git_dir / "HEAD", b"ref:")
    if head is not None and ".." not in head:
        places += [folder / head for folder in folders]
    configs = [folder / name for folder in folders for name in ("config", "config.worktree")]
    return places + _named_by_configs(configs)


def _entries(folder: Path) -> list[Path]:
    """The entries of ``folder`` that are not folders (sub-folders are git's own business)."""
    try:
        with os.scandir(folder) as listing:
            found: list[Path] = []
            for entry in listing:
                if len(found) >= _MAX_ENTRIES:
                    break
                if not entry.is_dir(follow_symlinks=False):
                    found.append(Path(entry.path))
            return found
    except (OSError, ValueError):
        return []


def _named_by_configs(configs: list[Path]) -> list[Path]:
    """The files the configs name by path, followed through included configs."""
    named: list[Path] = []
    seen: set[Path] = set()
    while configs and len(seen) < _MAX_CONFIGS:
        config = configs.pop(0)
        if config in seen:
            continue
        seen.add(config)
        if _blocking_kind(config) is not None:
            named.append(config)
            continue
        text = read_regular(config, _CONFIG_BYTES) or b""
        for match in _PATH_VALUE.finditer(text):
            value = match.group(1).strip(b'"').decode("utf-8", "surrogateescape")
            if not value:
                continue
            target = config.parent / Path(value).expanduser()
            named.append(target)
            configs.append(target)
    return named


def _blocking_kind(path: Path) -> str | None:
    """What ``path`` is (links followed) when an ``open()`` of it could wait or never end."""
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    mode = info.st_mode
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and info.st_rdev != _DEV_NULL:
        return "a device"
    return None
