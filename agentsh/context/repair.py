"""Phase 4 of compaction, and a rule of every assembly: no orphan tool call or result, ever.

Providers reject a request in which an assistant tool call is not answered by a tool message
right after it, or a tool message answers a call that is not there (a 400 on every later turn
until the session is abandoned). Whatever produced the messages (a crash mid-tool, a cut, the
bounded-buffer guard, a hand-edited log), :func:`repair_messages` returns a list where each
assistant message with tool calls is immediately followed by exactly one tool message per call,
in call order; a missing result gets a short synthetic one saying why, and a result whose call
is absent is dropped. :func:`pair_problems` checks that property (tests and assertions use it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Message = dict[str, Any]

INTERRUPTED = "interrupted: the tool did not finish (the process stopped)"
CANCELLED = "not run: the turn was cancelled before this tool ran"
CUT_AWAY = "[result not available: it was removed from the context by a compaction]"


def tool_message(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def repair_messages(
    messages: Sequence[Message], *, reason_for: Callable[[str], str] | None = None
) -> list[Message]:
    """Pair every tool call with exactly one result placed right after its assistant message.

    ``reason_for(call_id)`` gives the text of a synthetic result (default: :data:`INTERRUPTED`).
    """
    positions: dict[str, list[int]] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            positions.setdefault(str(message.get("tool_call_id", "")), []).append(index)
    used: set[int] = set()
    out: list[Message] = []
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            continue  # emitted next to its call below, or an orphan (dropped)
        calls = message.get("tool_calls") or []
        if message.get("role") != "assistant" or not calls:
            out.append(message)
            continue
        unique: list[dict[str, Any]] = []
        seen: set[str] = set()
        for call in calls:
            call_id = str(call.get("id", ""))
            if call_id in seen:
                continue  # a repeated id cannot be answered unambiguously
            seen.add(call_id)
            unique.append(call)
        out.append(message if len(unique) == len(calls) else {**message, "tool_calls": unique})
        for call in unique:
            call_id = str(call.get("id", ""))
            found = next(
                (j for j in positions.get(call_id, ()) if j > index and j not in used), None
            )
            if found is None:
                text = reason_for(call_id) if reason_for is not None else INTERRUPTED
                out.append(tool_message(call_id, text))
            else:
                used.add(found)
                out.append(messages[found])
    return out


def pair_problems(messages: Sequence[Message]) -> list[str]:
    """Every way ``messages`` breaks the tool-pair rule; empty when a provider would accept it."""
    problems: list[str] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        role = message.get("role")
        if role == "tool":
            problems.append(
                f"message {index}: tool result {message.get('tool_call_id')} has no call"
            )
            index += 1
            continue
        calls = (message.get("tool_calls") or []) if role == "assistant" else []
        index += 1
        expected = [str(c.get("id", "")) for c in calls]
        got: list[str] = []
        while index < len(messages) and messages[index].get("role") == "tool":
            got.append(str(messages[index].get("tool_call_id", "")))
            index += 1
        if sorted(expected) != sorted(got):
            problems.append(f"message {index - len(got) - 1}: calls {expected} answered by {got}")
    return problems
