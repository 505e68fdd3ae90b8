"""The entry types of a session log and their JSON form (SPEC §2).

A session file is one header line followed by entries. Conversation entries (``message``,
``toolResult``, ``compaction``, ``branchSummary``, ``modelChange``) are nodes of the tree via
``id``/``parentId``. ``label``, ``leaf`` and ``checkpoint`` records are annotations: they point
at a node with ``targetId`` and are never nodes themselves, so labelling or moving the leaf does
not change the shape of the conversation; a ``name`` record (the session's name, the newest
wins) and a ``modelCall`` record (a model call whose output was not kept: its usage, so the
session's totals count it) are ones too, with a null ``targetId`` so that an older agentsh keeps
them as annotations.
Entries of a type this version does not know are kept verbatim as :class:`UnknownEntry` and
skipped for the model.

JSON keys are camelCase (the file format); Python attributes are snake_case. Each entry writes
its own JSON (``to_json``, :func:`encode_line`); reading a line back is
:func:`agentsh.session.entry_parse.entry_from_json`, the hot path of a load. The value types
the entries hold (:class:`Role`, :class:`StopReason`, :class:`ToolCall`, :class:`Usage`) live
in :mod:`agentsh.values`, below the log, so the model door can use them without the log; they
are re-exported here for the log's readers.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentsh.errors import AgentshError
from agentsh.events import Event
from agentsh.paths import checked_session_id
from agentsh.termsafe import without_sequences
from agentsh.values import Role, StopReason, ToolCall, Usage

__all__ = [
    "AnyEntry",
    "BranchSummaryEntry",
    "CompactionEntry",
    "Entry",
    "EntryAppended",
    "EntryError",
    "Header",
    "LabelEntry",
    "LeafEntry",
    "MessageEntry",
    "ModelCallEntry",
    "ModelChangeEntry",
    "Role",
    "StopReason",
    "ToolCall",
    "ToolResultEntry",
    "UnknownEntry",
    "Usage",
    "encode_checked",
    "encode_line",
    "new_id",
    "now_iso",
]

FORMAT_VERSION = 1


class EntryError(AgentshError, ValueError):
    """A line that is JSON but not a valid entry."""


NAME_CHARS = 80


def clean_name(name: str) -> str:
    """A session name as stored and shown: one line, at most :data:`NAME_CHARS` characters,
    no escape sequence (nor what it carried) and no control or bidi-override character: a
    name may come from a Pi file or a hand-edited log, which is someone's input."""
    text = without_sequences(name)
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat[:NAME_CHARS]


def new_id() -> str:
    """An 8-hex-digit id; the log retries on the (rare) collision within a file."""
    return secrets.token_hex(4)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Header:
    id: str
    timestamp: str
    cwd: str
    version: int = FORMAT_VERSION
    parent_session: str | None = None
    # The inode of the project's git folder when the session began: after ``mv`` it is the
    # same, in another clone of the repository it is not (session/affinity.py).
    repo: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "session",
            "version": self.version,
            "id": self.id,
            "timestamp": self.timestamp,
            "cwd": self.cwd,
        }
        if self.parent_session:
            data["parentSession"] = self.parent_session
        if self.repo:
            data["repo"] = self.repo
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Header:
        if data.get("type") != "session":
            raise EntryError("the first line is not a session header")
        try:
            version = int(data.get("version", 1))
            return cls(
                id=checked_session_id(str(data["id"])),
                timestamp=str(data.get("timestamp", "")),
                cwd=str(data.get("cwd", "")),
                version=version,
                parent_session=data.get("parentSession"),
                repo=str(data["repo"]) if data.get("repo") else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EntryError(f"bad session header: {exc}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """Fields every entry has."""

    id: str
    parent_id: str | None
    timestamp: str = field(default_factory=now_iso)

    TYPE = ""  # overridden as a class attribute by each subclass

    @property
    def is_node(self) -> bool:
        """Conversation entries are tree nodes; label and leaf records are annotations."""
        return True

    def _base_json(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "id": self.id,
            "parentId": self.parent_id,
            "timestamp": self.timestamp,
        }

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageEntry(Entry):
    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    model: str | None = None
    usage: Usage | None = None
    stop_reason: StopReason | None = None
    error: str | None = None  # the provider error that ended this reply, if any

    TYPE = "message"

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data["role"] = self.role.value
        data["content"] = self.content
        if self.tool_calls:
            data["toolCalls"] = [_call_json(c) for c in self.tool_calls]
        if self.model:
            data["model"] = self.model
        if self.usage is not None:
            data["usage"] = self.usage.to_json()
        if self.stop_reason is not None:
            data["stopReason"] = self.stop_reason.value
        if self.error:
            data["error"] = self.error
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultEntry(Entry):
    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool = False
    truncated: bool = False
    details: dict[str, Any] = field(default_factory=dict)  # diff, full output path, exit code

    TYPE = "toolResult"

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(
            toolCallId=self.tool_call_id,
            toolName=self.tool_name,
            content=self.content,
            isError=self.is_error,
            truncated=self.truncated,
        )
        if self.details:
            data["details"] = self.details
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionEntry(Entry):
    """The context before ``first_kept_id`` is replaced by ``summary`` from here on.

    ``replacements`` holds phase-1 pruning: tool-result entry id -> shortened content, and
    ``argument_replacements`` tool-call id -> shortened arguments JSON. A compaction that only
    pruned has ``first_kept_id`` equal to the first entry of the path and an empty summary.
    """

    tier: str
    summary: str
    first_kept_id: str
    tokens_before: int
    tokens_after: int
    workspace_file: str = ""
    files_read: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    replacements: dict[str, str] = field(default_factory=dict)
    argument_replacements: dict[str, str] = field(default_factory=dict)
    manual: bool = False
    usage: Usage | None = None  # the summary call's, if any
    # Why automatic compaction was paused when this (pre-flight or overflow) compaction ran; ""
    # when it was not. The pause is read back from the path, and this keeps it when the turns
    # that paused it are cut by this very compaction.
    paused: str = ""
    # A Summarize's verbatim archive of the turns it replaced (``workspace_file`` is then the
    # summary): a summary model may leave out anything, so the turns are written down first.
    archive_file: str = ""

    TYPE = "compaction"

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(
            tier=self.tier,
            summary=self.summary,
            firstKeptId=self.first_kept_id,
            tokensBefore=self.tokens_before,
            tokensAfter=self.tokens_after,
            workspaceFile=self.workspace_file,
            filesRead=list(self.files_read),
            filesModified=list(self.files_modified),
        )
        if self.replacements:
            data["replacements"] = self.replacements
        if self.argument_replacements:
            data["argumentReplacements"] = self.argument_replacements
        if self.manual:
            data["manual"] = True
        if self.usage is not None:
            data["usage"] = self.usage.to_json()
        if self.paused:
            data["paused"] = self.paused
        if self.archive_file:
            data["archiveFile"] = self.archive_file
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchSummaryEntry(Entry):
    """A short summary of a branch the user left, attached where they went."""

    from_id: str
    summary: str
    usage: Usage | None = None  # the model call that wrote it

    TYPE = "branchSummary"

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(fromId=self.from_id, summary=self.summary)
        if self.usage is not None:
            data["usage"] = self.usage.to_json()
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChangeEntry(Entry):
    model: str

    TYPE = "modelChange"

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data["model"] = self.model
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelEntry(Entry):
    """Sets (or, with an empty label, clears) the label of ``target_id``."""

    target_id: str
    label: str

    TYPE = "label"

    @property
    def is_node(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(targetId=self.target_id, label=self.label)
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class LeafEntry(Entry):
    """Moves the leaf to ``target_id`` without appending a conversation entry.

    ``target_id`` None means "start over": the next message becomes a new root.
    """

    target_id: str | None

    TYPE = "leaf"

    @property
    def is_node(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data["targetId"] = self.target_id
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointEntry(Entry):
    """The project's files were at journal position ``seq`` of checkpoint store ``store`` while
    the conversation was at ``target_id`` (agentsh/checkpoints). An annotation like ``label``:
    parentless with a ``targetId``, so an older agentsh keeps it as an unknown annotation.

    ``files`` names (up to a cap) the files changed since the state ``target_id`` had before
    this record, ``changed`` counts them all; ``reason`` is ``user``, ``tool`` or ``restore``.
    """

    target_id: str
    store: str
    seq: int
    reason: str = ""
    files: tuple[str, ...] = ()
    changed: int = 0

    TYPE = "checkpoint"

    @property
    def is_node(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(targetId=self.target_id, store=self.store, seq=self.seq, reason=self.reason)
        if self.changed:
            data.update(files=list(self.files), changed=self.changed)
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class NameEntry(Entry):
    """Names the session (``--name``, ``/name``); an empty name clears it. Written with a null
    ``targetId``: an older agentsh sees an annotation it does not know, never a new root."""

    name: str

    TYPE = "name"

    @property
    def is_node(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(targetId=None, name=self.name)
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallEntry(Entry):
    """A model call made for the session whose output was not kept (a summary for a compaction
    that was not applied, a branch summary that came back empty, the pre-compaction memory
    save): its ``usage``, so the session's tokens and cost count every call. ``purpose`` says
    which call, ``note`` why its output went nowhere. An annotation with a null ``targetId``."""

    purpose: str
    usage: Usage
    note: str = ""

    TYPE = "modelCall"

    @property
    def is_node(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(targetId=None, purpose=self.purpose, note=self.note, usage=self.usage.to_json())
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEntry(Entry):
    """An entry of a type this version does not know; kept verbatim, never sent to a model."""

    raw: dict[str, Any]

    @property
    def is_node(self) -> bool:
        """A future annotation (no parent, points at a ``targetId``) must not become a root
        and steal the leaf; anything else unknown is a conversation node."""
        return not (self.parent_id is None and "targetId" in self.raw)

    @property
    def type_name(self) -> str:
        return str(self.raw.get("type", "?"))

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


AnyEntry = (
    MessageEntry
    | ToolResultEntry
    | CompactionEntry
    | BranchSummaryEntry
    | ModelChangeEntry
    | LabelEntry
    | LeafEntry
    | CheckpointEntry
    | NameEntry
    | ModelCallEntry
    | UnknownEntry
)


@dataclass(frozen=True, slots=True)
class EntryAppended(Event):
    """``entry`` has just been written to the session log.

    The agent announces every entry of a turn this way, in the order written, so a front end
    can show the conversation as a projection of the log while it happens, with the same
    mapping it uses when a session is opened (the TUI's chat). Front ends that print progress
    instead (headless ``-p``) may ignore it.
    """

    entry: AnyEntry


def _call_json(call: ToolCall) -> dict[str, str]:
    data = {"id": call.id, "name": call.name, "arguments": call.arguments}
    if call.summary:
        data["summary"] = call.summary
    return data


def encode_line(entry: AnyEntry | Header) -> bytes:
    """One complete line, newline included, ready to be written in a single call."""
    return encode_checked(entry)[0]


def encode_checked(entry: AnyEntry | Header) -> tuple[bytes, bool]:
    """:func:`encode_line`, and whether text had to be repaired: lone surrogates (a model's
    text escaped as UTF-16 by its provider, a pair split between stream deltas) are joined
    into their character when paired and become U+FFFD when not. UTF-8 cannot hold them, so
    the line was refused and the reply lost ("Internal error")."""
    line = json.dumps(entry.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        return line.encode("utf-8"), False
    except UnicodeEncodeError:
        joined = line.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return joined.encode("utf-8"), True
