"""The transcript: a scrolling column of message widgets, windowed so long chats stay fast.

Every widget in the chat belongs to a :class:`Row` holding the data it was built from (a
:mod:`agentsh.tui.projection` item). Only a window of rows has widgets mounted: at most
``window`` rows normally; rows far above (or below) the viewport are unmounted, and when the
user scrolls to the top (or bottom) edge of what is mounted the next batch is built again from
its row. A resume or branch switch replaces all rows with a fresh projection of the log, so
the widgets are always a view of the session, never a second copy of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.containers import VerticalScroll
from textual.widget import Widget

from agentsh.tui.keys import KeyScope, bindings_for
from agentsh.tui.projection import (
    AssistantItem,
    ChatItem,
    CompactionItem,
    NoteItem,
    ToolItem,
    UserItem,
)
from agentsh.tui.widgets.messages import (
    AssistantMessage,
    CompactionLine,
    NoteLine,
    UserMessage,
    Welcome,
)
from agentsh.tui.widgets.tool_block import ToolBlock

INITIAL_ROWS = 40  # rows mounted when a long session is opened
BATCH_ROWS = 25  # rows mounted or unmounted at a time while scrolling


@dataclass(slots=True)
class Row:
    item: ChatItem
    widget: Widget | None = None


class ChatView(VerticalScroll):
    BINDINGS = bindings_for(KeyScope.CHAT)

    def __init__(
        self,
        *,
        window: int = 200,
        preview_lines: int = 5,
        expand_key: str = "Ctrl+O",
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.window = max(window, 10)
        # Batches scale down with a small window, so the window setting is honoured.
        self.batch_rows = max(5, min(BATCH_ROWS, self.window // 4))
        self.initial = min(INITIAL_ROWS, self.window)
        self.preview_lines = preview_lines
        self.expand_key = expand_key
        self.rows: list[Row] = []
        self.first = 0  # rows[first:last] are mounted
        self.last = 0
        self._adjusting = False

    def on_mount(self) -> None:
        self.anchor()
        self.watch(self, "scroll_y", self._on_scrolled, init=False)

    # -- building widgets from rows -----------------------------------------------------------

    def build(self, item: ChatItem) -> Widget:
        match item:
            case UserItem():
                return UserMessage(item.text, entry_id=item.entry_id)
            case AssistantItem():
                return AssistantMessage(
                    item.text, entry_id=item.entry_id, aborted=item.aborted, error=item.error
                )
            case ToolItem():
                return ToolBlock(
                    item.call_id,
                    item.name,
                    item.summary,
                    preview_lines=self.preview_lines,
                    expand_key=self.expand_key,
                    output=item.output,
                    is_error=item.is_error,
                    diff=item.diff,
                    finished=item.finished,
                )
            case CompactionItem():
                return CompactionLine(
                    item.tier,
                    item.tokens_before,
                    item.tokens_after,
                    item.summary,
                    entry_id=item.entry_id,
                )
            case NoteItem():
                return NoteLine(item.text, kind=item.kind)

    # -- the whole transcript -----------------------------------------------------------------

    async def load(self, items: Sequence[ChatItem]) -> None:
        """Replace the transcript with ``items`` (a projection of the session's path)."""
        await self.remove_children()
        self.rows = [Row(item) for item in items]
        self.last = len(self.rows)
        self.first = max(0, self.last - self.initial)
        widgets = [self._widget_for(row) for row in self.rows[self.first : self.last]]
        if widgets:
            await self.mount_all(widgets)
        else:
            await self.mount(Welcome())
        self.anchor()
        self.scroll_end(animate=False, immediate=True)

    @property
    def mounted_rows(self) -> int:
        return self.last - self.first

    def _widget_for(self, row: Row) -> Widget:
        if row.widget is None:
            row.widget = self.build(row.item)
        return row.widget

    # -- live additions -----------------------------------------------------------------------

    async def append(self, item: ChatItem, widget: Widget | None = None) -> Widget:
        """Add a row at the end and mount its widget (a live widget may be passed in)."""
        for welcome in self.query(Welcome):
            await welcome.remove()
        if self.last < len(self.rows):
            await self.reveal_end()
        row = Row(item, widget)
        self.rows.append(row)
        await self.mount(self._widget_for(row))
        self.last = len(self.rows)
        await self._prune_far_above()
        return row.widget  # type: ignore[return-value]

    def set_item(self, widget: Widget, item: ChatItem) -> None:
        """Record the finished state of a live widget, so a remount shows it as it ended."""
        for row in reversed(self.rows):
            if row.widget is widget:
                row.item = item
                return

    async def reveal_end(self) -> None:
        """Mount the newest rows again if the user had scrolled far up (a new turn starts)."""
        if self.last >= len(self.rows):
            self.scroll_end(animate=False)
            return
        await self.remove_children()
        for row in self.rows[self.first : self.last]:
            row.widget = None
        self.last = len(self.rows)
        self.first = max(0, self.last - self.initial)
        await self.mount_all([self._widget_for(r) for r in self.rows[self.first : self.last]])
        self.anchor()
        self.scroll_end(animate=False, immediate=True)

    def widgets_of(self, kind: type[Widget]) -> list[Widget]:
        return [r.widget for r in self.rows[self.first : self.last] if isinstance(r.widget, kind)]

    # -- windowing ----------------------------------------------------------------------------

    async def _on_scrolled(self, _old: float, new: float) -> None:
        if self._adjusting or not self.rows:
            return
        self._adjusting = True
        try:
            if new <= 1 and self.first > 0:
                await self._extend_top()
            elif new >= self.max_scroll_y - 1 and self.last < len(self.rows):
                await self._extend_bottom()
            await self._prune_far_above()
            await self._prune_far_below()
        finally:
            self._adjusting = False

    async def _extend_top(self) -> None:
        anchor_widget = self.rows[self.first].widget
        start = max(0, self.first - self.batch_rows)
        new_rows = self.rows[start : self.first]
        widgets = [self._widget_for(r) for r in new_rows]
        before_y = anchor_widget.virtual_region.y if anchor_widget is not None else 0
        await self.mount_all(widgets, before=anchor_widget)
        self.first = start

        def keep_position() -> None:
            if anchor_widget is not None and anchor_widget.is_mounted:
                shift = anchor_widget.virtual_region.y - before_y
                self.scroll_to(y=self.scroll_y + shift, animate=False, immediate=True)

        self.call_after_refresh(keep_position)

    async def _extend_bottom(self) -> None:
        end = min(len(self.rows), self.last + self.batch_rows)
        widgets = [self._widget_for(r) for r in self.rows[self.last : end]]
        await self.mount_all(widgets)
        self.last = end

    async def _prune_far_above(self) -> None:
        """Unmount rows more than a screen above the viewport while over the window."""
        excess = self.mounted_rows - self.window
        if excess <= 0:
            return
        limit = self.scroll_y - self.size.height
        count = 0
        for row in self.rows[self.first : self.first + max(excess, self.batch_rows)]:
            widget = row.widget
            if widget is None or widget.virtual_region.bottom >= limit:
                break
            if getattr(widget, "live", False):
                break
            count += 1  # noqa: SIM113 - counts only the leading run that qualifies
        if self.size.height == 0:  # not laid out yet (headless start): prune by count
            count = excess
        if count <= 0:
            return
        removed = self.rows[self.first : self.first + count]
        survivor = self.rows[self.first + count].widget if self.first + count < self.last else None
        before_y = survivor.virtual_region.y if survivor is not None else 0
        await self.remove_children([r.widget for r in removed if r.widget is not None])
        for row in removed:
            row.widget = None
        self.first += count
        if survivor is not None and before_y and not self.is_anchored:

            def keep_position() -> None:
                shift = before_y - survivor.virtual_region.y
                self.scroll_to(y=max(0, self.scroll_y - shift), animate=False, immediate=True)

            self.call_after_refresh(keep_position)

    async def _prune_far_below(self) -> None:
        excess = self.mounted_rows - self.window
        if excess <= 0:
            return
        limit = self.scroll_y + 2 * self.size.height
        count = 0
        for row in reversed(self.rows[self.last - max(excess, self.batch_rows) : self.last]):
            widget = row.widget
            if widget is None or widget.virtual_region.y <= limit or getattr(widget, "live", False):
                break
            count += 1
        if count <= 0:
            return
        removed = self.rows[self.last - count : self.last]
        await self.remove_children([r.widget for r in removed if r.widget is not None])
        for row in removed:
            row.widget = None
        self.last -= count

    # -- keyboard walk over tool blocks -------------------------------------------------------

    def _focusable_blocks(self) -> list[Widget]:
        return [w for w in self.children if w.can_focus and w.display]

    def action_focus_next_block(self) -> None:
        self._step_focus(+1)

    def action_focus_previous_block(self) -> None:
        self._step_focus(-1)

    def _step_focus(self, step: int) -> None:
        blocks = self._focusable_blocks()
        if not blocks:  # nothing to walk: the keys scroll instead
            if step > 0:
                self.scroll_down()
            else:
                self.scroll_up()
            return
        focused = self.screen.focused
        if focused in blocks:
            index = blocks.index(focused) + step
        else:
            index = len(blocks) - 1 if step < 0 else 0
        index = max(0, min(len(blocks) - 1, index))
        blocks[index].focus()
        blocks[index].scroll_visible()
