"""``session/load``: the current branch of a saved session, replayed as the updates it was.

After an editor restarts, its thread is rebuilt from these: the user's messages, the model's
replies, each tool call with its final status and result (diffs for edits), compactions and
failed replies as notes, then the context's size. An entry that cannot be shown is skipped with
a warning on stderr; the rest still arrive, so a thread is never left empty because of one bad
line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from acp.helpers import (
    start_tool_call,
    update_agent_message_text,
    update_user_message_text,
)

from agentsh.acp.updates import (
    SessionUpdate,
    ToolContent,
    diff_contents,
    fenced,
    first_changed_line,
    is_edit,
    locations,
    note,
    plan_from_text,
    text_content,
    tool_call_id,
    tool_kind,
)
from agentsh.events import Tier
from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    ToolCall,
    ToolResultEntry,
)
from agentsh.values import Role, StopReason, loads_json

log = logging.getLogger(__name__)


def replay(path: list[AnyEntry], cwd: Path) -> Iterator[SessionUpdate]:
    """The updates that rebuild a thread from a session's current path."""
    results = {e.tool_call_id: e for e in path if isinstance(e, ToolResultEntry)}
    for entry in path:
        try:
            yield from _entry(entry, results, cwd)
        except Exception as exc:  # noqa: BLE001 - one odd entry must not empty the thread
            log.warning("session/load: entry %s skipped: %r", getattr(entry, "id", "?"), exc)


def _entry(
    entry: AnyEntry, results: dict[str, ToolResultEntry], cwd: Path
) -> Iterator[SessionUpdate]:
    match entry:
        case MessageEntry(role=Role.USER):
            yield update_user_message_text(entry.content)
        case MessageEntry():
            if entry.content:
                yield update_agent_message_text(entry.content)
                plan = plan_from_text(entry.content)
                if plan is not None:
                    yield plan
            if entry.stop_reason is StopReason.ERROR and entry.error:
                yield note(f"agentsh: {entry.error}")
            elif entry.stop_reason is StopReason.ABORTED:
                yield note("agentsh: interrupted")
            for call in entry.tool_calls:
                yield _tool_call(entry.id, call, results.get(call.id), cwd)
        case CompactionEntry():
            yield note(
                f"agentsh: the context was compacted here ({Tier.label_of(entry.tier)}): "
                f"{entry.tokens_before:,} → {entry.tokens_after:,} tokens"
            )
        case BranchSummaryEntry():
            yield note(f"agentsh: summary of the branch left behind:\n\n{entry.summary}")


def _tool_call(
    entry_id: str, call: ToolCall, result: ToolResultEntry | None, cwd: Path
) -> SessionUpdate:
    arguments = _arguments(call.arguments)
    where = locations(call.name, arguments, cwd)
    content: list[ToolContent] = []
    status = "failed"
    if result is None:
        content.append(text_content("(no result was recorded)"))
    else:
        status = "failed" if result.is_error else "completed"
        diff = result.details.get("diff")
        if where and is_edit(call.name) and isinstance(diff, str) and diff and not result.is_error:
            content += diff_contents(where[0].path, diff)
            where = locations(call.name, arguments, cwd, first_changed_line(diff))
        tail = call.name == "bash"
        shown = fenced(result.content) if tail or result.is_error else result.content
        content.append(text_content(shown, tail=tail))
    return start_tool_call(
        tool_call_id(entry_id, call.id),
        call.summary or call_title(call.name, arguments),  # the live turn's title
        kind=tool_kind(call.name),
        status="failed" if status == "failed" else "completed",
        content=content,
        locations=where,
        raw_input=arguments,
    )


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = loads_json(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def call_title(name: str, arguments: dict[str, Any]) -> str:
    """A tool call's header as agentsh shows it ("bash: pytest -q", "edit: src/a.py")."""
    for key in ("command", "path", "pattern", "query"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            first = value.strip().splitlines()[0]
            return f"{name}: {first[:100]}"
    return name
