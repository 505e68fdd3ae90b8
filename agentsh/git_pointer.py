"""Whether the repository a folder's ``.git`` leads to is that folder's own.

A ``.git`` can be a file (``gitdir: <path>``) or a link, and lead anywhere: an unpacked
archive's ``.git`` saying ``gitdir: /home/you/work/private/.git`` makes every git command in
the folder use your private repository, with the archive as its work tree. ``git commit``
there (one an allow rule such as ``Bash(git:*)`` lets run unasked) commits the archive's files
into your repository and moves its branch; ``git status`` names its files; the folder shares its
first commit, so agentsh filed the archive's sessions with the private project's and ``-c``
continued them.

A repository that really serves the folder says so from its side: a linked worktree's
``<gitdir>/gitdir`` names the folder's ``.git`` file, and a submodule's repository (in the
superproject's ``.git/modules/``) names the folder as its ``core.worktree``. One that leads out
of the folder without either is foreign (:func:`foreign_repository`), read without running git.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentsh.fsutil import read_regular

_POINTER_BYTES = 4096
_CONFIG_BYTES = 256 * 1024
_WORKTREE = re.compile(rb"^[ \t]*worktree[ \t]*=[ \t]*(.*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)


def foreign_repository(work_tree: Path, git_dir: Path) -> Path | None:
    """The repository folder ``git_dir`` (found from ``work_tree``'s ``.git``, resolved) when
    it lies outside ``work_tree`` and does not name ``work_tree`` as its own; else None."""
    try:
        top = Path(os.path.realpath(work_tree))
        real = Path(os.path.realpath(git_dir))
    except (OSError, ValueError):
        return None
    if real.is_relative_to(top):
        return None  # inside the folder: the folder's own (its writes are protected)
    back = read_regular(real / "gitdir", _POINTER_BYTES)
    if back is not None and _same(real, back.strip(), top / ".git"):
        return None  # a linked worktree of that repository
    config = read_regular(real / "config", _CONFIG_BYTES) or b""
    if any(_same(real, m.group(1).strip(b'"'), top) for m in _WORKTREE.finditer(config)):
        return None  # a submodule (or a repository kept apart with core.worktree)
    return real


def _same(base: Path, named: bytes, expected: Path) -> bool:
    if not named:
        return False
    path = base / os.fsdecode(named)
    try:
        return Path(os.path.realpath(path)) == Path(os.path.realpath(expected))
    except (OSError, ValueError):
        return False


def foreign_reason(work_tree: Path, foreign: Path) -> str:
    """One line for a git command refused or asked in such a folder."""
    return (
        f"{work_tree / '.git'} leads to a repository outside this folder ({foreign}) that "
        "does not take it as its work tree: git commands here would change that repository"
    )
