"""Git commands that read a repository's ignore patterns, bounded.

git's own matcher (wildmatch) backtracks on a pattern with several ``**``: measured with git
2.39, ``**/**/**/**/x`` takes 10 s to list one file 100 folders deep, twelve of them more
than a minute at 40 folders. Every command that lists untracked files (``ls-files --others
--exclude-standard``, ``status`` with untracked files) matches every .gitignore line against
every path on its way, so one line in a cloned repository made each of agentsh's own listings
(every checkpoint, before and after every ``bash`` command, ``@`` completion) wait out its
timeout. Two bounds: the ignore files git will read are looked at first (also those in
untracked folders), and a line that can make it spin keeps git from listing that repository
at all; and a listing that still runs past its (shorter) timeout (a very deep tree, a file
that appeared since) marks the repository, so that for the rest of the process it is listed
without git at once. Callers fall back to agentsh's own walk (agentsh/tools/walk.py), whose
matcher cannot backtrack.
"""

from __future__ import annotations

import itertools
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentsh.fsutil import read_regular
from agentsh.gitutil import GitError, GitResult, GitTimeout, arun_git, run_git

LISTING_TIMEOUT_S = 10.0
_IGNORE_FILE_LIMIT = 1 << 20  # bytes read of one ignore file (git reads no more than 100 MB)
_IGNORE_FILES_LIMIT = 500  # tracked .gitignore files looked at; the timeout covers the rest


def spinning_pattern(line: str) -> bool:
    """Whether git's matcher may take exponential time on this ignore line: two ``**``
    folders in a row, or more than two in all (``a/**/b/**/c`` is fine)."""
    line = line.strip()
    if not line or line.startswith("#"):
        return False
    parts = line.removeprefix("!").split("/")  # a negated line is matched all the same
    stars = [len(part) > 1 and part.strip("*") == "" for part in parts]
    return sum(stars) > 2 or any(a and b for a, b in itertools.pairwise(stars))


def listing_refusal(root: Path) -> str | None:
    """Why git must not list ``root``'s files (one line), or None when it may."""
    key = os.path.realpath(root)
    slow = _SLOW.get(key)
    if slow is not None:
        return slow
    stamp = _ignore_stamp(root)
    cached = _CHECKED.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    reason = _find_spinning_line(root)
    _CHECKED[key] = (stamp, reason)
    return reason


def known_listing_refusal(root: Path) -> str | None:
    """What :func:`listing_refusal` last said of ``root`` in this process (nothing is run)."""
    key = os.path.realpath(root)
    cached = _CHECKED.get(key)
    return _SLOW.get(key) or (cached[1] if cached is not None else None)


def run_listing(
    args: Sequence[str],
    *,
    root: Path,
    cwd: Path | None = None,
    work_tree: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = LISTING_TIMEOUT_S,
) -> GitResult:
    """:func:`run_git` for a command that reads ``root``'s ignore patterns: GitError with the
    reason when :func:`listing_refusal` says no; a timeout marks the repository."""
    reason = listing_refusal(root)
    if reason is not None:
        raise GitError(reason)
    try:
        return run_git(
            args, cwd=cwd or root, work_tree=work_tree, env=env, timeout=timeout, give_up=False
        )
    except GitTimeout:
        raise GitError(_mark_slow(root, timeout)) from None


async def arun_listing(
    args: Sequence[str],
    *,
    root: Path,
    cwd: Path | None = None,
    timeout: float = LISTING_TIMEOUT_S,  # noqa: ASYNC109 - the same signature as run_listing
) -> GitResult:
    """:func:`run_listing` for the event loop."""
    import asyncio  # lazily, as in arun_git: command-line callers never get here

    reason = await asyncio.to_thread(listing_refusal, root)
    if reason is not None:
        raise GitError(reason)
    try:
        return await arun_git(args, cwd=cwd or root, timeout=timeout, give_up=False)
    except GitTimeout:
        raise GitError(_mark_slow(root, timeout)) from None


_SLOW: dict[str, str] = {}  # repositories whose listing timed out, and what to say
_CHECKED: dict[str, tuple[tuple[object, ...], str | None]] = {}


def _mark_slow(root: Path, timeout: float) -> str:
    reason = (
        f"git took over {timeout:g} s to apply the ignore patterns of {root} (a .gitignore line "
        "like '**/**/**/x' makes its matcher spin): its files are listed without git"
    )
    _SLOW[os.path.realpath(root)] = reason
    return reason


def _git_dir(root: Path) -> Path | None:
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    head = (read_regular(dot_git, 4096) or b"").decode("utf-8", "replace").strip()
    if not head.startswith("gitdir:"):
        return None
    folder = Path(head[len("gitdir:") :].strip())
    return folder if folder.is_absolute() else root / folder


def _ignore_stamp(root: Path) -> tuple[object, ...]:
    """What the ignore files at known places and the index look like (a change checks again)."""
    git_dir = _git_dir(root)
    places = [root / ".gitignore"]
    if git_dir is not None:
        places += [git_dir / "info" / "exclude", git_dir / "index", git_dir / "config"]
    stamp: list[object] = []
    for place in places:
        try:
            st = place.stat()
        except OSError:
            stamp.append(None)
        else:
            stamp.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(stamp)


def _find_spinning_line(root: Path) -> str | None:
    """The first ignore line git would read that can make it spin, as a refusal; or None.

    Read: the top .gitignore, .git/info/exclude, the ``core.excludesFile`` the configuration
    names (the repository's own config may name any file) and the .gitignore files the index
    lists (``ls-files --cached`` reads no ignore pattern). Then the .gitignore files in
    untracked folders, which git would read on its way too: those are listed by git under the
    top-level ignore files just read (found harmless), never the per-folder ones, so that
    listing cannot spin (it used to be left to the timeout: 10 s in every new process).
    """
    files: list[Path] = [root / ".gitignore"]
    git_dir = _git_dir(root)
    if git_dir is not None:
        files.append(git_dir / "info" / "exclude")
    try:
        configured = run_git(
            ["config", "--path", "--get", "core.excludesFile"], cwd=root, timeout=5, check=False
        )
        tracked = run_git(
            ["ls-files", "-z", "--cached", "--", ":(glob)**/.gitignore"],
            cwd=root,
            timeout=LISTING_TIMEOUT_S,
            check=False,
        )
    except GitError:
        configured = tracked = GitResult(1, b"", b"")
    name = configured.stdout.decode("utf-8", "surrogateescape").strip()
    if configured.returncode == 0 and name:
        files.append(root / Path(name).expanduser())
    top = list(files)
    names = [n for n in tracked.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    nested = [root / n for n in names[:_IGNORE_FILES_LIMIT] if n != ".gitignore"]
    found = _spinning_line(root, files + nested)
    if found is None and tracked.returncode == 0 and len(names) <= _IGNORE_FILES_LIMIT:
        found = _spinning_line(root, _untracked_ignore_files(root, top, nested))
    return found


def _untracked_ignore_files(root: Path, top: list[Path], nested: list[Path]) -> list[Path]:
    """The .gitignore files in untracked folders that git would read: listed by git under the
    ignore files checked already, never reading a per-folder one (that could spin). The
    top-level files (``top``) are passed as they are; the tracked ones in folders
    (``nested``) rewritten to patterns from the top, so that ignored folders
    (``web/node_modules``) are not walked; lines that cannot be rewritten without a second
    ``**`` are left out, which can only make git look at more."""
    if any(_size(path) > _IGNORE_FILE_LIMIT for path in (*top, *nested)):
        return []  # not all of it was checked: left to the listing's timeout
    lines: list[str] = []
    for path in nested:
        base = path.parent.relative_to(root).as_posix()
        text = (read_regular(path, _IGNORE_FILE_LIMIT) or b"").decode("utf-8", "surrogateescape")
        lines += [rewritten for line in text.splitlines() if (rewritten := _from_top(base, line))]
    with tempfile.TemporaryDirectory(prefix="agentsh-ignore-") as folder:
        combined = Path(folder) / "nested"
        combined.write_text("\n".join(lines) + "\n", "utf-8", "surrogateescape")
        excludes = [f"--exclude-from={path}" for path in (*top, combined) if read_regular(path, 1)]
        try:
            listed = run_git(
                ["ls-files", "-z", "--others", *excludes, "--", ":(glob)**/.gitignore"],
                cwd=root,
                timeout=LISTING_TIMEOUT_S,
                check=False,
            )
        except GitError:
            return []  # the timeout of the listing itself is still there
    names = [n for n in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [root / n for n in names[:_IGNORE_FILES_LIMIT]]


def _from_top(base: str, line: str) -> str:
    """A line of ``base``/.gitignore as a pattern from the top ("" when it has none, or it
    is a negation or holds ``**``: left out)."""
    line = line.strip()
    if not line or line.startswith(("#", "!")) or "**" in line:
        return ""
    if line.startswith("/") or "/" in line.rstrip("/"):
        return f"{base}/{line.lstrip('/')}"
    return f"{base}/**/{line}"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _spinning_line(root: Path, files: list[Path]) -> str | None:
    for file in files:
        if _blocks(file):
            where = file.relative_to(root) if file.is_relative_to(root) else file
            return (
                f"{where} is not a regular file (a FIFO or a device): git would wait on it "
                "forever; this project's files are listed without git"
            )
        text = (read_regular(file, _IGNORE_FILE_LIMIT) or b"").decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), 1):
            if spinning_pattern(line):
                shown = line.strip()
                shown = shown if len(shown) <= 60 else shown[:59] + "…"
                where = file.relative_to(root) if file.is_relative_to(root) else file
                return (
                    f"{where} line {number} ({shown!r}) would make git's matcher spin: this "
                    "project's files are listed without git"
                )
    return None


def _blocks(path: Path) -> bool:
    """Whether ``path`` exists as something git's open() and read() would wait on or never
    finish (a FIFO, a device): git reads ignore files with a plain open."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
