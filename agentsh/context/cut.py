"""Phase 2 of compaction: where the kept part of the context starts.

A cut is an index into the view's entries: everything before it leaves the context (archived
or summarized), everything from it on stays verbatim. A cut only ever falls before a user or
assistant message, never before a tool result, so a tool call and its results are always on the
same side. The tiered rule keeps the last N turns (a turn is a user message and everything up to
the next one), then drops whole turns from the front while the kept part is over the token cap;
when the newest turn alone is over the cap it is split at an assistant message and its early
part (the turn prefix) leaves with the rest. The Pi-style rule keeps the newest N tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentsh.context.view import ContextEntry, turn_starts
from agentsh.session.entries import MessageEntry, Role


@dataclass(frozen=True, slots=True)
class Cut:
    index: int  # first kept entry; 0 < index <= len(entries)
    first_kept_id: str
    split_turn: bool  # the cut falls inside a turn (its early part leaves)
    prefix_start: int  # when split: where the split turn begins
    kept_tokens: int
    removed_tokens: int


def _suffix_sums(tokens: Sequence[int]) -> list[int]:
    sums = [0] * (len(tokens) + 1)
    for i in range(len(tokens) - 1, -1, -1):
        sums[i] = sums[i + 1] + tokens[i]
    return sums


def is_cut_point(entry: ContextEntry) -> bool:
    """Cutting before a user or assistant message never separates a call from its result."""
    return isinstance(entry, MessageEntry)


def _is_assistant(entry: ContextEntry) -> bool:
    return isinstance(entry, MessageEntry) and entry.role is Role.ASSISTANT


def _turn_begins(entries: Sequence[ContextEntry]) -> list[int]:
    # Entries before the first user message (the kept tail of a turn split by an earlier cut)
    # count as a turn of their own.
    starts = turn_starts(entries)
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    return starts


def _make(
    entries: Sequence[ContextEntry], sums: list[int], index: int, begins: list[int]
) -> Cut | None:
    if index <= 0 or index >= len(entries):
        return None
    entry = entries[index]
    split = not (isinstance(entry, MessageEntry) and entry.role is Role.USER)
    prefix_start = max((b for b in begins if b <= index), default=0) if split else index
    return Cut(
        index=index,
        first_kept_id=entry.id,
        split_turn=split,
        prefix_start=prefix_start,
        kept_tokens=sums[index],
        removed_tokens=sums[0] - sums[index],
    )


def choose_cut(
    entries: Sequence[ContextEntry], tokens: Sequence[int], keep_turns: int, max_kept_tokens: int
) -> Cut | None:
    """The tiered rule; None when nothing can leave (the context is one small turn)."""
    if not entries:
        return None
    sums = _suffix_sums(tokens)
    begins = _turn_begins(entries)
    position = max(0, len(begins) - max(1, keep_turns))
    while sums[begins[position]] > max_kept_tokens and position < len(begins) - 1:
        position += 1
    index = begins[position]
    if sums[index] > max_kept_tokens:
        index = _split_point(entries, sums, index, max_kept_tokens)
    return _make(entries, sums, index, begins)


def _split_point(
    entries: Sequence[ContextEntry], sums: list[int], turn_start: int, budget: int
) -> int:
    """Where to cut inside one oversized turn: the earliest assistant message whose suffix
    fits the budget, else the newest one (keep at least the latest step), else no split."""
    candidates = [i for i in range(turn_start + 1, len(entries)) if _is_assistant(entries[i])]
    for i in candidates:
        if sums[i] <= budget:
            return i
    return candidates[-1] if candidates else turn_start


def choose_cut_by_tokens(
    entries: Sequence[ContextEntry], tokens: Sequence[int], keep_tokens: int
) -> Cut | None:
    """The Pi-style rule: walk back until ``keep_tokens`` are kept, then cut at the first user
    or assistant message at or after that point."""
    if not entries:
        return None
    sums = _suffix_sums(tokens)
    begins = _turn_begins(entries)
    crossing = 0
    for i in range(len(entries) - 1, -1, -1):
        if sums[i] >= keep_tokens:
            crossing = i
            break
    after = [i for i in range(crossing, len(entries)) if is_cut_point(entries[i])]
    if after:
        return _make(entries, sums, after[0], begins)
    before = [i for i in range(crossing) if is_cut_point(entries[i])]
    return _make(entries, sums, before[-1], begins) if before else None
