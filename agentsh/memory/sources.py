"""What the memory search index reads: the memory files of a project and of its user.

Every ``*.md`` under the project's ``.agentsh/memory/`` (MEMORY.md and the typed docs), every
``*.md`` under the user's memory folder (USER.md), and the compaction summaries
(``workspace/<session-id>/*-summary.md``) of this project's sessions. :class:`MemorySources`
finds them, classifies a path, and turns it into the short name results show
(``.agentsh/memory/...``, ``user:USER.md``, ``workspace:<session>/NNN-summary.md``) and back.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from agentsh.fsutil import read_beneath

if TYPE_CHECKING:
    from agentsh.paths import ProjectPaths, UserPaths

CURATED_NAMES = frozenset({"MEMORY.md", "USER.md"})


class SourceKind(StrEnum):
    MEMORY = "memory"  # the project's .agentsh/memory/ (MEMORY.md, docs/)
    USER = "user"  # the user's memory folder (USER.md)
    SUMMARY = "summary"  # compaction summaries of this project's sessions


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str
    kind: SourceKind
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class MemorySources:
    """The folders the index reads, and how their files are named in results."""

    project_root: Path
    project_memory_dir: Path | None  # None: an untrusted folder, or its memory links out
    user_memory_dir: Path
    workspace_dir: Path
    project_sessions_dir: Path

    def read(self, path: Path, kind: SourceKind | None, *, max_bytes: int | None = None) -> bytes:
        """A source's bytes (FileNotFoundError when it is gone). A project's memory file is
        someone else's: read beneath the project as the prompt reads it
        (:func:`~agentsh.fsutil.read_beneath`), so a hard link to a file elsewhere, a symlink
        swapped in after the listing, or a FIFO is never read. The user's files are theirs."""
        if kind is not SourceKind.MEMORY:
            return path.read_bytes()
        data = read_beneath(self.project_root, path, max_bytes=max_bytes)
        if data is None:
            raise FileNotFoundError(str(path))
        return data

    @classmethod
    def for_project(
        cls, user: UserPaths, project: ProjectPaths, *, include_project: bool = True
    ) -> MemorySources:
        """The sources of ``project``; its own memory only when ``include_project`` (a
        trusted folder) and only if ``.agentsh/memory`` does not lead out of the project."""
        memory_dir: Path | None = project.memory_dir
        if not include_project or not _absolute(project.memory_dir).is_relative_to(
            _absolute(project.root)
        ):
            memory_dir = None
        return cls(
            project_root=project.root,
            project_memory_dir=memory_dir,
            user_memory_dir=user.user_memory_dir,
            workspace_dir=user.workspace_dir,
            project_sessions_dir=user.project_sessions_dir(project.root),
        )

    def watch_roots(self) -> list[Path]:
        """Folders a watcher should follow (some may not exist yet)."""
        roots = [self.project_memory_dir, self.user_memory_dir, self.workspace_dir]
        return [root for root in roots if root is not None]

    def session_ids(self) -> set[str]:
        """This project's session ids, from the log file names ``<stamp>_<id>.jsonl``."""
        try:
            names = [e.name for e in os.scandir(self.project_sessions_dir) if e.is_file()]
        except OSError:
            return set()
        return {n[:-6].rpartition("_")[2] for n in names if n.endswith(".jsonl")}

    def discover(self) -> dict[str, SourceFile]:
        """Every source file now on disk, by absolute path."""
        found: dict[str, SourceFile] = {}
        for root, kind in (
            (self.project_memory_dir, SourceKind.MEMORY),
            (self.user_memory_dir, SourceKind.USER),
        ):
            if root is None:
                continue
            for path, st in _walk_markdown(root):
                found[path] = SourceFile(path, kind, st.st_mtime_ns, st.st_size)
        for link, kind in self._curated_links():
            with contextlib.suppress(OSError):
                st = link.stat()  # the file it points at: an edit there changes mtime and size
                found[str(link)] = SourceFile(str(link), kind, st.st_mtime_ns, st.st_size)
        sessions = self.session_ids()
        if sessions:
            with contextlib.suppress(OSError):
                for entry in os.scandir(self.workspace_dir):
                    if entry.name not in sessions or not entry.is_dir(follow_symlinks=False):
                        continue
                    for path, st in _walk_markdown(Path(entry.path), recursive=False):
                        if path.endswith("-summary.md"):
                            found[path] = SourceFile(
                                path, SourceKind.SUMMARY, st.st_mtime_ns, st.st_size
                            )
        return found

    def _curated_links(self) -> list[tuple[Path, SourceKind]]:
        """USER.md where it is a symlink to a file (a dotfiles repository).

        Other symlinks are never followed, but USER.md is the file the system prompt shows
        and the memory tool writes through, so search reads it too, under its own name. The
        user's folder is the user's own; a project's MEMORY.md link is never followed.
        """
        links: list[tuple[Path, SourceKind]] = []
        for name in sorted(CURATED_NAMES):
            link = _root(self.user_memory_dir) / name
            if link.is_symlink() and link.is_file():
                links.append((link, SourceKind.USER))
        return links

    def _curated_link(self, path: Path) -> tuple[Path, SourceKind] | None:
        """``path`` as one of :meth:`_curated_links`, if it names one."""
        if path.name not in CURATED_NAMES:
            return None
        link = _absolute(path.parent) / path.name
        return next(((p, k) for p, k in self._curated_links() if p == link), None)

    def key(self, path: Path) -> str:
        """The name the index stores ``path`` under: absolute, a curated link not followed."""
        curated = self._curated_link(path)
        return str(curated[0] if curated is not None else _absolute(path))

    def classify(self, path: Path) -> SourceKind | None:
        """The kind of source ``path`` would be, or None if the index does not cover it."""
        if path.suffix.lower() != ".md":
            return None
        curated = self._curated_link(path)
        if curated is not None:
            return curated[1]
        absolute = _absolute(path)
        if self.project_memory_dir is not None and _is_within(absolute, self.project_memory_dir):
            return SourceKind.MEMORY
        if _is_within(absolute, self.user_memory_dir):
            return SourceKind.USER
        if (
            absolute.parent.parent == _absolute(self.workspace_dir)
            and absolute.name.endswith("-summary.md")
            and absolute.parent.name in self.session_ids()
        ):
            return SourceKind.SUMMARY
        return None

    def display(self, path: str) -> str:
        """A short name for results: project-relative, ``user:`` or ``workspace:`` prefixed."""
        absolute = Path(path)
        for root, prefix in (
            (self.project_root, ""),
            (self.user_memory_dir, "user:"),
            (self.workspace_dir, "workspace:"),
        ):
            if _is_within(absolute, root):
                return prefix + absolute.relative_to(_root(root)).as_posix()
        return path

    def resolve(self, name: str) -> Path | None:
        """The source file a display name (or an absolute path) denotes, if it is a source."""
        name = name.strip()
        if not name:
            return None
        if name.startswith("user:"):
            candidate = self.user_memory_dir / name[5:]
        elif name.startswith("workspace:"):
            candidate = self.workspace_dir / name[10:]
        else:
            candidate = Path(name).expanduser()
            if not candidate.is_absolute():
                candidate = self.project_root / candidate
        try:
            curated = self._curated_link(candidate)
            if curated is not None:
                return curated[0]
            resolved = candidate.resolve()
        except OSError:
            return None
        return resolved if self.classify(resolved) is not None else None


def _absolute(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


@functools.lru_cache(maxsize=64)
def _root(path: Path) -> Path:
    """A source root, resolved once: results name their files relative to it on every search."""
    return _absolute(path)


def _is_within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(_root(root))
    except ValueError:
        return False
    return True


def _walk_markdown(root: Path, *, recursive: bool = True) -> Iterator[tuple[str, os.stat_result]]:
    """``*.md`` files under ``root``; symlinks and hidden folders are skipped."""
    stack = [_absolute(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir():
                    if recursive and not entry.name.startswith("."):
                        stack.append(Path(entry.path))
                elif entry.name.lower().endswith(".md") and entry.is_file():
                    yield entry.path, entry.stat()
            except OSError:
                continue
