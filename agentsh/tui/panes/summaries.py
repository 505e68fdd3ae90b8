"""The Summaries pane of the side panel: every compaction on the session's current path.

First version: one line per compaction (tier, tokens before -> after). The pane needs no
constructor arguments; it finds the session through ``self.app.controller``.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static


class SummariesPane(Widget):
    """The compactions on the current path, newest last."""

    DEFAULT_CSS = """
    SummariesPane { height: 1fr; }
    SummariesPane #summaries-body { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="summaries-body"):
            yield Static("", id="summaries-list", markup=False)

    def on_mount(self) -> None:
        self.refresh_content()

    def refresh_content(self) -> None:
        from agentsh.session.entries import CompactionEntry

        controller: Any = getattr(self.app, "controller", None)
        session = controller.current_session() if controller is not None else None
        lines: list[str] = []
        if session is not None:
            for entry in session.current_path():
                if isinstance(entry, CompactionEntry):
                    lines.append(f"{entry.tier}  {entry.tokens_before} -> {entry.tokens_after}")
        text = "\n".join(lines) or "No compactions on this branch yet."
        self.query_one("#summaries-list", Static).update(text)
