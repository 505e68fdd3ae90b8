"""The ``memory`` tool: the model adds, replaces and removes curated memory entries.

It is a thin layer over :class:`~agentsh.memory.curated.CuratedMemory`, which does the guarded,
locked, atomic change; this module turns outcomes into replies the model can act on. A success
is terminal ("saved; no need to repeat or check it") and does not echo the entries, since an
echo invites endless tidying. A refusal says why and what to do; over the limit it lists the
current entries so the model can consolidate. After ``max_failed_writes_per_turn`` refused
calls in one user turn the tool stops trying and tells the model to go on with the task.

Approval: the tool's effect is :attr:`Effect.READ`, so a write to the project's MEMORY.md never
asks the user. That is a deliberate choice: those writes are guarded instead of asked (the
injection guard scans every write, the file is small, plain-text, inside the project and
visible in the memory pane, and nothing a write does reaches the system prompt before the next
session), and an approval prompt for every saved fact would teach users to approve without
reading. USER.md is different: it enters every later session's system prompt in *every*
project, so a model that a hostile repository talked into it could plant an order that follows
the user everywhere. Its changes (add, replace, remove) ask, showing the exact entry, and are
denied with ``-p``, unless the user chose ``--approve all`` or allowed the tool by a rule
(:meth:`MemoryTool.shared_target`); ``--approve edits`` does not cover them, since USER.md is not
a project file. They are guarded like MEMORY.md's, before anything is asked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from agentsh.config import MemorySettings
from agentsh.memory.curated import (
    CuratedMemory,
    CuratedMemoryError,
    MemoryTarget,
    WriteResult,
)
from agentsh.tools.base import Effect, Tool, ToolContext, ToolError, ToolResult, param


class MemoryAction(StrEnum):
    ADD = "add"
    REPLACE = "replace"
    REMOVE = "remove"


@dataclass(frozen=True, slots=True)
class MemoryParams:
    # param() builds an immutable field spec; ruff cannot know a StrEnum default is immutable.
    action: MemoryAction = param(  # noqa: RUF009
        "add a new entry, replace the entry containing old_text, or remove it"
    )
    target: MemoryTarget = param(  # noqa: RUF009
        "memory: MEMORY.md, facts about this project and its environment; "
        "user: USER.md, facts about the user, shared by all their projects",
        default=MemoryTarget.MEMORY,
    )
    content: str = param("the entry's text (add, replace): one short, self-contained fact", "")
    old_text: str = param(
        "replace, remove: a short piece of text copied exactly from the one entry to change",
        "",
    )


class MemoryTool(Tool):
    """Curated-memory writes for the model. Effect READ: guarded, not asked, but for USER.md
    (module doc)."""

    name: ClassVar[str] = "memory"
    description: ClassVar[str] = (
        "Save durable facts to curated memory, which later sessions see in their system prompt. "
        "target=memory (MEMORY.md): build and test commands, conventions, layout, environment "
        "quirks of this project. target=user (USER.md): who the user is, their preferences; "
        "every project reads it, so each change asks the user first. "
        "Write facts, not instructions; keep each entry short; never store secrets. Changes are "
        "saved at once but this session's prompt keeps the memory as it was at the start. "
        "Files have size limits: when one is full, merge or remove entries first."
    )
    Params: ClassVar[type[MemoryParams]] = MemoryParams

    def __init__(self, memory: CuratedMemory, settings: MemorySettings | None = None) -> None:
        self.memory = memory
        limits = settings or memory.settings
        self.max_failures = limits.max_failed_writes_per_turn
        self.failures = 0

    def new_turn(self) -> None:
        """Reset the failed-attempt count; the agent calls this at each user turn."""
        self.failures = 0

    def effect(self, params: MemoryParams, ctx: ToolContext) -> Effect:
        return Effect.READ

    def target_paths(self, params: MemoryParams, ctx: ToolContext) -> list[Path]:
        """MEMORY.md, for the same outside-the-project check every write passes (a write
        that fails it is refused, never asked: see the approval module)."""
        if params.target is MemoryTarget.MEMORY:
            return [ctx.project.memory_file]
        return []

    def shared_target(self, params: MemoryParams, ctx: ToolContext) -> str | None:
        if params.target is MemoryTarget.USER:
            return "your USER.md, which every later session reads in every project"
        return None

    async def approval_detail(self, params: MemoryParams, ctx: ToolContext) -> str:
        """The exact entry the change writes (and the one it replaces or removes), checked by
        the guard first: a flagged entry is refused without asking."""
        content = None if params.action is MemoryAction.REMOVE else params.content
        old_text = None if params.action is MemoryAction.ADD else params.old_text
        try:
            return await asyncio.to_thread(self.memory.preview, params.target, content, old_text)
        except CuratedMemoryError as exc:
            raise ToolError(str(exc)) from None

    def summary(self, params: MemoryParams) -> str:
        text = params.content if params.action is MemoryAction.ADD else params.old_text
        flat = " ".join(text.split())
        if len(flat) > 60:
            flat = flat[:59] + "…"
        return f"memory {params.action.value} {params.target.value}: {flat}"

    async def run(self, params: MemoryParams, ctx: ToolContext) -> ToolResult:
        if self.failures >= self.max_failures:
            return ToolResult(self._stop_message(), is_error=True)
        try:
            result = await asyncio.to_thread(self._apply, params)
        except CuratedMemoryError as exc:
            self.failures += 1
            message = str(exc)
            if self.failures >= self.max_failures:
                message += "\n\n" + self._stop_message()
            details = {"action": params.action.value, "target": params.target.value}
            return ToolResult(message, is_error=True, details=details)
        return ToolResult(_success(params.action, result), details=_details(params, result))

    def _apply(self, params: MemoryParams) -> WriteResult:
        match params.action:
            case MemoryAction.ADD:
                return self.memory.add(params.target, params.content)
            case MemoryAction.REPLACE:
                return self.memory.replace(params.target, params.old_text, params.content)
            case MemoryAction.REMOVE:
                return self.memory.remove(params.target, params.old_text)

    def _stop_message(self) -> str:
        return (
            f"{self.failures} memory writes failed in this turn. Stop trying to save memory "
            "now and go on with the user's task; if the fact matters, tell the user what you "
            "wanted to remember so they can add it themselves."
        )


def _success(action: MemoryAction, result: WriteResult) -> str:
    name = result.target.file_name
    count = len(result.entries)
    size = f"{count} {'entry' if count == 1 else 'entries'}, {result.usage}"
    if not result.changed:
        return f"Already in {name}: nothing to change ({size})."
    verb = {
        MemoryAction.ADD: "Saved to",
        MemoryAction.REPLACE: "Updated",
        MemoryAction.REMOVE: "Removed from",
    }[action]
    return (
        f"{verb} {name} ({size}). Done: no need to repeat or check it. Later sessions will see "
        "it; this session's prompt keeps the memory as it was at the start."
    )


def _details(params: MemoryParams, result: WriteResult) -> dict[str, object]:
    return {
        "action": params.action.value,
        "target": result.target.value,
        "path": str(result.path),
        "chars": result.chars,
        "limit": result.limit,
        "entries": len(result.entries),
        "changed": result.changed,
    }
