"""One turn on screen: the entries it writes, projected as they are written, plus what streams.

The chat of a turn is the projection of the log, live: every ``EntryAppended`` goes through
the same mapping a reload uses (:class:`~agentsh.tui.projection.Projector`, built on
:func:`~agentsh.tui.projection.items_for`), so what the chat shows when the turn ends is what
opening the session shows. The rest of the stream only animates what the log will hold: text
deltas fill the live reply until its entry replaces them, a logged tool call's block appears
when the tool starts and streams its output until its result entry finishes it, a compaction
shows a running line until its entry lands. What is not in the log at all (notices, retries,
approval questions, errors no entry carries) is a note in place.

The view never reads the session: what it shows comes from the events.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from textual.content import Content

from agentsh.events import (
    ApprovalRequest,
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
    TextEnded,
    ThinkingDelta,
    Tier,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
)
from agentsh.session.entries import EntryAppended
from agentsh.tui.projection import (
    TURN_CANCELLED,
    Added,
    ApprovalItem,
    AssistantItem,
    CompactionItem,
    Finished,
    Folded,
    NoteItem,
    Projector,
    ToolItem,
)
from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
from agentsh.tui.widgets.messages import AssistantMessage as AssistantWidget
from agentsh.tui.widgets.messages import CompactionLine, NoteLine
from agentsh.tui.widgets.tool_block import ToolBlock

if TYPE_CHECKING:
    from textual.signal import Signal

    from agentsh.tui.display import View

#: a retry's line ("retry 2/3 in 4s: rate limited"), which the next retry of that wait replaces
_RETRY_LINE = re.compile(r"retry \d+/\d+ in ")


class TurnView:
    """Turns one stream of agent events into transcript rows."""

    def __init__(
        self, view: View, user_text: str, projector: Projector, path_changed: Signal[str]
    ) -> None:
        self.view = view
        self.chat = view.chat
        self.path_changed = path_changed  # told when a compaction archived turns
        self.user_text = user_text
        self.projector = projector
        self.reply: AssistantWidget | None = None  # streaming, its entry not written yet
        self.blocks: dict[str, ToolBlock] = {}  # this turn's mounted tool blocks, by call id
        self.pending: dict[str, ToolItem] = {}  # logged calls whose tool has not started
        self.prompts: dict[str, list[ApprovalPrompt]] = {}  # approvals asked, by call id
        self.asked: list[ApprovalPrompt] = []  # every approval this turn asked
        self.compaction: CompactionLine | None = None  # running, its entry not written yet
        self.logged_error = ""  # the error the newest logged reply carries (shown with it)
        self.logged_abort = False  # a reply was logged as aborted (its footer says so)
        self.ended = False

    async def handle(self, event: Event) -> None:
        chat = self.chat
        match event:
            case EntryAppended():
                for change in self.projector.add(event.entry):
                    await self._apply(change)
            case TextDelta():
                reply = await self._reply()
                await reply.append(event.text)
                chat.output_grew()
            case ThinkingDelta():
                (await self._reply()).add_thinking(event.text)
            case TextEnded() if self.reply is not None:
                await self.reply.text_ended()
            case ToolStarted():
                await self._tool_started(event)
            case ToolOutput():
                if (running := self.blocks.get(event.call_id)) is not None:
                    running.append_output(event.text)
                    chat.output_grew()
            case ApprovalRequest():
                # Seen: a narrow terminal's tree pane hid the question, and Esc meant to
                # close the pane cancelled the turn instead.
                self.view.uncover_chat()
                # Asked before it is added: a user who scrolled up to read is not moved.
                prompt = ApprovalPrompt(event, self.view.keymap, follow=chat.following)
                await chat.append(NoteItem("", f"approval asked: {event.summary}"), prompt)
                self.prompts.setdefault(event.call_id, []).append(prompt)
                self.asked.append(prompt)
            case StatusChanged():
                self.view.show_status(event.status)
            case Retrying():
                await self._retrying(event)
            case CompactionStarted():
                line = CompactionLine(event.tier.value, 0, 0, running=True)
                self.compaction = line
                await chat.append(CompactionItem("", event.tier.value, 0, 0, ""), line)
            case CompactionFinished():
                if event.note:  # e.g. the summary failed and the turns were archived instead
                    await self.view.note(f"compaction: {event.note}", "warning")
            case CompactionFailed():
                if self.compaction is not None:
                    self._compaction_failed(event.reason)
                else:
                    await self.view.note(f"compaction failed: {event.reason}", "error")
            case Notice():
                await self.view.note(event.text, event.level.value)
            case ErrorOccurred():
                await self._error(event)
            case TurnEnded():
                await self._ended(event)
            case _:
                pass  # the turn's start, replies and results are entries; usage is the status

    # -- entries ------------------------------------------------------------------------------

    async def _apply(self, change: Added | Finished | Folded) -> None:
        match change:
            case Added(item=AssistantItem() as item):
                await self._reply_logged(item)
            case Added(item=ToolItem() as item):
                # Shown when its tool starts (or its result arrives), as the run goes.
                self._drop_unlogged_reply()
                self.pending[item.call_id] = item
            case Added(item=CompactionItem() as item):
                await self._compaction_logged(item)
            case Added(item=item):
                await self.chat.append(item)
            case Finished(item=item, approvals=approvals):
                await self._tool_logged(item)
                await self._approvals_logged(item.call_id, approvals)
            case Folded(item=item):
                await self.chat.fold_archive(item)
                self.path_changed.publish("compaction")

    async def _reply(self) -> AssistantWidget:
        if self.reply is None:
            widget = AssistantWidget(live=True)
            self.reply = widget
            await self.chat.append(AssistantItem("", ""), widget)
        return self.reply

    async def _reply_logged(self, item: AssistantItem) -> None:
        """A reply's entry: the live reply shows exactly the logged text from now on."""
        self.logged_error = item.error
        self.logged_abort = self.logged_abort or item.aborted
        reply, self.reply = self.reply, None
        if reply is None:
            await self.chat.append(item)
            return
        await reply.finish(text=item.text, aborted=item.aborted, error=item.error)
        reply.entry_id = item.entry_id
        self.chat.set_item(reply, item)

    def _drop_unlogged_reply(self) -> None:
        """A reply made only of tool calls has no item (its blocks say it all): a live reply
        that showed nothing but its thinking goes."""
        reply, self.reply = self.reply, None
        if reply is not None:
            self.chat.discard(reply)

    async def _tool_started(self, event: ToolStarted) -> None:
        item = self.pending.pop(event.call_id, None)
        if item is None:  # a call the log does not hold (never expected from the agent)
            item = ToolItem(event.call_id, event.name, event.summary or event.name)
        block = self.chat.build(item)
        assert isinstance(block, ToolBlock)
        self.blocks[event.call_id] = block
        await self.chat.append(item, block)

    async def _tool_logged(self, item: ToolItem) -> None:
        """A call's result entry: its block shows the logged outcome."""
        if self.pending.pop(item.call_id, None) is not None:  # never started (cancelled)
            await self.chat.append(item)
            return
        block = self.blocks.get(item.call_id)
        if block is None:
            await self.chat.append(item)
            return
        block.finish(item.output, is_error=item.is_error, diff=item.diff)
        self.chat.set_item(block, item)

    async def _approvals_logged(self, call_id: str, approvals: tuple[ApprovalItem, ...]) -> None:
        """A call's result records the answers its prompts were given: each prompt's row
        holds the logged line from now on (what a reload, or a remount, shows)."""
        prompts = self.prompts.pop(call_id, [])
        for index, item in enumerate(approvals):
            if index < len(prompts):
                self.chat.set_item(prompts[index], item)
            else:  # answered where this chat did not ask (never expected)
                await self.chat.append(item)

    def _compaction_failed(self, reason: str) -> None:
        """The running line shows the failure, and a remount draws it the same way (its row
        recorded a compaction of 0 tokens, redrawn as "compacted: 0 → 0 tokens")."""
        line, self.compaction = self.compaction, None
        assert line is not None
        line.fail(reason)
        text = f"⟲ compaction ({Tier.label_of(line.tier)}) failed: {reason}"
        self.chat.set_item(line, NoteItem("", text, "error"))

    async def _compaction_logged(self, item: CompactionItem) -> None:
        line, self.compaction = self.compaction, None
        if line is None:
            await self.chat.append(item)
            return
        # The tier that ran, which may not be the one that started (a summary that failed
        # falls back to archiving the turns).
        line.tier = item.tier
        line.finish(item.tokens_before, item.tokens_after, item.summary, item.entry_id)
        self.chat.set_item(line, item)

    async def _retrying(self, event: Retrying) -> None:
        """A retry's line; the next retry of the same wait (nothing came in between) says
        its attempt on that line instead of stacking one line per attempt."""
        text = f"retry {event.attempt}/{event.max_attempts} in {event.delay_s:.0f}s: {event.reason}"
        item = NoteItem("", text, "warning")
        rows = self.chat.rows
        last = rows[-1].widget if rows else None
        if isinstance(last, NoteLine) and _RETRY_LINE.match(last.text):
            last.text = text
            last.update(Content(f"! {text}"))  # as NoteLine draws a warning
            self.chat.set_item(last, item)
            return
        await self.chat.append(item, NoteLine(text, kind="warning"))

    # -- endings ------------------------------------------------------------------------------

    async def _error(self, event: ErrorOccurred) -> None:
        if event.kind is ErrorKind.NO_MODEL:
            await self.view.markdown_note(event.message, "warning", plain=True)
            prompt = self.view.prompt
            if self.user_text and not prompt.text:
                prompt.put_text(self.user_text)  # nothing was sent: keep what was typed
            return
        if event.message and event.message == self.logged_error:
            return  # the logged reply shows it
        if self.reply is not None:  # the reply could not be logged: show it failed in place
            reply, self.reply = self.reply, None
            await reply.finish(error=event.message)
            self.chat.set_item(reply, AssistantItem("", reply.text, error=event.message))
            return
        await self.view.note(event.message, "error")

    async def _ended(self, event: TurnEnded) -> None:
        self.ended = True
        aborted = event.outcome is TurnOutcome.ABORTED
        if self.reply is not None:  # its entry was never written
            reply, self.reply = self.reply, None
            await reply.finish(aborted=aborted)
            self.chat.set_item(reply, AssistantItem("", reply.text, aborted=aborted))
        elif aborted and not self.logged_abort:
            await self.view.note(TURN_CANCELLED, "warning")
        for block in self.blocks.values():
            if not block.finished:
                block.finish(block.output or "(cancelled)", is_error=True)
        self.pending.clear()
        if self.compaction is not None:
            self._compaction_failed("cancelled")

    async def close(self) -> None:
        """The stream ended (normally or not): never leave a live widget streaming, and a
        prompt the end withdrew ("not answered") keeps that line when its row is remounted."""
        if self.reply is not None:
            await self.reply.finish(aborted=not self.ended)
            self.reply = None
        for prompt in self.asked:
            shown = self.chat.item_of(prompt)
            if prompt.answered is not None and not isinstance(shown, ApprovalItem):
                self.chat.set_item(prompt, prompt.answered)
