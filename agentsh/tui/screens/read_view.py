"""A read view: one memory entry, memory doc, search result, compaction summary or archive,
rendered as markdown over the app, closed with Esc.

The side panes open it with Enter. It only shows text it is given (the panes read the files),
scrolls with the arrow and page keys, and never edits anything: memory is changed by the model's
memory tool or by the user in an editor, and the pane follows the file on disk.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static


class ReadView(ModalScreen[None]):
    """Markdown (or plain text laid out as written) in a scrolling frame over the app."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="read_view_close"),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
    ]
    DEFAULT_CSS = """
    ReadView { align: center middle; background: $background 60%; }
    ReadView > #read-frame {
        width: 100%; max-width: 110; height: 100%; max-height: 40;
        background: $surface; border: round $primary; padding: 0 1;
    }
    ReadView #read-title { text-style: bold; color: $primary; }
    ReadView #read-subtitle { color: $text-muted; }
    ReadView #read-body { height: 1fr; margin: 1 0 0 0; scrollbar-size-vertical: 1; }
    ReadView #read-body:focus { background-tint: $foreground 0%; }
    ReadView #read-footer { color: $text-muted; height: 1; }
    """

    def __init__(self, title: str, body: str, *, subtitle: str = "", plain: bool = False) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.subtitle = subtitle
        self.plain = plain

    def compose(self) -> ComposeResult:
        with Vertical(id="read-frame"):
            yield Static(Content(self.title_text), id="read-title")
            if self.subtitle:
                yield Static(Content(self.subtitle), id="read-subtitle")
            with VerticalScroll(id="read-body"):
                if self.plain:
                    yield Static(Content(self.body or "(empty)"))
                else:
                    from textual.widgets import Markdown  # markdown-it only when a view opens

                    yield Markdown(self.body or "_empty_")
            yield Static(
                Content("Esc close · ↑↓ PgUp PgDn Home End scroll"),
                id="read-footer",
            )

    def on_mount(self) -> None:
        self.query_one("#read-body", VerticalScroll).focus()

    def action_scroll_home(self) -> None:
        self.query_one("#read-body", VerticalScroll).scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.query_one("#read-body", VerticalScroll).scroll_end(animate=False)
