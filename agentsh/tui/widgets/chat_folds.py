"""What went far above a chat that follows its end leaves the layout: replies' blocks and rows.

:class:`FoldingWindow` is the chat's window (:class:`~agentsh.tui.widgets.row_window.RowWindow`)
with the folds: each streamed frame (and each reply painted) folds the replies' blocks that
ended more than a screen above the view (:mod:`agentsh.tui.widgets.block_fold`), then the
window's leading rows that did (:mod:`agentsh.tui.widgets.row_fold`); all come back the moment
the view leaves the end, the chat is resized or the theme changes.
"""

from __future__ import annotations

from textual import events, on
from textual.geometry import Size

from agentsh.tui.widgets.messages import AssistantMessage
from agentsh.tui.widgets.row_window import RowWindow


class FoldingWindow(RowWindow):
    def __init__(self, *, window: int = 200, id: str | None = None) -> None:
        super().__init__(window=window, id=id)
        self._folds = False  # something is folded away (a reply's blocks, rows)
        self._fold_size = Size(0, 0)  # the folds' size (taller, the view may reach them)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.unfold_replies())

    @on(AssistantMessage.Painted)
    def _reply_painted(self, event: AssistantMessage.Painted) -> None:
        event.stop()
        self.fold_far_replies()

    def fold_far_replies(self) -> None:
        """Fold what went more than a screen above the view (at the last layout): the blocks
        of the replies, from the newest up to the first one folded whole before (all above it
        are, too), then the leading rows of the window."""
        if not self.following or not self.size.height:
            return
        if self.size != self._fold_size:
            self.unfold_replies()
            self._fold_size = self.size
        limit = self.region.y - self.size.height
        for row in reversed(self.rows[self.first : self.last]):
            widget = row.widget
            if not isinstance(widget, AssistantMessage) or not widget.display:
                continue
            if widget.folded_whole:
                break
            widget.fold_above(limit)
            self._folds = self._folds or widget.fold.folded
        self._folds = self.fold_rows_above(limit) or self._folds

    def unfold_replies(self) -> None:
        """Every folded block and row back in the layout (before the reader can see where it
        was)."""
        if not self._folds:
            return
        self._folds = False
        self.unfold_rows()
        for row in self.rows[self.first : self.last]:
            if isinstance(row.widget, AssistantMessage):
                row.widget.unfold()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._folds and not self.following:
            self.unfold_replies()

    def on_resize(self, _event: events.Resize) -> None:
        if self._folds and self.size != self._fold_size:
            self.unfold_replies()
