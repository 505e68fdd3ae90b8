"""The screen as the TUI's logic sees it: a chat to add to, an editor, notes, the status line.

:class:`View` is the small protocol a turn on screen (:class:`~agentsh.tui.turn_view.TurnView`),
branching and the slash commands write through; :class:`AppView` is the one implementation,
over the App's widgets. Nothing here decides anything: it shows what it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentsh.tui.projection import NoteItem
from agentsh.tui.ui_state import UiState, load_ui_state, save_ui_state
from agentsh.tui.widgets.activity_line import ActivityLine
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.messages import NoteMarkdown
from agentsh.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from pathlib import Path

    from textual.app import App

    from agentsh.events import ContextStatus


class View(Protocol):
    """Where the TUI's logic shows things."""

    @property
    def chat(self) -> ChatView: ...

    @property
    def prompt(self) -> PromptInput: ...

    @property
    def activity(self) -> ActivityLine:
        """The working indicator above the editor."""
        ...

    @property
    def keymap(self) -> dict[str, str]:
        """The user's key bindings (action -> key), for the hints prompts show."""
        ...

    async def note(self, text: str, kind: str = "info") -> None:
        """A line in the chat that is not part of the conversation (info, warning, error)."""
        ...

    async def markdown_note(self, text: str, kind: str = "info", *, plain: bool = False) -> None:
        """A longer note rendered as markdown (``plain``: as typed)."""
        ...

    def show_status(self, status: ContextStatus) -> None:
        """The status line shows ``status`` (pushed by the agent's events, or after a change
        the TUI made itself: a model switch, a branch move, another session)."""
        ...

    def notify(self, text: str, *, title: str = "", timeout: float = 3) -> None:
        """A toast that goes by itself (for what needs no place in the chat)."""
        ...

    def uncover_chat(self) -> None:
        """The chat must be seen (an approval waits in it): a side pane that has taken its
        place (a narrow terminal) closes."""
        ...


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


class AppView:
    """:class:`View` over the App's widgets; remembers the model and window the status line
    last showed, so the next start can paint them before the agent has loaded."""

    def __init__(self, app: App[None], keymap: dict[str, str], ui_state_file: Path) -> None:
        self.app = app
        self._keymap = keymap
        self._ui_state_file = ui_state_file
        self.ui_state: UiState = load_ui_state(ui_state_file)

    @property
    def chat(self) -> ChatView:
        return self.app.query_one(ChatView)

    @property
    def prompt(self) -> PromptInput:
        return self.app.query_one(PromptInput)

    @property
    def activity(self) -> ActivityLine:
        return self.app.query_one(ActivityLine)

    @property
    def status_bar(self) -> StatusBar:
        return self.app.query_one(StatusBar)

    @property
    def keymap(self) -> dict[str, str]:
        return self._keymap

    async def note(self, text: str, kind: str = "info") -> None:
        await self.chat.append(NoteItem("", text, kind))

    async def markdown_note(self, text: str, kind: str = "info", *, plain: bool = False) -> None:
        widget = NoteMarkdown(text, kind=kind, plain=plain)
        await self.chat.append(NoteItem("", _first_line(text), kind), widget)

    def show_status(self, status: ContextStatus) -> None:
        self.status_bar.status = status
        cached = self.ui_state
        if status.model and (status.model != cached.model or status.window != cached.window):
            self.ui_state = UiState(status.model, status.window)
            save_ui_state(self._ui_state_file, self.ui_state)

    def notify(self, text: str, *, title: str = "", timeout: float = 3) -> None:
        self.app.notify(text, title=title, timeout=timeout)

    def uncover_chat(self) -> None:
        from agentsh.tui.panes.panel import SidePanel

        panel = self.app.query_one(SidePanel)
        if panel.is_open and panel.overlays_chat:
            panel.hide()
