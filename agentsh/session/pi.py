"""Pi's session files (badlogic/pi-mono, format v3): tell one apart, import it, export to it.

Pi and agentsh both keep a JSONL tree with a ``session`` header and ``id``/``parentId`` entries,
so a Pi file looked like "a newer agentsh format" and every line failed. The differences that
matter: a Pi ``message`` entry holds the message under ``message`` (role, content blocks,
``toolCall`` blocks, usage with a cost object), tool results are messages of role
``toolResult``, entry types are snake_case, and Pi stores no leaf record: the last line is the
leaf, and every entry (labels too) is the child of the one before.

The import keeps ids, parents and timestamps. What agentsh does not store is dropped and
counted (thinking, images, thinking-level changes, extension state, session names); an entry
dropped from the middle of the tree gives its children to its parent, so no branch breaks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CompactionEntry,
    Header,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    NameEntry,
    Role,
    StopReason,
    ToolCall,
    ToolResultEntry,
    Usage,
    clean_name,
    new_id,
)
from agentsh.session.log import SessionError

PI_VERSION = 3
_STOP_FROM_PI = {
    "stop": StopReason.STOP,
    "length": StopReason.LENGTH,
    "toolUse": StopReason.TOOL_CALLS,
    "error": StopReason.ERROR,
    "aborted": StopReason.ABORTED,
}
_STOP_TO_PI = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_CALLS: "toolUse",
    StopReason.ERROR: "error",
    StopReason.ABORTED: "aborted",
}


def looks_like_pi(data: bytes) -> bool:
    """True when ``data`` (the start of a file is enough) is a Pi session: a ``session``
    header of Pi's versions, or entries that hold their message under ``message``."""
    lines = data.split(b"\n", 20)[:20]
    try:
        header = json.loads(lines[0])
    except (ValueError, IndexError):
        return False
    if not isinstance(header, dict) or header.get("type") != "session":
        return False
    for line in lines[1:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("type") == "message":
            return isinstance(entry.get("message"), dict)
        if isinstance(entry, dict) and entry.get("type") in ("model_change", "session_info"):
            return True
    return header.get("version") in (2, 3)


@dataclass(slots=True)
class PiImport:
    header: Header
    entries: list[AnyEntry]
    dropped: dict[str, int] = field(default_factory=dict)  # what agentsh does not keep, counted
    problems: list[str] = field(default_factory=list)

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1


def read_pi(data: bytes, where: str) -> PiImport:
    """The agentsh entries of a Pi session file, in file order, ending on Pi's leaf."""
    lines = data.decode("utf-8", "replace").splitlines()
    try:
        raw_header = json.loads(lines[0]) if lines else None
    except ValueError:
        raw_header = None
    if not isinstance(raw_header, dict) or raw_header.get("type") != "session":
        raise SessionError(f"{where}: the first line is not a session header")
    header = Header(
        id=str(raw_header.get("id") or new_id()),
        timestamp=str(raw_header.get("timestamp", "")),
        cwd=str(raw_header.get("cwd", "")),
    )
    result = PiImport(header, [])
    parent_of_dropped: dict[str, str | None] = {}
    seen: set[str] = set()
    previous: str | None = None  # Pi v1 files are linear and have no ids
    last_node: str | None = None
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            result.problems.append(f"line {number}: not valid JSON; skipped")
            continue
        if not isinstance(raw, dict):
            continue
        entry_id = str(raw.get("id") or new_id())
        if entry_id in seen:
            result.problems.append(f"line {number}: duplicate id {entry_id}; skipped")
            continue
        parent = raw.get("parentId") if "id" in raw else previous
        parent = _resolve(parent if isinstance(parent, str) else None, parent_of_dropped)
        if parent is not None and parent not in seen:
            result.problems.append(f"line {number}: parent {parent} is missing; made a root")
            parent = None
        stamp = _iso(raw.get("timestamp"))
        converted = _convert(raw, entry_id, parent, stamp, result)
        previous = entry_id
        if converted is None:
            parent_of_dropped[entry_id] = parent
            continue
        seen.add(entry_id)
        result.entries.extend(converted)
        if converted[0].is_node:
            last_node = entry_id
    leaf = _resolve(previous, parent_of_dropped) if previous else None
    if leaf != last_node and (leaf is None or leaf in seen):
        result.entries.append(LeafEntry(id=new_id(), parent_id=None, target_id=leaf))
    return result


def _resolve(parent: str | None, dropped: dict[str, str | None]) -> str | None:
    hops = 0
    while parent is not None and parent in dropped and hops < 100_000:
        parent = dropped[parent]
        hops += 1
    return parent


def _convert(
    raw: dict[str, Any], entry_id: str, parent: str | None, stamp: str, result: PiImport
) -> list[AnyEntry] | None:
    kind = raw.get("type")
    base: dict[str, Any] = {"id": entry_id, "parent_id": parent, "timestamp": stamp}
    if kind == "message" or (kind is None and "role" in raw):
        message = raw.get("message") if kind == "message" else raw
        return _message(message if isinstance(message, dict) else {}, base, result)
    if kind == "model_change":
        model = "/".join(str(p) for p in (raw.get("provider"), raw.get("modelId")) if p)
        return [ModelChangeEntry(**base, model=model)] if model else None
    if kind == "compaction":
        found = raw.get("details")
        details: dict[str, Any] = found if isinstance(found, dict) else {}
        return [
            CompactionEntry(
                **base,
                tier="summarize",
                summary=str(raw.get("summary", "")),
                first_kept_id=str(raw.get("firstKeptEntryId", "")),
                tokens_before=_int(raw.get("tokensBefore")),
                tokens_after=0,
                files_read=tuple(map(str, details.get("readFiles") or ())),
                files_modified=tuple(map(str, details.get("modifiedFiles") or ())),
            )
        ]
    if kind == "branch_summary":
        return [
            BranchSummaryEntry(
                **base, from_id=str(raw.get("fromId", "")), summary=str(raw.get("summary", ""))
            )
        ]
    if kind == "custom_message":
        text = _text(raw.get("content"), result)
        return [MessageEntry(**base, role=Role.USER, content=text)] if text else None
    if kind == "label" and raw.get("targetId"):
        # A node in Pi's tree, an annotation in agentsh's: its children go to its parent.
        result.entries.append(
            LabelEntry(
                id=entry_id,
                parent_id=None,
                timestamp=stamp,
                target_id=str(raw["targetId"]),
                label=str(raw.get("label") or ""),
            )
        )
        return None
    if kind == "session_info" and isinstance(raw.get("name"), str):
        # Pi's /name: a node there, a name record here (its children go to its parent).
        result.entries.append(
            NameEntry(id=entry_id, parent_id=None, timestamp=stamp, name=clean_name(raw["name"]))
        )
        return None
    result.drop({"thinking_level_change": "thinking-level changes"}.get(str(kind), str(kind)))
    return None


def _message(
    message: dict[str, Any], base: dict[str, Any], result: PiImport
) -> list[AnyEntry] | None:
    role = message.get("role")
    if role in ("user", "custom"):
        text = _text(message.get("content"), result)
        return [MessageEntry(**base, role=Role.USER, content=text)]
    if role == "assistant":
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in _blocks(message.get("content")):
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "toolCall":
                arguments = block.get("arguments")
                calls.append(
                    ToolCall(
                        id=str(block.get("id", "")),
                        name=str(block.get("name", "")),
                        arguments=json.dumps(arguments if isinstance(arguments, dict) else {}),
                    )
                )
            else:
                result.drop(f"{block.get('type')} blocks")
        model = "/".join(str(p) for p in (message.get("provider"), message.get("model")) if p)
        return [
            MessageEntry(
                **base,
                role=Role.ASSISTANT,
                content="".join(texts),
                tool_calls=tuple(calls),
                model=model or None,
                usage=_usage(message.get("usage")),
                stop_reason=_STOP_FROM_PI.get(str(message.get("stopReason"))),
                error=message.get("errorMessage") or None,
            )
        ]
    if role == "toolResult":
        details = message.get("details")
        return [
            ToolResultEntry(
                **base,
                tool_call_id=str(message.get("toolCallId", "")),
                tool_name=str(message.get("toolName", "")),
                content=_text(message.get("content"), result),
                is_error=bool(message.get("isError", False)),
                details=details if isinstance(details, dict) else {},
            )
        ]
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            result.drop("excluded bash runs")
            return None
        text = f"$ {message.get('command', '')}\n{message.get('output', '')}".rstrip()
        return [MessageEntry(**base, role=Role.USER, content=text)]
    if role == "branchSummary":
        return [
            BranchSummaryEntry(
                **base,
                from_id=str(message.get("fromId", "")),
                summary=str(message.get("summary", "")),
            )
        ]
    result.drop(f"{role} messages")
    return None


def _blocks(content: Any) -> Iterator[dict[str, Any]]:
    if isinstance(content, str):
        yield {"type": "text", "text": content}
    elif isinstance(content, list):
        yield from (b for b in content if isinstance(b, dict))


def _text(content: Any, result: PiImport) -> str:
    parts: list[str] = []
    for block in _blocks(content):
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            result.drop(f"{block.get('type')} blocks")
    return "".join(parts)


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    cost = raw.get("cost")
    total = cost.get("total", 0.0) if isinstance(cost, dict) else cost
    return Usage(
        _int(raw.get("input")),
        _int(raw.get("output")),
        _int(raw.get("cacheRead")),
        _int(raw.get("cacheWrite")),
        float(total) if isinstance(total, int | float) else 0.0,
    )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _iso(stamp: Any) -> str:
    if isinstance(stamp, int | float):  # Pi v1 wrote epoch milliseconds
        moment = datetime.fromtimestamp(stamp / 1000, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return str(stamp) if stamp else ""


# -- export -----------------------------------------------------------------------------------


def to_pi_lines(header: Header, records: list[AnyEntry], leaf_id: str | None) -> list[str]:
    """A Pi v3 file of the session: every branch, parents before children, labels as Pi's
    label entries, and the leaf last, so Pi (whose leaf is the last line) opens where agentsh
    was; the session's name, as Pi's ``session_info``, comes after it, as its child. A leaf
    with entries below it (the user went back) cannot be last: named, Pi opens there all the
    same (through the name); unnamed, at the newest entry, as it would have itself."""
    out = [
        _dumps(
            {
                "type": "session",
                "version": PI_VERSION,
                "id": header.id,
                "timestamp": header.timestamp,
                "cwd": header.cwd,
            }
        )
    ]
    nodes = [e for e in records if e.is_node]
    has_children = {e.parent_id for e in nodes}
    last = next((e for e in nodes if e.id == leaf_id and e.id not in has_children), None)
    out.extend(line for e in nodes if e is not last and (line := _pi_entry(e)))
    known = {e.id for e in nodes}
    for entry in records:
        if isinstance(entry, LabelEntry) and entry.target_id in known:
            out.append(
                _dumps(
                    {
                        "type": "label",
                        "id": entry.id,
                        "parentId": entry.target_id,
                        "timestamp": entry.timestamp,
                        "targetId": entry.target_id,
                        "label": entry.label or None,
                    }
                )
            )
    if last is not None and (line := _pi_entry(last)):
        out.append(line)
    names = [e for e in records if isinstance(e, NameEntry)]
    if names and names[-1].name and leaf_id in known:
        # Pi's /name appends a session_info entry at its leaf; as the last line here it also
        # makes Pi open on agentsh's leaf when that leaf has entries below it.
        out.append(
            _dumps(
                {
                    "type": "session_info",
                    "id": names[-1].id,
                    "parentId": leaf_id,
                    "timestamp": names[-1].timestamp,
                    "name": names[-1].name,
                }
            )
        )
    return out


def _pi_entry(entry: AnyEntry) -> str:
    base = {"id": entry.id, "parentId": entry.parent_id, "timestamp": entry.timestamp}
    match entry:
        case MessageEntry(role=Role.USER):
            message: dict[str, Any] = {"role": "user", "content": entry.content}
        case MessageEntry():
            content: list[dict[str, Any]] = []
            if entry.content:
                content.append({"type": "text", "text": entry.content})
            content += [
                {"type": "toolCall", "id": c.id, "name": c.name, "arguments": c.parsed_arguments()}
                for c in entry.tool_calls
            ]
            provider, _, model = (entry.model or "").rpartition("/")
            usage = entry.usage or Usage()
            message = {
                "role": "assistant",
                "content": content,
                "provider": provider,
                "model": model,
                "usage": {
                    "input": usage.input_tokens,
                    "output": usage.output_tokens,
                    "cacheRead": usage.cache_read_tokens,
                    "cacheWrite": usage.cache_write_tokens,
                    "totalTokens": usage.input_tokens + usage.output_tokens,
                    "cost": {"total": usage.cost},
                },
                "stopReason": _STOP_TO_PI.get(entry.stop_reason or StopReason.STOP, "stop"),
            }
            if entry.error:
                message["errorMessage"] = entry.error
        case ToolResultEntry():
            message = {
                "role": "toolResult",
                "toolCallId": entry.tool_call_id,
                "toolName": entry.tool_name,
                "content": [{"type": "text", "text": entry.content}],
                "isError": entry.is_error,
            }
            if entry.details:
                message["details"] = entry.details
        case CompactionEntry():
            return _dumps(
                {
                    "type": "compaction",
                    **base,
                    "summary": entry.summary,
                    "firstKeptEntryId": entry.first_kept_id,
                    "tokensBefore": entry.tokens_before,
                    "details": {
                        "readFiles": list(entry.files_read),
                        "modifiedFiles": list(entry.files_modified),
                    },
                }
            )
        case BranchSummaryEntry():
            return _dumps(
                {
                    "type": "branch_summary",
                    **base,
                    "fromId": entry.from_id,
                    "summary": entry.summary,
                }
            )
        case ModelChangeEntry():
            provider, _, model = entry.model.rpartition("/")
            return _dumps({"type": "model_change", **base, "provider": provider, "modelId": model})
        case _:
            return ""
    return _dumps({"type": "message", **base, "message": message})


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def import_file(path: Path) -> PiImport:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"cannot read {path}: {exc.strerror}") from exc
    if not looks_like_pi(data):
        raise SessionError(f"{path} is not a Pi session file")
    return read_pi(data, str(path))
