"""A scrolling column of rows of which only a window has widgets mounted, so long lists stay fast.

Every widget belongs to a :class:`Row` holding the data it was built from. At most ``window``
rows normally have widgets: rows far above (or below) the viewport are unmounted, and when the
user scrolls to the top (or bottom) edge of what is mounted the next batch is built again from
its row with :meth:`RowWindow.build`. A row whose widget is still live (a reply streaming, a
tool running, an approval waiting) is never dropped. :class:`~agentsh.tui.widgets.chat.ChatView`
is the one subclass: it says how an item becomes a widget and what rows mean.

Rows added while the reader is far up (more than a window of unmounted rows below them) are
*held*: mounted at the end but hidden, so a streaming reply or a waiting approval lives on
while the rows in between stay unbuilt and the reader stays where they are. They show as soon
as the window reaches them from above, or the chat goes to its end.

Window changes happen one at a time (:meth:`RowWindow.window_change`; the public changers are
:func:`serialized`). They come from several tasks (keys in the App's, the scroll watcher, a
turn's events, a frame's callbacks) and each one awaits mounting: interleaved, one mounted
rows ``before=`` a row the other had just unmounted (a MountError), or both mounted the same
rows. So: the scroll watcher only asks for an adjustment, which a task of its own makes when
no other change runs; a change waits only for mounting and for the screen's next frame, never
for a message pump another change may be waiting in; a synchronous change that finds one
running is deferred to its end.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from textual import events
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget

from agentsh.tui.projection import ChatItem
from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
from agentsh.tui.widgets.row_fold import RowFold
from agentsh.tui.widgets.tool_block import ToolBlock

INITIAL_ROWS = 40  # rows mounted when a long session is opened
BATCH_ROWS = 25  # rows mounted or unmounted at a time while scrolling
# The Textual widgets a window keeps mounted, past which a new row unmounts the rows more than
# a screen above the viewport: every frame of a streaming reply lays out every mounted widget
# (tens of microseconds each), and a markdown reply is a hundred or more of them.
WIDGET_BUDGET = 300


P = ParamSpec("P")
R = TypeVar("R")
W = TypeVar("W", bound="RowWindow")


def serialized(
    method: Callable[Concatenate[W, P], Awaitable[R]],
) -> Callable[Concatenate[W, P], Coroutine[Any, Any, R]]:
    """A window change: runs alone (see the module's docstring)."""

    @functools.wraps(method)
    async def change(self: W, /, *args: P.args, **kwargs: P.kwargs) -> R:
        async with self.window_change():
            self.unfold_rows()  # the rows' places as they are (folded ones have none)
            return await method(self, *args, **kwargs)

    return change


@dataclass(slots=True)
class Row:
    item: ChatItem
    widget: Widget | None = None
    archived: str = ""  # the compaction whose expanded archive this row belongs to
    built: bool = False  # the widget was built here from ``item`` (not handed in live)
    held: bool = False  # newer than a reader far up: mounted hidden after the window


def _keep_in_layout(widget: Widget) -> bool:
    """A row never folded away: a turn still updates it, or it holds the focus."""
    return is_live(widget) or widget.has_focus_within


def is_live(widget: Widget | None) -> bool:
    """A widget a running turn still updates: it must never be dropped and rebuilt."""
    match widget:
        case None:
            return False
        case ToolBlock():
            return not widget.finished
        case ApprovalPrompt():
            return widget.decision is None
    return bool(getattr(widget, "live", False))


class RowWindow(VerticalScroll):
    @dataclass
    class OutputBelow(Message):
        """Output arrived below a reader who had scrolled up (``below``: new rows, or more in
        a row shown), or the reader is back at the end (not ``below``): a notice says so
        while there is output unseen."""

        below: bool

    def __init__(self, *, window: int = 200, id: str | None = None) -> None:
        super().__init__(id=id)
        self.window = max(window, 10)
        # Batches scale down with a small window, so the window setting is honoured.
        self.batch_rows = max(5, min(BATCH_ROWS, self.window // 4))
        self.initial = min(INITIAL_ROWS, self.window)
        self.rows: list[Row] = []
        self.first = 0  # rows[first:last] are mounted
        self.last = 0
        self._loading = False  # a load is replacing the rows: scrolling must not mount any
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None  # the task whose change runs
        self._deferred: list[Callable[[], None]] = []  # synchronous changes made meanwhile
        self._scrolled = False  # the view moved since the window last adjusted to it
        self._fill = False  # mount rows above while they do not fill the screen
        self._adjuster: asyncio.Task[None] | None = None  # the task adjusting to the scroll
        self.output_below = False  # output arrived below the reader since they scrolled up
        self.row_fold = RowFold()  # rows far above a following view, out of the layout

    def build(self, item: ChatItem) -> Widget:
        """The widget that shows ``item`` (the subclass knows how)."""
        raise NotImplementedError

    def decorate(self, row: Row, widget: Widget) -> None:
        """Marks a freshly built widget gets from its row's state (the subclass's choice)."""

    def forget(self, row: Row) -> None:
        """``row``'s widget is unmounted: keep what the reader changed in it (the subclass's
        choice), for the widget built again when the row is scrolled back to."""

    def _release(self, rows: Iterable[Row]) -> None:
        for row in rows:
            if row.widget is not None:
                self.forget(row)
            row.widget = None

    def on_mount(self) -> None:
        self.anchor()
        self.watch(self, "scroll_y", self._hold_anchor, init=False)
        self.watch(self, "scroll_y", self._request_adjust, init=False)
        self.watch(self, "scroll_y", self._check_following, init=False)
        self.watch(self, "scroll_y", self._fold_far_rows, init=False)
        self.watch(self, "virtual_size", self._fold_far_rows, init=False)  # each frame grown

    def _hold_anchor(self) -> None:
        """Textual anchors a scrolled-up chat again when a scroll reaches the end of what is
        mounted, and an anchored chat is pinned to its bottom at every layout. With newer
        rows unmounted below, that end is not the chat's: mounting them would then jump the
        view past them, and the next wheel or key had nowhere to go (issue 14: Down, End and
        the wheel stopped short of the end). The reader keeps their place instead."""
        if self.last < len(self.rows) and self.is_anchored and not self._anchor_released:
            self.release_anchor()

    @asynccontextmanager
    async def window_change(self) -> AsyncIterator[None]:
        """Hold the window for one change (reentrant in the task that holds it)."""
        task = asyncio.current_task()
        if task is not None and self._owner is task:
            yield
            return
        try:
            async with self._lock:
                self._owner = task
                try:
                    yield
                finally:
                    self._owner = None
        finally:
            deferred, self._deferred = self._deferred, []
            for run in deferred:
                run()  # none can start between the release and here

    def _request_adjust(self) -> None:
        """The scroll watcher: mount and unmount for the new view, in the adjusting task (a
        plain task: a worker posts three messages a start, and a following chat scrolls at
        every frame of a streaming reply)."""
        self._scrolled = True
        if self._adjuster is None and self.is_mounted:
            self._adjuster = asyncio.get_running_loop().create_task(self._adjust())
            self._adjuster.add_done_callback(self._adjusted)

    def on_unmount(self) -> None:
        if self._adjuster is not None:
            self._adjuster.cancel()  # a plain task: nothing else ends it with the widget

    def _adjusted(self, task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        if isinstance(error, Exception):
            self.app._handle_exception(error)  # as a worker's or a handler's error would be

    async def _adjust(self) -> None:
        try:
            # While a load replaces the rows, what was asked waits for its first frame.
            while self._scrolled or self._fill:
                async with self.window_change():
                    if not self.ready_to_adjust:
                        break
                    scrolled, self._scrolled = self._scrolled, False
                    if scrolled:
                        await self._adjust_to_view()
                    while self._fill and self.first > 0 and self.max_scroll_y <= 0:
                        await self._extend_top()  # rows too short to fill the screen
                    self._fill = False
        finally:
            self._adjuster = None

    @property
    def window_busy(self) -> bool:
        """A window change is running (or waiting to)."""
        return self._lock.locked()

    @property
    def ready_to_adjust(self) -> bool:
        return self.is_mounted and not self._loading and bool(self.rows)

    def _check_following(self) -> None:
        if self.output_below and self.following:
            self.set_output_below(False)

    def output_grew(self) -> None:
        """Output was added to a row already shown (a reply streaming, a tool's output): a
        reader scrolled up is told it waits below, as for new rows (issue 14: only new rows
        said so, and the usual case is reading back while the answer is written)."""
        if not self.output_below and not self.following:
            self.set_output_below(True)

    def set_output_below(self, below: bool) -> None:
        if below != self.output_below:
            self.output_below = below
            self.post_message(self.OutputBelow(below))

    @property
    def following(self) -> bool:
        """The view follows the newest rows: the user has not scrolled up (or jumped) away
        from the end to read something (Textual releases the anchor when they do, and
        restores it when they scroll back to the bottom)."""
        if self.last < len(self.rows):  # the newest rows are not even mounted
            return False
        at_end = self.scroll_y >= self.max_scroll_y  # e.g. PgUp in a chat that fits
        return self.is_anchored and (not self._anchor_released or at_end)

    @property
    def mounted_rows(self) -> int:
        return self.last - self.first

    def _widget_for(self, row: Row) -> Widget:
        if row.widget is None:
            row.widget = self.build(row.item)
            row.built = True
            self.decorate(row, row.widget)
        return row.widget

    def set_item(self, widget: Widget, item: ChatItem) -> None:
        """Record the finished state of a live widget, so a remount shows it as it ended."""
        for row in reversed(self.rows):
            if row.widget is widget:
                row.item = item
                return

    def item_of(self, widget: Widget) -> ChatItem | None:
        """What the row of ``widget`` records (None: not a row of this window)."""
        return next((row.item for row in reversed(self.rows) if row.widget is widget), None)

    def discard(self, widget: Widget) -> None:
        """Take a live widget's row out (a live reply that turned out to hold nothing)."""
        if self._lock.locked():
            self._deferred.append(functools.partial(self.discard, widget))
            return
        for index in range(len(self.rows) - 1, -1, -1):
            if self.rows[index].widget is widget:
                del self.rows[index]
                if index < self.first:
                    self.first -= 1
                if index < self.last:
                    self.last -= 1
                self.unfold_rows()  # it may be the row the folded ones stand on
                widget.remove()
                return

    @property
    def holding(self) -> bool:
        """Rows are held below the window (see the module's docstring)."""
        return bool(self.rows) and self.rows[-1].held

    def _held_start(self) -> int:
        """Where the held rows start (``len(rows)`` when none are)."""
        index = len(self.rows)
        while index > self.last and self.rows[index - 1].held:
            index -= 1
        return index

    async def _mount_below(self, end: int) -> None:
        """Mount ``rows[last:end]`` under the window (above the held rows), and show the held
        rows once the window reaches them."""
        start = self._held_start()
        end = min(end, start)
        if end > self.last:
            before = self.rows[start].widget if start < len(self.rows) else None
            widgets = [self._widget_for(r) for r in self.rows[self.last : end]]
            await self.mount_all(widgets, before=before)
            self.last = end
        if self.last == start and start < len(self.rows):
            for row in self.rows[start:]:
                row.held = False
                if row.widget is not None:
                    row.widget.display = True
            self.last = len(self.rows)

    @serialized
    async def mount_tail(self) -> bool:
        """Mount the rows below the window down to the newest, leaving the view where it is
        (a reader scrolled up; new rows join the window below them). False, mounting nothing,
        when they are more than a window of rows: building that many would stall the screen
        for seconds."""
        if self._held_start() - self.last > self.window:
            return False
        await self._mount_below(len(self.rows))
        return True

    @serialized
    async def reveal_end(self) -> None:
        """Mount the newest rows again if the user had scrolled far up (a new turn starts,
        End, a click on the notice)."""
        if self.last >= len(self.rows):
            self.scroll_end(animate=False)
            return
        start = self._held_start()
        held = {id(r.widget) for r in self.rows[start:]}
        await self.remove_children([c for c in self.children if id(c) not in held])
        self._release(self.rows[self.first : self.last])
        self.first = self.last = max(0, min(start, len(self.rows) - self.initial))
        await self._mount_below(start)
        await self._frame()  # laid out before the change ends (see _rewindow)
        self.anchor()
        self.scroll_end(animate=False, immediate=True)

    async def settle_at_end(self) -> None:
        """Go to the chat's end and wait until it is laid out: for a key that acts on the
        newest block or prompt while the reader is up (focusing scrolls to it: it needs its
        place). Call it from another task than this widget's."""
        await self.reveal_end()
        await self.wait_for_refresh()

    def widgets_of(self, kind: type[Widget]) -> list[Widget]:
        return [r.widget for r in self.rows[self.first : self.last] if isinstance(r.widget, kind)]

    def _fold_far_rows(self) -> None:
        """The scroll and size watcher (the chat grows at each frame of a reply): the rows
        more than a screen above a following view leave the layout, never while a window
        change runs (:mod:`agentsh.tui.widgets.row_fold`); any other view has them all."""
        if not self.following:
            self.unfold_rows()
        elif self.size.height and not self._loading and not self._lock.locked():
            window = [r.widget for r in self.rows[self.first : self.last] if r.widget is not None]
            # More than a screen above the view's top: a view pinned to its end that grows
            # (the editor shrinks) cannot reach them.
            limit = round(self.scroll_y) - self.screen.size.height
            self.row_fold.fold_above(window, limit, self.size, _keep_in_layout)

    def on_resize(self, _event: events.Resize) -> None:  # (the chat's handler runs too)
        if self.row_fold.size != self.size:  # a taller view could reach where they were
            self.unfold_rows()

    def unfold_rows(self) -> None:
        """Every folded row back in the layout: before a change mounts, unmounts or scrolls
        to rows (their places are then real again, as the last layout saw them)."""
        self.row_fold.unfold()

    def _loaded(self) -> None:
        """The first frame of a load is laid out: scrolling mounts rows again (and a scroll
        made meanwhile, which was not acted on, is now); rows too short to fill the screen
        leave nothing to scroll up with, so more are mounted above."""
        self._loading = False
        self._fill = True
        self._request_adjust()

    async def _frame(self) -> bool:
        """Wait for the screen's next frame (the layout of what was just mounted). The screen
        waits on no window change, so a change may wait for it (not for this widget's pump)."""
        return self.is_mounted and await self.screen.wait_for_refresh()

    async def _mount_row(self, index: int) -> Widget:
        """Make sure ``rows[index]`` has a mounted widget, keeping the window contiguous."""
        if self.first <= index < self.last:
            return self._widget_for(self.rows[index])
        if index >= self._held_start():
            await self.reveal_end()  # a held row: the chat's end is mounted
            if self.first <= index:
                return self._widget_for(self.rows[index])
        distance = self.first - index if index < self.first else index - self.last + 1
        if distance > 2 * self.window and index < self.first:
            self._hold_live_tail()  # a turn's live rows wait below, as for a reader far up
        live = any(is_live(r.widget) for r in self.rows[self.first : self.last])
        if self.mounted_rows == 0 or (distance > 2 * self.window and not live):
            await self._rewindow(index)
        elif index < self.first:
            anchor_widget = self.rows[self.first].widget
            widgets = [self._widget_for(r) for r in self.rows[index : self.first]]
            await self.mount_all(widgets, before=anchor_widget)
            self.first = index
        else:
            await self._mount_below(index + 1)
        return self._widget_for(self.rows[index])

    def _hold_live_tail(self) -> None:
        """Hold the window's rows from its first live one to the chat's end (hidden, still
        updated), so a fresh window far above can be mounted without them: else every row in
        between was built (Home in a long chat while a reply streams)."""
        if self.last < self._held_start():
            return  # rows below the window are unmounted: the live rows are not its tail
        live = [i for i in range(self.first, self.last) if is_live(self.rows[i].widget)]
        if not live:
            return
        for row in self.rows[live[0] : self.last]:
            row.held = True
            if row.widget is not None:
                row.widget.display = False
        self.last = live[0]

    async def _rewindow(self, center: int) -> None:
        """Mount a fresh window of rows around ``rows[center]`` (held rows stay as they are)."""
        start = self._held_start()
        held = {id(r.widget) for r in self.rows[start:]}
        await self.remove_children([c for c in self.children if id(c) not in held])
        self._release(self.rows[:start])
        self.first = self.last = max(0, min(center - self.batch_rows, start - 1))
        await self._mount_below(max(center + 1, self.first + self.initial))
        # The fresh window is laid out before the change ends: the scroll adjustment that
        # runs next reads its height. It read the old window's (or none, a frame landing
        # between the unmount and the mount) and mounted a batch more than the view needed:
        # 37 rows in a window of 30 after Home while a reply streamed, now and then.
        await self._frame()

    async def _adjust_to_view(self) -> None:
        """Mount the next batch at the edge the reader reached and unmount rows far from the
        view on the other side (never on the same: that would undo the batch, and thrash)."""
        new = self.scroll_y
        if new <= 1 and self.first > 0:
            await self._extend_top()
            await self._prune_far_below()
            return
        if new >= self.max_scroll_y - self.size.height and self.last < len(self.rows):
            # Within a screen of the rows mounted: the next batch is mounted ahead, so
            # the wheel and Down scroll on into it instead of stopping at its edge.
            await self._extend_bottom()
            await self._prune_far_above()
            return
        await self._prune_far_above()
        await self._prune_far_below()

    def _keep_view(self, y: float) -> None:
        """Scroll to ``y`` to keep what the reader sees in place while rows are mounted or
        unmounted above it: the window's own move, not the reader's, so nothing adjusts to it
        (mounting above, then unmounting what it mounted, went round for ever)."""
        scrolled = self._scrolled
        self.scroll_to(y=max(0, y), animate=False, immediate=True)
        self._scrolled = scrolled

    @serialized
    async def page_down(self) -> None:
        """Scroll a page down, mounting the rows below first when the page reaches past those
        mounted. Textual clamps a scroll to the end of the rows mounted, and how far past it
        more rows were mounted then depended on how many frames the scroll took: back down
        from far up, PgDn could crawl or stall short of the end (issue 14)."""
        await self._frame()  # a pending keep_position first: it moves scroll_y
        target = self.scroll_y + self.scrollable_content_region.height
        while target > self.max_scroll_y and self.last < len(self.rows) and self.is_mounted:
            await self._extend_bottom()
            if not await self._frame():
                break
        self.scroll_to(y=target, animate=False, immediate=True)

    @serialized
    async def page_up(self) -> None:
        """Scroll a page up, mounting the rows above first when the page reaches past those
        mounted (as :meth:`page_down`): PgUp stopped at the top of the rows mounted, and the
        rows mounted there only moved the view back down, so it crawled (issue 14)."""
        await self._frame()  # a pending keep_position first: it moves scroll_y
        target = self.scroll_y - self.scrollable_content_region.height
        while target < 0 and self.first > 0 and self.is_mounted:
            shift = await self._extend_top()
            if not shift:
                break
            target += shift
        self.scroll_to(y=max(0, target), animate=False, immediate=True)

    @serialized
    async def reveal_start(self) -> None:
        """Mount the first rows and scroll to the top (Home); the rows far below are then
        unmounted by the adjustment to the new view, as when scrolling there."""
        if self.rows and self.first > 0:
            await self._mount_row(0)
        self.scroll_home(animate=False, immediate=True)

    def action_scroll_end(self) -> None:
        """End: the chat's end, not the end of the rows mounted (issue 14)."""
        self.call_next(self.reveal_end)

    def action_scroll_home(self) -> None:
        """Home: the chat's first row, not the top of the rows mounted (issue 14)."""
        self.call_next(self.reveal_start)

    async def _extend_top(self) -> float:
        """Mount a batch of rows above the window and keep what the reader sees in place
        once laid out; the lines the view moved down by."""
        anchor_widget = self.rows[self.first].widget
        start = max(0, self.first - self.batch_rows)
        widgets = [self._widget_for(r) for r in self.rows[start : self.first]]
        before_y = anchor_widget.virtual_region.y if anchor_widget is not None else 0
        await self.mount_all(widgets, before=anchor_widget)
        self.first = start
        if anchor_widget is None or not await self._frame() or not anchor_widget.is_mounted:
            return 0
        shift = anchor_widget.virtual_region.y - before_y
        self._keep_view(self.scroll_y + shift)
        return shift

    async def _extend_bottom(self) -> None:
        await self._mount_below(self.last + self.batch_rows)

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
            if is_live(widget):
                break
            count += 1  # noqa: SIM113 - counts only the leading run that qualifies
        if self.size.height == 0:  # not laid out yet (headless start): prune by count
            count = excess
        if count > 0:
            await self._unmount_leading(count)

    @serialized
    async def prune_to_budget(self) -> None:
        """Unmount rows more than a screen above the viewport while the mounted widgets number
        more than :data:`WIDGET_BUDGET`; they are built again when scrolled to, as always."""
        total = sum(1 for _ in self.walk_children())
        if total <= WIDGET_BUDGET or self.size.height == 0:
            return
        limit = self.scroll_y - self.size.height
        count = 0
        for row in self.rows[self.first : self.last - 1]:
            widget = row.widget
            if widget is None or is_live(widget) or widget.virtual_region.bottom >= limit:
                break
            total -= 1 + sum(1 for _ in widget.walk_children())
            count += 1
            if total <= WIDGET_BUDGET:
                break
        if count > 0:
            await self._unmount_leading(count)

    async def _unmount_leading(self, count: int) -> None:
        """Unmount the first ``count`` mounted rows, keeping what the user sees in place.
        (Folded rows have no place in the last layout: they count as far above, as they are.)"""
        self.unfold_rows()
        removed = self.rows[self.first : self.first + count]
        survivor = self.rows[self.first + count].widget if self.first + count < self.last else None
        before_y = survivor.virtual_region.y if survivor is not None else 0
        await self.remove_children([r.widget for r in removed if r.widget is not None])
        self._release(removed)
        self.first += count
        if survivor is not None and before_y and not self.following:

            def keep_position() -> None:
                self._keep_view(self.scroll_y - (before_y - survivor.virtual_region.y))

            self.call_after_refresh(keep_position)

    async def _prune_far_below(self) -> None:
        excess = self.mounted_rows - self.window
        if excess <= 0:
            return
        limit = self.scroll_y + 2 * self.size.height
        count = 0
        for row in reversed(self.rows[self.last - max(excess, self.batch_rows) : self.last]):
            widget = row.widget
            if widget is None or widget.virtual_region.y <= limit or is_live(widget):
                break  # a waiting approval or a running tool too: rebuilt, they would be lost
            count += 1
        if count <= 0:
            return
        removed = self.rows[self.last - count : self.last]
        await self.remove_children([r.widget for r in removed if r.widget is not None])
        self._release(removed)
        self.last -= count
