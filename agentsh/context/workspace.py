"""The workspace: one markdown file per compaction, written durably before anything is forgotten.

``workspace/<session-id>/NNN-archive.md`` holds the turns a compaction removed from the context,
verbatim and readable (a Summarize's too: its model may leave anything out); ``NNN-summary.md``
holds the summary a Summarize wrote, naming its archive.
A file is written to a temporary name, fsynced, renamed into place and the folder fsynced, so a
crash leaves either the whole file or none. Any failure (read-only folder, full disk) raises
:class:`WorkspaceError` with a message a person can act on; the caller then leaves the context
as it was.

A session kept off disk (``--no-session``) gets a :class:`MemoryWorkspace`: the same files, held
in memory for the life of the process, so "keeps nothing on disk" stays true.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from agentsh.context.view import ContextEntry
from agentsh.errors import AgentshError
from agentsh.fsutil import atomic_write
from agentsh.session.entries import BranchSummaryEntry, MessageEntry, Role, ToolResultEntry

_NAME = re.compile(r"^(\d{3,})-(archive|summary)\.md$")


class WorkspaceError(AgentshError):
    """A workspace file could not be written; nothing left the context."""


class Workspace(Protocol):
    def write(self, kind: str, text: str) -> str:
        """Store a new ``NNN-<kind>.md`` durably; returns where it is (a path or a name)."""
        ...

    def read(self, where: str) -> str: ...

    def discard(self, where: str) -> None:
        """Remove a file whose compaction was not recorded (best effort)."""
        ...


class DiskWorkspace:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def next_number(self) -> int:
        try:
            names = [p.name for p in self.folder.iterdir()]
        except FileNotFoundError:
            return 1
        except OSError as exc:
            raise WorkspaceError(
                f"cannot list the workspace {self.folder}: {exc.strerror}"
            ) from exc
        numbers = [int(m.group(1)) for n in names if (m := _NAME.match(n))]
        return max(numbers, default=0) + 1

    def write(self, kind: str, text: str) -> str:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the workspace folder {self.folder}: {exc.strerror}"
            ) from exc
        number = self.next_number()
        final = self.folder / f"{number:03d}-{kind}.md"
        try:
            atomic_write(final, text.encode("utf-8"), exclusive=True)
        except OSError as exc:
            raise WorkspaceError(f"cannot write {final}: {exc.strerror or exc}") from exc
        return str(final)

    def read(self, where: str) -> str:
        return Path(where).read_text(encoding="utf-8")

    def discard(self, where: str) -> None:
        # The record never made it to the log, so its file describes nothing: remove it so the
        # summaries pane does not list a compaction that did not happen.
        with contextlib.suppress(OSError):
            Path(where).unlink()


class MemoryWorkspace:
    """Workspace files of a session that is not kept on disk."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def write(self, kind: str, text: str) -> str:
        name = f"memory:{len(self.files) + 1:03d}-{kind}.md"
        self.files[name] = text
        return name

    def read(self, where: str) -> str:
        return self.files[where]

    def discard(self, where: str) -> None:
        self.files.pop(where, None)


# -- rendering ---------------------------------------------------------------------------------


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def render_archive(
    entries: Iterable[ContextEntry], *, session_id: str, tier_label: str, note: str = ""
) -> str:
    """The removed turns as readable markdown, every text verbatim."""
    parts = [
        f"# Archived turns of session {session_id}",
        f"Moved out of the context by {tier_label}. {note}".strip(),
    ]
    for entry in entries:
        match entry:
            case MessageEntry(role=Role.USER):
                parts.append(f"## User ({entry.timestamp})\n\n{entry.content}")
            case MessageEntry():
                who = f"Assistant ({entry.model})" if entry.model else "Assistant"
                flag = f" [{entry.stop_reason.value}]" if entry.stop_reason else ""
                block = [f"## {who}{flag}"]
                if entry.content:
                    block.append(entry.content)
                for call in entry.tool_calls:
                    block.append(
                        f"Tool call `{call.name}` ({call.id}):\n{_fence(call.arguments, 'json')}"
                    )
                parts.append("\n\n".join(block))
            case ToolResultEntry():
                flag = " (error)" if entry.is_error else ""
                parts.append(
                    f"### Tool result: {entry.tool_name}{flag} ({entry.tool_call_id})\n\n"
                    + _fence(entry.content, "text")
                )
            case BranchSummaryEntry():
                parts.append(f"## Note about another branch\n\n{entry.summary}")
    return "\n\n".join(parts) + "\n"


def render_summary_file(
    summary: str, *, session_id: str, tier_label: str, archive: str = ""
) -> str:
    """The summary as its workspace file; ``archive`` names the file that holds the turns it
    replaced, verbatim."""
    where = f" The turns it replaces are verbatim in `{archive}`." if archive else ""
    return (
        f"# Context summary of session {session_id}\n\nWritten by {tier_label}.{where}\n\n"
        f"{summary}\n"
    )
