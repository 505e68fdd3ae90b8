"""Rows far above a chat that follows its end are taken out of the layout, as a reply's blocks are.

Textual lays out every displayed widget of the screen at every frame, the rows far above the
view included: with 40 exchanges mounted above a streaming reply (a resumed session; the
window keeps up to 200 rows, 300 widgets), each streamed frame cost twice what it cost with
none (``benchmarks/bench_stream_screen.py``). While the chat follows its end, the leading rows
of its window that ended more than a screen above the view are hidden (``display: none``:
still mounted, skipped by the layout) and the first row left shown gets a top margin of exactly
the rows they took, so every row below them, the chat's height and its scroll position stay
where they were: what is on screen is the same cells (:mod:`agentsh.tui.widgets.block_fold`
does the same inside one reply). The last row is never hidden, nor a live one (a turn still
updates it) or one that holds the focus.

The window folds rows when a following view scrolls (each frame that grows the chat), never
while a window change runs, and shows them again (:meth:`RowFold.unfold`) before anything could
see the place they were in: when the view leaves the end, when the chat is resized, before a
window change (:mod:`agentsh.tui.widgets.row_window`), and before the keys walk the blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.geometry import Size
from textual.widget import Widget

FOLD_ROWS = 10  # rows folded at a time, at least: a few rows cost a frame little (and a fold is
# a layout change of its own)


class RowFold:
    """The hidden leading rows of one scrolling view, and the row below them that stands in."""

    __slots__ = ("anchor", "size", "widgets")

    def __init__(self) -> None:
        self.widgets: list[Widget] = []  # hidden, in order: always a leading run of the window
        self.anchor: Widget | None = None  # the first row shown, its top margin their rows
        self.size = Size(0, 0)  # the view's size when they were folded

    @property
    def folded(self) -> bool:
        return bool(self.widgets)

    def fold_above(
        self, window: Sequence[Widget], limit_y: int, size: Size, keep: Callable[[Widget], bool]
    ) -> None:
        """Hide the leading widgets of ``window`` (the view's rows, top first) whose bottom is
        above row ``limit_y`` of the view's content (where the last layout put them), up to
        the first that ``keep`` says must stay."""
        start = len(self.widgets)
        if list(window[:start]) != self.widgets or (start and size != self.size):
            self.unfold()
            return
        end = start
        while end < len(window) - 1:
            widget = window[end]
            region = widget.virtual_region
            if not widget.display or not region or region.bottom >= limit_y or keep(widget):
                break
            end += 1
        if end - start < FOLD_ROWS:
            return
        first, shown = window[start], window[end]  # the first row shown now, and after
        top, below = first.virtual_region, shown.virtual_region
        if not top or not below or not shown.display:
            return
        # Where the view's content starts (the first row shown sits its top margin below it;
        # a margin, not the view's padding: a scrolling view's padding narrows its viewport).
        content_top = top.y - first.styles.margin.top
        rows = below.y - content_top
        if rows < shown.styles.margin.top:  # a layout this arithmetic does not describe
            return
        for widget in window[start:end]:
            widget.display = False
        first.styles.clear_rule("margin")  # (hidden now: as it was, for when it shows again)
        margin = shown.styles.margin
        shown.styles.margin = margin._replace(top=rows)
        self.widgets.extend(window[start:end])
        self.anchor, self.size = shown, size

    def unfold(self) -> None:
        """Every hidden row back in the layout, and the first one's margin as it was."""
        if not self.widgets:
            return
        for widget in self.widgets:
            widget.display = True
        if self.anchor is not None:
            self.anchor.styles.clear_rule("margin")
        self.widgets = []
        self.anchor = None
