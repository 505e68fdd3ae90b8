"""The check before every model call, and the per-request trims it may apply.

Before each call (including between the tool calls of one turn, where long tool runs used to
overflow other agents), the request is estimated: the provider-anchored part as reported, the
rest (system prompt, tool schemas, messages after the last reply, the new input) times the
safety margin. Against the window minus the reply reserve (:func:`reply_reserve`, which scales
with the window) it picks a :class:`Route`:

- ``fits``: send as is;
- ``truncate_tool_results_only``: the oversized tool results (each capped at 30 % of the window
  and 16,000 characters, head and tail kept, with a note of what was cut) cover the overflow;
- ``compact_only``: nothing is reducible, a compaction must free the room;
- ``compact_then_truncate``: both.

The trims here change only the request, never the log. The bounded-buffer guard
(:func:`cap_messages`) also lives here: at most N messages after the system message, never
removing the system message or the summary, never splitting a tool call from its results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from agentsh.config import ContextSettings
from agentsh.context.convert import SUMMARY_HEADER
from agentsh.context.repair import Message

_SNAP_CHARS = 200  # how far a cut may move to land on a line break


class Route(StrEnum):
    FITS = "fits"
    TRUNCATE_TOOL_RESULTS_ONLY = "truncate_tool_results_only"
    COMPACT_ONLY = "compact_only"
    COMPACT_THEN_TRUNCATE = "compact_then_truncate"


@dataclass(frozen=True, slots=True)
class Preflight:
    route: Route
    need: int  # the estimate with the safety margin applied
    budget: int  # window minus the (clamped) reserve
    reducible: int  # tokens truncating oversized tool results would free (margin applied)

    @property
    def overflow(self) -> int:
        return max(0, self.need - self.budget)


def reply_reserve(window: int, settings: ContextSettings, max_output: int = 0) -> int:
    """Tokens kept free for the reply: ``reserve_tokens``, but never more than the model's
    max output (``max_output``, 0 when unknown), nor more than the room above the Truncate
    tier. So the request budget is never under ``truncate_at`` of the window, and the
    pre-flight check acts only when the next request truly does not fit: on a 32k window an
    unscaled 16k reserve made it compact at 50 %, far below the tiers."""
    reserve = settings.reserve_tokens
    if max_output > 0:
        reserve = min(reserve, max_output)
    room = int(window * (1.0 - min(settings.truncate_at, 1.0)))
    return max(0, min(reserve, room, window // 2))


def budget_for(window: int, reserve: int) -> int:
    """What the request may take: the window less the reply reserve (at least half of it)."""
    return max(window - reserve, window // 2)


def result_cap_chars(window: int, settings: ContextSettings) -> int:
    by_window = int(window * settings.tool_result_max_window_fraction * settings.chars_per_token)
    return max(500, min(by_window, settings.tool_result_max_chars))


def choose_route(need: int, budget: int, reducible: int) -> Route:
    if need <= budget:
        return Route.FITS
    if reducible >= need - budget:
        return Route.TRUNCATE_TOOL_RESULTS_ONLY
    if reducible <= 0:
        return Route.COMPACT_ONLY
    return Route.COMPACT_THEN_TRUNCATE


def truncate_text(text: str, cap: int, label: str = "tool") -> str:
    """Head and tail of ``text`` within ``cap`` characters, with a note of what was cut."""
    if len(text) <= cap:
        return text
    note_room = 260
    room = max(200, cap - note_room)
    head_end = _snap(text, int(room * 0.6), backwards=True)
    tail_start = _snap(text, len(text) - (room - head_end), backwards=False)
    cut = text[head_end:tail_start]
    note = (
        f"\n[... {len(cut):,} characters ({cut.count(chr(10)):,} lines) of this {label} output "
        f"were cut from the middle to fit the context window; {len(text):,} characters in all. "
        "Re-run with a narrower command or read a smaller range to see them ...]\n"
    )
    return text[:head_end] + note + text[tail_start:]


def _snap(text: str, at: int, *, backwards: bool) -> int:
    at = max(0, min(len(text), at))
    if backwards:
        found = text.rfind("\n", max(0, at - _SNAP_CHARS), at)
        return found + 1 if found >= 0 else at
    found = text.find("\n", at, min(len(text), at + _SNAP_CHARS))
    return found + 1 if found >= 0 else at


def _names(messages: Sequence[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            names[str(call.get("id", ""))] = str(call.get("function", {}).get("name", "tool"))
    return names


def reducible_tokens(messages: Sequence[Message], cap: int, count: Callable[[str], int]) -> int:
    freed = 0
    for message in messages:
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str) and len(content) > cap:
            freed += max(0, count(content) - count(truncate_text(content, cap)))
    return freed


def truncate_tool_results(messages: Sequence[Message], cap: int) -> tuple[list[Message], int]:
    """Copies of ``messages`` with every tool result over ``cap`` characters truncated."""
    names = _names(messages)
    out: list[Message] = []
    changed = 0
    for message in messages:
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str) and len(content) > cap:
            label = names.get(str(message.get("tool_call_id", "")), "tool")
            out.append({**message, "content": truncate_text(content, cap, label)})
            changed += 1
        else:
            out.append(message)
    return out, changed


def cap_messages(
    messages: Sequence[Message],
    max_messages: int,
    describe: Callable[[Sequence[Message]], str] | None = None,
) -> tuple[list[Message], int]:
    """At most ``max_messages`` after the system message; returns (messages, number dropped).

    The system message, the summary block and the newest user message are pinned (in one
    long turn of many tool calls, dropping the request that opened it would leave the model
    working without its task); the oldest other groups go first, a group being an assistant
    message with its tool results (never split) or a single message, half the limit at a time
    (so the start of the request stays the same for many requests). When something was
    dropped, a user note says so, so the model knows the start is gone, and carries what
    ``describe`` says of the dropped messages (the files they touched, their last error).
    """
    pinned: list[Message] = []
    rest = list(messages)
    if rest and rest[0].get("role") == "system":
        pinned.append(rest.pop(0))
    if rest and _is_summary(rest[0]):
        pinned.append(rest.pop(0))
    budget = max_messages - (
        len(pinned) - (1 if pinned and pinned[0].get("role") == "system" else 0)
    )
    if len(rest) <= budget:
        return list(messages), 0
    groups: list[list[Message]] = []
    for message in rest:
        if message.get("role") == "tool" and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    request = next(
        (i for i in range(len(groups) - 1, -1, -1) if groups[i][0].get("role") == "user"), None
    )
    held: list[Message] = []
    gone: list[Message] = []
    dropped = 0
    budget -= 1  # room for the note
    # The cut moves in whole chunks of half the budget, so the requests that follow keep the
    # same start (a provider's prompt cache reuses it) until the next chunk must go; dropping
    # one group per request changed the start of every request past the limit.
    chunk = max(1, budget // 2)
    need = -(-(len(rest) - budget) // chunk) * chunk
    while groups and dropped < need and len(groups) > 1:
        group = groups.pop(0)
        if request is not None:
            request -= 1
            if request == -1:  # the newest request stays, just after the note
                held = group
                continue
        dropped += len(group)
        gone += group
    facts = describe(gone) if describe is not None else ""
    note: Message = {
        "role": "user",
        "content": f"[Note: {dropped} earlier messages are left out of this request to stay "
        f"under {max_messages} messages; they are still in the session log.]"
        + (f"\n{facts}" if facts else ""),
    }
    kept = [m for group in groups for m in group]
    return [*pinned, note, *held, *kept], dropped


def _is_summary(message: Message) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and content.startswith(SUMMARY_HEADER)
    )
