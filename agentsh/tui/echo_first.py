"""A key's echo is painted as soon as the editor asks, before any layout the chat asked for.

Textual paints at most 60 times a second: a widget's request to be painted waits for the
screen's next update (up to 17 ms, and 30 ms behind a busy loop). And an update is one
stretch: when a layout is pending it lays the whole screen out, then paints everything that
changed, the editor's new character with the rest. While a reply streams, each frame mounts
blocks and asks for a layout; a key typed meanwhile reached the terminal only after that
layout and its paint (50-130 ms on the shared 2-core machine at load 1-2), so the keys that
met a frame were the slowest ones typed.

:class:`EchoFirstScreen` paints the focused widget alone, from the layout on screen, as soon
as its request to be painted arrives within :data:`ECHO_S` of a key typed into the editor,
and again first thing in an update that lays out, when it still waits. It does so only when
nothing the pending layout can move touches it: every widget that asked for the layout is
inside a fixed-size container (the chat) that does not hold the focused widget, and nothing
asked the screen itself for a layout. The layout then paints as it always did. When the
focused widget asked for the layout itself (its text wrapped to a new line), or anything else
may move it, the update is Textual's own.
"""

from __future__ import annotations

import time
from typing import Self

from textual import messages
from textual.geometry import Region, Size
from textual.widget import Widget

from agentsh.tui.one_pass_layout import OnePassScreen
from agentsh.tui.widgets.typing_clock import last_key

ECHO_S = 0.25  # a request to be painted this soon after a key typed is that key's echo


class EchoFirstScreen(OnePassScreen):
    """The default screen of :class:`agentsh.tui.app.AgentshApp`."""

    _screen_layout_asked = False  # the screen itself was asked for a layout since the last one

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        if layout:
            self._screen_layout_asked = True
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        self._screen_layout_asked = False
        super()._refresh_layout(size, scroll)

    async def _on_update(self, message: messages.Update) -> None:
        await super()._on_update(message)
        if message.widget is self.focused and time.monotonic() - last_key() < ECHO_S:
            self._paint_echo()

    def _on_timer_update(self) -> None:
        if self._layout_required:
            self._paint_echo()
        super()._on_timer_update()

    def _paint_echo(self) -> bool:
        """Paint the focused widget's changed regions where it is, if it waits for a paint
        and no pending layout can move it; True if it did. The other widgets waiting for a
        paint wait for the next update (painting clears the screen's set of them)."""
        focused = self.focused
        if focused is None or not self._stays_in_place(focused):
            return False
        waiting = self._dirty_widgets - {focused}
        self._compositor.update_widgets({focused})
        self._compositor_refresh()
        self._dirty_widgets |= waiting
        return True

    def _stays_in_place(self, focused: Widget) -> bool:
        if (
            focused not in self._dirty_widgets
            or focused not in self._compositor.visible_widgets
            or not self.is_current
            or self.app._batch_count
            or self.app.is_inline
            or self._compositor._dirty_regions  # painted from the map on screen: only its own
        ):
            return False
        if not self._layout_required:
            return True
        if self._screen_layout_asked or not self._layout_widgets:
            return False
        # Each request went up its auto-sized containers and stopped at a fixed-size one: what
        # those containers hold may move, nothing else (the screen holds everything).
        return self._layout_widgets.keys().isdisjoint(focused.ancestors_with_self)
