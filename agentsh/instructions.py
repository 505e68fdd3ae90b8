"""Instruction files the agents.md way: which AGENTS.md files reach the model, and when.

At the start of a session: the user's own ``AGENTS.md`` in the config dir, then AGENTS.md
(CLAUDE.md as a fallback in each folder) from the project root down to the working folder.
They share one byte budget, and the most specific file wins it: the budget is spent from the
working folder up, so the root's general file and the user's are the ones cut or left out.

During the session: the first time the agent reads, writes or edits a file, the instruction
files of the folders on the way to it that were not loaded yet (below the working folder, or
beside it) are added to that tool's result, fenced as project data, once per session, with a
notice to the user. Agents (vibe, Claude Code) load them on read; the closest file to the file
being changed is the one that wins over those above it.

Every project file is someone else's input: read without following a link out of the project
(``fsutil.read_beneath``), capped, and scanned by the injection guard; a poisoned file is left
out and the user is told why. The user's own file is theirs (a link to a dotfiles folder is
fine) but is capped and scanned too.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentsh.fsutil import LinkRefused, read_beneath
from agentsh.memory.guard import Scope, fence_project, scan
from agentsh.trust import folders_down_to

CONTEXT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")
USER_FILE_NAME = "AGENTS.md"
#: tools whose ``path`` argument names a file the agent is working on
TOUCHING_TOOLS = frozenset({"read", "write", "edit"})


@dataclass(frozen=True, slots=True)
class ContextFile:
    path: Path
    text: str


@dataclass(slots=True)
class ProjectInstructions:
    files: list[ContextFile] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # told to the user once


def context_file_in(folder: Path) -> Path | None:
    """The folder's instruction file: AGENTS.md, else CLAUDE.md (a name, maybe a link)."""
    return next(
        (folder / name for name in CONTEXT_FILE_NAMES if os.path.lexists(folder / name)), None
    )


def load_project_instructions(
    project_root: Path,
    cwd: Path,
    max_bytes: int,
    *,
    user_file: Path | None = None,
    project: bool = True,
) -> ProjectInstructions:
    """``user_file`` (if any), then each folder's file from the project root down to ``cwd``
    (none with ``project=False``: an untrusted folder), in that order; the budget goes to the
    most specific first (see the module doc)."""
    result = ProjectInstructions()
    root = project_root.resolve()
    folders = folders_down_to(root, cwd) if project else []
    chosen = [path for f in folders if (path := context_file_in(f))]
    candidates: list[tuple[Path, bool]] = [(path, True) for path in chosen]
    if user_file is not None and os.path.lexists(user_file):
        candidates.insert(0, (user_file, False))
    budget = max_bytes
    taken: list[ContextFile] = []
    for path, in_project in reversed(candidates):  # the working folder's first
        if budget <= 0:
            # Said, not silent: the file left out is the more general one.
            result.notices.append(
                f"{path} was left out: the {max_bytes:,}-byte limit for instruction files was "
                "used up by the more specific files below it"
            )
            continue
        found = read_instruction_file(
            root if in_project else None, path, budget, max_bytes, result.notices
        )
        if found is not None:
            taken.append(found)
            budget -= len(found.text.encode("utf-8"))
    result.files = taken[::-1]
    return result


def read_instruction_file(
    root: Path | None, path: Path, budget: int, max_bytes: int, notices: list[str]
) -> ContextFile | None:
    """One instruction file, cut to ``budget`` bytes and guarded; None (with a notice when
    the user should know) when missing, refused, unreadable, poisoned or empty. ``root`` is
    the project the file must stay inside; None for the user's own file."""
    try:
        # One byte over the budget tells "cut" apart; a bigger file is never read whole.
        raw = (
            read_beneath(root, path, max_bytes=budget + 1)
            if root is not None
            else _read_user_file(path, budget + 1)
        )
    except LinkRefused as exc:
        notices.append(
            f"{path} was not loaded: it {exc.explained}; project instructions "
            "are only read inside the project"
        )
        return None
    except OSError as exc:
        notices.append(f"{path} could not be read ({exc.strerror}); skipped")
        return None
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace")
    encoded = text.encode("utf-8")
    if len(encoded) > budget:
        # Cut before scanning: the guard treats anything over its scan limit as unsafe.
        text = encoded[: max(budget, 0)].decode("utf-8", errors="ignore")
        notices.append(f"{path} was cut to fit the {max_bytes:,}-byte limit for instruction files")
    threats = scan(text, Scope.CONTEXT_FILE)
    if threats:
        names = ", ".join(sorted({t.name for t in threats}))
        notices.append(
            f"{path} was not loaded: it looks like a prompt injection ({names}). "
            "Review the file; agentsh ignores it until it is clean."
        )
        return None
    return ContextFile(path, text) if text else None


def _read_user_file(path: Path, limit: int) -> bytes | None:
    """The user's own file: a link is followed (a dotfiles folder), but only to a regular
    file, and never more than ``limit`` bytes are read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return handle.read(limit)


class NestedInstructions:
    """The instruction files found on the way to the files the agent touches, each added to
    the model's context once (see the module doc). One per session and working folder."""

    def __init__(
        self,
        project_root: Path,
        cwd: Path,
        max_bytes: int,
        *,
        enabled: bool,
        covers: Callable[[Path], bool] | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(project_root))
        self.max_bytes = max_bytes
        self.budget = max_bytes  # for the whole session: nested files are extra context
        self.enabled = enabled
        # Whether the user's trust covers a file as it is now (agentsh.trust.covered); None
        # for every file (--trust-project). A folder "trusted" for holding nothing at its top
        # covers none: its nested files were never shown to anyone.
        self.covers = covers
        # The folders the start-up files came from are done, loaded or not.
        self._seen: set[Path] = set(folders_down_to(self.root, cwd))
        # Each file loaded, with the text the model was given for it (in a tool's result).
        self.loaded: list[tuple[Path, str]] = []

    def after_touch(self, path: Path) -> NestedLoad:
        """What to add to the result of a tool that touched ``path``, and what to tell."""
        load = NestedLoad()
        if not self.enabled:
            return load
        folders = [f for f in folders_down_to(self.root, path.parent) if f not in self._seen]
        self._seen.update(folders)
        chosen = [name for f in folders if (name := context_file_in(f))]
        taken: list[ContextFile] = []
        for candidate in reversed(chosen):  # the closest to the file first
            if self.covers is not None and not self.covers(candidate):
                load.problems.append(
                    f"{_shown(candidate, self.root)} was not loaded: you have not trusted this "
                    "folder with it (agentsh trust reviews the folder; --trust-project loads "
                    "it for one run)"
                )
                continue
            if self.budget <= 0:
                load.problems.append(
                    f"{candidate} was left out: the {self.max_bytes:,}-byte limit for nested "
                    "instruction files is used up"
                )
                continue
            found = read_instruction_file(
                self.root, candidate, self.budget, self.max_bytes, load.problems
            )
            if found is not None:
                taken.append(found)
                self.budget -= len(found.text.encode("utf-8"))
        blocks = []
        for found in reversed(taken):  # general first, the closest last
            shown = _shown(found.path, self.root)
            folder = _shown(found.path.parent, self.root)
            load.loaded.append(f"Loaded {shown}: instructions for the files under {folder}/")
            block = (
                f"Instructions for the files under {folder}/ ({shown}; a file's closest "
                f"AGENTS.md wins over those above it):\n{fence_project(found.text.strip(), shown)}"
            )
            self.loaded.append((found.path, block))
            blocks.append(block)
        load.block = "\n\n".join(blocks)
        return load


@dataclass(slots=True)
class NestedLoad:
    """What one touch brought: the text for the model and the lines for the user."""

    block: str = ""  # appended to the tool's result; "" when nothing new was found
    loaded: list[str] = field(default_factory=list)  # "Loaded sub/AGENTS.md: ..."
    problems: list[str] = field(default_factory=list)  # cut, refused, poisoned, over budget


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root)) or "."
    except ValueError:
        return str(path)
