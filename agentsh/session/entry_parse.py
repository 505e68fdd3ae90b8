"""Reading a log line back into its entry: the hot path of opening a session.

:func:`entry_from_json` runs once per line (100,000 times for a long session), so it builds the
two commonest entries with direct slot stores (:func:`_fast_constructor`) and reads fields
without generic helpers. The entry types and how each writes itself are in
:mod:`agentsh.session.entries`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CheckpointEntry,
    CompactionEntry,
    EntryError,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelCallEntry,
    ModelChangeEntry,
    NameEntry,
    ToolResultEntry,
    UnknownEntry,
    clean_name,
)
from agentsh.values import Role, StopReason, ToolCall, Usage

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_T = TypeVar("_T", bound="DataclassInstance")

__all__ = ["entry_from_json"]


def _fast_constructor(cls: type[_T]) -> Callable[..., _T]:
    """A keyword constructor for a frozen, slotted dataclass that sets each slot directly.

    A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``, which
    costs about a microsecond per entry; a load builds 150,000 of these objects for a long
    session. This builds the same object (every field set, no defaults applied: the caller
    passes all of them) in a third of the time. Used only by :func:`entry_from_json`; a test
    checks it against the regular constructor for each class.
    """
    names = [f.name for f in fields(cls)]
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = ["    obj = _new(_cls)"]
    for index, name in enumerate(names):
        namespace[f"_set{index}"] = getattr(cls, name).__set__
        lines.append(f"    _set{index}(obj, {name})")
    source = f"def make(*, {', '.join(names)}):\n" + "\n".join(lines) + "\n    return obj\n"
    exec(source, namespace)  # the same technique dataclasses itself uses for __init__
    make: Callable[..., _T] = namespace["make"]
    return make


_make_message = _fast_constructor(MessageEntry)
_make_tool_result = _fast_constructor(ToolResultEntry)
_make_usage = _fast_constructor(Usage)
_make_tool_call = _fast_constructor(ToolCall)

_ROLES = {r.value: r for r in Role}
_STOP_REASONS = {r.value: r for r in StopReason}


def entry_from_json(data: dict[str, Any]) -> AnyEntry:
    """Parse one entry; raises :class:`EntryError` when a known type is malformed.

    This runs once per line when a session loads (100,000 times for a long session), so it
    reads fields directly instead of going through generic helpers.
    """
    if type(data) is not dict:
        raise EntryError("an entry must be a JSON object")
    kind = data.get("type")
    entry_id = data.get("id")
    if type(entry_id) is not str or not entry_id:
        raise EntryError("entry without an id")
    parent = data.get("parentId")
    if parent is not None and type(parent) is not str:
        raise EntryError(f"entry {entry_id}: parentId must be a string or null")
    timestamp = data.get("timestamp", "")
    if type(timestamp) is not str:
        timestamp = str(timestamp)
    try:
        match kind:
            case "message":
                calls = data.get("toolCalls")
                usage = data.get("usage")
                stop = data.get("stopReason")
                content = data.get("content", "")
                return _make_message(
                    id=entry_id,
                    parent_id=parent,
                    timestamp=timestamp,
                    role=_ROLES[data["role"]],
                    content=content if type(content) is str else _text(content),
                    tool_calls=tuple(
                        [
                            _make_tool_call(
                                id=str(c["id"]),
                                name=str(c["name"]),
                                arguments=_args(c),
                                summary=_summary(c),
                            )
                            for c in calls
                        ]
                    )
                    if calls
                    else (),
                    model=data.get("model"),
                    usage=_usage(usage) if usage else None,
                    # A stop reason this version does not know must not cost the message.
                    stop_reason=_STOP_REASONS.get(stop) if stop else None,
                    error=data.get("error"),
                )
            case "toolResult":
                return _make_tool_result(
                    id=entry_id,
                    parent_id=parent,
                    timestamp=timestamp,
                    tool_call_id=str(data["toolCallId"]),
                    tool_name=str(data.get("toolName", "")),
                    content=_text(data.get("content", "")),
                    is_error=bool(data.get("isError", False)),
                    truncated=bool(data.get("truncated", False)),
                    details=dict(data.get("details") or {}),
                )
            case str() if kind in _OTHER_KINDS:
                cls, read = _OTHER_KINDS[kind]
                return cls(id=entry_id, parent_id=parent, timestamp=timestamp, **read(data))
            case _:
                return UnknownEntry(id=entry_id, parent_id=parent, timestamp=timestamp, raw=data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EntryError(f"entry {entry_id} ({kind}): {exc!r}") from exc


# -- the other kinds: rarer, so one table of (type, field reader) serves them --------------------


def _compaction(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "tier": str(data["tier"]),
        "summary": str(data.get("summary", "")),
        "first_kept_id": str(data["firstKeptId"]),
        "tokens_before": int(data.get("tokensBefore", 0)),
        "tokens_after": int(data.get("tokensAfter", 0)),
        "workspace_file": str(data.get("workspaceFile", "")),
        "files_read": tuple(map(str, data.get("filesRead") or ())),
        "files_modified": tuple(map(str, data.get("filesModified") or ())),
        "replacements": {str(k): str(v) for k, v in (data.get("replacements") or {}).items()},
        "argument_replacements": {
            str(k): str(v) for k, v in (data.get("argumentReplacements") or {}).items()
        },
        "manual": bool(data.get("manual", False)),
        "usage": _usage(data["usage"]) if data.get("usage") else None,
        "paused": str(data.get("paused") or ""),
        "archive_file": str(data.get("archiveFile") or ""),
    }


def _branch_summary(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "from_id": str(data["fromId"]),
        "summary": str(data.get("summary", "")),
        "usage": _usage(data["usage"]) if data.get("usage") else None,
    }


def _leaf(data: dict[str, Any]) -> dict[str, Any]:
    target = data["targetId"]  # present; null means "start over from nothing"
    return {"target_id": None if target is None else _target(data)}


def _checkpoint(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "target_id": _target(data),
        "store": str(data["store"]),
        "seq": int(data["seq"]),
        "reason": str(data.get("reason") or ""),
        "files": tuple(map(str, data.get("files") or ())),
        "changed": int(data.get("changed") or 0),
    }


_OTHER_KINDS: dict[str, tuple[Callable[..., AnyEntry], Callable[[dict[str, Any]], dict[str, Any]]]]
_OTHER_KINDS = {
    "compaction": (CompactionEntry, _compaction),
    "branchSummary": (BranchSummaryEntry, _branch_summary),
    "modelChange": (ModelChangeEntry, lambda d: {"model": str(d["model"])}),
    "name": (NameEntry, lambda d: {"name": clean_name(str(d.get("name") or ""))}),
    "label": (
        LabelEntry,
        lambda d: {"target_id": _target(d), "label": str(d.get("label") or "")},
    ),
    "leaf": (LeafEntry, _leaf),
    "checkpoint": (CheckpointEntry, _checkpoint),
    "modelCall": (
        ModelCallEntry,
        lambda d: {
            "purpose": str(d.get("purpose") or ""),
            "note": str(d.get("note") or ""),
            "usage": _usage(d["usage"]),
        },
    ),
}
"""Entry kinds other than messages and tool results (built with the fast constructors
above): each one's type and the reader of its own fields; id, parent and time are common."""


def _usage(data: dict[str, Any]) -> Usage:
    get = data.get
    return _make_usage(
        input_tokens=int(get("input", 0)),
        output_tokens=int(get("output", 0)),
        cache_read_tokens=int(get("cacheRead", 0)),
        cache_write_tokens=int(get("cacheWrite", 0)),
        cost=float(get("cost", 0.0)),
        estimated=get("estimated") is True,
    )


def _target(data: dict[str, Any]) -> str:
    target = data["targetId"]
    if type(target) is not str or not target:
        raise ValueError("targetId must be a non-empty string")
    return target


def _text(value: Any) -> str:
    """Content is a string; a list of text blocks (other tools' format) is joined."""
    if type(value) is str:
        return value
    if isinstance(value, list):
        return "".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in value)
    raise TypeError("content must be a string")


def _summary(call: dict[str, Any]) -> str:
    summary = call.get("summary")
    return summary if type(summary) is str else ""


def _args(call: dict[str, Any]) -> str:
    args = call.get("arguments", "{}")
    return args if type(args) is str else json.dumps(args, ensure_ascii=False)
