"""What a slash command is, and what its handler is given.

A command is a frozen :class:`SlashCommand`: its name and aliases, the help line, the usage
hint of its argument, the words its argument may take (offered while typing), the
:class:`Need` flags the runner checks before it starts, and the handler. The handler is an
``async def handler(ctx: CommandContext, arg: str) -> None``; it runs in a worker (so it may
wait for a picker), after the checks its flags ask for, and a failure it raises is shown in
the chat as ``/name failed: ...``.

To add a command: write the handler in the module of :mod:`agentsh.tui.slash` that fits what
it acts on (or a new one), and add its :class:`SlashCommand` to
:data:`agentsh.tui.slash.registry.COMMANDS`. Nothing else needs to change: typing it,
completing it, Ctrl+P, ``/help`` and F1 all read the table.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from textual.app import App

    from agentsh.events import Event
    from agentsh.session.session import Session
    from agentsh.tui.branching import BranchNavigator
    from agentsh.tui.current import Current
    from agentsh.tui.display import View


class Need(StrEnum):
    """What a command needs before it may start (the runner says so in the chat if not)."""

    IDLE = "idle"  # no turn running: it would change the session under the turn
    AGENT = "agent"  # the agent has loaded
    WRITABLE = "writable"  # the session is not read-only: it appends to the session file


class CommandContext(Protocol):
    """What a handler may use: the screen, what is open, and the TUI's few operations."""

    @property
    def app(self) -> App[None]:
        """For pickers (``push_screen_wait``), the theme, toasts and the side panel."""
        ...

    @property
    def view(self) -> View: ...

    @property
    def current(self) -> Current:
        """The environment, the session, the agent once loaded."""
        ...

    @property
    def branching(self) -> BranchNavigator: ...

    def run_events(self, events: AsyncIterator[Event], *, doing: str = ...) -> None:
        """Show a stream of agent events in the chat as a turn does (``/compact``); the
        working line reads ``doing`` until an event says more."""
        ...

    async def switch_session(self, session: Session) -> None:
        """Continue in ``session`` (the agent switches, the chat is reloaded from it)."""
        ...

    async def open_path(self, path: Path) -> None:
        """Open the session file at ``path`` (read-only when another agentsh holds it)."""
        ...

    async def pick_session(self) -> Path | None:
        """The session picker; None when the user left it."""
        ...

    async def no_agent(self, loading: str) -> None:
        """Say why a command that needs the agent cannot run yet (``loading``) or at all."""
        ...

    async def quit(self, *, return_code: int = 0) -> None: ...


Handler = Callable[[CommandContext, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    summary: str  # one line for /help, F1, the palette and the completion menu
    handler: Handler
    argument: str = ""  # usage hint, e.g. "[tier]"
    aliases: tuple[str, ...] = ()
    needs: frozenset[Need] = frozenset()
    choices: tuple[str, ...] = ()  # words the argument may be, offered while typing it
    #: words that depend on the session (an MCP server's name), given the argument's words
    #: typed before the one being completed; replaces ``choices`` in completion when set
    words: Callable[[Current, list[str]], Sequence[str]] | None = None

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.argument}".rstrip()
