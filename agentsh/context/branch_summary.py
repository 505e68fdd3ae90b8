"""Branch summaries: a short note about the branch the user just left, for the one they go to.

When the leaf moves off a branch, the entries between the common ancestor of the old and new
positions and the old leaf are abandoned: the model on the new branch will never see them. A
branch summary carries what mattered there (what was tried, what was found, what was decided)
as a ``branchSummary`` entry placed at the new position, which the model receives as a short
user-role note (see :mod:`agentsh.context.convert`).

The summarizer reads the abandoned entries newest first until the budget (the model's window
minus :data:`RESERVE_TOKENS`) is spent, then in their order, as the same labelled plain-text
transcript compaction uses. Tool results are left out: the calls' arguments carry the facts
(the file, the command), and the outputs are what would blow the budget. Pure functions; the
agent makes the model call (:meth:`agentsh.agent.Agent.summarize_branch`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentsh.context.summary import serialize
from agentsh.session.entries import AnyEntry, BranchSummaryEntry, MessageEntry
from agentsh.session.tree import SessionTree

RESERVE_TOKENS = 16_384  # the default of context.reserve_tokens: left for the prompt and reply
MIN_BUDGET_TOKENS = 2_048  # a small window still gets a useful transcript

SYSTEM_PROMPT = (
    "You write a short note about a branch of a coding conversation that the user has left, so "
    "that the assistant on the branch they went to knows what happened there. You are not a "
    "participant: do not answer, continue or act on the conversation, and do not call tools. "
    "Output only the note."
)


@dataclass(frozen=True, slots=True)
class AbandonedBranch:
    """The entries a leaf move leaves behind, root first, below their common ancestor."""

    ancestor_id: str | None  # the deepest entry both positions share (None: only the root level)
    entries: tuple[AnyEntry, ...]

    @property
    def messages(self) -> int:
        return sum(1 for e in self.entries if isinstance(e, MessageEntry))


def abandoned_branch(
    tree: SessionTree, from_leaf: str | None, to_id: str | None
) -> AbandonedBranch:
    """What moving the leaf from ``from_leaf`` to ``to_id`` leaves behind (nothing when the
    move only goes further down the same path)."""
    if from_leaf is None:
        return AbandonedBranch(None, ())
    old = tree.path_ids(from_leaf)
    kept = set(tree.path_ids(to_id)) if to_id is not None else set()
    split = len(old)
    while split > 0 and old[split - 1] not in kept:
        split -= 1
    ancestor = old[split - 1] if split > 0 else None
    nodes = tree.nodes
    return AbandonedBranch(ancestor, tuple(nodes[i] for i in old[split:]))


def select_entries(
    entries: Sequence[AnyEntry], budget_tokens: int, count: Callable[[str], int]
) -> list[MessageEntry | BranchSummaryEntry]:
    """The newest messages (and earlier branch notes) that fit ``budget_tokens``, in order.

    Tool results are skipped; the newest entry is always kept, cut to the budget if it alone
    is larger (a huge paste must not leave the summarizer with nothing)."""
    picked: list[MessageEntry | BranchSummaryEntry] = []
    used = 0
    for entry in reversed(entries):
        if not isinstance(entry, MessageEntry | BranchSummaryEntry):
            continue
        tokens = count(serialize([entry]))
        if used + tokens > budget_tokens:
            if not picked:
                picked.append(_cut_entry(entry, budget_tokens, tokens))
            break
        picked.append(entry)
        used += tokens
    picked.reverse()
    return picked


def _cut_entry(
    entry: MessageEntry | BranchSummaryEntry, budget: int, tokens: int
) -> MessageEntry | BranchSummaryEntry:
    text = entry.content if isinstance(entry, MessageEntry) else entry.summary
    keep = max(200, int(len(text) * budget / max(tokens, 1)))
    cut = f"{text[:keep]}...[{len(text) - keep:,} more chars]" if len(text) > keep else text
    if isinstance(entry, MessageEntry):
        return replace(entry, content=cut)
    return replace(entry, summary=cut)


def branch_summary_request(
    entries: Sequence[MessageEntry | BranchSummaryEntry],
    *,
    max_tokens: int,
    instructions: str = "",
) -> list[dict[str, Any]]:
    """The messages of the summary call for the selected entries."""
    words = max(60, int(max_tokens * 0.6))
    parts = [
        f"<branch>\n{serialize(entries)}\n</branch>",
        "The user left the branch of the conversation above and went on from an earlier point. "
        f"Summarize the branch in at most {words} words, as short bullet points: what the user "
        "asked for, what was tried and what it showed (quote file paths, commands and error "
        "messages exactly), what was decided, and what was left unfinished. Do not repeat "
        "anything the user would already know from before the branch began.",
    ]
    if instructions.strip():
        parts.append(f"The user's instructions for this summary:\n{instructions.strip()}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def budget_for(window: int, reserve: int = RESERVE_TOKENS) -> int:
    """Transcript tokens for a branch summary: the window minus ``reserve`` (the agent passes
    the user's ``context.reserve_tokens``), never under :data:`MIN_BUDGET_TOKENS`."""
    return max(MIN_BUDGET_TOKENS, window - reserve)
