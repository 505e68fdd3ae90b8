"""One turn on screen: a stream of agent events becomes transcript widgets.

Each event updates exactly one widget: text deltas go to the live reply (one markdown stream),
tool events to their block, an approval request becomes an inline prompt, compaction events a
collapsed line, errors a line in place. When a widget's work is done, its row in the chat gets
the finished item (from the event, which mirrors the log), so a remount shows it as it ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsh.events import (
    ApprovalRequest,
    AssistantMessage,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ErrorKind,
    ErrorOccurred,
    Event,
    Notice,
    Retrying,
    StatusChanged,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.session.entries import CompactionEntry, MessageEntry, Role
from agentsh.tui.projection import AssistantItem, CompactionItem, NoteItem, ToolItem, UserItem
from agentsh.tui.widgets.approval import ApprovalPrompt
from agentsh.tui.widgets.messages import AssistantMessage as AssistantWidget
from agentsh.tui.widgets.messages import CompactionLine
from agentsh.tui.widgets.tool_block import ToolBlock

if TYPE_CHECKING:
    from agentsh.tui.controller import ChatController


class TurnView:
    """Turns one stream of agent events into transcript widgets."""

    def __init__(self, controller: ChatController, user_text: str) -> None:
        self.c = controller
        self.chat = controller.chat
        self.user_text = user_text
        self.reply: AssistantWidget | None = None
        self.blocks: dict[str, ToolBlock] = {}
        self.compaction: CompactionLine | None = None
        self.ended = False

    async def handle(self, event: Event) -> None:
        chat = self.chat
        match event:
            case TurnStarted():
                await chat.append(UserItem(event.user_entry_id, event.text))
            case TextDelta():
                reply = await self._reply()
                await reply.append(event.text)
            case ThinkingDelta():
                (await self._reply()).add_thinking(event.text)
            case AssistantMessage():
                await self._finish_reply(event.entry_id, event.text)
            case ToolStarted():
                block = ToolBlock(
                    event.call_id,
                    event.name,
                    event.summary or event.name,
                    preview_lines=self.c.env.settings.tui.tool_preview_lines,
                    expand_key=chat.expand_key,
                )
                self.blocks[event.call_id] = block
                await chat.append(ToolItem(event.call_id, event.name, event.summary), block)
            case ToolOutput():
                if (running := self.blocks.get(event.call_id)) is not None:
                    running.append_output(event.text)
            case ToolFinished():
                await self._tool_finished(event)
            case ApprovalRequest():
                prompt = ApprovalPrompt(event, self.c.app.keymap)
                await chat.append(NoteItem("", f"approval asked: {event.summary}"), prompt)
            case StatusChanged():
                self.c.show_status(event.status)
            case Retrying():
                await self.c.note(
                    f"retrying in {event.delay_s:.0f}s (attempt {event.attempt}/"
                    f"{event.max_attempts}): {event.reason}",
                    "warning",
                )
            case CompactionStarted():
                line = CompactionLine(event.tier.value, 0, 0, running=True)
                self.compaction = line
                await chat.append(CompactionItem("", event.tier.value, 0, 0, ""), line)
            case CompactionFinished():
                await self._compaction_finished(event)
            case CompactionFailed():
                if self.compaction is not None:
                    self.compaction.fail(event.reason)
                    self.compaction = None
                else:
                    await self.c.note(f"compaction failed: {event.reason}", "error")
            case Notice():
                await self.c.note(event.text, event.level.value)
            case ErrorOccurred():
                await self._error(event)
            case TurnEnded():
                await self._ended(event)
            case _:
                pass  # usage and tool-call fragments: the status bar shows their effect

    async def _reply(self) -> AssistantWidget:
        if self.reply is None:
            widget = AssistantWidget(live=True)
            self.reply = widget
            await self.chat.append(AssistantItem("", ""), widget)
        return self.reply

    async def _finish_reply(self, entry_id: str, text: str) -> None:
        reply = self.reply
        self.reply = None
        if reply is None:
            if text:
                await self.chat.append(AssistantItem(entry_id, text))
            return
        await reply.finish(text=text)
        reply.entry_id = entry_id
        if not text and not reply.text:
            reply.display = False  # a tool-call-only reply: the blocks say it all
        self.chat.set_item(reply, AssistantItem(entry_id, text))

    async def _tool_finished(self, event: ToolFinished) -> None:
        found = self.blocks.get(event.call_id)
        item = ToolItem(
            event.call_id,
            event.name,
            found.summary if found is not None else event.name,
            output=event.content,
            is_error=event.is_error,
            diff=event.diff,
            finished=True,
            entry_id=event.entry_id,
        )
        if found is None:
            await self.chat.append(item)
            return
        found.finish(event.content, is_error=event.is_error, diff=event.diff)
        self.chat.set_item(found, item)

    async def _compaction_finished(self, event: CompactionFinished) -> None:
        summary = ""
        session = self.c.current_session()
        if session is not None and event.entry_id in session.tree.nodes:
            entry = session.get(event.entry_id)
            if isinstance(entry, CompactionEntry):
                summary = entry.summary
        if event.note:
            summary = f"{event.note}\n{summary}".strip()
        item = CompactionItem(
            event.entry_id, event.tier.value, event.tokens_before, event.tokens_after, summary
        )
        line = self.compaction
        self.compaction = None
        if line is None:
            await self.chat.append(item)
            return
        # The tier that ran, which may not be the one that started (a summary that failed
        # falls back to archiving the turns).
        line.tier = event.tier.value
        line.finish(event.tokens_before, event.tokens_after, summary, event.entry_id)
        self.chat.set_item(line, item)

    async def _error(self, event: ErrorOccurred) -> None:
        if event.kind is ErrorKind.NO_MODEL:
            await self.c.markdown_note(event.message, "warning", plain=True)
            prompt = self.c.prompt
            if self.user_text and not prompt.text:
                prompt.put_text(self.user_text)  # nothing was sent: keep what was typed
            return
        if self.reply is not None:
            reply = self.reply
            self.reply = None
            await reply.finish(error=event.message)
            self.chat.set_item(reply, AssistantItem("", reply.text, error=event.message))
            return
        await self.c.note(event.message, "error")

    async def _ended(self, event: TurnEnded) -> None:
        self.ended = True
        aborted = event.outcome is TurnOutcome.ABORTED
        if self.reply is not None:
            reply = self.reply
            self.reply = None
            await reply.finish(aborted=aborted)
            entry_id = self._last_assistant_id()
            self.chat.set_item(reply, AssistantItem(entry_id, reply.text, aborted=aborted))
        elif aborted:
            await self.c.note("turn cancelled", "warning")
        for block in self.blocks.values():
            if not block.finished:
                block.finish(block.output or "(cancelled)", is_error=True)
        if self.compaction is not None:
            self.compaction.fail("cancelled")
            self.compaction = None

    def _last_assistant_id(self) -> str:
        session = self.c.current_session()
        if session is None:
            return ""
        for entry in reversed(session.current_path()):
            if isinstance(entry, MessageEntry) and entry.role is Role.ASSISTANT:
                return entry.id
        return ""

    async def close(self) -> None:
        """The stream ended (normally or not): never leave a live widget streaming."""
        if self.reply is not None:
            await self.reply.finish(aborted=not self.ended)
            self.reply = None
