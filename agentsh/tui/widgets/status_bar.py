"""The status bar: renders the core's :class:`ContextStatus` snapshot and computes nothing.

Layout (which fields fit, in what order they drop) is in :mod:`agentsh.tui.status_format`;
this widget only turns the chosen segments into styled text at its current width.
"""

from __future__ import annotations

from textual.app import RenderResult
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from agentsh.events import ContextStatus
from agentsh.tui.status_format import SEPARATOR, Part, layout


class StatusBar(Widget):
    status: reactive[ContextStatus] = reactive(ContextStatus, layout=False)
    starting: reactive[bool] = reactive(True)  # "loading…" until the agent is built
    # The running turn, while the working indicator is hidden (a pane over the narrow chat).
    working: reactive[str] = reactive("", layout=False)
    # A word for the key just pressed ("Ctrl+C again to quit"), for a moment (:meth:`flash`).
    hint: reactive[str] = reactive("", layout=False)
    # The approval mode's words and style when it is not "ask" (Shift+Tab cycles it).
    mode: reactive[Part] = reactive(lambda: Part(""), layout=False)

    def flash(self, text: str, seconds: float) -> None:
        """Show ``text`` first on the bar for ``seconds``, where the eye is while typing (a
        toast sits at the screen's top right, over old transcript)."""
        self.hint = text

        def clear() -> None:
            if self.hint == text:
                self.hint = ""

        self.set_timer(seconds, clear)

    def render(self) -> RenderResult:
        width = self.size.width or 80
        working = self.hint or self.working
        segs = layout(self.status, width, loading=self.starting, working=working, mode=self.mode)
        pieces: list[tuple[str, str] | str] = []
        for i, seg in enumerate(segs):
            if i:
                pieces.append((SEPARATOR, "$foreground-muted"))
            pieces.extend((p.text, p.style) if p.style else p.text for p in seg.parts)
        return Content.assemble(*pieces)
