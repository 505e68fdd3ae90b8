"""Which of a project's sessions belong to *this* checkout of it.

Sessions are filed under the project's identity, its first commit, so they follow the project
across ``mv`` and into its worktrees. Every clone and every fork of the repository shares that
commit, though: without this module ``-c`` in clone B continued clone A's newest session (its
tools then acting in B), and a hostile fork that shares the root commit with a private project
saw the private project's sessions. So a session is ranked by where it began:

- ``HERE``: its cwd is this project root or below it;
- ``SAME_REPO``: a worktree of the same repository (its cwd's git common dir is ours), or a
  moved project: its cwd is gone and its header's ``repo`` key (the inode of the git folder,
  unchanged by ``mv``) is ours, or it predates that key;
- ``ELSEWHERE``: another clone. Listed only with ``--all`` (with its folder shown) and opened
  only by an explicit ``-r ID``.
"""

from __future__ import annotations

import json
from enum import IntEnum
from pathlib import Path
from typing import Protocol, TypeVar

from agentsh.paths import find_project_root, git_common_dir


class Affinity(IntEnum):
    HERE = 0
    SAME_REPO = 1
    ELSEWHERE = 2


def repo_key(root: Path) -> str | None:
    """The key recorded in a new session's header: the inode of the project's git common dir
    (kept by ``mv`` and shared by worktrees, new in every clone); None outside git."""
    common = git_common_dir(root)
    if common is None:
        return None
    try:
        return str(common.stat().st_ino)
    except OSError:
        return None


def header_repo(header_line: str) -> str | None:
    """The ``repo`` key of a header line as the catalog stores it (None if absent)."""
    try:
        data = json.loads(header_line)
    except ValueError:
        return None
    value = data.get("repo") if isinstance(data, dict) else None
    return str(value) if isinstance(value, str | int) and value else None


class ProjectMatcher:
    """Ranks sessions against one project root; remembers what it learnt about each cwd, so a
    listing of many sessions from a few folders costs a few stats."""

    def __init__(self, project_root: Path) -> None:
        self.root = project_root.resolve()
        self.common = git_common_dir(self.root)
        self.key = repo_key(self.root)
        self._commons: dict[str, Path | None] = {}

    def rank(self, cwd: str, repo: str | None) -> Affinity:
        path = Path(cwd)
        if not path.is_absolute():
            return Affinity.ELSEWHERE  # a header written elsewhere: never "this folder"
        if _within(path, self.root):
            return Affinity.HERE
        if path.is_dir():
            real = path.resolve()
            if _within(real, self.root):
                return Affinity.HERE
            if self.common is not None and self._common_of(real) == self.common:
                return Affinity.SAME_REPO
            return Affinity.ELSEWHERE
        # The folder is gone: the project moved (or the clone was deleted). The git folder's
        # inode tells a move from another clone; a session older than that key gets the
        # benefit of the doubt, as a moved project is the common case.
        if repo is None or (self.key is not None and repo == self.key):
            return Affinity.SAME_REPO
        return Affinity.ELSEWHERE

    def _common_of(self, folder: Path) -> Path | None:
        key = str(folder)
        if key not in self._commons:
            self._commons[key] = git_common_dir(find_project_root(folder))
        return self._commons[key]


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


_T = TypeVar("_T", bound="_HasCwd")


class _HasCwd(Protocol):
    @property
    def cwd(self) -> str: ...


def rank_sessions(
    project_root: Path, sessions: list[tuple[_T, str | None]], *, near: bool = True
) -> list[_T]:
    """``(session, header line)`` pairs in recency order → this checkout's sessions, this
    folder's first (each group keeps its order); with ``near=False`` the other clones'. A
    header of None marks a session filed under this path (not shared by clones): here."""
    matcher = ProjectMatcher(project_root)
    ranked = [
        (matcher.rank(s.cwd, header_repo(header)) if header is not None else Affinity.HERE, s)
        for s, header in sessions
    ]
    if not near:
        return [s for rank, s in ranked if rank is Affinity.ELSEWHERE]
    kept = [(rank, s) for rank, s in ranked if rank is not Affinity.ELSEWHERE]
    kept.sort(key=lambda pair: pair[0])  # stable: recency within each rank
    return [s for _, s in kept]
