"""Curated memory: MEMORY.md and USER.md, their safe edits, and the frozen session snapshot.

Two small Markdown files hold what the agent should remember (SPEC §5): MEMORY.md (notes about
the project and its environment, in the project's ``.agentsh/memory/``) and USER.md (who the
user is, in the data dir, shared by every project). Entries are separated by a line holding
only ``§``; each file has a character limit counted on the whole file (2,200 and 1,375).

Every change is made under an exclusive lock on a hidden sidecar file, re-reads the file right
before changing it (so an edit made by hand in an editor meanwhile is merged, never overwritten)
and is written atomically: a temporary file in the same folder, fsync, ``os.replace``, fsync of
the folder. Every write is scanned by the injection guard first.

MEMORY.md lives in a project folder someone else may have written, so it is read, locked and
written beneath the project root without following a link out of it; USER.md, in the user's
own data dir, may stay a link (a dotfiles repository). How the bytes move is
:mod:`agentsh.memory.curated_disk`. An untrusted project's MEMORY.md is neither loaded nor
changed.

At session start :meth:`CuratedMemory.snapshot` reads both files once into a frozen
:class:`MemorySnapshot`, the memory rendered into the system prompt. Writes during the session
go to disk at once but never change the snapshot, so the system prompt (and the provider's
prefix cache) stays byte-identical for the whole session. An entry the guard flags is shown as
``[BLOCKED: <pattern>]`` in the prompt while the file keeps it for the user to review.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from agentsh.config import MemorySettings
from agentsh.fsutil import LinkRefused, resolve_beneath
from agentsh.memory.curated_disk import ENTRY_SEPARATOR as ENTRY_SEPARATOR
from agentsh.memory.curated_disk import CuratedMemoryError as CuratedMemoryError
from agentsh.memory.curated_disk import MemoryFileError as MemoryFileError
from agentsh.memory.curated_disk import MemoryLockError as MemoryLockError
from agentsh.memory.curated_disk import (
    check_memory_folder,
    link_message,
    locked,
    read_lenient,
    read_strict,
    real_path,
    write_memory_file,
)
from agentsh.memory.guard import Scope, Threat, blocked_note, fence_project, first_threat
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.trust import hash_file, record_own_write

DEFAULT_LOCK_TIMEOUT_S = 5.0
PREVIEW_CHARS = 80
UNTRUSTED_NOTE = "not loaded: this folder is not trusted"


class MemoryTarget(StrEnum):
    """Which curated file: the project's MEMORY.md or the user's USER.md."""

    MEMORY = "memory"
    USER = "user"

    @property
    def file_name(self) -> str:
        return "MEMORY.md" if self is MemoryTarget.MEMORY else "USER.md"

    @property
    def purpose(self) -> str:
        if self is MemoryTarget.MEMORY:
            return "notes about this project and its environment"
        return "who the user is and how they like to work (shared by all projects)"


# -- errors ----------------------------------------------------------------------------------


class InvalidEntryError(CuratedMemoryError):
    """The content itself is unusable (empty, or it holds an entry separator)."""


class MemoryBlockedError(CuratedMemoryError):
    """The injection guard flagged the content."""

    def __init__(self, target: MemoryTarget, threat: Threat) -> None:
        self.target = target
        self.threat = threat
        super().__init__(
            f"Blocked by the memory guard: the text matches '{threat.name}' "
            f"({threat.description}): “{threat.excerpt}”. Memory holds plain facts, not "
            "instructions, commands or secrets; rewrite it as a fact or leave it out."
        )


class MemoryFullError(CuratedMemoryError):
    """The change would take the file over its character limit."""

    def __init__(
        self, target: MemoryTarget, needed: int, current: int, limit: int, entries: list[str]
    ) -> None:
        self.target = target
        self.needed = needed
        self.current = current
        self.limit = limit
        self.entries = list(entries)
        super().__init__(
            f"{target.file_name} would be {needed:,} characters, over its {limit:,}-character "
            f"limit (it is {format_usage(current, limit)} now). Consolidate first: merge or "
            "shorten entries with `replace`, or `remove` stale ones, then try again. "
            f"Current entries:\n{format_entries(entries)}"
        )


class NoMatchError(CuratedMemoryError):
    """``old_text`` is in no entry."""

    def __init__(self, target: MemoryTarget, old_text: str, entries: list[str]) -> None:
        self.target = target
        self.entries = list(entries)
        listing = format_entries(entries, preview=PREVIEW_CHARS) if entries else "(none)"
        super().__init__(
            f"No entry of {target.file_name} contains “{old_text}”. Give a short piece of text "
            f"copied exactly from the entry to change. Current entries:\n{listing}"
        )


class AmbiguousMatchError(CuratedMemoryError):
    """``old_text`` is in more than one entry."""

    def __init__(self, target: MemoryTarget, old_text: str, matches: list[str]) -> None:
        self.target = target
        self.matches = list(matches)
        super().__init__(
            f"“{old_text}” is in {len(matches)} entries of {target.file_name}; give a longer "
            "piece of text that only the entry to change contains. Matching entries:\n"
            + format_entries(matches, preview=PREVIEW_CHARS)
        )


# -- values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    """One entry as loaded at session start, with the guard's verdict on it."""

    text: str
    threat: Threat | None = None

    @property
    def blocked(self) -> bool:
        return self.threat is not None

    @property
    def prompt_text(self) -> str:
        """What the system prompt shows: the entry, or a ``[BLOCKED: ...]`` note."""
        return blocked_note(self.threat) if self.threat is not None else self.text


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """One curated file as it was when the session started."""

    target: MemoryTarget
    path: Path
    entries: tuple[SnapshotEntry, ...]
    chars: int
    limit: int
    problem: str | None = None  # unreadable or not UTF-8: shown to the user, never fatal

    @property
    def usage(self) -> str:
        return format_usage(self.chars, self.limit)

    @property
    def blocked(self) -> tuple[SnapshotEntry, ...]:
        return tuple(entry for entry in self.entries if entry.blocked)

    def render(self) -> str:
        lines = [f"## {self.target.file_name} [{self.usage}]: {self.target.purpose}"]
        if self.chars > self.limit:
            lines.append(
                "(Over its limit, probably edited by hand: consolidate it with the memory tool.)"
            )
        if self.problem:
            lines.append(f"({self.problem})")
        if self.blocked:
            count = len(self.blocked)
            lines.append(
                f"({count} {'entry was' if count == 1 else 'entries were'} withheld by the "
                f"injection guard; the user can review {self.target.file_name}.)"
            )
        if not self.entries:
            lines.append("(empty)")
            return "\n".join(lines)
        # Against files grown past their limit by writers that bypass the tool, the prompt
        # shows at most twice the limit, in whole entries.
        budget = 2 * self.limit
        shown: list[str] = []
        used = 0
        for index, entry in enumerate(self.entries):
            text = entry.prompt_text
            if used + len(text) > budget and shown:
                rest = len(self.entries) - index
                shown.append(f"[{rest} more {'entry' if rest == 1 else 'entries'} not shown]")
                break
            if len(text) > budget:
                text = text[: budget - 1] + "…"
            shown.append(text)
            used += len(text)
        # Quoted as data: an entry is a fact someone saved, not an instruction.
        lines.append(fence_project(f"\n{ENTRY_SEPARATOR}\n".join(shown), self.target.file_name))
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class MemorySnapshot:
    """Both curated files as loaded when the session started; never changes afterwards."""

    memory: FileSnapshot
    user: FileSnapshot

    @property
    def files(self) -> tuple[FileSnapshot, FileSnapshot]:
        return (self.memory, self.user)

    def get(self, target: MemoryTarget) -> FileSnapshot:
        return self.memory if target is MemoryTarget.MEMORY else self.user

    def render(self) -> str:
        """The memory block of the system prompt; byte-identical on every call."""
        return (
            "# Memory\n"
            "Curated notes kept across sessions, as they were when this session started. "
            "Changes made with the `memory` tool are saved at once but appear here only from "
            f"the next session. Entries are separated by lines holding only "
            f"{ENTRY_SEPARATOR}.\n\n" + self.memory.render() + "\n\n" + self.user.render() + "\n"
        )


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of a change: the file's entries and size after it."""

    target: MemoryTarget
    path: Path
    entries: tuple[str, ...]
    chars: int
    limit: int
    changed: bool  # False when the entry was already there (nothing written)

    @property
    def usage(self) -> str:
        return format_usage(self.chars, self.limit)


# -- formatting ------------------------------------------------------------------------------


def format_usage(chars: int, limit: int) -> str:
    """``67% — 1,474/2,200 chars``."""
    pct = round(100 * chars / limit) if limit > 0 else 0
    return f"{pct}% — {chars:,}/{limit:,} chars"


def format_entries(entries: list[str] | tuple[str, ...], preview: int | None = None) -> str:
    """Numbered entries with their sizes; ``preview`` cuts each to that many characters."""
    lines: list[str] = []
    for number, entry in enumerate(entries, start=1):
        text = entry
        if preview is not None:
            text = " ".join(text.split())
            if len(text) > preview:
                text = text[: preview - 1] + "…"
        lines.append(f"{number}. [{len(entry):,} chars] {text}")
    return "\n".join(lines)


# -- the file format -------------------------------------------------------------------------


def parse_entries(text: str) -> list[str]:
    """Entries of a curated file: split on lines holding only ``§``; blank entries dropped.

    A ``§`` inside a line is text, not a separator.
    """
    entries: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.strip() == ENTRY_SEPARATOR:
            entries.append("\n".join(current).strip())
            current = []
        else:
            current.append(line)
    entries.append("\n".join(current).strip())
    return [entry for entry in entries if entry]


def serialize_entries(entries: list[str], newline: str = "\n") -> str:
    if not entries:
        return ""
    body = f"\n{ENTRY_SEPARATOR}\n".join(entries) + "\n"
    return body.replace("\n", newline) if newline != "\n" else body


def _newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


# -- the store -------------------------------------------------------------------------------


class CuratedMemory:
    """MEMORY.md and USER.md on disk: read, snapshot, and guarded atomic changes."""

    def __init__(
        self,
        project: ProjectPaths,
        user: UserPaths,
        settings: MemorySettings,
        *,
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        project_trusted: bool = True,
    ) -> None:
        self._paths = {
            MemoryTarget.MEMORY: project.memory_file,
            MemoryTarget.USER: user.user_memory_file,
        }
        self._limits = {
            MemoryTarget.MEMORY: settings.memory_char_limit,
            MemoryTarget.USER: settings.user_char_limit,
        }
        # MEMORY.md is confined beneath the project root; USER.md is the user's own.
        self._roots: dict[MemoryTarget, Path | None] = {
            MemoryTarget.MEMORY: project.root,
            MemoryTarget.USER: None,
        }
        self._user = user
        self.settings = settings
        self._lock_timeout_s = lock_timeout_s
        self.project_trusted = project_trusted

    # -- reading ------------------------------------------------------------------------------

    def path(self, target: MemoryTarget) -> Path:
        return self._paths[MemoryTarget(target)]

    def limit(self, target: MemoryTarget) -> int:
        return self._limits[MemoryTarget(target)]

    def entries(self, target: MemoryTarget) -> list[str]:
        """The live entries on disk (not the snapshot)."""
        text, _problem = self._read(MemoryTarget(target))
        return parse_entries(text)

    def usage(self, target: MemoryTarget) -> tuple[int, int]:
        """``(characters in the file now, limit)``."""
        text, _problem = self._read(MemoryTarget(target))
        return len(text), self.limit(target)

    def read_text(self, target: MemoryTarget) -> tuple[str, str]:
        """The file's text as it is now and a problem ("" if none), never through a link
        out of the project; for display."""
        text, problem = self._read(MemoryTarget(target))
        return text, problem or ""

    def _read(self, target: MemoryTarget) -> tuple[str, str | None]:
        if target is MemoryTarget.MEMORY and not self.project_trusted:
            return "", UNTRUSTED_NOTE
        return read_lenient(self.path(target), self._roots[target])

    def snapshot(self) -> MemorySnapshot:
        """Read both files once and freeze them, each entry scanned by the guard."""
        return MemorySnapshot(
            memory=self._file_snapshot(MemoryTarget.MEMORY),
            user=self._file_snapshot(MemoryTarget.USER),
        )

    def _file_snapshot(self, target: MemoryTarget) -> FileSnapshot:
        path = self.path(target)
        text, problem = self._read(target)
        max_bytes = self.settings.guard_max_scan_bytes
        entries = tuple(
            SnapshotEntry(entry, first_threat(entry, Scope.SNAPSHOT, max_bytes=max_bytes))
            for entry in parse_entries(text)
        )
        return FileSnapshot(target, path, entries, len(text), self.limit(target), problem)

    # -- changing -----------------------------------------------------------------------------

    def add(self, target: MemoryTarget, content: str) -> WriteResult:
        """Append an entry. Adding an entry that is already there changes nothing."""
        target = MemoryTarget(target)
        entry = self._checked_entry(target, content)

        def edit(entries: list[str]) -> list[str]:
            return entries if entry in entries else [*entries, entry]

        return self._change(target, edit)

    def replace(self, target: MemoryTarget, old_text: str, content: str) -> WriteResult:
        """Replace the one entry containing ``old_text`` with ``content``."""
        target = MemoryTarget(target)
        entry = self._checked_entry(target, content)
        needle = _checked_old_text(old_text)

        def edit(entries: list[str]) -> list[str]:
            index = _unique_match(target, entries, needle)
            found = entries[index]
            out: list[str] = []
            for position, existing in enumerate(entries):
                if position == index:
                    out.append(entry)
                elif existing != found:  # identical copies of the old entry go too
                    out.append(existing)
            return _dedupe(out)

        return self._change(target, edit)

    def remove(self, target: MemoryTarget, old_text: str) -> WriteResult:
        """Remove the one entry containing ``old_text``."""
        target = MemoryTarget(target)
        needle = _checked_old_text(old_text)

        def edit(entries: list[str]) -> list[str]:
            found = entries[_unique_match(target, entries, needle)]
            return [existing for existing in entries if existing != found]

        return self._change(target, edit)

    def preview(self, target: MemoryTarget, content: str | None, old_text: str | None) -> str:
        """What a change would write, in words, for an approval prompt: the whole entry it
        replaces or removes and the new entry, exactly. Raises what the change itself would
        (content the guard flags, no entry matching ``old_text``), so nothing doomed is asked."""
        target = MemoryTarget(target)
        lines = []
        if old_text is not None:
            entries = self.entries(target)
            found = entries[_unique_match(target, entries, _checked_old_text(old_text))]
            lines.append(("replaces" if content is not None else "removes") + ":\n" + found)
        if content is not None:
            entry = self._checked_entry(target, content)
            lines.append(("with" if old_text is not None else "adds") + ":\n" + entry)
        return f"{target.file_name} ({self.path(target)}): " + "\n\n".join(lines)

    def _checked_entry(self, target: MemoryTarget, content: str) -> str:
        entry = content.strip()
        if not entry:
            raise InvalidEntryError("The content is empty; say what to remember.")
        if any(line.strip() == ENTRY_SEPARATOR for line in entry.splitlines()):
            raise InvalidEntryError(
                f"The content holds a line with only {ENTRY_SEPARATOR}, which separates "
                "entries; save one entry at a time."
            )
        threat = first_threat(
            entry, Scope.MEMORY_WRITE, max_bytes=self.settings.guard_max_scan_bytes
        )
        if threat is not None:
            raise MemoryBlockedError(target, threat)
        return entry

    def _change(self, target: MemoryTarget, edit: Callable[[list[str]], list[str]]) -> WriteResult:
        root = self._roots[target]
        if root is None:
            path = real_path(self.path(target))
        elif not self.project_trusted:
            raise MemoryFileError(
                "This folder is not trusted, so its project memory (MEMORY.md) is neither "
                "loaded nor changed. Tell the user what you wanted to remember."
            )
        else:
            try:
                path = resolve_beneath(root, self.path(target))
            except LinkRefused as exc:
                raise MemoryFileError(link_message(target.file_name, exc)) from None
            check_memory_folder(target.file_name, path, root, self.path(target).parent)
        limit = self.limit(target)
        with locked(path, self._lock_timeout_s, root):
            # Re-read under the lock, right before the change: whatever is on disk now (a
            # hand edit, another session's write) is what the change applies to.
            found = hash_file(root, path)[0] if root is not None else ""  # what trust saw
            current = read_strict(path, target.file_name, root)
            entries = parse_entries(current)
            updated = edit(entries)
            if updated == entries:
                return WriteResult(target, path, tuple(entries), len(current), limit, False)
            text = serialize_entries(updated, _newline_of(current))
            # Over the limit is refused, except a change that shrinks a file already over it
            # (consolidation must stay possible after a hand edit made it too big).
            if len(text) > limit and len(text) >= len(current):
                raise MemoryFullError(target, len(text), len(current), limit, entries)
            write_memory_file(path, text, private=target is MemoryTarget.USER, root=root)
            if root is not None:
                # A guarded write of agentsh's own in a trusted folder: the next start does
                # not ask about it (agentsh.trust); a hand edit still does.
                for written in {path, self.path(target)}:
                    record_own_write(self._user, root, written, before=found)
        return WriteResult(target, path, tuple(updated), len(text), limit, True)


def _checked_old_text(old_text: str) -> str:
    needle = old_text.strip()
    if not needle:
        raise InvalidEntryError(
            "old_text is empty; give a short piece of text copied from the entry to change."
        )
    return needle


def _unique_match(target: MemoryTarget, entries: list[str], needle: str) -> int:
    matches = [index for index, entry in enumerate(entries) if needle in entry]
    if not matches:
        raise NoMatchError(target, needle, entries)
    distinct = _dedupe([entries[index] for index in matches])
    if len(distinct) > 1:
        raise AmbiguousMatchError(target, needle, distinct)
    return matches[0]


def _dedupe(entries: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for entry in entries:
        if entry not in seen:
            seen.add(entry)
            out.append(entry)
    return out
