"""A line at the bottom of the chat while output waits below a reader who scrolled up.

New rows never move a chat the user scrolled up in to read (a queued message starting its
turn, a tool block, a note): this line says there is more below, ``▼ new output below · PgDn
or click to follow``, until the chat is back at its end (PgDn, the wheel, a click here). It
gives way to :class:`~agentsh.tui.widgets.approval_prompt.ApprovalNotice`, which says more.
"""

from __future__ import annotations

from textual.content import Content
from textual.message import Message
from textual.widgets import Static


class OutputNotice(Static):
    class Follow(Message):
        """The notice was clicked: the chat goes to its end and follows it again."""

    def __init__(self, *, page_key: str = "PgDn", id: str | None = "output-notice") -> None:
        super().__init__(
            Content.assemble(
                ("▼ new output below", "bold"), (f"  ·  {page_key} or click to follow", "dim")
            ),
            id=id,
        )
        self.display = False

    def on_click(self) -> None:
        self.post_message(self.Follow())
