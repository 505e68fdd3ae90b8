"""A layout that resized widgets paints them once, not twice.

Textual lays a screen out, tells each widget its new size and paints the screen, all in one
stretch. But telling a widget its new size (``Widget._size_updated``) sets its
``virtual_size``, a reactive that asks for a layout, and marks the whole widget dirty; those
requests reach the screen as messages after it has painted, so every layout that moved or
resized anything was followed by a second layout that moved nothing and a second paint of
every widget it had moved. While a reply streams every frame resizes the reply and the chat:
each frame was laid out twice and painted in full twice, for one frame on screen; now 1.38
layouts and one full paint (``benchmarks/bench_stream_frames.py``).

:class:`OnePassScreen` drops, just before the layout's own paint, the requests that layout made
of the widgets it moved or resized: the paint draws them where they now are. A request made
before the layout stands, and so does one made after the paint began (a layout-refresh
subscriber's, a resize handler's), and that of a scrolling widget whose scrollbars came or went
(its content area changed, so its children need the second layout).
"""

from __future__ import annotations

from textual._compositor import CompositorMap
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget

from agentsh.tui.front_first import FrontFirstCompositor

NO_BARS = (False, False)


class OnePassScreen(Screen[None]):
    """The default screen of :class:`agentsh.tui.app.AgentshApp`."""

    def __init__(
        self, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name, id, classes)
        self._compositor = FrontFirstCompositor()  # its paint draws each cell once

    # The layout under way: the map before it, the widgets that had asked for a layout or a
    # paint before it began, and the scrollbars shown then.
    _before: tuple[CompositorMap, set[Widget], dict[Widget, tuple[bool, bool]]] | None = None

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        before = getattr(self._compositor, "_full_map", None)
        if not isinstance(before, dict):  # a Textual whose compositor keeps it otherwise
            super()._refresh_layout(size, scroll)  # lays out twice, as it always did
            return
        asked = {w for w in before if w._layout_required or w._repaint_required}
        self._before = (before, asked, {w: _scrollbars(w) for w in before if w.is_scrollable})
        try:
            super()._refresh_layout(size, scroll)
        finally:
            self._before = None

    def _compositor_refresh(self) -> None:
        if self._before is not None and self.app.screen is self and not self.app.is_inline:
            self._drop_own_requests(*self._before)
        self._before = None
        super()._compositor_refresh()

    def _drop_own_requests(
        self,
        before: CompositorMap,
        asked: set[Widget],
        bars: dict[Widget, tuple[bool, bool]],
    ) -> None:
        after = self._compositor._full_map
        if after is before:
            return  # the scroll fast path: nothing was laid out again
        for widget, geometry in after.items():
            if widget in asked or before.get(widget) == geometry:
                continue
            if widget.is_scrollable and bars.get(widget, NO_BARS) != _scrollbars(widget):
                continue
            widget._layout_required = widget._repaint_required = False
            widget._repaint_regions.clear()


def _scrollbars(widget: Widget) -> tuple[bool, bool]:
    return widget.show_vertical_scrollbar, widget.show_horizontal_scrollbar
