"""Project files for ``@`` completion, and the fuzzy matcher that ranks them.

In a git repository the list comes from ``git ls-files`` (tracked plus untracked files that
.gitignore does not exclude); elsewhere from a walk that skips hidden folders and the usual
dependency and build folders. Listing runs off the UI thread (the caller uses a thread worker)
and is capped so a home folder cannot stall it. Matching is a subsequence match scored for
consecutive characters, starts of path components and a short path, like editors do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentsh.git_listing import run_listing
from agentsh.gitutil import GitError

MAX_FILES = 50_000
_SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", ".venv", "venv", "dist", "build", "target", ".git"}
)


def list_project_files(root: Path, *, limit: int = MAX_FILES) -> list[str]:
    """Relative POSIX paths of the project's files, gitignore respected when in a repo."""
    if (root / ".git").exists():
        # Disarmed (a hostile .git/config runs nothing here) and bounded (an ignore line that
        # makes git spin: the walk below instead).
        try:
            done = run_listing(
                ["ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                root=root,
                work_tree=root,
            )
        except GitError:
            pass
        else:
            names = [n for n in done.stdout.decode("utf-8", "replace").split("\0") if n]
            return sorted(set(names))[:limit]
    return _walk(root, limit)


def _walk(root: Path, limit: int) -> list[str]:
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        rel = Path(folder).relative_to(root)
        for name in sorted(files):
            out.append((rel / name).as_posix())
            if len(out) >= limit:
                return out
    return out


@dataclass(frozen=True, slots=True)
class Match:
    path: str
    score: float
    positions: tuple[int, ...]


def fuzzy_match(query: str, path: str) -> Match | None:
    """Score ``path`` against ``query`` (case-insensitive subsequence); None if no match."""
    if not query:
        return Match(path, -len(path) / 1000, ())
    q = query.lower()
    p = path.lower()
    positions: list[int] = []
    substring = p.rfind(q)
    if substring >= 0:  # a contiguous match beats a scattered one
        positions = list(range(substring, substring + len(q)))
    else:
        start = 0
        for ch in q:
            found = p.find(ch, start)
            if found < 0:
                return None
            positions.append(found)
            start = found + 1
    score = 0.0
    for i, pos in enumerate(positions):
        if i and pos == positions[i - 1] + 1:
            score += 3  # consecutive
        if pos == 0 or path[pos - 1] in "/_-. ":
            score += 2  # start of a word or path component
    base = path.rsplit("/", 1)[-1].lower()
    if q in base:
        score += 6  # the query appears in the file name itself
        if base.startswith(q):
            score += 3
        if base.split(".", 1)[0] == q:
            score += 6  # the file's stem is exactly the query
    score -= len(path) / 100  # prefer shorter paths
    return Match(path, score, tuple(positions))


def rank(query: str, paths: list[str], *, limit: int = 12) -> list[Match]:
    matches = [m for path in paths if (m := fuzzy_match(query, path)) is not None]
    matches.sort(key=lambda m: (-m.score, m.path))
    return matches[:limit]
