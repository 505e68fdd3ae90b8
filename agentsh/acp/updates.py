"""agentsh's events and log entries as ACP session updates: pure functions, no I/O.

Used by the live turn (:mod:`.acp_session`) and the replay of a saved session (:mod:`.replay`), so a
thread looks the same whether it was watched or reloaded. Tool calls get an id unique in the
session (the assistant entry that made them, then the model's call id: providers reuse
``call_0`` from one reply to the next), a kind an editor can pick an icon for, the file they
touch as a location, and their result as text or as diffs. Things agentsh says itself (a notice,
a compaction, an error) are agent message chunks set apart as a quoted note, since ACP has no
update for them; context usage is the protocol's ``usage_update``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from acp.helpers import SessionUpdate as _HelperUpdate
from acp.helpers import (
    plan_entry,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_plan,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    ContentToolCallContent,
    Cost,
    FileEditToolCallContent,
    PlanEntryStatus,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolKind,
    UsageUpdate,
)

from agentsh.events import ContextStatus
from agentsh.tools.base import resolve_path

ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
SessionUpdate = _HelperUpdate | UsageUpdate
"""Every update a ``session/update`` notification may carry."""

#: How much of a tool's text result an editor is sent (the model got its own copy).
CONTENT_MAX_CHARS = 8000

_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "execute",
    "grep": "search",
    "find": "search",
    "ls": "search",
    "memory_search": "search",
    "mcp_search": "search",
    "memory": "think",
}
_PATH_TOOLS = frozenset({"read", "write", "edit", "ls", "find", "grep"})
_EDIT_TOOLS = frozenset({"write", "edit"})


def tool_kind(name: str) -> ToolKind:
    return _KINDS.get(name, "other")


def tool_call_id(entry_id: str, call_id: str) -> str:
    """The id a tool call has in ACP: unique in the session, the same live and on replay."""
    return f"{entry_id}/{call_id}"


def locations(
    name: str, arguments: dict[str, Any], cwd: Path, line: int | None = None
) -> list[ToolCallLocation]:
    """The file a call reads or writes, as an absolute path (editors follow along)."""
    raw = arguments.get("path")
    if name not in _PATH_TOOLS or not isinstance(raw, str) or not raw.strip():
        return []
    try:
        path = resolve_path(raw, cwd)
    except (ValueError, RuntimeError):  # a NUL in the path, an unknown ~user
        return []
    return [ToolCallLocation(path=str(path), line=line)]


def is_edit(name: str) -> bool:
    return name in _EDIT_TOOLS


# -- diffs ------------------------------------------------------------------------------------

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def diff_contents(path: str, diff: str) -> list[ToolContent]:
    """A unified diff as ACP diff contents, one per hunk (the old and new text of the hunk,
    context lines included). A created file is one diff with no old text. A diff agentsh
    could not show (too large, a binary file) is sent as the text it is."""
    if not diff.strip():
        return []
    hunks: list[tuple[list[str], list[str]]] = []
    created = False
    for line in diff.splitlines(keepends=True):
        if line.startswith("--- "):
            created = line.startswith("--- /dev/null")
            continue
        if line.startswith("+++ "):
            continue
        if line.startswith("@@"):
            hunks.append(([], []))
            continue
        if not hunks or line.startswith("\\"):
            continue
        old, new = hunks[-1]
        body = line[1:]
        if line.startswith("-"):
            old.append(body)
        elif line.startswith("+"):
            new.append(body)
        elif line.startswith(" "):
            old.append(body)
            new.append(body)
    if not hunks:
        return [text_content(diff)]
    return [
        tool_diff_content(path, "".join(new), None if created else "".join(old))
        for old, new in hunks
    ]


def first_changed_line(diff: str) -> int | None:
    """The line of the new file where the diff's first change is (an added or removed line:
    the context lines a hunk starts with are stepped over)."""
    at: int | None = None
    for line in diff.splitlines():
        match = _HUNK.match(line)
        if match:
            at = int(match.group(2))
        elif at is not None:
            if line.startswith(("+", "-")):
                return max(at, 1)  # a removal at the very top: the first line
            if line.startswith(" "):
                at += 1
    return at


# -- text ---------------------------------------------------------------------------------------


def text_content(text: str, *, tail: bool = False) -> ContentToolCallContent:
    """Plain text as tool call content, cut to :data:`CONTENT_MAX_CHARS` (the end kept for
    command output)."""
    if len(text) > CONTENT_MAX_CHARS:
        cut = len(text) - CONTENT_MAX_CHARS
        text = f"…\n{text[cut:]}" if tail else f"{text[:CONTENT_MAX_CHARS]}\n…"
    return tool_content(text_block(text))


def fenced(text: str, info: str = "") -> str:
    """``text`` in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def note(text: str) -> AgentMessageChunk:
    """Something agentsh itself tells the user, set apart from the model's words."""
    lines = text.strip().splitlines() or [""]
    quoted = "\n".join(f"> {line}" if line else ">" for line in lines)
    return update_agent_message_text(f"\n\n{quoted}\n\n")


# -- plans ------------------------------------------------------------------------------------

_TASK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX~>-])\]\s+(\S.*)$")
_STATUS: dict[str, PlanEntryStatus] = {
    " ": "pending",
    "x": "completed",
    "X": "completed",
    "~": "in_progress",
    ">": "in_progress",
    "-": "in_progress",
}


def plan_from_text(text: str) -> AgentPlanUpdate | None:
    """The task list the model wrote (``- [ ] step``, ``- [x] done``), as an ACP plan; None
    when the text holds fewer than two tasks."""
    entries = [
        plan_entry(match.group(2).strip(), status=_STATUS[match.group(1)])
        for line in text.splitlines()
        if (match := _TASK.match(line))
    ]
    return update_plan(entries) if len(entries) >= 2 else None


# -- usage ------------------------------------------------------------------------------------


def usage_update(status: ContextStatus) -> UsageUpdate:
    """How full the context is and what the session cost, for the editor's meter."""
    cost = Cost(amount=round(status.session_cost, 6), currency="USD")
    return UsageUpdate(
        session_update="usage_update",
        used=max(0, status.used),
        size=max(0, status.window),
        cost=cost if status.session_cost else None,
    )
