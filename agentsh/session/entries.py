"""The entry types of a session log and their JSON form (SPEC §2).

A session file is one header line followed by entries. Conversation entries (``message``,
``toolResult``, ``compaction``, ``branchSummary``, ``modelChange``) are nodes of the tree via
``id``/``parentId``. ``label`` and ``leaf`` records are annotations: they point at a node with
``targetId`` and are never nodes themselves, so labelling or moving the leaf does not change the
shape of the conversation. Entries of a type this version does not know are kept verbatim as
:class:`UnknownEntry` and skipped for the model.

JSON keys are camelCase (the file format); Python attributes are snake_case.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

FORMAT_VERSION = 1


class EntryError(ValueError):
    """A line that is JSON but not a valid entry."""


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class StopReason(StrEnum):
    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    ABORTED = "aborted"
    ERROR = "error"


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
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Header:
        if data.get("type") != "session":
            raise EntryError("the first line is not a session header")
        try:
            version = int(data.get("version", 1))
            return cls(
                id=str(data["id"]),
                timestamp=str(data.get("timestamp", "")),
                cwd=str(data.get("cwd", "")),
                version=version,
                parent_session=data.get("parentSession"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EntryError(f"bad session header: {exc}") from exc


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text of the arguments object, validated before it is written

    def parsed_arguments(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0

    @property
    def context_tokens(self) -> int:
        """Tokens the provider counted as this request's context (prompt plus reply)."""
        return self.input_tokens + self.cache_read_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "input": self.input_tokens,
            "output": self.output_tokens,
            "cacheRead": self.cache_read_tokens,
            "cacheWrite": self.cache_write_tokens,
            "cost": self.cost,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        return cls(
            input_tokens=int(data.get("input", 0)),
            output_tokens=int(data.get("output", 0)),
            cache_read_tokens=int(data.get("cacheRead", 0)),
            cache_write_tokens=int(data.get("cacheWrite", 0)),
            cost=float(data.get("cost", 0.0)),
        )


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
            data["toolCalls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
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
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchSummaryEntry(Entry):
    """A short summary of a branch the user left, attached where they went."""

    from_id: str
    summary: str

    TYPE = "branchSummary"

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data.update(fromId=self.from_id, summary=self.summary)
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
    """Moves the leaf to ``target_id`` without appending a conversation entry."""

    target_id: str

    TYPE = "leaf"

    @property
    def is_node(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        data = self._base_json()
        data["targetId"] = self.target_id
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEntry(Entry):
    """An entry of a type this version does not know; kept verbatim, never sent to a model."""

    raw: dict[str, Any]

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
    | UnknownEntry
)


def entry_from_json(data: dict[str, Any]) -> AnyEntry:
    """Parse one entry; raises :class:`EntryError` when a known type is malformed."""
    if not isinstance(data, dict):
        raise EntryError("an entry must be a JSON object")
    kind = data.get("type")
    entry_id = data.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        raise EntryError("entry without an id")
    parent = data.get("parentId")
    if parent is not None and not isinstance(parent, str):
        raise EntryError(f"entry {entry_id}: parentId must be a string or null")
    base: dict[str, Any] = {
        "id": entry_id,
        "parent_id": parent,
        "timestamp": str(data.get("timestamp", "")),
    }
    try:
        match kind:
            case "message":
                stop = data.get("stopReason")
                return MessageEntry(
                    **base,
                    role=Role(data["role"]),
                    content=_text(data.get("content", "")),
                    tool_calls=tuple(
                        ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=_args(c))
                        for c in data.get("toolCalls") or ()
                    ),
                    model=data.get("model"),
                    usage=Usage.from_json(data["usage"]) if data.get("usage") else None,
                    stop_reason=StopReason(stop) if stop else None,
                    error=data.get("error"),
                )
            case "toolResult":
                return ToolResultEntry(
                    **base,
                    tool_call_id=str(data["toolCallId"]),
                    tool_name=str(data.get("toolName", "")),
                    content=_text(data.get("content", "")),
                    is_error=bool(data.get("isError", False)),
                    truncated=bool(data.get("truncated", False)),
                    details=dict(data.get("details") or {}),
                )
            case "compaction":
                return CompactionEntry(
                    **base,
                    tier=str(data["tier"]),
                    summary=str(data.get("summary", "")),
                    first_kept_id=str(data["firstKeptId"]),
                    tokens_before=int(data.get("tokensBefore", 0)),
                    tokens_after=int(data.get("tokensAfter", 0)),
                    workspace_file=str(data.get("workspaceFile", "")),
                    files_read=tuple(map(str, data.get("filesRead") or ())),
                    files_modified=tuple(map(str, data.get("filesModified") or ())),
                    replacements={
                        str(k): str(v) for k, v in (data.get("replacements") or {}).items()
                    },
                    argument_replacements={
                        str(k): str(v) for k, v in (data.get("argumentReplacements") or {}).items()
                    },
                    manual=bool(data.get("manual", False)),
                )
            case "branchSummary":
                return BranchSummaryEntry(
                    **base, from_id=str(data["fromId"]), summary=str(data.get("summary", ""))
                )
            case "modelChange":
                return ModelChangeEntry(**base, model=str(data["model"]))
            case "label":
                return LabelEntry(
                    **base, target_id=str(data["targetId"]), label=str(data.get("label") or "")
                )
            case "leaf":
                return LeafEntry(**base, target_id=str(data["targetId"]))
            case _:
                return UnknownEntry(**base, raw=data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EntryError(f"entry {entry_id} ({kind}): {exc!r}") from exc


def _text(value: Any) -> str:
    """Content is a string; a list of text blocks (other tools' format) is joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in value)
    raise TypeError("content must be a string")


def _args(call: dict[str, Any]) -> str:
    args = call.get("arguments", "{}")
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def encode_line(entry: AnyEntry | Header) -> bytes:
    """One complete line, newline included, ready to be written in a single call."""
    return (json.dumps(entry.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n").encode(
        "utf-8"
    )
