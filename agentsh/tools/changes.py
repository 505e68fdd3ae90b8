"""Which files a command changed: a snapshot of the work tree before it and one after.

``bash`` can change files no tool call names (``sed -i``, a code generator, ``git checkout``).
:func:`snapshot` notes the state of the tree cheaply and :func:`changed_files` compares two:

- in a git work tree, ``git status --porcelain`` (through :mod:`agentsh.gitutil`, so the
  repository's fsmonitor, hooks and drivers never run) lists the dirty paths, and each one's
  size and modification time is noted, so a file edited again, reverted, created or deleted
  counts; paths are relative to the top of the work tree;
- elsewhere, the sizes and modification times of up to :data:`MAX_FILES` files under the folder
  (hidden folders and dependency or build folders skipped); past that, nothing is claimed.

A snapshot that could not be taken is None and the comparison says nothing changed: this is a
record for the model, never a guarantee. Used by the ``bash`` tool (``details["files_changed"]``,
which the context's kept facts read); checkpoints can share it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentsh.git_listing import arun_listing, known_listing_refusal
from agentsh.gitutil import GitError, arun_git

MAX_FILES = 20_000
MAX_REPORTED = 200
GIT_TIMEOUT_S = 5.0
_SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "venv", "target", "build", "dist", "site-packages"}
)

State = tuple[str, int, int]  # (git status or "", size, mtime_ns); size -1 when missing


@dataclass(frozen=True, slots=True)
class TreeSnapshot:
    """The state of the files that could change, keyed by path relative to ``root``."""

    root: Path
    files: Mapping[str, State]
    git: bool


async def snapshot(folder: Path) -> TreeSnapshot | None:
    """The tree's state now, or None when it cannot be told cheaply."""
    try:
        top = await _git_top(folder)
        if top is not None:
            try:
                return await _git_snapshot(folder, top)
            except GitError:
                if known_listing_refusal(top) is None:
                    raise
                # git may not list this repository (an ignore line makes it spin): walk it
        return await asyncio.to_thread(_walk_snapshot, folder)
    except (OSError, GitError, UnicodeError):
        return None


def changed_files(before: TreeSnapshot | None, after: TreeSnapshot | None) -> list[str]:
    """Paths whose state differs between the snapshots, sorted, at most :data:`MAX_REPORTED`."""
    if before is None or after is None or before.root != after.root or before.git != after.git:
        return []
    missing: State = ("", -1, 0)
    paths = before.files.keys() | after.files.keys()
    changed = sorted(
        p for p in paths if before.files.get(p, missing) != after.files.get(p, missing)
    )
    return changed[:MAX_REPORTED]


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return -1, 0
    return st.st_size, st.st_mtime_ns


async def _git_top(folder: Path) -> Path | None:
    try:
        done = await arun_git(
            ["rev-parse", "--show-toplevel"], cwd=folder, timeout=GIT_TIMEOUT_S, check=False
        )
    except GitError:
        return None  # no git: walk the folder instead
    if done.returncode != 0:
        return None
    top = done.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(top) if top else None


async def _git_snapshot(folder: Path, top: Path) -> TreeSnapshot:
    done = await arun_listing(
        [
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
        ],
        root=top,
        cwd=folder,
        timeout=GIT_TIMEOUT_S,
    )
    records = [
        (r[:2], r[3:])
        for r in done.stdout.decode("utf-8", "surrogateescape").split("\0")
        if len(r) > 3
    ]
    return await asyncio.to_thread(_stat_records, top, records)


def _stat_records(top: Path, records: list[tuple[str, str]]) -> TreeSnapshot:
    files: dict[str, State] = {}
    for index, (status, path) in enumerate(records):
        # Past the cap only the status counts (an untracked dependency folder, say).
        size, mtime = _stat(top / path) if index < MAX_FILES else (0, 0)
        files[path] = (status, size, mtime)
    return TreeSnapshot(top, files, git=True)


def _walk_snapshot(folder: Path) -> TreeSnapshot | None:
    files: dict[str, State] = {}
    for current, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS]
        for name in names:
            if len(files) >= MAX_FILES:
                return None
            path = Path(current) / name
            size, mtime = _stat(path)
            files[str(path.relative_to(folder))] = ("", size, mtime)
    return TreeSnapshot(folder, files, git=False)
