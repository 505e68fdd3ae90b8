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
from agentsh.tui.status_format import SEPARATOR, layout


class StatusBar(Widget):
    status: reactive[ContextStatus] = reactive(ContextStatus, layout=False)
    starting: reactive[bool] = reactive(True)  # "loading…" until the agent is built
    # The running turn, while the working indicator is hidden (a pane over the narrow chat).
    working: reactive[str] = reactive("", layout=False)

    def render(self) -> RenderResult:
        width = self.size.width or 80
        segs = layout(self.status, width, loading=self.starting, working=self.working)
        pieces: list[tuple[str, str] | str] = []
        for i, seg in enumerate(segs):
            if i:
                pieces.append((SEPARATOR, "$foreground-muted"))
            pieces.extend((p.text, p.style) if p.style else p.text for p in seg.parts)
        return Content.assemble(*pieces)
