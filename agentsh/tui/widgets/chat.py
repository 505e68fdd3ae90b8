"""The transcript: a scrolling column of message widgets, windowed so long chats stay fast.

Every widget in the chat belongs to a row holding the :mod:`agentsh.tui.projection` item it
was built from; only a window of rows has widgets mounted
(:class:`~agentsh.tui.widgets.row_window.RowWindow`). A resume or branch switch replaces all
rows with a fresh projection of the log, so the widgets are always a view of the session,
never a second copy of it.

The turns a compaction took out of the model's context are one :class:`ArchiveLine`; Enter on
it (or the summaries pane) shows them again in place, marked as archived, and hides them again.
:meth:`ChatView.reveal_entry` scrolls to the widget of a log entry, mounting it first if the
window had dropped it, and highlights it for a moment (the summaries pane's jump).

Alt+Up / Alt+Down select a user message (:meth:`ChatView.select_user_message`; the chat takes
the focus and the message is highlighted and scrolled into view); Enter on it posts
:class:`ChatView.EditRequested` and the controller turns it into a new branch; Esc clears it.
The selection is an entry id, so it survives rows being remounted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from textual import events, on
from textual.message import Message
from textual.widget import Widget

from agentsh.tui.keys import KeyScope, bindings_for, display_key, spec
from agentsh.tui.projection import (
    ApprovalItem,
    ArchiveItem,
    AssistantItem,
    BranchItem,
    ChatItem,
    CompactionItem,
    NoteItem,
    ToolItem,
    UserItem,
    item_entry_ids,
)
from agentsh.tui.widgets.approval_prompt import ApprovalLine
from agentsh.tui.widgets.chat_lines import ArchiveLine, BranchMarker
from agentsh.tui.widgets.messages import (
    FOLD_OVER,
    AssistantMessage,
    CompactionLine,
    NoteLine,
    UserMessage,
    Welcome,
)
from agentsh.tui.widgets.row_window import Row, RowWindow, is_live, serialized
from agentsh.tui.widgets.steady_containers import AlikeRows
from agentsh.tui.widgets.tool_block import ToolBlock

__all__ = ["ArchiveLine", "BranchMarker", "ChatView"]

HIGHLIGHT_S = 2.0  # how long a jumped-to entry stays highlighted
ARCHIVE_END = "end of the archived turns (enter on the line above hides them)"


class ChatView(AlikeRows, RowWindow):
    BINDINGS = bindings_for(KeyScope.CHAT)
    DEFAULT_CSS = """
    ChatView > .archive-line { color: $text-muted; padding: 0 1; margin: 0 0 1 0; }
    ChatView > .archive-line:focus { background: $boost; color: $text; }
    ChatView > .archived { border-left: outer $warning 60% !important; opacity: 60%; }
    ChatView > .jump-target { background: $accent 30% !important; }
    """

    FOCUS_ON_CLICK = False  # a click leaves the focus (and typing) in the editor

    @dataclass
    class EditRequested(Message):
        """Enter on a selected user message: edit it as a new branch."""

        entry_id: str
        text: str

    @dataclass
    class SelectionCleared(Message):
        """The selection was dropped from the keyboard: the editor takes the focus back."""

    def __init__(
        self,
        *,
        window: int = 200,
        preview_lines: int = 5,
        expand_key: str = "Ctrl+O",
        id: str | None = None,
    ) -> None:
        super().__init__(window=window, id=id)
        self.preview_lines = preview_lines
        self.expand_key = expand_key
        self.unfolded_users: set[str] = set()  # long messages shown whole, by entry id
        self.expanded_archives: set[str] = set()
        self.selected_id: str | None = None  # the selected user message's entry
        self._folds = False  # some reply has blocks folded away (widgets/block_fold.py)
        self._fold_width = 0  # the width the folds were measured at

    # -- building widgets from rows -----------------------------------------------------------

    def build(self, item: ChatItem) -> Widget:
        match item:
            case UserItem():
                message = UserMessage(item.text, entry_id=item.entry_id)
                message.folded = message.folded and item.entry_id not in self.unfolded_users
                return message
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
            case ApprovalItem():
                return ApprovalLine(item)
            case ArchiveItem():
                return ArchiveLine(item, expanded=item.compaction_id in self.expanded_archives)
            case BranchItem():
                return BranchMarker(item, self._branch_keys() if item.nearest else "")

    def forget(self, row: Row) -> None:  # a long message the reader unfolded stays so
        if isinstance(user := row.widget, UserMessage) and user.line_count > FOLD_OVER:
            (self.unfolded_users.discard if user.folded else self.unfolded_users.add)(user.entry_id)

    def decorate(self, row: Row, widget: Widget) -> None:
        if row.archived:
            widget.add_class("archived")
        if self.selected_id is not None and _user_id(row) == self.selected_id:
            widget.add_class("-selected")

    # -- blocks far above a following view leave the layout (widgets/block_fold.py) ----------

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.unfold_replies())

    @on(AssistantMessage.Painted)
    def _reply_painted(self, event: AssistantMessage.Painted) -> None:
        event.stop()
        self.fold_far_replies()

    def fold_far_replies(self) -> None:
        """Fold what went more than a screen above the view (at the last layout), from the
        newest reply up to the first one folded whole before (all above it are, too)."""
        if not self.following or not self.size.height:
            return
        if self.size.width != self._fold_width:
            self.unfold_replies()
            self._fold_width = self.size.width
        limit = self.region.y - self.size.height
        for row in reversed(self.rows[self.first : self.last]):
            widget = row.widget
            if not isinstance(widget, AssistantMessage) or not widget.display:
                continue
            if widget.folded_whole:
                break
            widget.fold_above(limit)
            self._folds = self._folds or widget.fold.folded

    def unfold_replies(self) -> None:
        """Every folded block back in the layout (before the reader can see where it was)."""
        if not self._folds:
            return
        self._folds = False
        for row in self.rows[self.first : self.last]:
            if isinstance(row.widget, AssistantMessage):
                row.widget.unfold()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._folds and not self.following:
            self.unfold_replies()

    def on_resize(self, _event: events.Resize) -> None:
        if self._folds and self.size.width != self._fold_width:
            self.unfold_replies()

    def _branch_keys(self) -> str:
        keymap: dict[str, str] = getattr(self.app, "keymap", {})
        keys = [display_key(keymap.get(k, spec(k).key)) for k in ("branch_prev", "branch_next")]
        return " / ".join(keys)

    # -- the whole transcript -----------------------------------------------------------------

    async def load(self, items: Sequence[ChatItem], *, initial: int | None = None) -> None:
        """Replace the transcript with ``items`` (a projection of the session's path).

        ``initial`` mounts fewer rows than usual (a branch switch mounts about a screenful,
        so it paints sooner); more are mounted as the user scrolls up, as always.

        Rows that start the new projection exactly as they started the old one (the path
        above a fork, when switching branches) keep their widgets; the rest are built hidden,
        while the old transcript stays on screen, then swapped in at once, so no frame shows
        a half-built or empty chat and the frames in between (the tree's, the status bar's)
        are not held up."""
        async with self.window_change():
            self._loading = True
            try:
                await self._load(items, initial or self.initial)
            finally:
                self.call_after_refresh(self._loaded)

    async def _load(self, items: Sequence[ChatItem], count: int) -> None:
        self.clear_selection()
        self.unfold_rows()
        keep = self._reusable_prefix(items)
        old = self.rows
        rows = [Row(item) for item in items]
        last = len(rows)
        first = max(0, last - count)
        # Kept: the mounted rows of the shared prefix, when they reach the new window.
        kept_first, kept_last = self.first, min(keep, self.last)
        if kept_first < kept_last and kept_last >= first:
            first = min(first, kept_first)
            for index in range(kept_first, kept_last):
                rows[index].widget, rows[index].built = old[index].widget, True
        else:
            kept_first = kept_last = first
        kept = {id(r.widget) for r in rows[kept_first:kept_last]}
        self._release(r for r in old if id(r.widget) not in kept)
        stale = [child for child in self.children if id(child) not in kept]
        head = [self._widget_for(r) for r in rows[first:kept_first]]
        tail = [self._widget_for(r) for r in rows[kept_last:last]]
        fresh = head + tail
        for widget in fresh:
            widget.display = False
        if head:
            await self.mount_all(head, before=rows[kept_first].widget)
        if tail:
            await self.mount_all(tail)  # after the stale widgets, which go next
        # The swap: one synchronous step, so the next frame shows the new transcript whole.
        for widget in stale:
            widget.display = False
        for widget in fresh:
            widget.display = True
        self.rows, self.first, self.last = rows, first, last
        self.set_output_below(False)  # shown from its end
        self.expanded_archives.clear()
        self.anchor()
        self.scroll_end(animate=False, immediate=True)
        if stale:
            await self.remove_children(stale)
        if not rows:
            await self.mount(Welcome())

    def _reusable_prefix(self, items: Sequence[ChatItem]) -> int:
        """How many leading rows show exactly what ``items`` starts with, in widgets the chat
        built from those items (not a live widget a turn handed in, not an archive shown open),
        so they can stay mounted through a reload."""
        count = 0
        for row, item in zip(self.rows, items, strict=False):
            if not row.built or row.archived or row.item != item or is_live(row.widget):
                break
            if isinstance(item, ArchiveItem) and item.compaction_id in self.expanded_archives:
                break
            count += 1
        return count

    # -- live additions -----------------------------------------------------------------------

    @serialized
    async def append(self, item: ChatItem, widget: Widget | None = None) -> Widget:
        """Add a row at the end and mount its widget (a live widget may be passed in).

        A reader scrolled up stays where they are (the newest rows are mounted below them if
        the window had dropped them), and :class:`RowWindow.OutputBelow` tells the App there
        is output below."""
        for welcome in self.query(Welcome):
            await welcome.remove()
        following = self.following  # never with rows unmounted below
        # Too far up to join the newest rows cheaply: the row is held below, hidden.
        held = self.last < len(self.rows) and not await self.mount_tail()
        row = Row(item, widget, held=held)
        self.rows.append(row)
        new = self._widget_for(row)
        if held:
            new.display = False
        else:
            self.last = len(self.rows)  # before the mount yields: the window has its newest row
        await self.mount(new)
        await self._prune_far_above()
        await self.prune_to_budget()
        if not following:
            self.set_output_below(True)
        return row.widget  # type: ignore[return-value]

    # -- archived turns -----------------------------------------------------------------------

    def _archive_index(self, compaction_id: str) -> int | None:
        for index, row in enumerate(self.rows):
            if isinstance(row.item, ArchiveItem) and row.item.compaction_id == compaction_id:
                return index
        return None

    def has_archive(self, compaction_id: str) -> bool:
        return self._archive_index(compaction_id) is not None

    @on(ArchiveLine.Toggled)
    async def _archive_toggled(self, event: ArchiveLine.Toggled) -> None:
        event.stop()
        await self.toggle_archive(event.line.item.compaction_id)

    @serialized
    async def toggle_archive(self, compaction_id: str) -> bool:
        """Show or hide the turns a compaction archived; True when they are shown now."""
        if compaction_id in self.expanded_archives:
            await self.collapse_archive(compaction_id)
            return False
        return await self.expand_archive(compaction_id)

    @serialized
    async def expand_archive(self, compaction_id: str) -> bool:
        """Show the archived turns under their line, marked as archived (False: no such line)."""
        g = self._archive_index(compaction_id)
        if g is None:
            return False
        if compaction_id in self.expanded_archives:
            return True
        item = self.rows[g].item
        assert isinstance(item, ArchiveItem)
        self.expanded_archives.add(compaction_id)
        added = [Row(child, archived=compaction_id) for child in item.items]
        # Where the archive ends, so the kept turns below are not taken for archived ones.
        added.append(Row(NoteItem("", ARCHIVE_END), archived=compaction_id))
        count = len(added)
        self.rows[g + 1 : g + 1] = added
        if g < self.first:
            self.first += count
            self.last += count
        elif g < self.last:
            live = any(is_live(r.widget) for r in self.rows[self.first : self.last])
            if count <= max(self.window // 2, 1) or live:
                line = self.rows[g].widget
                await self.mount_all([self._widget_for(r) for r in added], after=line)
                self.last += count
            else:
                await self._rewindow(g)
        self._set_line_state(g, expanded=True)
        return True

    @serialized
    async def collapse_archive(self, compaction_id: str) -> bool:
        """Fold the archived turns back into their line."""
        g = self._archive_index(compaction_id)
        self.expanded_archives.discard(compaction_id)
        if g is None:
            return False
        start = end = g + 1
        while end < len(self.rows) and self.rows[end].archived == compaction_id:
            end += 1
        count = end - start
        if count:
            removed = self.rows[start:end]
            await self.remove_children([r.widget for r in removed if r.widget is not None])
            self._release(removed)
            del self.rows[start:end]
            if start < self.last:  # else the archive lay wholly below the window
                # Rows [start, end) are gone: positions at or past them move up by count.
                first = self.first if self.first <= start else max(start, self.first - count)
                last = self.last - count if self.last >= end else start
                self.first, self.last = first, last
                if self.first >= self.last:  # the window lay inside the archive
                    await self._rewindow(g)
        self._set_line_state(g, expanded=False)
        return True

    def _set_line_state(self, index: int, *, expanded: bool) -> None:
        widget = self.rows[index].widget
        if isinstance(widget, ArchiveLine):
            widget.set_expanded(expanded)

    @serialized
    async def fold_archive(self, item: ArchiveItem) -> None:
        """A compaction just archived entries shown live: fold their rows into one line."""
        covered = set(item.entry_ids)
        hits = [i for i, r in enumerate(self.rows) if covered.intersection(item_entry_ids(r.item))]
        if not hits or self._archive_index(item.compaction_id) is not None:
            return
        a, b = hits[0], hits[-1] + 1
        span = self.rows[a:b]
        if any(is_live(r.widget) for r in span):
            return  # never pull a widget a turn still updates (cannot happen: the cut keeps it)
        group = Row(item)
        if b <= self.first:
            self.first -= b - a - 1
            self.last -= b - a - 1
            self.rows[a:b] = [group]
            return
        if a >= self.last:
            held = [r.widget for r in span if r.held and r.widget is not None]
            await self.remove_children(held)
            self._release(span)
            self.rows[a:b] = [group]
            return
        before = self.rows[b].widget if b < self.last else None
        after = self.rows[a - 1].widget if before is None and a - 1 >= self.first else None
        await self.remove_children([r.widget for r in span if r.widget is not None])
        self._release(span)
        self.rows[a:b] = [group]
        widget = self._widget_for(group)
        if before is not None:
            await self.mount(widget, before=before)
        elif after is not None:
            await self.mount(widget, after=after)
        else:
            await self.mount(widget)
        self.last = self.last - (b - a - 1) if self.last >= b else a + 1
        self.first = min(self.first, a)
        await self._mount_below(self.last)  # rows held after the span show, if it reached them

    # -- jumping to an entry ------------------------------------------------------------------

    def row_of(self, entry_id: str, order: Mapping[str, int] | None = None) -> int | None:
        """The row showing ``entry_id``; with ``order`` (entry id -> path position), else the
        first row showing an entry at or after it."""
        for index, row in enumerate(self.rows):
            if entry_id in item_entry_ids(row.item) and not isinstance(row.item, ArchiveItem):
                return index
        if order is None or entry_id not in order:
            return None
        target = order[entry_id]
        for index, row in enumerate(self.rows):
            ids = item_entry_ids(row.item)
            if not isinstance(row.item, ArchiveItem) and any(
                order.get(i, -1) >= target for i in ids
            ):
                return index
        return None

    @serialized
    async def reveal_entry(
        self, entry_id: str, order: Mapping[str, int] | None = None, *, highlight: bool = True
    ) -> Widget | None:
        """Scroll to the widget of a log entry (mounting it, and opening the archive that
        holds it, if needed) and highlight it for a moment. None when it is not in the chat."""
        index = self.row_of(entry_id)
        if index is None:
            for row in list(self.rows):
                if isinstance(row.item, ArchiveItem) and entry_id in row.item.entry_ids:
                    await self.expand_archive(row.item.compaction_id)
                    break
            index = self.row_of(entry_id, order)
        if index is None:
            return None
        widget = await self._mount_row(index)
        self.release_anchor()

        def scroll() -> None:
            if widget.is_mounted:
                self.scroll_to_widget(widget, animate=False, top=True, immediate=True)

        self.call_after_refresh(scroll)
        if highlight:
            widget.add_class("jump-target")
            widget.set_timer(HIGHLIGHT_S, lambda: widget.remove_class("jump-target"))
        return widget

    # -- selecting a user message (branch keys) ------------------------------------------------

    def _selected_index(self) -> int | None:
        if self.selected_id is None:
            return None
        for index, row in enumerate(self.rows):
            if _user_id(row) == self.selected_id:
                return index
        return None

    @property
    def selected_item(self) -> UserItem | None:
        index = self._selected_index()
        if index is None:
            return None
        item = self.rows[index].item
        return item if isinstance(item, UserItem) else None

    @serialized
    async def select_user_message(self, step: int) -> UserItem | None:
        """Select the previous (``step`` < 0) or next user message and scroll it into view.

        With nothing selected, the previous one is the newest. Stepping past the newest clears
        the selection (None)."""
        users = [i for i, row in enumerate(self.rows) if _user_id(row)]
        current = self._selected_index()
        if not users:
            return None
        if current is None:
            if step > 0:
                return None
            target = users[-1]
        elif step < 0:
            earlier = [i for i in users if i < current]
            target = earlier[-1] if earlier else current
        else:
            later = [i for i in users if i > current]
            if not later:
                self.clear_selection()
                return None
            target = later[0]
        self.clear_selection()
        self.selected_id = _user_id(self.rows[target])
        widget = await self._mount_row(target)
        widget.add_class("-selected")
        self.release_anchor()

        def scroll() -> None:
            if widget.is_mounted:
                self.scroll_to_widget(widget, animate=False, center=True, immediate=True)

        self.call_after_refresh(scroll)
        item = self.rows[target].item
        return item if isinstance(item, UserItem) else None

    def clear_selection(self) -> None:
        index = self._selected_index()
        self.selected_id = None
        if index is not None and self.rows[index].widget is not None:
            self.rows[index].widget.remove_class("-selected")  # type: ignore[union-attr]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Enter and Esc mean something here only while a message is selected; otherwise they
        # go on to the App (Esc cancels a turn, and twice opens the tree).
        if action in ("edit_selected", "clear_selection"):
            return self.selected_id is not None
        return True

    def action_edit_selected(self) -> None:
        item = self.selected_item
        if item is not None:
            self.post_message(self.EditRequested(item.entry_id, item.text))

    def action_clear_selection(self) -> None:
        self.clear_selection()
        self.post_message(self.SelectionCleared())

    # -- keyboard walk over tool blocks -------------------------------------------------------

    def _focusable_blocks(self) -> list[Widget]:
        self.unfold_rows()  # the blocks far above are stops too
        return [w for w in self.children if w.can_focus and w.display]

    async def action_focus_next_block(self) -> None:
        if self.selected_id is not None:  # Up/Down move a selection once there is one
            if await self.select_user_message(+1) is None:
                self.post_message(self.SelectionCleared())
            return
        await self._step_focus(+1)

    async def action_focus_previous_block(self) -> None:
        if self.selected_id is not None:
            await self.select_user_message(-1)
            return
        await self._step_focus(-1)

    async def _step_focus(self, step: int) -> None:
        blocks = self._focusable_blocks()
        focused = self.screen.focused
        last_block = not blocks or focused is blocks[-1]
        if step > 0 and last_block and self.last < len(self.rows):
            # Past the last block mounted: the rows below are mounted first (issue 14: Down
            # stopped at the end of the window, short of the chat's end).
            async with self.window_change():
                await self._extend_bottom()
            later = self._focusable_blocks()
            blocks = later if len(later) > len(blocks) else []
        if not blocks:  # nothing to walk: the keys scroll instead
            self.scroll_down() if step > 0 else self.scroll_up()
            return
        if focused in blocks:
            index = blocks.index(focused) + step
        else:
            index = len(blocks) - 1 if step < 0 else 0
        index = max(0, min(len(blocks) - 1, index))
        blocks[index].focus()
        blocks[index].scroll_visible()


def _user_id(row: Row) -> str | None:
    """The entry id of a logged user message's row (None for anything else)."""
    item = row.item
    return item.entry_id if isinstance(item, UserItem) and item.entry_id else None
