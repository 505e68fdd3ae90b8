"""What the side panes read from the running app, as one small typed protocol.

The panes (memory, summaries, tree) are handed a :class:`PaneHost` when the side panel builds
them, instead of reaching through ``self.app`` for attributes mypy cannot see. The chat
controller is the host; a test may pass anything with these members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.signal import Signal

    from agentsh.config import Environment
    from agentsh.frontend import InteractiveAPI
    from agentsh.session.session import Session


class PaneHost(Protocol):
    @property
    def env(self) -> Environment:
        """The user's and the project's paths and settings."""
        ...

    @property
    def agent(self) -> InteractiveAPI | None:
        """The agent, once it has loaded (None before, or when it could not start)."""
        ...

    @property
    def path_changed(self) -> Signal[str]:
        """Published whenever the session's current path may have changed (the data: why)."""
        ...

    def current_session(self) -> Session | None:
        """The open session (before the agent loads too), or None while it opens."""
        ...
